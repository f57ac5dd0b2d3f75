#pragma once

// The matrix product's micro-kernels, one per instruction set, and the tile and blocks each is
// walked with (gemm_kernels.cpp); gemm.cpp's packing and loops call them. Internal to the
// library.

#include <cstdint>

#include "attn/gemm.hpp"

namespace attn::gemm_detail {

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

// Whether this CPU runs `isa`'s kernel (kBest and kGeneric: always).
bool cpu_has(GemmIsa isa);

// The widest kernel this CPU runs: kAvx512, kAvx2 or kGeneric.
GemmIsa best_isa();

// The kernel `isa` names; kBest is best_isa().
const KernelShape& shape_for(GemmIsa isa);

}  // namespace attn::gemm_detail
