// GPT-2's block in float32, as PyTorch's GPT2Model computes it: the layer norms, Conv1D, the
// causal attention of every head, the MLP with its GELU, and the residual stream. Each has the bits
// of PyTorch's CPU kernels, but the erf form of GELU, which PyTorch hands to oneDNN.

#include "attn/gpt2_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "attn/attention.hpp"
#include "attn/error.hpp"

namespace attn {

namespace {

// ATen's moments of a row (aten/src/ATen/native/cpu/moments_utils.h, as PyTorch 1.13 builds it):
// Welford's update on 8 lanes over chunks of 16 vectors, the chunks added in a cascade (a stack
// as deep as ⌈log2(chunks)⌉, at least 1), the last N mod 8 values by the scalar update, then the
// 8 lanes added into them. Every step in float32, nothing fused (so on both kernels).
constexpr std::size_t kLanes = 8;
constexpr std::int64_t kChunk = 16, kWidth = 8;  // kWidth: kLanes, as a count of values

struct Moments {
  std::int64_t m0 = 0;
  std::array<float, kLanes> m1{}, m2{};
};

// AddMoments: `from`'s lanes into `to`'s, weighted by their counts.
void add_moments(const Moments& from, Moments& to) {
  const std::int64_t n = to.m0 + from.m0;
  const float c = n == 0 ? 0.0f : static_cast<float>(from.m0) / static_cast<float>(n);
  for (std::size_t l = 0; l < kLanes; ++l) {
    const float delta = from.m1[l] - to.m1[l];
    to.m1[l] += c * delta;
    to.m2[l] += from.m2[l] + delta * delta * c * static_cast<float>(to.m0);
  }
  to.m0 = n;
}

// The mean and the biased variance of row[0 … n), as RowwiseMoments computes them.
std::pair<float, float> row_moments(const float* row, std::int64_t n) {
  const std::int64_t vectors = n / kWidth, chunks = (vectors + kChunk - 1) / kChunk;
  const auto depth = static_cast<std::size_t>(
      chunks <= 2 ? 1 : std::bit_width(static_cast<std::uint64_t>(chunks - 1)));
  std::vector<Moments> stack(depth);
  for (std::int64_t i = 0; i < chunks; ++i) {
    Moments chunk;
    chunk.m0 = std::min(kChunk, vectors - i * kChunk);
    for (std::int64_t j = 0; j < chunk.m0; ++j) {
      const float* x = row + (i * kChunk + j) * kWidth;
      const float c = 1.0f / static_cast<float>(j + 1);
      for (std::size_t l = 0; l < kLanes; ++l) {
        const float delta = x[l] - chunk.m1[l];
        chunk.m1[l] += delta * c;
        chunk.m2[l] += delta * (x[l] - chunk.m1[l]);
      }
    }
    add_moments(chunk, stack[0]);
    std::int64_t mask = i + 1;
    for (std::size_t k = 1; k < depth && (mask & 1) == 0; ++k, mask >>= 1) {
      add_moments(stack[k - 1], stack[k]);
      stack[k - 1] = Moments{};
    }
  }
  for (std::size_t k = 1; k < stack.size(); ++k) add_moments(stack[k], stack[0]);
  std::int64_t m0 = 0;
  float m1 = 0.0f, m2 = 0.0f;
  for (std::int64_t i = vectors * kWidth; i < n; ++i) {
    const float delta = row[i] - m1;
    ++m0;
    m1 += delta / static_cast<float>(m0);
    m2 += delta * (row[i] - m1);
  }
  for (std::size_t l = 0; l < kLanes; ++l) {
    const std::int64_t total = m0 + vectors;
    const float c = total == 0 ? 0.0f : static_cast<float>(vectors) / static_cast<float>(total);
    const float delta = stack[0].m1[l] - m1;
    m1 += c * delta;
    m2 += stack[0].m2[l] + delta * delta * c * static_cast<float>(m0);
    m0 = total;
  }
  return {m1, m2 / static_cast<float>(n)};
}

// PyTorch's moments of such a row overflow float32, and its row is nan or the bias alone: the sum
// of its squared deviations is beyond float32, or its mean is so large that the square of its
// distance from the partial means is.
[[noreturn]] void refuse_row(std::string_view name, Eigen::Index i, const float* row,
                             Eigen::Index n) {
  double mean = 0.0, sum = 0.0, largest = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) mean += row[j];
  mean /= static_cast<double>(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    sum += (row[j] - mean) * (row[j] - mean);
    largest = std::max(largest, std::abs(static_cast<double>(row[j])));
  }
  if (sum > std::numeric_limits<float>::max()) {
    throw Error(
        fmt::format("{}: the squared deviations of token {}'s row overflow float32 (their sum is "
                    "{:.4g}), as PyTorch's layer_norm sums them: the checkpoint's values are too "
                    "large",
                    name, i + 1, sum));
  }
  throw Error(fmt::format(
      "{}: token {}'s row has values of {:.4g}, whose squares overflow float32 in PyTorch's "
      "layer_norm (its row there is nan, or the bias alone): the checkpoint's values are too large",
      name, i + 1, largest));
}

}  // namespace

Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps,
                  std::string_view name, TorchKernel kernel) {
  Matrix y(x.rows(), x.cols());
  const auto e = static_cast<float>(eps);  // nn.LayerNorm's eps, as its float32 kernel reads it
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const float* row = &x(i, 0);
    const auto [mean, var] = row_moments(row, x.cols());
    if (!std::isfinite(var)) refuse_row(name, i, row, x.cols());
    // LayerNormKernelImplInternal: rstd, then (x · rstd + (−rstd · mean)) · weight + bias, each
    // multiply-add fused where the AVX2 kernel's compiler fuses them.
    const float rstd = 1.0f / std::sqrt(var + e), shift = -rstd * mean;
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      y(i, j) = kernel == TorchKernel::kAvx2
                    ? std::fma(std::fma(row[j], rstd, shift), weight(0, j), bias(0, j))
                    : (row[j] * rstd + shift) * weight(0, j) + bias(0, j);
    }
  }
  return y;
}

Matrix conv1d(const Matrix& x, const Matrix& weight, const Matrix& bias, int threads,
              MatmulKernel matmul) {
  return addmm(bias, x, weight, threads, matmul);
}

Matrix gelu(const Matrix& x, Gpt2Activation activation, TorchKernel kernel) {
  Matrix y(x.rows(), x.cols());
  if (activation == Gpt2Activation::kGeluNew) {
    torch_gelu_new(x.data(), y.data(), static_cast<std::size_t>(x.size()), kernel);
    return y;
  }
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    y.data()[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  return y;
}

Matrix gpt2_attention(const Matrix& a, const Gpt2Layer& w, std::int64_t n_head,
                      const Gpt2Kernels& k) {
  const Eigen::Index t = a.rows(), d = a.cols(), hd = d / n_head;
  const Matrix qkv = conv1d(a, w.c_attn_weight, w.c_attn_bias, k.threads, k.matmul);  // (T, 3d)
  const Matrix mask = causal_mask(t, t);
  Matrix z(t, d);
  for (Eigen::Index h = 0; h < n_head; ++h) {
    const Matrix q = qkv.middleCols(h * hd, hd), key = qkv.middleCols(d + h * hd, hd),
                 v = qkv.middleCols(2 * d + h * hd, hd);
    const Matrix scores = scale(apply_mask(omega_scores(q, key, k.threads, k.matmul), mask), hd);
    const Matrix weights = softmax_rows(scores, k.torch, MaskedRows::kNan, k.threads);
    z.middleCols(h * hd, hd) = context_vectors(weights, v, k.threads, k.matmul);
  }
  return conv1d(z, w.attn_proj_weight, w.attn_proj_bias, k.threads, k.matmul);
}

Matrix gpt2_block(const Matrix& h, const Gpt2Layer& w, const Gpt2Config& config, std::int64_t block,
                  const Gpt2Kernels& k) {
  const double eps = config.layer_norm_epsilon;
  Matrix r = h + gpt2_attention(layer_norm(h, w.ln_1_weight, w.ln_1_bias, eps,
                                           fmt::format("h.{}.ln_1", block), k.torch),
                                w, config.n_head, k);
  const Matrix m = gelu(conv1d(layer_norm(r, w.ln_2_weight, w.ln_2_bias, eps,
                                          fmt::format("h.{}.ln_2", block), k.torch),
                               w.c_fc_weight, w.c_fc_bias, k.threads, k.matmul),
                        config.activation, k.torch);
  r += conv1d(m, w.mlp_proj_weight, w.mlp_proj_bias, k.threads, k.matmul);
  return r;
}

}  // namespace attn
