// Rotary position embeddings, in PyTorch's float32 operations and order.

#include "attn/rope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/error.hpp"

namespace attn {

std::optional<float> rope_base_float32(double theta) {
  // FLT_MAX plus half its unit in the last place: from there up, a double rounds to infinity.
  constexpr double kRoundsToInfinity = 0x1.ffffffp127;
  if (!(theta > 0.0) || !(theta < kRoundsToInfinity)) return std::nullopt;
  const auto f =
      static_cast<float>(std::min(theta, static_cast<double>(std::numeric_limits<float>::max())));
  if (!(f > 0.0f)) return std::nullopt;  // below half the smallest subnormal
  return f;
}

std::vector<float> rope_inv_freq(std::int64_t d, float theta, TorchKernel kernel) {
  if (d < 2 || d % 2 != 0) {
    throw Error(fmt::format("rotary embeddings rotate pairs: a width of {} is not even", d));
  }
  if (!(theta > 0.0f) || !std::isfinite(theta)) {
    throw Error(fmt::format("the rotary base θ {} is not a positive float32 number", theta));
  }
  // 1.0 / (theta ** (torch.arange(0, d, 2).float() / d)): a float32 division, torch.pow of a
  // number and a tensor, and Tensor.__rtruediv__'s reciprocal (times 1.0, exact).
  const auto n = static_cast<std::size_t>(d / 2);
  std::vector<float> exponent(n), inv(n);  // (d/2)
  for (std::size_t i = 0; i < n; ++i) {
    exponent[i] = static_cast<float>(2 * i) / static_cast<float>(d);
  }
  torch_pow(theta, exponent.data(), inv.data(), n, kernel);
  for (std::size_t i = 0; i < n; ++i) {
    inv[i] = 1.0f / inv[i];
    if (!std::isfinite(inv[i])) {
      throw Error(fmt::format("the rotary base θ {} is too small for a head width of {}: "
                              "inv_freq_{} = 1 / θ^({}/{}) overflows float32, and the tables "
                              "would be nan: give a larger base",
                              theta, d, i, 2 * i, d),
                  Setting::kRopeTheta);
    }
  }
  return inv;
}

RopeTables rope_tables(std::int64_t positions, std::int64_t d, float theta, RopePairs pairs,
                       TorchKernel kernel) {
  const std::vector<float> inv = rope_inv_freq(d, theta, kernel);
  RopeTables t{Matrix(positions, d), Matrix(positions, d)};
  // angles = torch.outer(torch.arange(T).float(), inv_freq), then cat(angles, angles) (half) or
  // repeat_interleave(2) (interleaved): (T, d), row-major as PyTorch holds it.
  Matrix angles(positions, d);
  for (Eigen::Index p = 0; p < positions; ++p) {
    for (Eigen::Index c = 0; c < d; ++c) {
      const std::size_t i =
          static_cast<std::size_t>(pairs == RopePairs::kHalf ? c % (d / 2) : c / 2);
      angles(p, c) = static_cast<float>(p) * inv[i];
      if (!std::isfinite(angles(p, c))) {
        throw Error(fmt::format("the rotary base θ {} is too small for {} positions and a head "
                                "width of {}: the angle p · inv_freq_{} = {} · {} overflows "
                                "float32, and the tables would be nan: give a larger base",
                                theta, positions, d, i, p, inv[i]),
                    Setting::kRopeTheta);
      }
    }
  }
  // torch.cos(angles), torch.sin(angles): one pass over the (T, d) elements each.
  const auto n = static_cast<std::size_t>(angles.size());
  torch_cos(angles.data(), t.cos.data(), n, kernel);
  torch_sin(angles.data(), t.sin.data(), n, kernel);
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
