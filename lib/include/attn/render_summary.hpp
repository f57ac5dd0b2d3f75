#pragma once

// A trace for long inputs, without walls of numbers: shapes, statistics and checksums per step,
// and the most-attended tokens of the first queries.

#include <cstdint>
#include <string>

#include "attn/trace.hpp"

namespace attn {

// One line per step — id, head and sentence, shape, min, max, mean (of the finite values), the
// number of non-finite values, and the FNV-1a 64-bit checksum of its float32 bits, which is the
// same on every machine — then for each attention_weights step the largest row-sum residual
// |Σ_j A_ij − 1| and, for the first `queries` query tokens, their three most-attended keys.
std::string render_summary(const Trace& trace, std::int64_t queries = 5);

// FNV-1a 64 over the little-endian bytes of the float32 values, row-major.
std::uint64_t fnv1a64(const Matrix& m);

}  // namespace attn
