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

// A row of n finite values' statistics from its min and max and its eight partial sums (lane
// j % 8), on every path: −0 as 0, and the sums added in order, lane 0 first, from 0.
Stats finite_stats(float lo, float hi, const double (&part)[8], Eigen::Index n) {
  Stats st;
  st.lo = static_cast<double>(lo) + 0.0, st.hi = static_cast<double>(hi) + 0.0;
  st.finite = n;
  for (const double p : part) st.sum += p;
  return st;
}

#if defined(__x86_64__)

// The lanes' least and greatest values: min and max of the two halves, then of pairs.
__attribute__((target("avx2"), always_inline)) inline float least(__m256 x) {
  x = _mm256_min_ps(x, _mm256_permute2f128_ps(x, x, 1));
  x = _mm256_min_ps(x, _mm256_shuffle_ps(x, x, 0x4e));
  return _mm256_cvtss_f32(_mm256_min_ps(x, _mm256_shuffle_ps(x, x, 0xb1)));
}
__attribute__((target("avx2"), always_inline)) inline float greatest(__m256 x) {
  x = _mm256_max_ps(x, _mm256_permute2f128_ps(x, x, 1));
  x = _mm256_max_ps(x, _mm256_shuffle_ps(x, x, 0x4e));
  return _mm256_cvtss_f32(_mm256_max_ps(x, _mm256_shuffle_ps(x, x, 0xb1)));
}

// Whether every lane of a partial sum is finite: p − p is 0 for a finite p, nan for inf or nan.
__attribute__((target("avx2"), always_inline)) inline bool finite_parts(__m256d p0, __m256d p1) {
  const __m256d zero = _mm256_setzero_pd();
  return _mm256_movemask_pd(_mm256_cmp_pd(_mm256_sub_pd(p0, p0), zero, _CMP_EQ_OQ)) == 0xf &&
         _mm256_movemask_pd(_mm256_cmp_pd(_mm256_sub_pd(p1, p1), zero, _CMP_EQ_OQ)) == 0xf;
}

// p + x as fma(x, 1, p), the same sum (x · 1 is exact): on the multiply-add units, which leaves
// the adders to the conversions from float beside it. With two rows at a time on the AVX2 path
// (or four on the AVX-512 path), the conversions and additions, not the chains' latency, set the
// pace, and the rows' statistics ran 29-33 % faster so (values in cache, AMD EPYC Zen 5;
// docs/design.md, Performance); one row's chains wait on the additions' latency, which fma
// lengthens, so one row at a time keeps the plain addition.
template <bool kFma>
__attribute__((target("avx2,fma"), always_inline)) inline __m256d add_pd(__m256d p, __m256d x) {
  return kFma ? _mm256_fmadd_pd(x, _mm256_set1_pd(1.0), p) : _mm256_add_pd(p, x);
}

// row_stats's finite path on 8 lanes, for kRows rows `ld` floats apart at once: the same min,
// max and eight partial sums (lane j % 8) for each row. No value is checked in the loop: a value
// that is not finite shows in its lane's partial sum (a partial sum of finite floats in double
// cannot overflow, and a sum that is inf or nan stays so); the last values, fewer than 8, are
// checked as they are added, each to its lane. Returns false, having changed nothing, if a value
// is not finite.
template <int kRows>
__attribute__((target("avx2,fma"))) bool finite_rows_stats_avx2(const float* v, Eigen::Index ld,
                                                                Eigen::Index n, Stats* st) {
  constexpr bool kFma = kRows > 1;
  __m256 lo[kRows], hi[kRows];
  __m256d part0[kRows], part1[kRows];  // lanes 0-3, 4-7
  for (int r = 0; r < kRows; ++r) {
    lo[r] = hi[r] = _mm256_set1_ps(v[r * ld]);
    part0[r] = part1[r] = _mm256_setzero_pd();
  }
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int r = 0; r < kRows; ++r) {
      const __m256 x = _mm256_loadu_ps(v + r * ld + j);
      lo[r] = _mm256_min_ps(lo[r], x), hi[r] = _mm256_max_ps(hi[r], x);
      part0[r] = add_pd<kFma>(part0[r], _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
      part1[r] = add_pd<kFma>(part1[r], _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    if (!finite_parts(part0[r], part1[r])) return false;
  }
  if (j < n) {  // values j .. n − 1 (j a multiple of 8) to lanes 0 .. n − j − 1; the others 0
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - j)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 in = _mm256_castsi256_ps(lanes);
    for (int r = 0; r < kRows; ++r) {
      const __m256 x = _mm256_maskload_ps(v + r * ld + j, lanes);
      const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
      if (_mm256_movemask_ps(_mm256_cmp_ps(magnitude, _mm256_set1_ps(FLT_MAX), _CMP_LE_OQ)) !=
          0xff) {
        return false;
      }
      lo[r] = _mm256_blendv_ps(lo[r], _mm256_min_ps(lo[r], x), in);
      hi[r] = _mm256_blendv_ps(hi[r], _mm256_max_ps(hi[r], x), in);
      // A lane past n adds 0, which leaves its partial sum as it was (never −0: sums start at 0).
      part0[r] = add_pd<kFma>(part0[r], _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
      part1[r] = add_pd<kFma>(part1[r], _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    alignas(32) double part[8];
    _mm256_store_pd(part, part0[r]), _mm256_store_pd(part + 4, part1[r]);
    st[r] = finite_stats(least(lo[r]), greatest(hi[r]), part, n);
  }
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
// side keep the units busy; the additions are fma(x, 1, p), as add_pd's. The end of each row (its
// last values, fewer than 8, its lanes' min, max and sum) stays in vector registers too: for rows
// of 128 values, as Q, K and V have, the end took longer than the loop when it went through memory
// a lane at a time. Returns false, having changed nothing, if a value is not finite.
template <int kRows>
__attribute__((target("avx512f"))) bool finite_rows_stats_avx512(const float* v, Eigen::Index ld,
                                                                 Eigen::Index n, Stats* st) {
  __m512 lo[kRows], hi[kRows];
  __m512d part[kRows];  // lanes 0-7
  for (int r = 0; r < kRows; ++r) {
    lo[r] = hi[r] = _mm512_set1_ps(v[r * ld]);
    part[r] = _mm512_setzero_pd();
  }
  const __m512d one = _mm512_set1_pd(1.0);
  Eigen::Index j = 0;
  for (; j + 16 <= n; j += 16) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      // The masked forms, with every lane: GCC 12 warns of the plain ones' undefined inputs.
      const __m512 x = _mm512_loadu_ps(v + r * ld + j);
      lo[r] = _mm512_maskz_min_ps(0xffff, lo[r], x), hi[r] = _mm512_maskz_max_ps(0xffff, hi[r], x);
      part[r] = _mm512_fmadd_pd(_mm512_maskz_cvtps_pd(0xff, half_of<0>(x)), one, part[r]);
      part[r] = _mm512_fmadd_pd(_mm512_maskz_cvtps_pd(0xff, half_of<1>(x)), one, part[r]);
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
  const __mmask8 all = 0xff;
  for (int r = 0; r < kRows; ++r) {
    if (_mm512_cmp_pd_mask(_mm512_sub_pd(part[r], part[r]), _mm512_setzero_pd(), _CMP_EQ_OQ) !=
        all) {
      return false;
    }
  }
  if (j < n) {  // values j .. n − 1 (j a multiple of 8) to lanes 0 .. n − j − 1
    const auto rest = static_cast<__mmask16>((1u << (n - j)) - 1u);
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_maskz_loadu_ps(rest, v + r * ld + j);
      if (_mm512_mask_cmp_ps_mask(rest, _mm512_abs_ps(x), _mm512_set1_ps(FLT_MAX), _CMP_LE_OQ) !=
          rest) {
        return false;
      }
      lo[r] = _mm512_mask_min_ps(lo[r], rest, lo[r], x);
      hi[r] = _mm512_mask_max_ps(hi[r], rest, hi[r], x);
      part[r] =
          _mm512_mask_add_pd(part[r], static_cast<__mmask8>(rest), part[r],
                             _mm512_maskz_cvtps_pd(static_cast<__mmask8>(rest), half_of<0>(x)));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    alignas(64) double p8[8];
    _mm512_store_pd(p8, part[r]);
    st[r] = finite_stats(least(_mm256_min_ps(half_of<0>(lo[r]), half_of<1>(lo[r]))),
                         greatest(_mm256_max_ps(half_of<0>(hi[r]), half_of<1>(hi[r]))), p8, n);
  }
  return true;
}
#endif

}  // namespace

Stats row_stats(const float* v, Eigen::Index n) {
  Stats st;
#if defined(__x86_64__)
  if (n > 0 && use_avx2()) {
    if (finite_rows_stats_avx2<1>(v, 0, n, &st)) return st;
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
    return finite_stats(lo, hi, part, n);
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
bool finite_rows2_stats(const float* v, Eigen::Index ld, Eigen::Index n, Stats* st) {
  return finite_rows_stats_avx2<2>(v, ld, n, st);
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
