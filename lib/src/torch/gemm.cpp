#include "attn/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "attn/exact_fma.hpp"
#include "attn/parallel.hpp"
#include "attn/simd.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_GEMM_X86 1
#endif

namespace attn {

namespace {

// The loops and the packing follow BLIS (van Zee and van de Geijn, 2015): B is copied once per
// product, for each block of kGemmBlockK rows, into slivers of NR columns stored row by row, so
// that the micro-kernel reads it with unit stride (cells past the matrix edge are zero); the
// threads share it. A is read in place, MR rows at a time (copying it cost a third of the time
// when B is only 128 wide), except a last sliver of fewer than MR rows, which is copied with zero
// rows below it. The loops walk C in blocks of mc rows and nc columns, so that the A rows and the
// B slivers in use stay in the L2 and L3 caches. The order of the loops over cells does not change
// any cell's arithmetic: for each cell, the blocks of k are still summed in order, each by one
// call of the micro-kernel.

// A micro-kernel: s (MR x NR) = an A sliver @ the packed B sliver, each cell a chain of fmas over
// the kc products in order, starting from 0; then c = s (first) or c = c + s, for the MR x NR
// cells at c with leading dimension ldc. The A sliver is read in place: a_rp is a(r, p) at
// a[r * rs + p * cs] (a packed edge sliver is the case rs = 1, cs = MR).
struct SliverA {
  const float* a;
  std::int64_t rs, cs;
};
using MicroKernel = void (*)(std::int64_t kc, SliverA a, const float* pb, float* c,
                             std::int64_t ldc, bool first);

struct KernelShape {
  int mr, nr;           // the tile
  std::int64_t mc, nc;  // rows of A and columns of B walked at a time (L2 and L3 blocks)
  MicroKernel run;
};

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
  if (cs != kMr) {  // in place
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

// The kernel `isa` names.
const KernelShape& shape_for(GemmIsa isa) {
  if (isa == GemmIsa::kBest) isa = best_isa();
#ifdef ATTN_GEMM_X86
  if (isa == GemmIsa::kAvx512) return kAvx512;
  if (isa == GemmIsa::kAvx2) return kAvx2;
#endif
  return kGeneric;
}

// 64-byte aligned floats for the packed panels and the tile: a plain heap block 64 bytes longer,
// from the first 64-byte boundary in it. glibc's aligned allocation (what aligned operator new
// calls) carves the block from a larger one and frees the pieces around it, and those pieces,
// left behind by every product, kept the heap from reusing a freed block whole: with 8 heads at
// T = 512 it grew by 1.5-2 MiB a head, whose new pages took their faults inside the products.
struct AlignedFloats {
  explicit AlignedFloats(std::int64_t n)
      : block(::operator new(static_cast<std::size_t>(n) * sizeof(float) + 64)),
        data(reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(block) + 63) &
                                      ~std::uintptr_t{63})) {}
  ~AlignedFloats() { ::operator delete(block); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  void* block;
  float* data;
};

std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

// The `rows` (< mr) rows from i0 and columns [p0, p0 + kc) of a, as one sliver of mr rows whose
// last rows are zero (rs = 1, cs = mr).
void pack_a_edge(const StridedMatrix& a, std::int64_t i0, std::int64_t rows, std::int64_t p0,
                 std::int64_t kc, int mr, float* out) {
  for (std::int64_t r = 0; r < mr; ++r) {
    const float* row = a.data + (i0 + r) * a.row_stride + p0 * a.col_stride;
    for (std::int64_t p = 0; p < kc; ++p) out[p * mr + r] = r < rows ? row[p * a.col_stride] : 0.0f;
  }
}

#ifdef ATTN_GEMM_X86
// One sliver of a transposed B (its columns are rows of K, `ld` floats apart): out[p * nr + c] =
// column[c][p] for p < kc and c < cols, 0 for c >= cols; 8 columns by 8 rows at a time through
// an 8 x 8 transpose in registers, where the plain loop writes one float every nr floats.
__attribute__((target("avx2"))) void pack_transposed_avx2(const float* base, std::int64_t ld,
                                                          std::int64_t kc, std::int64_t cols,
                                                          int nr, float* out) {
  std::int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const float* col = base + c * ld;
    std::int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(col + i * ld + p);
      // The transpose: r[i][j] (column c + i, row p + j) to t[j][i].
      const __m256 a0 = _mm256_unpacklo_ps(r[0], r[1]), a1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 a2 = _mm256_unpacklo_ps(r[2], r[3]), a3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 a4 = _mm256_unpacklo_ps(r[4], r[5]), a5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 a6 = _mm256_unpacklo_ps(r[6], r[7]), a7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xee);
      const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xee);
      const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xee);
      const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xee);
      const __m256 t[8] = {
          _mm256_permute2f128_ps(b0, b4, 0x20), _mm256_permute2f128_ps(b1, b5, 0x20),
          _mm256_permute2f128_ps(b2, b6, 0x20), _mm256_permute2f128_ps(b3, b7, 0x20),
          _mm256_permute2f128_ps(b0, b4, 0x31), _mm256_permute2f128_ps(b1, b5, 0x31),
          _mm256_permute2f128_ps(b2, b6, 0x31), _mm256_permute2f128_ps(b3, b7, 0x31)};
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + (p + j) * nr + c, t[j]);
    }
    for (; p < kc; ++p) {
      for (int i = 0; i < 8; ++i) out[p * nr + c + i] = col[i * ld + p];
    }
  }
  for (; c < nr; ++c) {
    const float* column = base + c * ld;
    for (std::int64_t p = 0; p < kc; ++p) out[p * nr + c] = c < cols ? column[p] : 0.0f;
  }
}
#endif

// Rows [p0, p0 + kc) and columns [j0, j0 + nc) of b, as slivers of nr columns.
void pack_b(const StridedMatrix& b, std::int64_t p0, std::int64_t kc, std::int64_t j0,
            std::int64_t nc, int nr, float* out) {
  for (std::int64_t t = 0; t < nc; t += nr) {
    const std::int64_t cols = std::min<std::int64_t>(nr, nc - t);
    const float* base = b.data + p0 * b.row_stride + (j0 + t) * b.col_stride;
    if (b.row_stride == 1 && b.col_stride != 1) {
      // A transposed B (Kᵀ read from K): each column of B is a row of K, read in order.
#ifdef ATTN_GEMM_X86
      if (use_avx2()) {
        pack_transposed_avx2(base, b.col_stride, kc, cols, nr, out);
        out += kc * nr;
        continue;
      }
#endif
      for (std::int64_t c = 0; c < nr; ++c) {
        const float* column = base + c * b.col_stride;
        for (std::int64_t p = 0; p < kc; ++p) out[p * nr + c] = c < cols ? column[p] : 0.0f;
      }
      out += kc * nr;
      continue;
    }
    for (std::int64_t p = 0; p < kc; ++p, out += nr) {
      const float* row = base + p * b.row_stride;
      std::int64_t c = 0;
      if (b.col_stride == 1) {
        std::copy(row, row + cols, out);  // a row-major B: a plain copy the compiler vectorises
        c = cols;
      } else {
        for (; c < cols; ++c) out[c] = row[c * b.col_stride];
      }
      for (; c < nr; ++c) out[c] = 0.0f;
    }
  }
}

// Rows [k_begin, k_end) of B packed for all threads: for each block of kGemmBlockK rows, its
// slivers of NR columns (n rounded up to NR), sliver t of the block at row pc at
// data + (pc - k_begin) * n_r + t * kc * NR.
struct PackedB {
  const float* data;
  std::int64_t n_r, k_begin, k_end;
  const float* sliver(std::int64_t pc, std::int64_t kc, std::int64_t col, int nr) const {
    return data + (pc - k_begin) * n_r + col / nr * kc * nr;
  }
};

// Rows [r0, r1) of c = a @ b, for the rows of b that pb holds (c = s_0 for the first block).
void gemm_rows(const KernelShape& ks, const StridedMatrix& a, const PackedB& pb, std::int64_t n,
               float* c, std::int64_t ldc, std::int64_t r0, std::int64_t r1) {
  const std::int64_t k = pb.k_end;
  if (r1 <= r0) return;
  // The rows in blocks of at most mc, as equal as whole slivers allow (132 rows as 72 and 60, not
  // 96 and 36: a short block reuses each B sliver over few A slivers).
  const std::int64_t row_blocks = (r1 - r0 + ks.mc - 1) / ks.mc;
  const std::int64_t mc_max = round_up((r1 - r0 + row_blocks - 1) / row_blocks, ks.mr);
  const std::int64_t nc_max = std::min(ks.nc, round_up(n, ks.nr));
  AlignedFloats pa(ks.mr * kGemmBlockK), tile(ks.mr * ks.nr);
  for (std::int64_t jc = 0; jc < n; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, n - jc);
    for (std::int64_t pc = pb.k_begin; pc < k; pc += kGemmBlockK) {
      const std::int64_t kc = std::min(kGemmBlockK, k - pc);
      const bool first = pc == 0;
      for (std::int64_t ic = r0; ic < r1; ic += mc_max) {
        const std::int64_t mc = std::min(mc_max, r1 - ic);
        // The last sliver of A, when it has fewer than mr rows, is packed with zero rows.
        const std::int64_t full = mc / ks.mr * ks.mr;
        if (full < mc) pack_a_edge(a, ic + full, mc - full, pc, kc, ks.mr, pa.data);
        const auto run_tile = [&](std::int64_t jr, std::int64_t ir) {
          const std::int64_t cols = std::min<std::int64_t>(ks.nr, nc - jr);
          const float* b_sliver = pb.sliver(pc, kc, jc + jr, ks.nr);
          const std::int64_t rows = std::min<std::int64_t>(ks.mr, mc - ir);
          const SliverA sliver =
              rows == ks.mr ? SliverA{a.data + (ic + ir) * a.row_stride + pc * a.col_stride,
                                      a.row_stride, a.col_stride}
                            : SliverA{pa.data, 1, ks.mr};
          float* out_tile = c + (ic + ir) * ldc + jc + jr;
          if (rows == ks.mr && cols == ks.nr) {
            ks.run(kc, sliver, b_sliver, out_tile, ldc, first);
            return;
          }
          // An edge tile: computed whole into `tile`, then its cells inside c merged the same
          // way: c = s_0 for the first block of k, then c = c + s_b for each later one.
          ks.run(kc, sliver, b_sliver, tile.data, ks.nr, true);
          for (std::int64_t r = 0; r < rows; ++r) {
            float* out = out_tile + r * ldc;
            const float* s = tile.data + r * ks.nr;
            if (first) {
              for (std::int64_t j = 0; j < cols; ++j) out[j] = s[j];
            } else {
              for (std::int64_t j = 0; j < cols; ++j) out[j] = out[j] + s[j];
            }
          }
        };
        if (k <= kGemmBlockK) {
          // One block of k, so each tile of C is written once (Q Kᵀ, T x T): an A sliver (in
          // L1) against the block's B slivers in turn (from L2 or L3), so that C is written
          // along rows. Measured 3-15 points of the peak faster on Q Kᵀ than the order below,
          // which writes C down columns of tiles, a miss per row; but 2 points slower on
          // X W_q, where it reads the larger B sliver (kc x NR) from L2 for each tile.
          for (std::int64_t ir = 0; ir < mc; ir += ks.mr) {
            for (std::int64_t jr = 0; jr < nc; jr += ks.nr) run_tile(jr, ir);
          }
        } else {
          // A B sliver (in L1) against the block's A slivers in turn (from L2), as in BLIS.
          for (std::int64_t jr = 0; jr < nc; jr += ks.nr) {
            for (std::int64_t ir = 0; ir < mc; ir += ks.mr) run_tile(jr, ir);
          }
        }
      }
    }
  }
}

}  // namespace

bool gemm_isa_supported(GemmIsa isa) { return cpu_has(isa); }

std::string_view gemm_isa_name() {
  switch (best_isa()) {
    case GemmIsa::kAvx512:
      return "avx512";
    case GemmIsa::kAvx2:
      return "avx2";
    default:
      return "generic";
  }
}

namespace {

// Packs rows [pb.k_begin, pb.k_end) of b into pb's memory: each block's slivers, split across
// the threads.
void pack_blocks(const KernelShape& ks, const StridedMatrix& b, const PackedB& pb, float* out,
                 int threads) {
  const std::int64_t n = b.cols, k = pb.k_end, slivers = pb.n_r / ks.nr;
  const std::int64_t group = (pb.k_end - pb.k_begin + kGemmBlockK - 1) / kGemmBlockK;
  parallel_for(group * slivers, threads,
               static_cast<double>(pb.k_end - pb.k_begin) * static_cast<double>(pb.n_r),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) {
                   const std::int64_t pc = pb.k_begin + i / slivers * kGemmBlockK;
                   const std::int64_t col = i % slivers * ks.nr;
                   const std::int64_t kc = std::min(kGemmBlockK, k - pc);
                   pack_b(b, pc, kc, col, std::min<std::int64_t>(ks.nr, n - col), ks.nr,
                          out + (pc - pb.k_begin) * pb.n_r + col / ks.nr * kc * ks.nr);
                 }
               });
}

// Runs rows(begin, end) over the rows of C, split across the threads in chunks of whole A
// slivers: at least four chunks per thread, so that a thread that starts late or runs slow (a
// shared machine's other load) costs little, and at most an L2 block (mc) each; their count a
// multiple of the threads and their sizes within one sliver of each other, so that the threads
// end together (chunks of one size left a short last one: at T = 512 with 12-row slivers, seven
// chunks of 72 rows and one of 8, four chunks' work against three on two threads). Every cell is
// computed the same way in any chunk.
void for_row_chunks(const KernelShape& ks, std::int64_t m, int threads, double work,
                    const std::function<void(std::int64_t, std::int64_t)>& rows) {
  const std::int64_t slivers = (m + ks.mr - 1) / ks.mr;
  const std::int64_t t = std::max(threads, 1);
  const std::int64_t blocks = (m + ks.mc - 1) / ks.mc;
  const std::int64_t chunks = std::min(slivers, (std::max(4 * t, blocks) + t - 1) / t * t) / t * t;
  if (chunks <= 1) return rows(0, m);
  const auto first_row = [&](std::int64_t i) { return std::min(m, slivers * i / chunks * ks.mr); };
  parallel_chunks(chunks, 1, threads, work, [&](std::int64_t begin, std::int64_t end) {
    rows(first_row(begin), first_row(end));  // chunks [begin, end) are contiguous rows
  });
}

// On several threads, a B of at most 1 MiB packed (counted in whole blocks of kGemmBlockK rows)
// is packed by each thread of the product into memory of its own, kept for that thread's later
// products, rather than once into memory that all of them read: on the project's virtual
// machines, writing lines that the other core has read costs several times as much as writing
// lines that only this core has touched, and the one shared copy was written, product after
// product, into the memory the other core had read the last one from (512 KiB of W_q: 74-82 us
// to pack on two threads, 13-28 us on one; X W_q at T = 1024 on two threads 0.80 -> 0.70 ms,
// Zen 5; docs/design.md, Performance). At most 8 MiB in all (a copy per thread of the pool):
// beyond that, the shared copy as before.
constexpr std::int64_t kOwnPackedFloats = (std::int64_t{1} << 20) / 4;
constexpr std::int64_t kOwnPackedTotalFloats = (std::int64_t{8} << 20) / 4;

// The copies, `per_thread` floats apart, slot i for pool_thread() i. They are allocated on the
// calling thread, so that they lie in the heap the run made ready (memory.hpp): allocated on a
// worker, its copy came from that thread's own arena, whose fresh pages took their faults inside
// the first product. Only for products that go to the pool, so one calling thread at a time, as
// for the pool itself; smaller products may run on any thread at once.
struct OwnPacked {
  std::unique_ptr<AlignedFloats> floats;
  std::int64_t per_thread = 0;
  struct Slot {
    std::uint64_t product = 0;  // the product whose B the copy holds; written by its thread only
    char pad[56];               // a cache line each
  };
  std::vector<Slot> slots;
  std::uint64_t products = 0;  // the products so far
};
OwnPacked own_packed;

// Room for a copy of `floats` floats for each of the pool's threads during a loop on `threads`;
// false, and nothing changed, if that is more than kOwnPackedTotalFloats.
bool reserve_own_packed(int threads, std::int64_t floats) {
  OwnPacked& own = own_packed;
  const auto slots = static_cast<std::size_t>(std::max(threads, pool_threads()));
  const std::int64_t per_thread = std::max(own.per_thread, round_up(floats, 16));
  if (per_thread * static_cast<std::int64_t>(slots) > kOwnPackedTotalFloats) return false;
  if (own.per_thread >= floats && own.slots.size() >= slots) return true;
  own.floats.reset();  // before the larger block, so that the heap may reuse its memory
  own.floats = std::make_unique<AlignedFloats>(per_thread * static_cast<std::int64_t>(slots));
  own.per_thread = per_thread;
  own.slots.assign(slots, OwnPacked::Slot{});
  return true;
}

// This thread's copy of b, packed for product number `product` on the thread's first chunk.
PackedB own_packed_b(const KernelShape& ks, const StridedMatrix& b, std::uint64_t product) {
  OwnPacked& own = own_packed;
  const auto index = static_cast<std::size_t>(pool_thread());
  float* data = own.floats->data + own.per_thread * static_cast<std::int64_t>(index);
  const PackedB pb{data, round_up(b.cols, ks.nr), 0, b.rows};
  if (own.slots[index].product != product) {
    pack_blocks(ks, b, pb, data, 1);
    own.slots[index].product = product;
  }
  return pb;
}

void zero_rows(float* c, std::int64_t ldc, std::int64_t m, std::int64_t n) {
  for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
}

}  // namespace

void gemm_blocked(const StridedMatrix& a, const StridedMatrix& b, float* c, std::int64_t ldc,
                  int threads, GemmIsa isa) {
  const KernelShape& ks = shape_for(isa);
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  if (k == 0) return zero_rows(c, ldc, m, n);
  // B packed once, its slivers split across the threads, then shared by all of them (or, on
  // several threads and at most 1 MiB, once by each: above); in groups of blocks of at most
  // 32 MiB, so that a wide weight matrix is not copied whole.
  const std::int64_t n_r = round_up(n, ks.nr);
  const std::int64_t block_floats = kGemmBlockK * n_r;
  const std::int64_t group_blocks = std::max<std::int64_t>(
      1, (std::int64_t{32} << 20) / static_cast<std::int64_t>(sizeof(float)) / block_floats);
  const std::int64_t blocks = (k + kGemmBlockK - 1) / kGemmBlockK;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads > 1 && work >= kParallelMinWork && blocks * block_floats <= kOwnPackedFloats &&
      reserve_own_packed(threads, blocks * block_floats)) {
    const std::uint64_t product = ++own_packed.products;
    for_row_chunks(ks, m, threads, work, [&](std::int64_t begin, std::int64_t end) {
      gemm_rows(ks, a, own_packed_b(ks, b, product), n, c, ldc, begin, end);
    });
    return;
  }
  AlignedFloats packed(std::min(blocks, group_blocks) * block_floats);
  for (std::int64_t g = 0; g < blocks; g += group_blocks) {
    const PackedB pb{packed.data, n_r, g * kGemmBlockK,
                     std::min(k, (g + group_blocks) * kGemmBlockK)};
    pack_blocks(ks, b, pb, packed.data, threads);
    for_row_chunks(ks, m, threads, work, [&](std::int64_t begin, std::int64_t end) {
      gemm_rows(ks, a, pb, n, c, ldc, begin, end);
    });
  }
}

struct GemmPackedB::Packed {
  const KernelShape* ks;
  std::int64_t rows, cols;
  AlignedFloats data;
};

GemmPackedB::GemmPackedB(const StridedMatrix& b, int threads, GemmIsa isa) {
  const KernelShape& ks = shape_for(isa);
  const std::int64_t n_r = round_up(b.cols, ks.nr);
  // Block pc's slivers start at pc * n_r: k * n_r floats in all.
  packed_.reset(
      new Packed{&ks, b.rows, b.cols, AlignedFloats(std::max<std::int64_t>(1, b.rows * n_r))});
  if (b.rows > 0) {
    pack_blocks(ks, b, PackedB{packed_->data.data, n_r, 0, b.rows}, packed_->data.data, threads);
  }
}
GemmPackedB::~GemmPackedB() = default;
GemmPackedB::GemmPackedB(GemmPackedB&&) noexcept = default;
GemmPackedB& GemmPackedB::operator=(GemmPackedB&&) noexcept = default;
std::int64_t GemmPackedB::rows() const { return packed_->rows; }
std::int64_t GemmPackedB::cols() const { return packed_->cols; }

void gemm_blocked(const StridedMatrix& a, const GemmPackedB& b, float* c, std::int64_t ldc,
                  int threads) {
  const GemmPackedB::Packed& p = b.packed();
  const KernelShape& ks = *p.ks;
  const std::int64_t m = a.rows, n = p.cols, k = a.cols;
  if (k == 0) return zero_rows(c, ldc, m, n);
  const PackedB pb{p.data.data, round_up(n, ks.nr), 0, k};
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  for_row_chunks(ks, m, threads, work, [&](std::int64_t begin, std::int64_t end) {
    gemm_rows(ks, a, pb, n, c, ldc, begin, end);
  });
}

}  // namespace attn
