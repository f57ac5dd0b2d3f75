// The micro-kernels of the blocked matrix product (gemm.cpp): each keeps an MR x NR tile of C in
// registers and adds the products of an A sliver and a packed B sliver, each cell's fmas in k's
// order, so that every kernel gives the same bits (docs/design.md, Performance).

#include "gemm_kernels.hpp"

#include <cmath>
#include <cstdint>

#include "attn/exact_fma.hpp"
#include "attn/simd.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_GEMM_X86 1
#endif

namespace attn::gemm_detail {

namespace {

// The plain kernel, an MR x NR tile: each cell's fmas one at a time (exact_fma: the FMA
// instruction where the CPU has one, else computed in double).
template <int kMr, int kNr>
void kernel_plain(std::int64_t kc, SliverA a, const float* pb, float* c, std::int64_t ldc,
                  bool first) {
  float acc[kMr][kNr] = {};
  for (std::int64_t p = 0; p < kc; ++p, pb += kNr) {
    for (int r = 0; r < kMr; ++r) {
      const float a_rp = a.a[r * a.rs + p * a.cs];
      for (int j = 0; j < kNr; ++j) acc[r][j] = exact_fma(a_rp, pb[j], acc[r][j]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int j = 0; j < kNr; ++j) c[r * ldc + j] = first ? acc[r][j] : c[r * ldc + j] + acc[r][j];
  }
}

#ifdef ATTN_FMA_BY_DOUBLE
// The plain path on x86-64 without FMA in the build: a 4 x 4 tile whose fmas are computed two at
// a time in double with SSE2 (exact_fma.hpp): s = a·b + c (a·b exact), then s rounded to float
// and kept, as a double, for the next step. Lanes where that rounding may not be fmaf's (s halfway
// between two floats, a nonzero subnormal float, beyond FLT_MAX or not finite) are noted as the
// tile goes, with integer tests on s's bits; if any was, the tile is computed again one exact_fma
// at a time (for random inputs, about one tile of 256 steps in 2^17). The library's fmaf, one
// call per cell and step, ran at 0.1 GFLOP/s without FMA (docs/design.md, *The plain path*).
void kernel_sse2(std::int64_t kc, SliverA a, const float* pb, float* c, std::int64_t ldc,
                 bool first) {
  constexpr int kMr = 4, kNr = 4;
  __m128d acc[kMr][2];
  for (auto& row : acc) row[0] = row[1] = _mm_setzero_pd();
  // Per 64-bit lane (high dword, low dword): |s|; s's high dword biased so that the normal
  // floats' magnitudes, [2^-126, FLT_MAX) (high dwords 0x38100000 to 0x47effffe), are the signed
  // integers below kInRange; the low 29 bits of a point halfway between two floats.
  const __m128i kAbs = _mm_set_epi32(0x7fffffff, -1, 0x7fffffff, -1);
  const __m128i kBias = _mm_set_epi32(0x47f00000, 0, 0x47f00000, 0);
  const __m128i kInRange = _mm_set_epi32(static_cast<int>(0x8fdfffffu), INT32_MIN,
                                         static_cast<int>(0x8fdfffffu), INT32_MIN);
  const __m128i kLow29 = _mm_set_epi32(0, 0x1fffffff, 0, 0x1fffffff);
  const __m128i kHalfway = _mm_set_epi32(1, 0x10000000, 1, 0x10000000);
  const __m128i kZero = _mm_setzero_si128();
  __m128i all_in_range = _mm_set1_epi32(-1), any_halfway = _mm_setzero_si128();
  const float* const pb0 = pb;
  for (std::int64_t p = 0; p < kc; ++p, pb += kNr) {
    const __m128 b = _mm_loadu_ps(pb);
    const __m128d b_lo = _mm_cvtps_pd(b), b_hi = _mm_cvtps_pd(_mm_movehl_ps(b, b));
    for (int r = 0; r < kMr; ++r) {
      const __m128d av = _mm_set1_pd(static_cast<double>(a.a[r * a.rs + p * a.cs]));
      for (int h = 0; h < 2; ++h) {
        const __m128d s = _mm_add_pd(_mm_mul_pd(av, h == 0 ? b_lo : b_hi), acc[r][h]);
        const __m128i x = _mm_and_si128(_mm_castpd_si128(s), kAbs);
        const __m128i in_range = _mm_or_si128(_mm_cmpgt_epi32(kInRange, _mm_add_epi32(x, kBias)),
                                              _mm_cmpeq_epi32(x, kZero));
        all_in_range = _mm_and_si128(all_in_range, in_range);  // high dwords
        any_halfway =                                          // low dwords
            _mm_or_si128(any_halfway, _mm_cmpeq_epi32(_mm_and_si128(x, kLow29), kHalfway));
        acc[r][h] = _mm_cvtps_pd(_mm_cvtpd_ps(s));
      }
    }
  }
  // Bits 1 and 3: the high dwords; 0 and 2: the low ones.
  const bool exact = (_mm_movemask_ps(_mm_castsi128_ps(all_in_range)) & 0xa) == 0xa &&
                     (_mm_movemask_ps(_mm_castsi128_ps(any_halfway)) & 0x5) == 0;
  if (!exact) return kernel_plain<kMr, kNr>(kc, a, pb0, c, ldc, first);
  for (int r = 0; r < kMr; ++r) {
    const __m128 v = _mm_movelh_ps(_mm_cvtpd_ps(acc[r][0]), _mm_cvtpd_ps(acc[r][1]));
    float* out = c + r * ldc;
    _mm_storeu_ps(out, first ? v : _mm_add_ps(_mm_loadu_ps(out), v));
  }
}
#endif

#ifdef ATTN_GEMM_X86
// One step of the 6 x 16 product: acc(r, :) = fma(a(r, p), b(p, :), acc(r, :)) for the 6 rows;
// rows 0-2 at a0, a0 + rs, a0 + 2 rs, rows 3-5 the same from a3; b(p, :) at pb.
__attribute__((target("avx2,fma"), always_inline)) inline void avx2_step(
    __m256 (&acc)[6][2], const float* a0, const float* a3, std::int64_t rs, const float* pb) {
  const __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8);
  const float* rows[2] = {a0, a3};
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r) {
    const __m256 av = _mm256_broadcast_ss(rows[r / 3] + (r % 3) * rs);
    acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
    acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
  }
}

// One step of avx2_16_steps, step d of the 16: the B row (at byte d * 64 of the sliver) into
// ymm12 and ymm13, then for each row r, a(r, p) (at byte d * 4 of the row) broadcast into ymm14
// and acc(r, :) = fma(a(r, p), b(p, :), acc(r, :)), acc(r, :) in ymm(2r) and ymm(2r + 1).
// clang-format off
#define ATTN_AVX2_ROW(d, row, c0, c1)               \
  "vbroadcastss " #d "*4" row ", %%ymm14\n\t"       \
  "vfmadd231ps %%ymm12, %%ymm14, %%ymm" c0 "\n\t"   \
  "vfmadd231ps %%ymm13, %%ymm14, %%ymm" c1 "\n\t"
#define ATTN_AVX2_STEP(d)                           \
  "vmovups " #d "*64(%[pb]), %%ymm12\n\t"           \
  "vmovups " #d "*64+32(%[pb]), %%ymm13\n\t"        \
  ATTN_AVX2_ROW(d, "(%[a0])", "0", "1")             \
  ATTN_AVX2_ROW(d, "(%[a0],%[rs],1)", "2", "3")     \
  ATTN_AVX2_ROW(d, "(%[a0],%[rs],2)", "4", "5")     \
  ATTN_AVX2_ROW(d, "(%[a3])", "6", "7")             \
  ATTN_AVX2_ROW(d, "(%[a3],%[rs],1)", "8", "9")     \
  ATTN_AVX2_ROW(d, "(%[a3],%[rs],2)", "10", "11")
// clang-format on

// avx2_step for 16 * `blocks` steps, A row-major (cs = 1) from a0, B from pb, the accumulators
// kept in ymm0-11 throughout. Written out so that each step is 20 instructions with no address
// arithmetic or spilled accumulator between them: as C++, GCC 12 spilled three accumulators to
// the stack in each 16 steps and spent a `lea` on most rows' addresses. The same fmas in the same
// order. Each 16 steps also fetch a line of each of the next sliver's rows into L2, as
// kernel_avx2 does, and the next line of each of this sliver's own rows into L1, the line the
// next 16 steps read (docs/design.md, Performance: the two measured together, 2-3 % faster where
// A's rows come from L2, the same elsewhere).
// clang-format off
#define ATTN_AVX2_LOOP                                                                        \
      "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"                                                     \
      "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"                                                     \
      "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"                                                     \
      "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"                                                     \
      "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"                                                     \
      "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"                                                     \
      "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"                                                     \
      "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"                                                     \
      "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"                                                     \
      "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"                                                     \
      "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"                                                  \
      "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"                                                  \
      "1:\n\t"                                                                                \
      /* the next sliver's rows: a3 + 3 rs to a3 + 8 rs */ "lea (%[a3],%[rs],2), %[next]\n\t" \
      "add %[rs], %[next]\n\t"                                                                \
      "prefetcht1 (%[next])\n\t"                                                              \
      "prefetcht1 (%[next],%[rs],1)\n\t"                                                      \
      "prefetcht1 (%[next],%[rs],2)\n\t"                                                      \
      "lea (%[next],%[rs],2), %[next]\n\t"                                                    \
      "add %[rs], %[next]\n\t"                                                                \
      "prefetcht1 (%[next])\n\t"                                                              \
      "prefetcht1 (%[next],%[rs],1)\n\t"                                                      \
      "prefetcht1 (%[next],%[rs],2)\n\t"                                                      \
      "prefetcht0 64(%[a0])\n\t"                                                              \
      "prefetcht0 64(%[a0],%[rs],1)\n\t"                                                      \
      "prefetcht0 64(%[a0],%[rs],2)\n\t"                                                      \
      "prefetcht0 64(%[a3])\n\t"                                                              \
      "prefetcht0 64(%[a3],%[rs],1)\n\t"                                                      \
      "prefetcht0 64(%[a3],%[rs],2)\n\t"                                                      \
      ATTN_AVX2_STEP(0) ATTN_AVX2_STEP(1) ATTN_AVX2_STEP(2) ATTN_AVX2_STEP(3)                 \
      ATTN_AVX2_STEP(4) ATTN_AVX2_STEP(5) ATTN_AVX2_STEP(6) ATTN_AVX2_STEP(7)                 \
      ATTN_AVX2_STEP(8) ATTN_AVX2_STEP(9) ATTN_AVX2_STEP(10) ATTN_AVX2_STEP(11)               \
      ATTN_AVX2_STEP(12) ATTN_AVX2_STEP(13) ATTN_AVX2_STEP(14) ATTN_AVX2_STEP(15)             \
      "add $64, %[a0]\n\t"                                                                    \
      "add $64, %[a3]\n\t"                                                                    \
      "add $1024, %[pb]\n\t"                                                                  \
      "dec %[blocks]\n\t"                                                                     \
      "jnz 1b\n\t"
// The 6 x 16 sums into `out`, rows `ld` floats apart: stored, or (kAdd) added to what is there,
// out(r, :) = out(r, :) + acc(r, :), as kernel_avx2 merges a later block of k. From the registers,
// with no copy through memory between: Q Kᵀ (k = 128) makes a tile in 128 steps.
#define ATTN_AVX2_OUT_ROW(at, c0, c1, add)              \
  add("0" at, c0) "vmovups %%ymm" c0 ", 0" at "\n\t"    \
  add("32" at, c1) "vmovups %%ymm" c1 ", 32" at "\n\t"
#define ATTN_AVX2_ADD(at, c) "vaddps " at ", %%ymm" c ", %%ymm" c "\n\t"
#define ATTN_AVX2_KEEP(at, c)
#define ATTN_AVX2_OUT(add)                                  \
  ATTN_AVX2_OUT_ROW("(%[c0])", "0", "1", add)               \
  ATTN_AVX2_OUT_ROW("(%[c0],%[ld],1)", "2", "3", add)       \
  ATTN_AVX2_OUT_ROW("(%[c0],%[ld],2)", "4", "5", add)       \
  ATTN_AVX2_OUT_ROW("(%[c3])", "6", "7", add)               \
  ATTN_AVX2_OUT_ROW("(%[c3],%[ld],1)", "8", "9", add)       \
  ATTN_AVX2_OUT_ROW("(%[c3],%[ld],2)", "10", "11", add)
// clang-format on
template <bool kAdd>
__attribute__((target("avx2,fma"))) inline void avx2_16_steps(float* out, std::int64_t ld,
                                                              const float* a0, std::int64_t rs,
                                                              const float* pb,
                                                              std::int64_t blocks) {
  const float* a3 = a0 + 3 * rs;
  const std::int64_t rs_bytes = rs * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t ld_bytes = ld * static_cast<std::int64_t>(sizeof(float));
  const float* next = nullptr;
#define ATTN_AVX2_OPERANDS                                                                          \
  : [a0] "+r"(a0), [a3] "+r"(a3), [pb] "+r"(pb), [blocks] "+r"(blocks), [next] "=&r"(next)        \
  : [rs] "r"(rs_bytes), [c0] "r"(out), [c3] "r"(out + 3 * ld), [ld] "r"(ld_bytes)                 \
  : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
    "xmm10", "xmm11", "xmm12", "xmm13", "xmm14"
  if constexpr (kAdd) {
    asm volatile(ATTN_AVX2_LOOP ATTN_AVX2_OUT(ATTN_AVX2_ADD) ATTN_AVX2_OPERANDS);
  } else {
    asm volatile(ATTN_AVX2_LOOP ATTN_AVX2_OUT(ATTN_AVX2_KEEP) ATTN_AVX2_OPERANDS);
  }
#undef ATTN_AVX2_OPERANDS
}
#undef ATTN_AVX2_OUT
#undef ATTN_AVX2_KEEP
#undef ATTN_AVX2_ADD
#undef ATTN_AVX2_OUT_ROW
#undef ATTN_AVX2_LOOP
#undef ATTN_AVX2_STEP
#undef ATTN_AVX2_ROW

// Prefetches, measured (docs/design.md, Performance): C's tile is fetched for writing before the
// products, so that its cache misses overlap them (Q Kᵀ writes a T x T matrix once, A V re-reads
// its C once per block of k); and an A sliver read in place fetches the next sliver's rows (mr
// rows down), a line per row every 16 steps, into L2 (locality 2), so that the first pass over
// new rows of A does not wait for memory (into L1 it evicted the B sliver and did not pay).
__attribute__((target("avx2,fma"))) void kernel_avx2(std::int64_t kc, SliverA a, const float* pb,
                                                     float* c, std::int64_t ldc, bool first) {
  constexpr int kMr = 6, kNr = 16;
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    __builtin_prefetch(c + r * ldc, 1, 3);
    __builtin_prefetch(c + r * ldc + kNr - 1, 1, 3);
  }
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const std::int64_t rs = a.rs, cs = a.cs;
  const float* a0 = a.a;
  const float* a3 = a.a + 3 * rs;
  // The steps p = 0, 1, ..., kc - 1 in order: each cell's chain of fmas is the header's.
  std::int64_t p = 0;
  if (cs == 1 && kc >= 16) {  // in place, row-major: 16 steps at a time (avx2_16_steps)
    if (kc % 16 == 0) {       // every step: the sums straight into C
      if (first) return avx2_16_steps<false>(c, ldc, a0, rs, pb, kc / 16);
      return avx2_16_steps<true>(c, ldc, a0, rs, pb, kc / 16);
    }
    p = kc / 16 * 16;
    alignas(32) float part[kMr][kNr];
    avx2_16_steps<false>(&part[0][0], kNr, a0, rs, pb, kc / 16);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      acc[r][0] = _mm256_load_ps(part[r]);
      acc[r][1] = _mm256_load_ps(part[r] + 8);
    }
    a0 += p, a3 += p, pb += p * kNr;
  } else if (cs != kMr) {  // in place
    for (; p + 16 <= kc; p += 16) {
#pragma GCC unroll 6
      for (int r = 0; r < kMr; ++r) __builtin_prefetch(a0 + (kMr + r) * rs, 0, 2);
#pragma GCC unroll 16
      for (int q = 0; q < 16; ++q, a0 += cs, a3 += cs, pb += kNr) avx2_step(acc, a0, a3, rs, pb);
    }
  }
#pragma GCC unroll 4
  for (; p < kc; ++p, a0 += cs, a3 += cs, pb += kNr) avx2_step(acc, a0, a3, rs, pb);
  if (first) {
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      _mm256_storeu_ps(c + r * ldc, acc[r][0]);
      _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
    }
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      _mm256_storeu_ps(c + r * ldc, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc), acc[r][0]));
      _mm256_storeu_ps(c + r * ldc + 8, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc + 8), acc[r][1]));
    }
  }
}

// The AVX-512 kernel: 6 rows of 4 vectors of 16 columns, 24 accumulators. It reads 6 rows of A
// and a B sliver of kc x 64 floats (64 KiB for a block of 256), which streams from L2 four
// vectors a step; the sliver's 6 lines fit the 8 ways of an L1 set beside the B sliver's even
// when A's rows are 4 KiB apart. A 12 x 32 tile (12 rows, a 32 KiB sliver that L1 holds) was
// measured slower or the same on every shape of the benchmark (docs/design.md, Performance).
// Each cell's chain of fmas is the same as in the other kernels.
__attribute__((target("avx512f"))) void kernel_avx512(std::int64_t kc, SliverA a, const float* pb,
                                                      float* c, std::int64_t ldc, bool first) {
  constexpr int kMr = 6, kV = 4, kNr = 16 * kV;
  __m512 acc[kMr][kV];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  // Rows 0-2 from rows[0], 3-5 from rows[1]: a(r, p) at rows[r / 3][(r % 3) rs].
  const std::int64_t rs = a.rs;
  const float* rows[2] = {a.a, a.a + 3 * rs};
  // The prefetches of kernel_avx2, for 6 rows: C's tile, a line at a time.
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) __builtin_prefetch(c + r * ldc + 16 * v, 1, 3);
    __builtin_prefetch(c + r * ldc + kNr - 1, 1, 3);
  }
  const bool in_place = a.cs != kMr;
  for (std::int64_t p = 0; p < kc; ++p, pb += kNr) {
    if (in_place && (p & 15) == 0) {
#pragma GCC unroll 6
      for (int r = 0; r < kMr; ++r) __builtin_prefetch(rows[0] + (kMr + r) * rs, 0, 2);
    }
    __m512 b[kV];
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) b[v] = _mm512_loadu_ps(pb + 16 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(rows[r / 3][(r % 3) * rs]);
#pragma GCC unroll 4
      for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
    }
    rows[0] += a.cs, rows[1] += a.cs;
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) {
      float* out = c + r * ldc + 16 * v;
      _mm512_storeu_ps(out, first ? acc[r][v] : _mm512_add_ps(_mm512_loadu_ps(out), acc[r][v]));
    }
  }
}
#endif

}  // namespace

#ifdef ATTN_FMA_BY_DOUBLE
constexpr KernelShape kGeneric{4, 4, 128, 4096, kernel_sse2};
#else
constexpr KernelShape kGeneric{4, 8, 128, 4096, kernel_plain<4, 8>};
#endif
#ifdef ATTN_GEMM_X86
constexpr KernelShape kAvx2{6, 16, 144, 4096, kernel_avx2};
constexpr KernelShape kAvx512{6, 64, 96, 2048, kernel_avx512};
#endif

bool cpu_has(GemmIsa isa) {
#ifdef ATTN_GEMM_X86
  switch (isa) {
    case GemmIsa::kAvx512:
      return use_avx512();
    case GemmIsa::kAvx2:
      return use_avx2();
    default:
      return true;
  }
#else
  return isa == GemmIsa::kBest || isa == GemmIsa::kGeneric;
#endif
}

GemmIsa best_isa() {
  return cpu_has(GemmIsa::kAvx512) ? GemmIsa::kAvx512
         : cpu_has(GemmIsa::kAvx2) ? GemmIsa::kAvx2
                                   : GemmIsa::kGeneric;
}

const KernelShape& shape_for(GemmIsa isa) {
  if (isa == GemmIsa::kBest) isa = best_isa();
#ifdef ATTN_GEMM_X86
  if (isa == GemmIsa::kAvx512) return kAvx512;
  if (isa == GemmIsa::kAvx2) return kAvx2;
#endif
  return kGeneric;
}

}  // namespace attn::gemm_detail
