#include "attn/render_explain.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/attention.hpp"
#include "render_common.hpp"

namespace attn {

using namespace render_detail;

namespace {

// The cell's arithmetic for one head of one sentence.
void explain_cell(std::string& out, const Trace& trace, std::optional<int> head,
                  std::optional<int> batch, Eigen::Index qi, Eigen::Index kj, int p) {
  const TraceConfig& c = trace.config;
  const bool split = c.multihead == MultiheadForm::kSplit;
  const TokenizedSentence& qs = trace.inputs[static_cast<std::size_t>(batch.value_or(0))];
  const TokenizedSentence& ks = trace.key_sentence(batch.value_or(0));
  const std::int64_t i = qi + 1, j = kj + 1;

  // q⁽ⁱ⁾ and k⁽ʲ⁾: this head's columns of the split form's projections.
  Matrix q, k;
  if (split) {
    const Eigen::Index hd = c.d_kq / c.heads;
    const Eigen::Index h = head.value_or(0);
    q = trace.step("queries", std::nullopt, batch).values.middleCols(h * hd, hd);
    k = trace.step("keys", std::nullopt, batch).values.middleCols(h * hd, hd);
  } else {
    q = trace.step("queries", head, batch).values;
    k = trace.step("keys", head, batch).values;
  }
  const Eigen::Index d_k = q.cols();
  const Matrix& omega = trace.step("omega", head, batch).values;
  const Matrix& scaled = trace.step("scaled_scores", head, batch).values;
  const Matrix& weights = trace.step("attention_weights", head, batch).values;
  const Matrix row = scaled.row(qi);  // s_i: (1, T_k)
  const SoftmaxParts parts = softmax_parts(row, c.kernel, c.masked_rows);
  const std::string a_ij = sub2("A", i, j), w_ij = sub2("ω", i, j),
                    s_i = fmt::format("s{}", subscript(i));

  out += fmt::format("\n{}: how much token {} ({}) attends to key {} ({}){}\n", a_ij, i,
                     python_str_repr(qs.words[static_cast<std::size_t>(qi)]), j,
                     python_str_repr(ks.words[static_cast<std::size_t>(kj)]),
                     where_text(trace, head, batch));

  // 1. The dot product, one product per dimension, added left to right.
  out += fmt::format("\n1. the score {} = {} · {}, term by term\n", w_ij, sup("q", i), sup("k", j));
  for (Eigen::Index d = 0; d < d_k; ++d) {
    const float product = q(qi, d) * k(kj, d);
    out += fmt::format("   {} × {} = {}\n", number(q(qi, d), p), number(k(kj, d), p),
                       number(product, p, false));
  }
  out += fmt::format("   sum: {} = {}\n", w_ij, number(omega(qi, kj), p, false));

  // 2. The scaling (and the mask).
  const auto root = static_cast<float>(std::sqrt(static_cast<double>(d_k)));
  const bool cell_masked = std::isinf(scaled(qi, kj));
  if (cell_masked) {
    out += fmt::format(
        "2. masked: key {} may not be seen from query {}, so its score is −inf, and "
        "so is {} / √{}\n",
        j, i, w_ij, d_k);
  } else {
    out += fmt::format("2. scaled: {} / √{} = {} / {} = {}\n", w_ij, d_k,
                       number(omega(qi, kj), p, false), number(root, p, false),
                       number(scaled(qi, kj), p, false));
  }

  // 3.–5. The softmax of the row: its max, each exponential, their sum.
  const float m = parts.row_max(0, 0);
  if (std::isinf(m)) {
    out += fmt::format(
        "3. every key of row {} is masked: the softmax of a row of −inf gives {} "
        "(the masked-rows rule {})\n",
        i, masked_rows_name(c.masked_rows) == std::string_view("zero") ? "0" : "nan",
        masked_rows_name(c.masked_rows));
    out += fmt::format("   the trace's attention_weights[{}, {}] = {}\n", i, j,
                       number(weights(qi, kj), p, false));
    return;
  }
  Eigen::Index argmax = 0;
  for (Eigen::Index t = 0; t < row.cols(); ++t) {
    if (row(0, t) == m) {
      argmax = t;
      break;
    }
  }
  out += fmt::format("3. the row's largest scaled score: m{} = {} (key {}, {})\n", subscript(i),
                     number(m, p, false), argmax + 1,
                     python_str_repr(ks.words[static_cast<std::size_t>(argmax)]));
  out += fmt::format("4. each exponential e{}ⱼ = exp({}ⱼ − m{}), which is at most 1\n",
                     subscript(i), s_i, subscript(i));
  std::size_t label_width = 0;  // of the words as python_str_repr shows them, without quotes
  for (const std::string& w : ks.words) {
    label_width = std::max(label_width, python_str_repr(w).size() - 2);
  }
  for (Eigen::Index t = 0; t < row.cols(); ++t) {
    const std::string who =
        fmt::format("key {} {}", t + 1, python_str_repr(ks.words[static_cast<std::size_t>(t)]));
    const std::string arrow = t == kj ? "   ← this cell" : "";
    if (std::isinf(row(0, t))) {
      out += fmt::format("   {:<{}}  exp(−inf) = 0{}\n", who, label_width + 10, arrow);
    } else {
      out += fmt::format("   {:<{}}  exp({} − {}) = {}{}\n", who, label_width + 10,
                         number(row(0, t), p, false), number(m, p, false),
                         number(parts.exponentials(0, t), p, false), arrow);
    }
  }
  out +=
      fmt::format("5. their sum: Σ{} = {}\n", subscript(i), number(parts.row_sum(0, 0), p, false));
  out += fmt::format("6. the weight: {} = e{} / Σ{} = {} / {} = {}\n", a_ij, sub2("", i, j),
                     subscript(i), number(parts.exponentials(0, kj), p, false),
                     number(parts.row_sum(0, 0), p, false), number(parts.weights(0, kj), p, false));
  out += fmt::format("   the trace's attention_weights[{}, {}] = {}{}\n", i, j,
                     number(weights(qi, kj), p, false),
                     row.array().isInf().any() ? " (masked keys add 0 to the sum)" : "");
}

}  // namespace

std::string render_explain(const Trace& trace, std::int64_t i, std::int64_t j,
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
      explain_cell(out, trace, head, batch, i - 1, j - 1, options.precision);
    }
  }
  return out;
}

}  // namespace attn
