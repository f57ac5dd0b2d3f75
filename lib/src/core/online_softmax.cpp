// FlashAttention's online softmax, row by row and tile by tile.

#include "attn/online_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

Eigen::Index tile_count(Eigen::Index t_k, std::int64_t tile) {
  const auto b = static_cast<Eigen::Index>(std::min<std::int64_t>(tile, t_k > 0 ? t_k : 1));
  return (t_k + b - 1) / b;
}

namespace {

// One tile's update of the row's m, ℓ and O, as the algorithm writes it.
void update(OnlineTile& t, const float* s, const Matrix& v, float& m, float& l, Matrix& o,
            TorchKernel kernel) {
  const Eigen::Index n = t.to - t.from;
  t.tile_max = *std::max_element(s, s + n);
  const float m_new = std::max(m, t.tile_max);
  t.rescale = torch_expf(m - m_new, kernel);  // exp(−inf) = 0 for the first tile
  t.p.resize(1, n);
  for (Eigen::Index j = 0; j < n; ++j) t.p(0, j) = torch_expf(s[j] - m_new, kernel);
  t.sum = torch_sum(t.p.data(), n);
  l = t.rescale * l + t.sum;
  const Matrix pv = context_vectors(t.p, v.middleRows(t.from, n));
  for (Eigen::Index d = 0; d < o.cols(); ++d) o(0, d) = t.rescale * o(0, d) + pv(0, d);
  m = m_new;
}

}  // namespace

OnlineRow online_softmax_row(const Matrix& s, const Matrix& v, std::int64_t tile,
                             TorchKernel kernel, MaskedRows masked_rows) {
  const Eigen::Index t_k = s.cols();
  const auto b = static_cast<Eigen::Index>(std::min<std::int64_t>(tile, t_k));
  float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
  Matrix o = Matrix::Zero(1, v.cols());
  OnlineRow row;
  for (Eigen::Index from = 0; from < t_k; from += b) {
    OnlineTile t;
    t.from = from;
    t.to = std::min(t_k, from + b);
    const float* tile_scores = s.data() + from;
    t.skipped = std::all_of(tile_scores, tile_scores + (t.to - from),
                            [](float x) { return std::isinf(x) && x < 0; });
    if (!t.skipped) update(t, tile_scores, v, m, l, o, kernel);
    t.m = m;
    t.l = l;
    t.o = o;
    row.tiles.push_back(std::move(t));
  }
  row.z.resize(1, v.cols());
  for (Eigen::Index d = 0; d < v.cols(); ++d) {
    row.z(0, d) = l == 0.0f && masked_rows == MaskedRows::kZero ? 0.0f : o(0, d) / l;
  }
  return row;
}

OnlineSoftmax online_softmax(const Matrix& scaled, const Matrix& v, std::int64_t tile,
                             TorchKernel kernel, MaskedRows masked_rows) {
  const Eigen::Index tiles = tile_count(scaled.cols(), tile);
  OnlineSoftmax out{Matrix(scaled.rows(), tiles), Matrix(scaled.rows(), tiles),
                    Matrix(scaled.rows(), tiles), Matrix(scaled.rows(), v.cols()),
                    Matrix(scaled.rows(), v.cols())};
  for (Eigen::Index i = 0; i < scaled.rows(); ++i) {
    const OnlineRow row = online_softmax_row(scaled.row(i), v, tile, kernel, masked_rows);
    for (Eigen::Index t = 0; t < tiles; ++t) {
      const OnlineTile& r = row.tiles[static_cast<std::size_t>(t)];
      out.m(i, t) = r.m;
      out.rescale(i, t) = r.rescale;
      out.l(i, t) = r.l;
      if (r.skipped) ++out.skipped;
    }
    out.o.row(i) = row.tiles.back().o;
    out.z.row(i) = row.z;
  }
  return out;
}

}  // namespace attn
