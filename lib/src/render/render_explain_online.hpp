#pragma once

// --explain with --online-softmax: one query row's online softmax, tile by tile; with --decode:
// the cell as the decoder computes it, against the KV cache.

#include <optional>
#include <string>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn::render_detail {

// Appends the working of row qi (from 0) of one head of one batch item, as FlashAttention
// computes it over tiles of trace.config.online_softmax keys.
void explain_online_row(std::string& out, const Trace& trace, std::optional<int> head,
                        std::optional<int> batch, Eigen::Index qi, const TextOptions& options);

// Appends the working of cell (qi, kj) (from 0) of one head of one batch item as incremental
// decoding computes it: token qi's q_t against the cache when it is decoded, or why key kj is not
// in that cache (a later token, or one the window has dropped).
void explain_decoded_cell(std::string& out, const Trace& trace, std::optional<int> head,
                          std::optional<int> batch, Eigen::Index qi, Eigen::Index kj,
                          const TextOptions& options);

}  // namespace attn::render_detail
