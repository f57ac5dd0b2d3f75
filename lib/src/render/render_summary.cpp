#include "attn/render_summary.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>
#include <vector>

#include "attn/gemm.hpp"
#include "attn/names.hpp"
#include "attn/simd.hpp"
#include "attn/statistics.hpp"
#include "render_common.hpp"

namespace attn {

using namespace render_detail;

namespace {

// " h2 s1": the step's head and sentence, 1-based (a model's head: " L5H1", from 0).
std::string where(const Step& s, const TraceConfig* c = nullptr) {
  std::string w;
  if (s.head) {
    w += c && c->model ? fmt::format(" {}", head_text(*c, *s.head, true))
                       : fmt::format(" h{}", *s.head + 1);
  }
  if (s.batch) w += fmt::format(" s{}", *s.batch + 1);
  return w;
}

std::string g(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("-"); }

}  // namespace

std::string summary_head(const Trace& trace) {
  std::string out;
  append_preamble(out, trace, /*brief=*/true);
  out += fmt::format("\n{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {}\n", "step", "shape", "min",
                     "max", "mean", "nonfinite", "xxh3_64");
  return out;
}

std::string summary_step_line(const Step& s, int threads, const TraceConfig* config) {
  // A step computed rows at a time has its statistics instead of its values.
  const MatrixStatistics st =
      s.digest ? s.digest->statistics : matrix_statistics(s.values, threads);
  const Eigen::Index rows = s.digest ? s.digest->rows : s.values.rows();
  const Eigen::Index cols = s.digest ? s.digest->cols : s.values.cols();
  return fmt::format("{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {:016x}\n", s.id + where(s, config),
                     fmt::format("[{}, {}]", rows, cols), g(st.min), g(st.max),
                     st.finite ? g(st.mean) : std::string("-"), st.nonfinite, st.checksum);
}

std::string summary_attention(const Step& s, std::int64_t queries, int threads,
                              const TraceConfig* config) {
  if (s.kind != StepKind::kAttentionWeights) return {};
  AttentionGlance glance;
  if (s.digest && s.digest->glance) {
    glance = *s.digest->glance;  // the first kSummaryQueries queries
    if (std::cmp_less(queries, glance.queries.size())) {
      glance.queries.resize(static_cast<std::size_t>(queries));
    }
  } else {
    glance = attention_glance(s.values, queries, threads);
  }
  std::string out = fmt::format("\nattention_weights{}: largest |row sum − 1| = {:.1e}\n",
                                where(s, config), glance.largest_residual);
  const EscapeStyle quoted = config ? label_escapes(*config).quoted : EscapeStyle::kStrRepr;
  for (const AttentionGlance::Query& q : glance.queries) {
    const std::string who =
        python_str_repr(s.row_labels.at(static_cast<std::size_t>(q.row)), quoted);
    if (q.masked) {
      out += fmt::format("  query {} {} masks every key\n", q.row + 1, who);
      continue;
    }
    std::vector<std::string> best;
    for (const auto& [j, weight] : q.top) {
      best.push_back(fmt::format(
          "{} {:.4f}", python_str_repr(s.col_labels.at(static_cast<std::size_t>(j)), quoted),
          weight));
    }
    out += fmt::format("  query {} {} attends most to {}\n", q.row + 1, who, fmt::join(best, ", "));
  }
  return out;
}

namespace {

// The line without its trailing spaces, and a newline.
std::string trimmed(std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

}  // namespace

std::string render_timings(const Trace& trace, double total_seconds, double output_seconds) {
  const TraceConfig& c = trace.config;
  std::string out = fmt::format(
      "attn-trace: timings: {} thread{}, matmul {}, isa {} (this CPU's best: {})\n{:<28} {:>14} "
      "{:>10} {}\n",
      c.threads, c.threads == 1 ? "" : "s", matmul_name(c.matmul), isa_name(active_isa()),
      isa_name(cpu_isa()), "step", "shape", "ms", "GFLOP/s");
  auto rate = [](double gflops) {
    return gflops > 0.0 ? fmt::format("{:.1f}", gflops) : std::string();
  };
  const Timings t = step_timings(trace);
  for (const StepTiming& st : t.steps) {
    const Step& s = *st.step;
    const std::string shape =
        s.shape.size() >= 2 ? fmt::format("[{}, {}]", s.shape[s.shape.size() - 2], s.shape.back())
                            : fmt::format("[{}]", s.shape.empty() ? 0 : s.shape.back());
    out += trimmed(fmt::format("{:<28} {:>14} {:>10.3f} {:>9}", s.id + where(s, &trace.config),
                               shape, 1e3 * st.seconds, rate(st.gflops)));
  }
  out += trimmed(fmt::format("{:<28} {:>14} {:>10.3f} {:>9}", "matrix products", "",
                             1e3 * t.product_seconds, rate(t.product_gflops)));
  for (const auto& [label, seconds] : {std::pair{"all steps", t.step_seconds},
                                       {"output", output_seconds},
                                       {"total", total_seconds}}) {
    out += fmt::format("{:<28} {:>14} {:>10.3f}\n", label, "", 1e3 * seconds);
  }
  return out;
}

std::string render_summary(const Trace& trace, std::int64_t queries, int threads) {
  std::string out = summary_head(trace);
  for (const Step& s : trace.steps) out += summary_step_line(s, threads, &trace.config);
  for (const Step& s : trace.steps) out += summary_attention(s, queries, threads, &trace.config);
  return out;
}

}  // namespace attn
