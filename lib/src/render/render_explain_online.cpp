// --explain with --online-softmax: one query row, tile by tile, with the numbers
// online_softmax_row computes; with --decode, the cell against the KV cache.

#include "render_explain_online.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/explain.hpp"
#include "attn/grouping.hpp"
#include "attn/online_softmax.hpp"
#include "render_common.hpp"

namespace attn::render_detail {

namespace {

// `prefix` then [a, b, c] at the chosen precision (−inf as the word), wrapped between values
// to the text width, and a newline.
std::string vector_line(const std::string& prefix, const Matrix& v, int p) {
  std::vector<std::string> items;
  for (Eigen::Index j = 0; j < v.cols(); ++j) {
    items.push_back(std::isinf(v(0, j)) && v(0, j) < 0 ? "−inf" : number(v(0, j), p, false));
  }
  return wrap_items(prefix + "[", items, ", ", "         ") + "]\n";
}

std::string scalar_text(float x, int p) {
  return std::isinf(x) && x < 0 ? "−inf" : number(x, p, false);
}

// This head's values: its own V (wrapper), or its columns of the one V (split).
Matrix head_values(const Trace& trace, std::optional<int> head, std::optional<int> batch) {
  const TraceConfig& c = trace.config;
  if (c.multihead == MultiheadForm::kWrapper)
    return trace.step(StepKind::kValues, head, batch).values;
  // Its K/V head's columns (grouped-query attention shares them).
  const Eigen::Index d_head = c.d_v / c.heads;
  const std::int64_t kv = kv_head_of(head.value_or(0), c.heads, c.kv_heads ? c.kv_heads : c.heads);
  return trace.step(StepKind::kValues, std::nullopt, batch).values.middleCols(kv * d_head, d_head);
}

}  // namespace

void explain_online_row(std::string& out, const Trace& trace, std::optional<int> head,
                        std::optional<int> batch, Eigen::Index qi, const TextOptions& options) {
  const TraceConfig& c = trace.config;
  const int p = options.precision;
  const std::int64_t i = qi + 1;
  const Matrix s = trace.step(StepKind::kScaledScores, head, batch).values.row(qi);
  const OnlineRow row = online_softmax_row(s, head_values(trace, head, batch), c.online_softmax,
                                           c.kernel, c.masked_rows);
  out += '\n';
  out += wrapped_line(fmt::format(
      "FlashAttention's online softmax of row {}, over tiles of {} key{}{}: it never holds the "
      "whole row of weights, only m, ℓ and O",
      i, c.online_softmax, c.online_softmax == 1 ? "" : "s", where_text(trace, head, batch)));
  out += vector_line("   start: m = −inf, ℓ = 0, O = ", Matrix::Zero(1, row.z.cols()), p);
  float m = -INFINITY;
  for (std::size_t n = 0; n < row.tiles.size(); ++n) {
    const OnlineTile& t = row.tiles[n];
    const std::string keys = t.to - t.from == 1 ? fmt::format("key {}", t.to)
                                                : fmt::format("keys {}–{}", t.from + 1, t.to);
    out += vector_line(fmt::format("   tile {}, {}: S = ", n + 1, keys),
                       s.middleCols(t.from, t.to - t.from), p);
    if (t.skipped) {
      out += "      every score is −inf (masked): the tile is skipped, m, ℓ and O stay\n";
      continue;
    }
    out += fmt::format("      m′ = max(m, rowmax S) = max({}, {}) = {}\n", scalar_text(m, p),
                       scalar_text(t.tile_max, p), scalar_text(t.m, p));
    out += fmt::format("      c = exp(m − m′) = exp({} − {}) = {}\n", scalar_text(m, p),
                       scalar_text(t.m, p), number(t.rescale, p, false));
    out += vector_line("      exp(S − m′) = ", t.p, p);
    out += fmt::format("      their sum: {}\n", number(t.sum, p, false));
    out += fmt::format("      ℓ = c·ℓ + {} = {}\n", number(t.sum, p, false), number(t.l, p, false));
    out += vector_line("      O = c·O + exp(S − m′) V_tile = ", t.o, p);
    m = t.m;
  }
  const float l = row.tiles.back().l;
  out += vector_line(
      fmt::format("   Z{} = O / ℓ, with ℓ = {}: ", subscript(i), number(l, p, false)), row.z, p);
  const Step& context = trace.step(StepKind::kContextVectors, head, batch);
  out += vector_line(fmt::format("   the trace's context_vectors{} = ", torch_index(context, {qi})),
                     context.values.row(qi), p);
}

void explain_decoded_cell(std::string& out, const Trace& trace, std::optional<int> head,
                          std::optional<int> batch, Eigen::Index qi, Eigen::Index kj,
                          const TextOptions& options) {
  const int p = options.precision;
  const std::int64_t i = qi + 1, j = kj + 1;
  const DecodedToken d = decoded_token(trace, head, batch, qi);
  const Step& weights = trace.step(StepKind::kAttentionWeights, head, batch);
  const std::string torch_cell = "attention_weights" + torch_index(weights, {qi, kj});
  const float trace_weight = weights.values(qi, kj);
  out += '\n';
  out += wrapped_line(fmt::format(
      "with a KV cache (--decode), token {} is decoded at t = {}{}, against the cache of {}:", i, i,
      where_text(trace, head, batch),
      d.first == qi ? fmt::format("token {}", i) : fmt::format("tokens {}–{}", d.first + 1, i)));
  out += vector_line(fmt::format("   {} = ", d.query->equation), d.query->values, p);
  const Matrix& keys = d.key_cache->values;
  out += wrapped_line(fmt::format("   {}, one row per token:", d.key_cache->equation), "     ");
  const std::vector<std::string> who =
      padded_key_labels(d.key_cache->row_labels, d.first, label_escapes(trace.config).quoted);
  // The cache's numbers in one width, so that its columns line up.
  std::size_t number_width = 0;
  for (Eigen::Index n = 0; n < keys.size(); ++n) {
    number_width = std::max(number_width, number(keys.data()[n], p, false).size());
  }
  for (Eigen::Index r = 0; r < keys.rows(); ++r) {
    std::vector<std::string> items;
    for (Eigen::Index c = 0; c < keys.cols(); ++c) {
      items.push_back(fmt::format("{:>{}}", number(keys(r, c), p, false), number_width));
    }
    out += wrap_items(fmt::format("      {}  [", who[static_cast<std::size_t>(r)]), items, ", ",
                      "         ") +
           "]" + (d.first + r == kj ? "   ← this cell's key" : "") + "\n";
  }
  out += vector_line(fmt::format("   {} = ", d.scores->equation), d.scores->values, p);
  out += vector_line(fmt::format("   {} = ", d.weights->equation), d.weights->values, p);
  if (kj > qi) {
    out += wrapped_line(
        fmt::format("   key {} is not in the cache when token {} is decoded: it comes later, and "
                    "the full computation's mask gives it the weight {} = {}",
                    j, i, torch_cell, number(trace_weight, p, false)),
        "     ");
  } else if (kj < d.first) {
    out += wrapped_line(
        fmt::format("   key {} has left the cache: the window of {} keeps tokens {}–{} when "
                    "token {} is decoded, and the full computation's mask gives it the weight "
                    "{} = {}",
                    j, trace.config.window, d.first + 1, i, i, torch_cell,
                    number(trace_weight, p, false)),
        "     ");
  } else {
    const Eigen::Index r = kj - d.first;
    out += wrapped_line(
        fmt::format("   key {} is row {} of the cache: a_t[{}] = {}, and the trace's {} = {}", j,
                    r + 1, r, number(d.weights->values(0, r), p, false), torch_cell,
                    number(trace_weight, p, false)),
        "     ");
  }
  out += vector_line(fmt::format("   {} = ", d.context->equation), d.context->values, p);
  const std::string z_index = torch_index(trace.step(StepKind::kContextVectors, head, batch), {qi});
  out += wrapped_line(fmt::format("   z_t against the trace's context_vectors{}: the largest "
                                  "difference is {}",
                                  z_index,
                                  d.difference == 0.0f ? std::string("0: the same bits")
                                                       : fmt::format("{:.1e}", d.difference)),
                      "     ");
}

}  // namespace attn::render_detail
