#include "attn/render_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "attn/attention.hpp"
#include "render_common.hpp"

namespace attn {

using namespace render_detail;

std::uint64_t fnv1a64(const Matrix& m) {
  std::uint64_t h = 0xcbf29ce484222325u;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(m.data()[i]);
    for (int b = 0; b < 4; ++b) {
      h ^= (bits >> (8 * b)) & 0xFFu;
      h *= 0x100000001b3u;
    }
  }
  return h;
}

namespace {

// " h2 s1": the step's head and sentence, 1-based.
std::string where(const Step& s) {
  std::string w;
  if (s.head) w += fmt::format(" h{}", *s.head + 1);
  if (s.batch) w += fmt::format(" s{}", *s.batch + 1);
  return w;
}

std::string g(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("-"); }

}  // namespace

std::string render_summary(const Trace& trace, std::int64_t queries) {
  std::string out;
  append_preamble(out, trace, /*brief=*/true);
  out += fmt::format("\n{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {}\n", "step", "shape", "min",
                     "max", "mean", "nonfinite", "fnv1a64");
  for (const Step& s : trace.steps) {
    double lo = INFINITY, hi = -INFINITY, sum = 0.0;
    std::int64_t finite = 0;
    for (Eigen::Index i = 0; i < s.values.size(); ++i) {
      const double v = s.values.data()[i];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v), hi = std::max(hi, v), sum += v, ++finite;
    }
    out += fmt::format("{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {:016x}\n", s.id + where(s),
                       fmt::format("[{}, {}]", s.values.rows(), s.values.cols()), g(lo), g(hi),
                       finite ? g(sum / static_cast<double>(finite)) : std::string("-"),
                       s.values.size() - finite, fnv1a64(s.values));
  }
  for (const Step& s : trace.steps) {
    if (s.id != "attention_weights") continue;
    const Matrix sums = row_sums(s.values);
    double residual = 0.0;
    for (Eigen::Index i = 0; i < sums.rows(); ++i) {
      if (std::isfinite(sums(i, 0))) residual = std::max(residual, std::fabs(sums(i, 0) - 1.0));
    }
    out +=
        fmt::format("\nattention_weights{}: largest |row sum − 1| = {:.1e}\n", where(s), residual);
    const Eigen::Index n = std::min<Eigen::Index>(queries, s.values.rows());
    for (Eigen::Index i = 0; i < n; ++i) {
      if (!s.values.row(i).allFinite()) {
        out += fmt::format("  query {} {} masks every key\n", i + 1,
                           python_str_repr(s.row_labels.at(static_cast<std::size_t>(i))));
        continue;
      }
      std::vector<Eigen::Index> order(static_cast<std::size_t>(s.values.cols()));
      std::iota(order.begin(), order.end(), 0);
      const auto top = std::min<std::size_t>(3, order.size());
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                        order.end(), [&](Eigen::Index a, Eigen::Index b) {
                          const float x = s.values(i, a), y = s.values(i, b);  // finite
                          return x > y || (x == y && a < b);
                        });
      std::vector<std::string> best;
      for (std::size_t k = 0; k < top; ++k) {
        const Eigen::Index j = order[k];
        best.push_back(fmt::format("{} {:.4f}",
                                   python_str_repr(s.col_labels.at(static_cast<std::size_t>(j))),
                                   s.values(i, j)));
      }
      out += fmt::format("  query {} {} attends most to {}\n", i + 1,
                         python_str_repr(s.row_labels.at(static_cast<std::size_t>(i))),
                         join(best, ", "));
    }
  }
  return out;
}

}  // namespace attn
