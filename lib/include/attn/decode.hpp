#pragma once

// Incremental decoding with a KV cache: the tokens of a causal sequence attended one at a time,
// each new token's query against the keys and values of the tokens before it, kept in a cache
// that grows by one row per token. A model's generate() loop does this; its rows equal the full
// causal computation's.

#include <cstdint>

#include "attn/attention.hpp"
#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// The first position the cache holds while token t (from 0) is decoded: 0, or with a sliding
// window of `window` >= 1 keys, max(0, t − window + 1); `window` 0 is no window.
Eigen::Index cache_start(Eigen::Index t, std::int64_t window = 0);

// The keys and values of the tokens decoded so far, in order, from position `first`.
struct KvCache {
  Matrix keys, values;     // (n, d_k), (n, d_v)
  Eigen::Index first = 0;  // the position of the first row
};

// Appends k_t (1, d_k) and v_t (1, d_v) as the last rows, then drops the rows before position
// `first` (a window's oldest keys). Requires: the widths of the cache's rows.
void cache_append(KvCache& cache, const Matrix& k_t, const Matrix& v_t, Eigen::Index first);

// One new token against the cache.
struct CachedRow {
  Matrix scores;   // s_t = q_t K_cacheᵀ / √d_k, masked keys at −inf: (1, n)
  Matrix weights;  // softmax(s_t): (1, n)
  Matrix z;        // a_t V_cache: (1, d_v)
};

// s_t = q_t K_cacheᵀ, masked_fill(mask_row, −inf) (1 = masked: a padding key), / √d_k; the
// softmax as PyTorch's kernel computes it (a row of −inf follows `masked_rows`); z = a V_cache.
// The same operations in the same order as the full computation's row t.
// Requires: q_t (1, d_k), mask_row (1, n) or empty (nothing masked).
CachedRow attend_cached(const Matrix& q_t, const KvCache& cache, const Matrix& mask_row,
                        std::int64_t d_k, TorchKernel kernel, MaskedRows masked_rows,
                        MatmulKernel matmul = MatmulKernel::kReference);

// The largest |a − b| over the cells where both are finite; a cell where both are nan, or both
// the same infinity, counts as equal; one nan against a number is +inf. Requires: one shape.
float largest_difference(const Matrix& a, const Matrix& b);

}  // namespace attn
