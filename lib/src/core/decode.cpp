// Incremental decoding with a KV cache: the cache and one new token's attention against it.

#include "attn/decode.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attn {

Eigen::Index cache_start(Eigen::Index t, std::int64_t window) {
  if (window <= 0) return 0;
  return std::max<Eigen::Index>(0, t - static_cast<Eigen::Index>(window) + 1);
}

void cache_append(KvCache& cache, const Matrix& k_t, const Matrix& v_t, Eigen::Index first) {
  if (cache.keys.rows() == 0) {
    cache.keys.resize(0, k_t.cols());
    cache.values.resize(0, v_t.cols());
  }
  const Eigen::Index n = cache.keys.rows();
  const Eigen::Index drop = std::clamp<Eigen::Index>(first - cache.first, 0, n + 1);
  Matrix keys(n + 1 - drop, k_t.cols()), values(n + 1 - drop, v_t.cols());
  keys.topRows(n - drop) = cache.keys.bottomRows(n - drop);
  values.topRows(n - drop) = cache.values.bottomRows(n - drop);
  keys.bottomRows(1) = k_t;
  values.bottomRows(1) = v_t;
  cache.keys = std::move(keys);
  cache.values = std::move(values);
  cache.first += drop;
}

CachedRow attend_cached(const Matrix& q_t, const KvCache& cache, const Matrix& mask_row,
                        std::int64_t d_k, TorchKernel kernel, MaskedRows masked_rows,
                        MatmulKernel matmul) {
  CachedRow row;
  const Matrix omega = omega_scores(q_t, cache.keys, 1, matmul);
  row.scores = scale(mask_row.size() == 0 ? omega : apply_mask(omega, mask_row), d_k);
  row.weights = softmax_rows(row.scores, kernel, masked_rows);
  row.z = context_vectors(row.weights, cache.values, 1, matmul);
  return row;
}

float largest_difference(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    throw std::logic_error("largest_difference: the shapes differ");
  }
  float worst = 0.0f;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    const float x = a.data()[i], y = b.data()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(x) && x == y) continue;
    const float d = std::fabs(x - y);
    if (std::isnan(d)) return std::numeric_limits<float>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace attn
