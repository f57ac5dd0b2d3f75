#pragma once

// One gradient of the scores explained: the backward pass's arithmetic for dL/dω (i, j).

#include <cstdint>
#include <string>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn {

// The arithmetic behind grad_omega[i, j] (1-based, query i and key j), for every head and every
// sentence of a batch: dL/dA_ij = dL/dZ_i · v_j term by term, the row's r_i = Σ_t dA_it A_it term
// by term, the softmax's backward A_ij (dA_ij − r_i), and the scaling by √d_k (0 when masked),
// ending in the value the trace prints. Requires a trace with the backward pass and
// 1 <= i <= T, 1 <= j <= T_k; throws Error naming the value otherwise.
std::string render_explain_grad(const Trace& trace, std::int64_t i, std::int64_t j,
                                const TextOptions& options);

}  // namespace attn
