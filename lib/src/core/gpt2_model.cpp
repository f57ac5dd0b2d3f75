// GPT-2's block in float32, as PyTorch's GPT2Model computes it: the layer norms, Conv1D, the
// causal attention of every head, the MLP with its GELU, and the residual stream.

#include "attn/gpt2_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "attn/attention.hpp"
#include "attn/error.hpp"

namespace attn {

Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps,
                  std::string_view name) {
  Matrix y(x.rows(), x.cols());
  const auto n = static_cast<double>(x.cols());
  const double e = static_cast<float>(eps);  // nn.LayerNorm's eps, as its float32 kernel reads it
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double mean = 0.0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) mean += x(i, j);
    mean /= n;
    double var = 0.0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) var += (x(i, j) - mean) * (x(i, j) - mean);
    if (var > std::numeric_limits<float>::max()) {
      // PyTorch sums the squares in float32: there they are infinite, and the row 0 or nan.
      throw Error(
          fmt::format("{}: the squared deviations of token {}'s row overflow float32 "
                      "(their sum is {:.4g}), as PyTorch's layer_norm sums them: the "
                      "checkpoint's values are too large",
                      name, i + 1, var));
    }
    const double inv = 1.0 / std::sqrt(var / n + e);  // the biased variance, as nn.LayerNorm
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      y(i, j) = static_cast<float>((x(i, j) - mean) * inv * weight(0, j) + bias(0, j));
    }
  }
  return y;
}

Matrix conv1d(const Matrix& x, const Matrix& weight, const Matrix& bias, int threads) {
  Matrix y = project(x, weight, threads, MatmulKernel::kAuto);
  for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) += bias.row(0);
  return y;
}

Matrix gelu(const Matrix& x, Gpt2Activation activation) {
  Matrix y(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    y.data()[i] = static_cast<float>(
        activation == Gpt2Activation::kGelu
            ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))
            : 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  return y;
}

Matrix gpt2_attention(const Matrix& a, const Gpt2Layer& w, std::int64_t n_head, int threads) {
  const Eigen::Index t = a.rows(), d = a.cols(), hd = d / n_head;
  const Matrix qkv = conv1d(a, w.c_attn_weight, w.c_attn_bias, threads);  // (T, 3d)
  const Matrix mask = causal_mask(t, t);
  Matrix z(t, d);
  for (Eigen::Index h = 0; h < n_head; ++h) {
    const Matrix q = qkv.middleCols(h * hd, hd), k = qkv.middleCols(d + h * hd, hd),
                 v = qkv.middleCols(2 * d + h * hd, hd);
    const Matrix weights = softmax_rows(scale(apply_mask(omega_scores(q, k, threads), mask), hd),
                                        TorchKernel::kAvx2, MaskedRows::kNan, threads);
    z.middleCols(h * hd, hd) = context_vectors(weights, v, threads, MatmulKernel::kAuto);
  }
  return conv1d(z, w.attn_proj_weight, w.attn_proj_bias, threads);
}

Matrix gpt2_block(const Matrix& h, const Gpt2Layer& w, const Gpt2Config& config, std::int64_t block,
                  int threads) {
  Matrix r = h + gpt2_attention(layer_norm(h, w.ln_1_weight, w.ln_1_bias, config.layer_norm_epsilon,
                                           fmt::format("h.{}.ln_1", block)),
                                w, config.n_head, threads);
  const Matrix m = gelu(conv1d(layer_norm(r, w.ln_2_weight, w.ln_2_bias, config.layer_norm_epsilon,
                                          fmt::format("h.{}.ln_2", block)),
                               w.c_fc_weight, w.c_fc_bias, threads),
                        config.activation);
  r += conv1d(m, w.mlp_proj_weight, w.mlp_proj_bias, threads);
  return r;
}

}  // namespace attn
