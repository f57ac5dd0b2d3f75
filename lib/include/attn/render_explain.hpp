#pragma once

// One attention weight explained: the arithmetic that makes it, with the trace's numbers.

#include <cstdint>
#include <string>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn {

// The arithmetic behind attention_weights[i, j] (1-based, query i and key j), for every head and
// every sentence of a batch: the dot product q⁽ⁱ⁾ · k⁽ʲ⁾ term by term, the scaling by √d_k, the
// mask, the row's maximum, each exponential exp(s − m), their sum, and the division, ending in
// the value the trace prints.
// Requires: 1 <= i <= T and 1 <= j <= T_k. Throws Error naming the value otherwise.
std::string render_explain(const Trace& trace, std::int64_t i, std::int64_t j,
                           const TextOptions& options);

}  // namespace attn
