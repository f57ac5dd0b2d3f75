// Private to statistics.cpp and statistics_kernels.cpp: the vector kernels of the statistics.
#pragma once

#include <cmath>
#include <cstdint>

#include "attn/matrix.hpp"

namespace attn::statistics_detail {

// The finite values' min, max and sum, and their count.
struct Stats {
  double lo = INFINITY, hi = -INFINITY, sum = 0.0;
  std::int64_t finite = 0;
};

// One row's statistics. When every value is finite: the min, the max, and the sum as eight
// partial sums (lane j % 8) added at the end, so that the vectorised path gives the same numbers;
// otherwise the plain loop over the finite values.
Stats row_stats(const float* v, Eigen::Index n);

#if defined(__x86_64__)
// The same for four rows `ld` floats apart at once, on AVX-512 (the CPU must have it): each row's
// sums the same chains of additions as row_stats's. Returns false, having changed nothing, if a
// value is not finite.
bool finite_rows4_stats(const float* v, Eigen::Index ld, Eigen::Index n, Stats* st);

// The same for two rows on AVX2 (the CPU must have AVX2 and FMA).
bool finite_rows2_stats(const float* v, Eigen::Index ld, Eigen::Index n, Stats* st);
#endif

}  // namespace attn::statistics_detail
