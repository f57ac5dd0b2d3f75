#pragma once

// --query's path with --decode and --online-softmax: the token decoded against the KV cache, and
// its row of FlashAttention's online softmax, from the trace's steps.

#include <optional>
#include <string>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn::render_detail {

// Appends token qi (from 0) of one head of one batch item as incremental decoding computes it:
// its q_t, k_t and v_t, the cache, its row of scores and weights against the cache, z_t, and z_t
// against the full computation's row. Requires a trace with --decode's steps.
void append_decoded_path(std::string& out, const Trace& trace, std::optional<int> head,
                         std::optional<int> batch, Eigen::Index qi, const TextOptions& options);

// Appends row qi of one head of one batch item as the online softmax computes it: m, c and ℓ
// after each tile, O, Z = O / ℓ, and Z against the ordinary softmax's row. Requires a trace with
// --online-softmax's steps.
void append_online_path(std::string& out, const Trace& trace, std::optional<int> head,
                        std::optional<int> batch, Eigen::Index qi, const TextOptions& options);

}  // namespace attn::render_detail
