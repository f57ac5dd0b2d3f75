// The statistics' vector kernels: each row's min, max and sum of its finite values, and whether
// values are all finite, on the widest vectors the CPU runs, with the same numbers on every path.

#include "statistics_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "attn/simd.hpp"
#include "attn/statistics.hpp"

namespace attn {

namespace statistics_detail {

namespace {

#if defined(__x86_64__)
// The end of a row's finite path on 8 lanes: the lanes' min and max, the values from j on (fewer
// than 8), and the eight partial sums added in order. False if a value is not finite: one of
// those from j on, or one before j, which made its lane's partial sum inf or nan (a partial sum
// of finite floats in double cannot overflow, and a sum that is inf or nan stays so).
bool finish_row_stats(const float* v, Eigen::Index j, Eigen::Index n, const float (&l8)[8],
                      const float (&h8)[8], double (&part)[8], Stats& st) {
  for (const double p : part) {
    if (!std::isfinite(p)) return false;
  }
  float lo_f = l8[0], hi_f = h8[0];
  for (int l = 1; l < 8; ++l) lo_f = std::min(lo_f, l8[l]), hi_f = std::max(hi_f, h8[l]);
  for (int l = 0; j < n; ++j, ++l) {
    if (!(std::fabs(v[j]) <= FLT_MAX)) return false;
    lo_f = std::min(lo_f, v[j]), hi_f = std::max(hi_f, v[j]);
    part[l] += static_cast<double>(v[j]);
  }
  st.lo = static_cast<double>(lo_f) + 0.0, st.hi = static_cast<double>(hi_f) + 0.0;  // −0 → 0
  st.finite = n;
  for (double p : part) st.sum += p;
  return true;
}

// row_stats's finite path on 8 lanes: the same min, max and eight partial sums (lane j % 8).
// No value is checked in the loop: a value that is not finite shows in its lane's partial sum.
// Returns false, having changed nothing, if a value is not finite.
__attribute__((target("avx2"))) bool finite_row_stats_avx2(const float* v, Eigen::Index n,
                                                           Stats& st) {
  __m256 lo = _mm256_set1_ps(v[0]), hi = lo;
  __m256d part0 = _mm256_setzero_pd(), part1 = _mm256_setzero_pd();  // lanes 0-3, 4-7
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(v + j);
    lo = _mm256_min_ps(lo, x), hi = _mm256_max_ps(hi, x);
    part0 = _mm256_add_pd(part0, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    part1 = _mm256_add_pd(part1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  alignas(32) float l8[8], h8[8];
  alignas(32) double part[8];
  _mm256_store_ps(l8, lo), _mm256_store_ps(h8, hi);
  _mm256_store_pd(part, part0), _mm256_store_pd(part + 4, part1);
  Stats out;
  if (!finish_row_stats(v, j, n, l8, h8, part, out)) return false;
  st = out;
  return true;
}

// Values 0-7 (kHalf 0) or 8-15 (kHalf 1) of x.
template <int kHalf>
__attribute__((target("avx512f"), always_inline)) inline __m256 half_of(__m512 x) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(x), kHalf));
}

// The same on AVX-512, 16 values of each row a step: their min and max on 16 lanes, and each
// half added in turn to the row's eight partial sums in one register (values j .. j + 7, then
// j + 8 .. j + 15: lane j % 8's order), for kRows rows `ld` floats apart at once: each row's sums
// are chains of additions in order, which one row's loop waits on, and four rows' chains side by
// side keep the adder busy. Returns false, having changed nothing, if a value is not finite.
template <int kRows>
__attribute__((target("avx512f"))) bool finite_rows_stats_avx512(const float* v, Eigen::Index ld,
                                                                 Eigen::Index n, Stats* st) {
  __m512 lo[kRows], hi[kRows];
  __m512d part[kRows];  // lanes 0-7
  for (int r = 0; r < kRows; ++r) {
    lo[r] = hi[r] = _mm512_set1_ps(v[r * ld]);
    part[r] = _mm512_setzero_pd();
  }
  Eigen::Index j = 0;
  for (; j + 16 <= n; j += 16) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      // The masked forms, with every lane: GCC 12 warns of the plain ones' undefined inputs.
      const __m512 x = _mm512_loadu_ps(v + r * ld + j);
      lo[r] = _mm512_maskz_min_ps(0xffff, lo[r], x), hi[r] = _mm512_maskz_max_ps(0xffff, hi[r], x);
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<0>(x)));
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<1>(x)));
    }
  }
  if (j + 8 <= n) {
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_maskz_loadu_ps(0x00ff, v + r * ld + j);  // values j .. j + 7
      lo[r] = _mm512_mask_min_ps(lo[r], 0x00ff, lo[r], x);
      hi[r] = _mm512_mask_max_ps(hi[r], 0x00ff, hi[r], x);
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<0>(x)));
    }
    j += 8;
  }
  Stats out[kRows];
  for (int r = 0; r < kRows; ++r) {
    alignas(64) float l16[16], h16[16];
    alignas(64) double p8[8];
    _mm512_store_ps(l16, lo[r]), _mm512_store_ps(h16, hi[r]);
    _mm512_store_pd(p8, part[r]);
    float l8[8], h8[8];
    for (int l = 0; l < 8; ++l) {
      l8[l] = std::min(l16[l], l16[l + 8]), h8[l] = std::max(h16[l], h16[l + 8]);
    }
    if (!finish_row_stats(v + r * ld, j, n, l8, h8, p8, out[r])) return false;
  }
  for (int r = 0; r < kRows; ++r) st[r] = out[r];
  return true;
}
#endif

}  // namespace

Stats row_stats(const float* v, Eigen::Index n) {
  Stats st;
#if defined(__x86_64__)
  if (n > 0 && use_avx2()) {
    if (finite_row_stats_avx2(v, n, st)) return st;
    st = Stats{};
  }
#endif
  bool all_finite = true;
  for (Eigen::Index j = 0; j < n; ++j) all_finite = all_finite && std::fabs(v[j]) <= FLT_MAX;
  if (all_finite && n > 0) {
    float lo = v[0], hi = v[0];
    double part[8] = {};
    Eigen::Index j = 0;
    for (; j + 8 <= n; j += 8) {
      for (int l = 0; l < 8; ++l) {
        lo = v[j + l] < lo ? v[j + l] : lo;
        hi = v[j + l] > hi ? v[j + l] : hi;
        part[l] += static_cast<double>(v[j + l]);
      }
    }
    for (int l = 0; j < n; ++j, ++l) {
      lo = v[j] < lo ? v[j] : lo;
      hi = v[j] > hi ? v[j] : hi;
      part[l] += static_cast<double>(v[j]);
    }
    st.lo = static_cast<double>(lo) + 0.0, st.hi = static_cast<double>(hi) + 0.0;  // −0 → 0
    st.finite = n;
    for (double p : part) st.sum += p;
    return st;
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!std::isfinite(v[j])) continue;
    st.lo = std::min(st.lo, static_cast<double>(v[j]));
    st.hi = std::max(st.hi, static_cast<double>(v[j]));
    st.sum += static_cast<double>(v[j]), ++st.finite;
  }
  return st;
}

#if defined(__x86_64__)
bool finite_rows4_stats(const float* v, Eigen::Index ld, Eigen::Index n, Stats* st) {
  return finite_rows_stats_avx512<4>(v, ld, n, st);
}
#endif

}  // namespace statistics_detail

namespace {

// A value is finite unless its exponent bits are all ones, and then (and only then) adding 1 to
// the exponent carries into the sign bit: integer and, add and or, with no branch per value.
bool all_finite_plain(const float* v, std::size_t n) {
  std::uint32_t carried = 0;
  for (std::size_t i = 0; i < n; ++i) {
    carried |= (std::bit_cast<std::uint32_t>(v[i]) & 0x7f800000u) + 0x00800000u;
  }
  return (carried & 0x80000000u) == 0;
}

#if defined(__x86_64__)
// The same, 64 floats a step in four independent chains, then the rest one at a time.
__attribute__((target("avx512f"))) bool all_finite_avx512(const float* v, std::size_t n) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), one = _mm512_set1_epi32(0x00800000);
  __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      const __m512i x = _mm512_loadu_si512(v + i + 16 * k);
      acc[k] = _mm512_or_si512(acc[k], _mm512_add_epi32(_mm512_and_si512(x, exponent), one));
    }
  }
  const __m512i all =
      _mm512_or_si512(_mm512_or_si512(acc[0], acc[1]), _mm512_or_si512(acc[2], acc[3]));
  if (_mm512_test_epi32_mask(all, _mm512_set1_epi32(INT32_MIN)) != 0) return false;
  return all_finite_plain(v + i, n - i);
}

__attribute__((target("avx2"))) bool all_finite_avx2(const float* v, std::size_t n) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000), one = _mm256_set1_epi32(0x00800000);
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      const __m256i x = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(v + i + 8 * static_cast<unsigned>(k)));
      acc[k] = _mm256_or_si256(acc[k], _mm256_add_epi32(_mm256_and_si256(x, exponent), one));
    }
  }
  const __m256i all =
      _mm256_or_si256(_mm256_or_si256(acc[0], acc[1]), _mm256_or_si256(acc[2], acc[3]));
  if (_mm256_movemask_ps(_mm256_castsi256_ps(all)) != 0) return false;
  return all_finite_plain(v + i, n - i);
}
#endif

}  // namespace

bool all_finite(const float* v, std::size_t n) {
#if defined(__x86_64__)
  if (use_avx512()) return all_finite_avx512(v, n);
  if (use_avx2()) return all_finite_avx2(v, n);
#endif
  return all_finite_plain(v, n);
}

}  // namespace attn
