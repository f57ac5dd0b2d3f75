#include "attn/render_explain.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/describe.hpp"
#include "attn/explain.hpp"
#include "attn/names.hpp"
#include "attn/steps.hpp"
#include "render_common.hpp"
#include "render_explain_online.hpp"

namespace attn {

using namespace render_detail;

namespace {

// Step 0 of a cell with rotary embeddings: its query and key before and after their turns.
void explain_rotation(std::string& out, const TraceConfig& c, const CellWorking& cell, int p) {
  const std::int64_t i = cell.i + 1, j = cell.j + 1;
  auto row = [&](const Matrix& m) {
    std::vector<std::string> v;
    for (Eigen::Index d = 0; d < m.cols(); ++d) v.push_back(number(m(0, d), p, false));
    return fmt::format("[{}]", fmt::join(v, ", "));
  };
  out += '\n';
  out += wrapped_line(
      fmt::format("0. the rotary embeddings turn the query by its position {} and the key by its "
                  "position {} ({} pairs, θ {}):",
                  cell.i, cell.j, name_of(c.rope_pairs), c.rope_theta));
  out += wrapped_line(fmt::format("   {} before: {}", sup("q", i), row(cell.q_unrotated)), "     ");
  out += wrapped_line(fmt::format("   {} after:  {}", sup("q", i), row(cell.q)), "     ");
  out += wrapped_line(fmt::format("   {} before: {}", sup("k", j), row(cell.k_unrotated)), "     ");
  out += wrapped_line(fmt::format("   {} after:  {}", sup("k", j), row(cell.k)), "     ");
}

// Step 4 of a cell: each key's exponential of its scaled score less the row's largest.
void explain_exponentials(std::string& out, const CellWorking& cell, const TokenizedSentence& ks,
                          EscapeStyle quoted, int p) {
  const Matrix& row = cell.scaled_row;
  const std::vector<std::string> who = padded_key_labels(ks.words, 0, quoted);
  for (Eigen::Index t = 0; t < row.cols(); ++t) {
    const std::string& padded = who[static_cast<std::size_t>(t)];
    const std::string arrow = t == cell.j ? "   ← this cell" : "";
    if (std::isinf(row(0, t))) {
      out += fmt::format("   {}  exp(−inf) = 0{}\n", padded, arrow);
    } else {
      out += fmt::format("   {}  exp({} − {}) = {}{}\n", padded, number(row(0, t), p, false),
                         number(cell.row_max, p, false), number(cell.exponentials(0, t), p, false),
                         arrow);
    }
  }
}

// The cell's arithmetic for one head of one sentence.
void explain_cell(std::string& out, const Trace& trace, std::optional<int> head,
                  std::optional<int> batch, Eigen::Index qi, Eigen::Index kj,
                  const TextOptions& options) {
  const int p = options.precision;
  // With --describe, what the step of a stage computes, under its line.
  auto describe = [&](StepKind kind) {
    if (options.describe) {
      out += wrapped_line(fmt::format("   ({})", describe_step(kind)), "    ");
    }
  };
  const TraceConfig& c = trace.config;
  const EscapeStyle quoted = label_escapes(c).quoted;
  const TokenizedSentence& qs = trace.inputs[static_cast<std::size_t>(batch.value_or(0))];
  const TokenizedSentence& ks = trace.key_sentence(batch.value_or(0));
  const std::int64_t i = qi + 1, j = kj + 1;

  const CellWorking cell = work_out_cell(trace, head, batch, qi, kj);
  const Eigen::Index d_k = cell.q.cols();
  const std::string a_ij = sub2("A", i, j), w_ij = sub2("ω", i, j),
                    s_i = fmt::format("s{}", subscript(i));

  out += '\n';
  out +=
      wrapped_line(fmt::format("{}: how much token {} ({}) attends to key {} ({}){}", a_ij, i,
                               python_str_repr(qs.words[static_cast<std::size_t>(qi)], quoted), j,
                               python_str_repr(ks.words[static_cast<std::size_t>(kj)], quoted),
                               where_text(trace, head, batch)));
  // Tokens count from 1 here and from 0 in PyTorch's indices: both, once. The index names every
  // dimension of PyTorch's tensor: the sentence and the head where it has them.
  const std::string torch_cell =
      "attention_weights" +
      torch_index(trace.step(StepKind::kAttentionWeights, head, batch), {qi, kj});
  out += wrapped_line(fmt::format("in PyTorch, which counts from 0: {}", torch_cell));

  // 0. With rotary embeddings: the two vectors turned by their positions.
  if (c.rope) {
    explain_rotation(out, c, cell, p);
    describe(StepKind::kRotatedQueries);
  }

  // 1. The dot product, one product per dimension, added left to right.
  out += fmt::format("\n1. the score {} = {} · {}, term by term\n", w_ij, sup("q", i), sup("k", j));
  describe(StepKind::kOmega);
  for (Eigen::Index d = 0; d < d_k; ++d) {
    out += fmt::format("   {} × {} = {}\n", number(cell.q(0, d), p), number(cell.k(0, d), p),
                       number(cell.products(0, d), p, false));
  }
  out += fmt::format("   sum: {} = {}\n", w_ij, number(cell.omega, p, false));

  // 2. The scaling (and the mask).
  if (std::isinf(cell.scaled)) {
    out +=
        wrapped_line(fmt::format("2. masked: key {} may not be seen from query {}, so its score is "
                                 "−inf, and so is {} / √{}",
                                 j, i, w_ij, d_k),
                     "   ");
  } else {
    out +=
        fmt::format("2. scaled: {} / √{} = {} / {} = {}\n", w_ij, d_k, number(cell.omega, p, false),
                    number(cell.root, p, false), number(cell.scaled, p, false));
  }
  describe(StepKind::kScaledScores);

  // 3.–5. The softmax of the row: its max, each exponential, their sum.
  const float m = cell.row_max;
  if (cell.row_masked) {
    out += wrapped_line(
        fmt::format("3. every key of row {} is masked: the softmax of a row of −inf gives {} "
                    "(the masked-rows rule {})",
                    i, masked_rows_name(c.masked_rows) == std::string_view("zero") ? "0" : "nan",
                    masked_rows_name(c.masked_rows)),
        "   ");
    out += fmt::format("   the trace's {} = {}\n", torch_cell, number(cell.trace_weight, p, false));
    return;
  }
  const Eigen::Index argmax = cell.argmax;
  const Matrix& row = cell.scaled_row;
  out += fmt::format("3. the row's largest scaled score: m{} = {} (key {}, {})\n", subscript(i),
                     number(m, p, false), argmax + 1,
                     python_str_repr(ks.words[static_cast<std::size_t>(argmax)], quoted));
  describe(StepKind::kRowMax);
  out += fmt::format("4. each exponential e{},ⱼ = exp({},ⱼ − m{}), which is at most 1\n",
                     subscript(i), s_i, subscript(i));
  describe(StepKind::kExponentials);
  explain_exponentials(out, cell, ks, quoted, p);
  out += fmt::format("5. their sum: Σ{} = {}\n", subscript(i), number(cell.sum, p, false));
  describe(StepKind::kRowSums);
  out += fmt::format("6. the weight: {} = e{} / Σ{} = {} / {} = {}\n", a_ij, sub2("", i, j),
                     subscript(i), number(cell.exponentials(0, kj), p, false),
                     number(cell.sum, p, false), number(cell.weight, p, false));
  describe(StepKind::kAttentionWeights);
  out += fmt::format("   the trace's {} = {}{}\n", torch_cell, number(cell.trace_weight, p, false),
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
      if (!head_traced(c, h)) continue;  // a model's head not chosen
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      explain_cell(out, trace, head, batch, i - 1, j - 1, options);
      if (c.decode) explain_decoded_cell(out, trace, head, batch, i - 1, j - 1, options);
      if (c.online_softmax > 0) explain_online_row(out, trace, head, batch, i - 1, options);
    }
  }
  return fit_to_width(std::move(out));
}

}  // namespace attn
