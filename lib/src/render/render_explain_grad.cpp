#include "attn/render_explain_grad.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/explain_grad.hpp"
#include "render_common.hpp"

namespace attn {

using namespace render_detail;

namespace {

void explain_grad_cell(std::string& out, const Trace& trace, std::optional<int> head,
                       std::optional<int> batch, Eigen::Index qi, Eigen::Index kj, int p) {
  const TokenizedSentence& qs = trace.inputs[static_cast<std::size_t>(batch.value_or(0))];
  const TokenizedSentence& ks = trace.key_sentence(batch.value_or(0));
  const EscapeStyle quoted = label_escapes(trace.config).quoted;
  const std::int64_t i = qi + 1, j = kj + 1;
  const GradCellWorking w = work_out_grad_cell(trace, head, batch, qi, kj);
  const std::string dw = "dL/d" + sub2("ω", i, j), da = "dL/d" + sub2("A", i, j),
                    ds = "dL/d" + sub2("S", i, j), a = sub2("A", i, j),
                    r = fmt::format("r{}", subscript(i));
  out += '\n';
  out += wrapped_line(
      fmt::format("{}: the gradient of score ({}, {}), query {} ({}) and key {} "
                  "({}){}",
                  dw, i, j, i, python_str_repr(qs.words[static_cast<std::size_t>(qi)], quoted), j,
                  python_str_repr(ks.words[static_cast<std::size_t>(kj)], quoted),
                  where_text(trace, head, batch)));
  // omega.grad has omega's shape, and grad_omega's: the sentence and the head where it has them.
  const std::string index = torch_index(trace.step(StepKind::kGradOmega, head, batch), {qi, kj});
  out += wrapped_line(fmt::format("in PyTorch, which counts from 0: omega.grad{}", index));

  out += fmt::format("\n1. {} = dL/dZ{} · v{}, term by term\n", da, subscript(i), sup("", j));
  for (Eigen::Index c = 0; c < w.products.cols(); ++c) {
    out += fmt::format("   {} × {} = {}\n", number(w.dz(0, c), p), number(w.v(0, c), p),
                       number(w.products(0, c), p, false));
  }
  out += fmt::format("   sum: {} = {}\n", da, number(w.da, p, false));

  out += fmt::format("2. the row's weighted mean {} = Σⱼ dL/dA{},ⱼ · A{},ⱼ, term by term\n", r,
                     subscript(i), subscript(i));
  if (trace.config.masked_rows == MaskedRows::kZero && std::isnan(w.row_dot)) {
    // The rule zero is torch.where(row masked, 0, softmax): the softmax below it still gives nan
    // in this row, and the where passes it 0, not dL/dA.
    out += wrapped_line(
        fmt::format(
            "   (every key of row {0} is masked: the rule zero's torch.where(row masked, 0, "
            "softmax) gives the row 0, and passes the softmax under it 0 for dL/dA{1},ⱼ; "
            "that softmax's own A{1},ⱼ is nan)",
            i, subscript(i)),
        "    ");
  }
  const std::vector<std::string> who = padded_key_labels(ks.words, 0, quoted);
  for (Eigen::Index t = 0; t < w.terms.cols(); ++t) {
    out += fmt::format("   {}  {} × {} = {}{}\n", who[static_cast<std::size_t>(t)],
                       number(w.da_row(0, t), p), number(w.a_row(0, t), p),
                       number(w.terms(0, t), p, false), t == kj ? "   ← this cell" : "");
  }
  out += fmt::format("   sum: {} = {}{}\n", r, number(w.row_dot, p, false),
                     std::isnan(w.row_dot) ? " (every key of the row is masked: the softmax's "
                                             "output is nan)"
                                           : "");
  out += fmt::format("3. through the softmax: {} = {} ({} − {}) = {} × ({} − {}) = {}\n", ds, a, da,
                     r, number(w.a, p, false), number(w.da_row(0, kj), p, false),
                     number(w.row_dot, p), number(w.ds, p, false));  // − (−2.79): in parentheses
  if (w.masked) {
    out += wrapped_line(fmt::format("4. masked: the score was replaced by −inf, so nothing "
                                    "flows back to it: {} = 0",
                                    dw),
                        "   ");
  } else {
    out +=
        fmt::format("4. through the scaling: {} = {} / √d_k = {} / {} = {}\n", dw, ds,
                    number(w.ds, p, false), number(w.root, p, false), number(w.domega, p, false));
  }
  out += fmt::format("   the trace's grad_omega{} = {}\n", index, number(w.trace_domega, p, false));
}

}  // namespace

std::string render_explain_grad(const Trace& trace, std::int64_t i, std::int64_t j,
                                const TextOptions& options) {
  const TraceConfig& c = trace.config;
  check_query_and_key(trace, i, j);
  std::string out;
  append_preamble(out, trace);
  for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
    const std::optional<int> batch =
        trace.inputs.size() > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      explain_grad_cell(out, trace, head, batch, i - 1, j - 1, options.precision);
    }
  }
  return fit_to_width(std::move(out));
}

}  // namespace attn
