// The backward pass's math: the loss and its gradient, the softmax's backward, the scaling and
// the mask, the weights' gradients and one step of gradient descent.

#include "attn/backward.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace attn {

namespace {

// (out − target)² element by element, as `(d ** 2)` computes it (d · d).
Matrix squared_errors(const Matrix& out, const Matrix& target) {
  Matrix sq(out.rows(), out.cols());
  for (Eigen::Index i = 0; i < out.size(); ++i) {
    const float d = out.data()[i] - target.data()[i];
    sq.data()[i] = d * d;
  }
  return sq;
}

}  // namespace

float loss_value(const Matrix& out, Loss loss, const Matrix& target) {
  if (loss == Loss::kSum) return torch_sum(out.data(), out.size());
  const Matrix sq = squared_errors(out, target);
  return torch_sum(sq.data(), sq.size()) / static_cast<float>(sq.size());
}

Matrix loss_gradient(const Matrix& out, Loss loss, const Matrix& target) {
  if (loss == Loss::kSum) return Matrix::Ones(out.rows(), out.cols());
  // MeanBackward: 1 / N for every element; PowBackward: grad · (2 · d).
  const float g = 1.0f / static_cast<float>(out.size());
  Matrix d(out.rows(), out.cols());
  for (Eigen::Index i = 0; i < out.size(); ++i) {
    d.data()[i] = g * (2.0f * (out.data()[i] - target.data()[i]));
  }
  return d;
}

Matrix softmax_backward(const Matrix& a, const Matrix& da, TorchKernel kernel, Matrix& row_dot) {
  Matrix ds(a.rows(), a.cols());
  row_dot.resize(a.rows(), 1);
  std::vector<float> products(static_cast<std::size_t>(a.cols()));
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      products[static_cast<std::size_t>(j)] = da(i, j) * a(i, j);
    }
    const float r = torch_reduce_all_sum(products.data(), a.cols(), kernel);
    row_dot(i, 0) = r;
    for (Eigen::Index j = 0; j < a.cols(); ++j) ds(i, j) = (da(i, j) - r) * a(i, j);
  }
  return ds;
}

Matrix scores_backward(const Matrix& ds, Eigen::Index d_k, const Matrix& mask) {
  Matrix d = scale(ds, d_k);  // the division's backward: grad / (float)√d_k
  if (mask.size() == 0) return d;
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    if (mask.data()[i] != 0.0f) d.data()[i] = 0.0f;
  }
  return d;
}

Matrix transposed_product(const Matrix& a, const Matrix& b, int threads, MatmulKernel kernel) {
  const Matrix a_t = a.transpose();
  return matmul(a_t, b, threads, kernel);
}

Matrix column_sums(const Matrix& g) {
  Matrix s = Matrix::Zero(1, g.cols());
  for (Eigen::Index i = 0; i < g.rows(); ++i) {
    for (Eigen::Index j = 0; j < g.cols(); ++j) s(0, j) = s(0, j) + g(i, j);
  }
  return s;
}

Matrix sgd_step(const Matrix& w, const Matrix& g, double lr) {
  const auto eta = static_cast<float>(lr);
  Matrix out(w.rows(), w.cols());
  for (Eigen::Index i = 0; i < w.size(); ++i) out.data()[i] = w.data()[i] - eta * g.data()[i];
  return out;
}

}  // namespace attn
