// PyTorch's sums, added in ATen's orders: a softmax row's (vec::reduce_all), tensor.sum's
// cascade (SumKernel.cpp) of a row, of a whole tensor and of columns, and the dot product's.
#include "torch_sums.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATTN_X86 1
#endif

#include "attn/exact_fma.hpp"
#include "attn/simd.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

namespace torch_detail {

#ifdef ATTN_X86
// The sum of e_0 … e_{n−1} as row_sum adds it for kAvx2: 8 lanes (lane j % 8), the tail added
// to the first lanes, then the tree of shuffles.
__attribute__((target("avx2,fma"))) float lane_sum_avx2(const float* e, Eigen::Index n) {
  if (n < 8) {
    float sum = e[0];
    for (Eigen::Index i = 1; i < n; ++i) sum = sum + e[i];
    return sum;
  }
  return lane_sum_from_avx2(e, e, 8, n);
}

__attribute__((target("avx2,fma"))) float lane_sum_from_avx2(const float* lanes, const float* e,
                                                             Eigen::Index i, Eigen::Index n) {
  __m256 acc = _mm256_loadu_ps(lanes);
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(e + i));
  alignas(32) float lane[8];
  _mm256_store_ps(lane, acc);
  for (int l = 0; i < n; ++i, ++l) lane[l] = lane[l] + e[i];
  const float h0 = lane[0] + lane[4], h1 = lane[1] + lane[5];
  const float h2 = lane[2] + lane[6], h3 = lane[3] + lane[7];
  return (h0 + h2) + (h1 + h3);
}

#endif

// The sum of a softmax row as ATen's vec::reduce_all computes it with 8-lane vectors: rows
// shorter than a vector are summed in order; longer rows are summed lane by lane (lane j % 8),
// then the 8 lanes are combined: in order by the default kernel, as a tree of shuffles by AVX2.
float row_sum(const float* e, Eigen::Index n, TorchKernel kernel) {
  constexpr Eigen::Index kLanes = 8;
  if (n == 0) return 0.0f;
  if (n < kLanes) {
    float sum = e[0];
    for (Eigen::Index j = 1; j < n; ++j) sum = sum + e[j];
    return sum;
  }
  float lane[kLanes];
  for (Eigen::Index l = 0; l < kLanes; ++l) lane[l] = e[l];
  for (Eigen::Index j = kLanes; j < n; ++j) lane[j % kLanes] = lane[j % kLanes] + e[j];
  if (kernel == TorchKernel::kDefault) {
    float sum = lane[0];
    for (Eigen::Index l = 1; l < kLanes; ++l) sum = sum + lane[l];
    return sum;
  }
  // _mm256_permute2f128_ps (lane l + lane l^4), then shuffles 0x4E (l^2) and 0xB1 (l^1).
  const float h0 = lane[0] + lane[4], h1 = lane[1] + lane[5];
  const float h2 = lane[2] + lane[6], h3 = lane[3] + lane[7];
  return (h0 + h2) + (h1 + h3);
}

}  // namespace torch_detail

using torch_detail::row_sum;

namespace {

// The levels of ATen's cascade_sum over `count` items: blocks of 2^power items (at least 16),
// each of the 4 levels adding a block of the level below; a level's block is full when the count
// so far is a multiple of its size.
struct CascadeLevels {
  static constexpr std::int64_t kLevels = 4;
  std::int64_t power = 0, step = 0, mask = 0;
  explicit CascadeLevels(std::int64_t count) {
    std::int64_t ceil_log2 = 0;
    while ((std::int64_t{1} << ceil_log2) < count) ++ceil_log2;
    power = std::max<std::int64_t>(4, ceil_log2 / kLevels);
    step = std::int64_t{1} << power;
    mask = step - 1;
  }
  // Whether, after i items, level j's block still has room (the carry stops there).
  bool open(std::int64_t i, std::int64_t j) const { return (i & (mask << (j * power))) != 0; }
};

// tensor.sum(dim=-1) of one contiguous row, added in the order of ATen's cascade_sum
// (SumKernel.cpp). row_sum views the row as (-1, 4): each of the 4 columns is summed in a cascade
// of up to 4 levels of blocks, the leftover elements go into column 0, then the columns are added
// in order. Rows of 8 or more are first summed as 8-lane vectors the same way, then the leftover
// elements, then the 8 lanes.
template <typename Acc, typename Load>
Acc cascade_row_sum(std::int64_t size, Load load) {
  constexpr std::int64_t kIlp = 4, kLevels = CascadeLevels::kLevels;
  const std::int64_t rows = size / kIlp;
  const CascadeLevels levels(rows);
  Acc acc[kLevels][kIlp] = {};
  std::int64_t i = 0;
  for (; i + levels.step <= rows;) {
    for (std::int64_t j = 0; j < levels.step; ++j) {
      for (std::int64_t k = 0; k < kIlp; ++k) acc[0][k] = acc[0][k] + load((i + j) * kIlp + k);
    }
    i += levels.step;
    for (std::int64_t j = 1; j < kLevels; ++j) {
      for (std::int64_t k = 0; k < kIlp; ++k) {
        acc[j][k] = acc[j][k] + acc[j - 1][k];
        acc[j - 1][k] = Acc{};
      }
      if (levels.open(i, j)) break;
    }
  }
  for (; i < rows; ++i) {
    for (std::int64_t k = 0; k < kIlp; ++k) acc[0][k] = acc[0][k] + load(i * kIlp + k);
  }
  for (std::int64_t j = 1; j < kLevels; ++j) {
    for (std::int64_t k = 0; k < kIlp; ++k) acc[0][k] = acc[0][k] + acc[j][k];
  }
  for (std::int64_t t = rows * kIlp; t < size; ++t) acc[0][0] = acc[0][0] + load(t);
  for (std::int64_t k = 1; k < kIlp; ++k) acc[0][0] = acc[0][0] + acc[0][k];
  return acc[0][0];
}

// One column's sum over `size` rows as ATen's multi_row_sum adds each of its columns: in order
// into a cascade of up to 4 levels of blocks (of 16 rows or more), without the (-1, 4) view.
template <typename Load>
float cascade_column_sum(std::int64_t size, Load load) {
  constexpr std::int64_t kLevels = CascadeLevels::kLevels;
  const CascadeLevels levels(size);
  float acc[kLevels] = {};
  std::int64_t i = 0;
  for (; i + levels.step <= size;) {
    for (std::int64_t j = 0; j < levels.step; ++j, ++i) acc[0] = acc[0] + load(i);
    for (std::int64_t j = 1; j < kLevels; ++j) {
      acc[j] = acc[j] + acc[j - 1];
      acc[j - 1] = 0.0f;
      if (levels.open(i, j)) break;
    }
  }
  for (; i < size; ++i) acc[0] = acc[0] + load(i);
  for (std::int64_t j = 1; j < kLevels; ++j) acc[0] = acc[0] + acc[j];
  return acc[0];
}

// Eight float lanes, added lane by lane.
struct Lanes {
  std::array<float, 8> v{};
  friend Lanes operator+(const Lanes& a, const Lanes& b) {
    Lanes r;
    for (std::size_t l = 0; l < 8; ++l) r.v[l] = a.v[l] + b.v[l];
    return r;
  }
};

#ifdef ATTN_X86
// Vector i of e: values 8 i .. 8 i + 7.
__attribute__((target("avx2"), always_inline)) inline __m256 load8(const float* e, std::int64_t i) {
  return _mm256_loadu_ps(e + i * 8);
}

// torch_sum of 8 or more values on AVX2 registers: the cascade of 8-lane vectors that
// cascade_row_sum<Lanes> adds, lane by lane in the same order, then the values left over and the
// lanes. The generic form's lanes went through memory, a float at a time: the summary's row sums
// of the weights took 1.0-1.3 % of long runs' samples on the AVX-512 path, and now 0.4 %.
__attribute__((target("avx2"))) float torch_sum_avx2(const float* e, std::int64_t n) {
  constexpr std::int64_t kIlp = 4, kLevels = CascadeLevels::kLevels;
  const std::int64_t vectors = n / 8, rows = vectors / kIlp;
  const CascadeLevels levels(rows);
  __m256 acc[kLevels][kIlp];
  for (auto& level : acc) {
    for (__m256& a : level) a = _mm256_setzero_ps();
  }
  std::int64_t i = 0;
  for (; i + levels.step <= rows;) {
    for (std::int64_t j = 0; j < levels.step; ++j) {
#pragma GCC unroll 4
      for (std::int64_t k = 0; k < kIlp; ++k) {
        acc[0][k] = _mm256_add_ps(acc[0][k], load8(e, (i + j) * kIlp + k));
      }
    }
    i += levels.step;
    for (std::int64_t j = 1; j < kLevels; ++j) {
      for (std::int64_t k = 0; k < kIlp; ++k) {
        acc[j][k] = _mm256_add_ps(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = _mm256_setzero_ps();
      }
      if (levels.open(i, j)) break;
    }
  }
  for (; i < rows; ++i) {
    for (std::int64_t k = 0; k < kIlp; ++k) {
      acc[0][k] = _mm256_add_ps(acc[0][k], load8(e, i * kIlp + k));
    }
  }
  for (std::int64_t j = 1; j < kLevels; ++j) {
    for (std::int64_t k = 0; k < kIlp; ++k) acc[0][k] = _mm256_add_ps(acc[0][k], acc[j][k]);
  }
  for (std::int64_t t = rows * kIlp; t < vectors; ++t) {
    acc[0][0] = _mm256_add_ps(acc[0][0], load8(e, t));
  }
  for (std::int64_t k = 1; k < kIlp; ++k) acc[0][0] = _mm256_add_ps(acc[0][0], acc[0][k]);
  alignas(32) float lane[8];
  _mm256_store_ps(lane, acc[0][0]);
  float sum = 0.0f;
  for (std::int64_t k = vectors * 8; k < n; ++k) sum = sum + e[k];
  for (const float l : lane) sum = sum + l;
  return sum;
}
#endif

}  // namespace

float torch_sum(const float* e, std::int64_t n) {
  if (n < 8) return cascade_row_sum<float>(n, [e](std::int64_t i) { return e[i]; });
#ifdef ATTN_X86
  if (use_avx2()) return torch_sum_avx2(e, n);
#endif
  const std::int64_t vectors = n / 8;
  const Lanes acc = cascade_row_sum<Lanes>(vectors, [e](std::int64_t i) {
    Lanes l;
    for (std::size_t k = 0; k < 8; ++k) l.v[k] = e[i * 8 + static_cast<std::int64_t>(k)];
    return l;
  });
  float sum = 0.0f;
  for (std::int64_t k = vectors * 8; k < n; ++k) sum = sum + e[k];
  for (std::size_t k = 0; k < 8; ++k) sum = sum + acc.v[k];
  return sum;
}

float torch_reduce_all_sum(const float* e, Eigen::Index n, TorchKernel kernel) {
  return row_sum(e, n, kernel);
}

Matrix torch_sum_rows(const Matrix& g) {
  const Eigen::Index n = g.rows(), m = g.cols();
  Matrix s(1, m);  // (1, m)
  // Column j's sum, as ATen's row_sum (the column viewed as (-1, 4)) or multi_row_sum adds it.
  auto by_fours = [&](Eigen::Index j) {
    return cascade_row_sum<float>(n, [&](std::int64_t i) { return g(i, j); });
  };
  auto in_blocks = [&](Eigen::Index j) {
    return cascade_column_sum(n, [&](std::int64_t i) { return g(i, j); });
  };
  Eigen::Index j = 0;
  if (m == 1) {
    s(0, 0) = torch_sum(g.data(), n);  // a contiguous column: the inner reduction
    j = 1;
  } else {
    // vectorized_outer_sum (8 columns or more): groups of 4 vectors of 8 columns, then vectors of
    // 8, then one by one; scalar_outer_sum (fewer): groups of 4 columns, then one by one.
    const Eigen::Index grouped = m >= 8 ? m / 32 * 32 : m / 4 * 4;
    for (; j < grouped; ++j) s(0, j) = in_blocks(j);
  }
  for (; j < m; ++j) s(0, j) = by_fours(j);
  // The output is filled with 0 first, and the sum added to it.
  for (Eigen::Index k = 0; k < m; ++k) s(0, k) = 0.0f + s(0, k);
  return s;
}

#ifdef ATTN_X86
namespace {

// torch_dot_reduce_all's 8 lanes (n >= 8) in one vector: the first 8 products, then each later
// vector of 8 fused into the lanes (fma) or its products added; the tail, lane by lane, the same.
// Each lane is the plain loop's chain, in its order: the same bits.
__attribute__((target("avx2,fma"))) void dot_lanes_avx2(const float* x, const float* y,
                                                        Eigen::Index n, bool fused, float* lane) {
  __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(y));
  Eigen::Index j = 8;
  if (fused) {
    for (; j + 8 <= n; j += 8) {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), acc);
    }
  } else {
    for (; j + 8 <= n; j += 8) {
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
    }
  }
  _mm256_storeu_ps(lane, acc);
  for (int l = 0; j < n; ++j, ++l)
    lane[l] = fused ? std::fma(x[j], y[j], lane[l]) : lane[l] + x[j] * y[j];
}

}  // namespace
#endif

float torch_dot_reduce_all(const float* x, const float* y, Eigen::Index n, TorchKernel kernel) {
  constexpr Eigen::Index kLanes = 8;
  if (n == 0) return 0.0f;
  if (n < kLanes) {
    float sum = x[0] * y[0];
    for (Eigen::Index j = 1; j < n; ++j) sum = sum + x[j] * y[j];
    return sum;
  }
  float lane[kLanes];
#ifdef ATTN_X86
  // A (4096, 4096) head's rows took 34.5 ms in the plain loop (a library fma per value) and take
  // 2.7-3.6 ms here (AMD EPYC Zen 5, one thread).
  if (use_avx2()) {
    dot_lanes_avx2(x, y, n, kernel == TorchKernel::kAvx2, lane);
    return row_sum(lane, kLanes, kernel);
  }
#endif
  for (Eigen::Index l = 0; l < kLanes; ++l) lane[l] = x[l] * y[l];  // the first vector: x * y
  for (Eigen::Index j = kLanes; j < n; ++j) {
    float& acc = lane[j % kLanes];  // red_fun(acc, map_fun(x, y)), the tail's lanes too
    acc = kernel == TorchKernel::kAvx2 ? exact_fma(x[j], y[j], acc) : acc + x[j] * y[j];
  }
  return row_sum(lane, kLanes, kernel);
}

}  // namespace attn
