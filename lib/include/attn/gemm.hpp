#pragma once

// The blocked matrix product: the fast path for large shapes.
//
// Every cell c_ij is computed the same way on every CPU, ISA and thread count: the inner
// dimension is cut into blocks of kGemmBlockK; within a block the products are accumulated with
// fused multiply-adds, s = fma(a_ik, b_kj, s), starting from 0; the blocks' sums are then added
// in order, c = s_0 + s_1 + .... Only the code that does it differs (AVX-512, AVX2+FMA or plain
// C++ with std::fma), so the result is the same bits everywhere. It is not the reference BLAS's
// left-to-right order, so on large shapes it differs from PyTorch in the last bits (see
// docs/design.md for the bound and the test).

#include <cstdint>
#include <memory>
#include <string_view>

namespace attn {

// The block of the inner dimension whose products are fused before the blocks are added.
inline constexpr std::int64_t kGemmBlockK = 256;

// A read-only strided matrix: element (i, j) is data[i * row_stride + j * col_stride].
struct StridedMatrix {
  const float* data = nullptr;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 0, col_stride = 1;
};

// The code that computes the blocked product. All give the same bits.
enum class GemmIsa {
  kBest,     // the fastest this CPU runs: kAvx512, else kAvx2, else kGeneric
  kAvx512,   // 512-bit FMA, 6 x 64 cells at a time
  kAvx2,     // 256-bit FMA, 6 x 16 cells at a time
  kGeneric,  // plain C++ with std::fma, 4 x 8 cells at a time
};

// Whether this CPU runs `isa` (kBest and kGeneric always; see simd.hpp).
bool gemm_isa_supported(GemmIsa isa);
// The name of the code kBest picks on this CPU: "avx512", "avx2" or "generic".
std::string_view gemm_isa_name();

// c = a @ b, c row-major with leading dimension ldc (c_ij at c[i * ldc + j]).
// Requires: a.cols == b.rows; c holds a.rows x b.cols cells that do not overlap a or b; `isa`
// is supported. Rows of c are split over up to `threads` threads; the result does not depend on
// the split nor on the isa. A product of kParallelMinWork multiply-adds or more on several threads
// goes to the thread pool, one calling thread at a time (parallel.hpp).
void gemm_blocked(const StridedMatrix& a, const StridedMatrix& b, float* c, std::int64_t ldc,
                  int threads, GemmIsa isa = GemmIsa::kBest);

// B packed once, for many products a @ b whose a differ: a head's keys or values against its
// queries' rows, block by block. gemm_blocked packs B anew for each product, which for a block of
// a few rows costs as much as the block's arithmetic.
class GemmPackedB {
 public:
  // Copies b (every block of its rows) for the code `isa` picks; on up to `threads` threads.
  // Requires: `isa` is supported.
  GemmPackedB(const StridedMatrix& b, int threads, GemmIsa isa = GemmIsa::kBest);
  ~GemmPackedB();
  GemmPackedB(GemmPackedB&&) noexcept;
  GemmPackedB& operator=(GemmPackedB&&) noexcept;

  std::int64_t rows() const;
  std::int64_t cols() const;

  struct Packed;  // the slivers, and the code they are packed for
  const Packed& packed() const { return *packed_; }

 private:
  std::unique_ptr<Packed> packed_;
};

// c = a @ b for a packed b: the same bits as gemm_blocked with b itself.
// Requires: a.cols == b.rows(); c as for gemm_blocked.
void gemm_blocked(const StridedMatrix& a, const GemmPackedB& b, float* c, std::int64_t ldc,
                  int threads);

}  // namespace attn
