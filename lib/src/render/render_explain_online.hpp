#pragma once

// --explain with --online-softmax: one query row's online softmax, tile by tile.

#include <optional>
#include <string>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn::render_detail {

// Appends the working of row qi (from 0) of one head of one batch item, as FlashAttention
// computes it over tiles of trace.config.online_softmax keys.
void explain_online_row(std::string& out, const Trace& trace, std::optional<int> head,
                        std::optional<int> batch, Eigen::Index qi, const TextOptions& options);

}  // namespace attn::render_detail
