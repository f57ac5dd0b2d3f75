#pragma once

// FlashAttention's online softmax: each query row's weights and context vector computed over
// tiles of B keys, keeping only a running max m, a running sum ℓ and a running output O per
// row, never a whole row of weights:
//   m = −inf, ℓ = 0, O = 0; for each tile S of scaled scores:
//     m′ = max(m, rowmax S); c = exp(m − m′); ℓ = c·ℓ + rowsum exp(S − m′);
//     O = c·O + exp(S − m′) V_tile; m = m′;
//   Z = O / ℓ.
// A tile whose every score is −inf (masked) for a row is skipped for that row, as FlashAttention
// skips it, so exp(−inf − (−inf)) never appears. Each operation is PyTorch's on float32 (exp as
// torch.exp, the tile's sum as tensor.sum(dim=-1), the product in the reference BLAS's order).

#include <cstdint>
#include <vector>

#include "attn/attention.hpp"
#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// The number of tiles of `tile` keys over t_k keys: ⌈t_k / tile⌉ (one when tile >= t_k).
// Requires: tile >= 1.
Eigen::Index tile_count(Eigen::Index t_k, std::int64_t tile);

// One tile of one row.
struct OnlineTile {
  Eigen::Index from = 0, to = 0;  // the keys from..to−1
  bool skipped = false;           // every score of the tile is −inf: nothing changes
  float tile_max = 0;             // rowmax S (when not skipped)
  float m = 0;                    // m after the tile
  float rescale = 1;              // c = exp(m_before − m) (1 when skipped)
  float sum = 0;                  // rowsum exp(S − m)
  float l = 0;                    // ℓ after the tile
  Matrix p;                       // exp(S − m): (1, to − from); empty when skipped
  Matrix o;                       // O after the tile: (1, d_v)
};

// One row of scaled scores s (1, T_k) against v (T_k, d_v), tile by tile; and Z = O / ℓ, where
// a row with every tile skipped (ℓ = 0) gives nan for kNan, 0 for kZero (FlashAttention's).
struct OnlineRow {
  std::vector<OnlineTile> tiles;
  Matrix z;  // (1, d_v)
};
OnlineRow online_softmax_row(const Matrix& s, const Matrix& v, std::int64_t tile,
                             TorchKernel kernel, MaskedRows masked_rows);

// Every row: m, c and ℓ after each tile, the last O, and Z.
struct OnlineSoftmax {
  Matrix m, rescale, l;      // (T, tiles)
  Matrix o, z;               // (T, d_v)
  std::int64_t skipped = 0;  // (row, tile) pairs skipped, the tile wholly masked for the row
};
OnlineSoftmax online_softmax(const Matrix& scaled, const Matrix& v, std::int64_t tile,
                             TorchKernel kernel, MaskedRows masked_rows);

}  // namespace attn
