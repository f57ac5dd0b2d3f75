// Rotary position embeddings, in PyTorch's float32 operations and order.

#include "attn/rope.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/error.hpp"

namespace attn {

std::vector<float> rope_inv_freq(std::int64_t d, float theta) {
  if (d < 2 || d % 2 != 0) {
    throw Error(fmt::format("rotary embeddings rotate pairs: a width of {} is not even", d));
  }
  if (!(theta > 0.0f) || !std::isfinite(theta)) {
    throw Error(fmt::format("the rotary base θ {} is not a positive number", theta));
  }
  // 1.0 / (theta ** (torch.arange(0, d, 2).float() / d)): a float32 division, powf, and
  // Tensor.__rtruediv__'s reciprocal (times 1.0, exact).
  std::vector<float> inv(static_cast<std::size_t>(d / 2));
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
    inv[i] = 1.0f / std::pow(theta, exponent);
  }
  return inv;
}

RopeTables rope_tables(std::int64_t positions, std::int64_t d, float theta, RopePairs pairs) {
  const std::vector<float> inv = rope_inv_freq(d, theta);
  RopeTables t{Matrix(positions, d), Matrix(positions, d)};
  for (Eigen::Index p = 0; p < positions; ++p) {
    for (Eigen::Index c = 0; c < d; ++c) {
      const std::size_t i =
          static_cast<std::size_t>(pairs == RopePairs::kHalf ? c % (d / 2) : c / 2);
      const float angle = static_cast<float>(p) * inv[i];  // torch.outer(positions, inv_freq)
      t.cos(p, c) = std::cos(angle);
      t.sin(p, c) = std::sin(angle);
    }
  }
  return t;
}

void rope_rotate_row(const float* x, const float* cos, const float* sin, float* out, std::int64_t d,
                     RopePairs pairs) {
  std::vector<float> rotated(static_cast<std::size_t>(d));
  const std::int64_t half = d / 2;
  for (std::int64_t c = 0; c < d; ++c) {
    const auto u = static_cast<std::size_t>(c);
    if (pairs == RopePairs::kHalf) {
      rotated[u] = c < half ? -x[c + half] : x[c - half];  // cat(−x[d/2:], x[:d/2])
    } else {
      rotated[u] = c % 2 == 0 ? -x[c + 1] : x[c - 1];  // stack((−x₂, x₁), −1).flatten(−2)
    }
  }
  for (std::int64_t c = 0; c < d; ++c) {
    const float kept = x[c] * cos[c];
    const float turned = rotated[static_cast<std::size_t>(c)] * sin[c];
    out[c] = kept + turned;
  }
}

Matrix rope_rotate(const Matrix& x, const RopeTables& tables, RopePairs pairs) {
  const Eigen::Index d = tables.cos.cols();
  if (d == 0 || x.cols() % d != 0 || x.rows() > tables.cos.rows()) {
    throw Error(fmt::format("rope_rotate: a [{}, {}] matrix does not fit tables of [{}, {}]",
                            x.rows(), x.cols(), tables.cos.rows(), d));
  }
  Matrix out(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index h = 0; h < x.cols(); h += d) {
      rope_rotate_row(&x(i, h), &tables.cos(i, 0), &tables.sin(i, 0), &out(i, h), d, pairs);
    }
  }
  return out;
}

}  // namespace attn
