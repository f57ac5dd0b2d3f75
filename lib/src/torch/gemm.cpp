#include "attn/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "attn/parallel.hpp"
#include "attn/simd.hpp"
#include "gemm_kernels.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_GEMM_X86 1
#endif

namespace attn {

using gemm_detail::best_isa;
using gemm_detail::cpu_has;
using gemm_detail::KernelShape;
using gemm_detail::shape_for;
using gemm_detail::SliverA;

namespace {

// The loops and the packing follow BLIS (van Zee and van de Geijn, 2015): B is copied once per
// product, for each block of kGemmBlockK rows, into slivers of NR columns stored row by row, so
// that the micro-kernel reads it with unit stride (cells past the matrix edge are zero); the
// threads share it, or each packs a copy of its own where it is small (own_packed_b, below). The
// micro-kernels are in gemm_kernels.cpp. A is read in place, MR rows at a time (copying it cost a
// third of the time when B is only 128 wide), except a last sliver of fewer than MR rows, which is
// copied with zero rows below it. The loops walk C in blocks of mc rows and nc columns, so that the
// A rows and the B slivers in use stay in the L2 and L3 caches. The order of the loops over cells
// does not change any cell's arithmetic: for each cell, the blocks of k are still summed in order,
// each by one call of the micro-kernel.

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

// The columns of B walked at a time when k is one block. Then each A sliver is multiplied by every
// B sliver of the panel in turn (below), reading the whole panel (k x nc floats) once per sliver,
// so the panel is kept to half of the core's L2, where those reads find it: Q Kᵀ (k = 128) at
// T = 2048 and 4096 read a panel of 1 MiB from L3 on the Zen 5's 1 MiB L2 with the AVX-512 path's
// nc of 2048, and ran 1-7 points of the peak faster with 1024 (docs/design.md, Performance).
std::int64_t panel_cols(const KernelShape& ks, std::int64_t k) {
  const std::int64_t fits =
      l2_cache_bytes() / 2 /
      (static_cast<std::int64_t>(sizeof(float)) * std::max<std::int64_t>(k, 1));
  return std::clamp<std::int64_t>(fits / ks.nr * ks.nr, ks.nr, ks.nc);
}

// Rows [r0, r1) of c = a @ b, for the rows of b that pb holds (c = s_0 for the first block).
void gemm_rows(const KernelShape& ks, const StridedMatrix& a, const PackedB& pb, std::int64_t n,
               float* c, std::int64_t ldc, std::int64_t r0, std::int64_t r1) {
  const std::int64_t k = pb.k_end;
  if (r1 <= r0) return;
  // The rows in blocks of at most mc, as equal as whole slivers allow (132 rows as 72 and 60, not
  // 96 and 36: a short block reuses each B sliver over few A slivers).
  const std::int64_t row_blocks = (r1 - r0 + ks.mc - 1) / ks.mc;
  const std::int64_t mc_max = round_up((r1 - r0 + row_blocks - 1) / row_blocks, ks.mr);
  const std::int64_t nc_max =
      std::min(k <= kGemmBlockK ? panel_cols(ks, k) : ks.nc, round_up(n, ks.nr));
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
