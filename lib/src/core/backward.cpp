// The backward pass's math: the loss and its gradient, the softmax's backward, the scaling and
// the mask, the weights' gradients and one step of gradient descent.

#include "attn/backward.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/error.hpp"

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

// The values of `m` (`items` items' rows one after another) in the order of a transposed view's
// memory: each item's columns in turn, each column's rows in turn.
Matrix transposed_memory_order(const Matrix& m, std::int64_t items) {
  const Eigen::Index rows = m.rows() / static_cast<Eigen::Index>(items);
  Matrix out(1, m.size());
  Eigen::Index k = 0;
  for (std::int64_t b = 0; b < items; ++b) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      for (Eigen::Index t = 0; t < rows; ++t) out(0, k++) = m(b * rows + t, j);
    }
  }
  return out;
}

}  // namespace

float loss_value(const Matrix& out, Loss loss, const Matrix& target,
                 std::int64_t transposed_items) {
  if (transposed_items > 0) {
    return loss_value(
        transposed_memory_order(out, transposed_items), loss,
        loss == Loss::kMse ? transposed_memory_order(target, transposed_items) : target);
  }
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
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const float r =
        torch_dot_reduce_all(da.data() + i * da.cols(), a.data() + i * a.cols(), a.cols(), kernel);
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

Matrix renormalize_backward(const Matrix& zeroed, const Matrix& renormalized, const Matrix& dr) {
  Matrix dy(dr.rows(), dr.cols());                                // (T, T_k)
  std::vector<float> terms(static_cast<std::size_t>(dr.cols()));  // −dR ⊙ ((Y / s) / s), a row
  for (Eigen::Index i = 0; i < dr.rows(); ++i) {
    const float s = torch_sum(zeroed.data() + i * zeroed.cols(), zeroed.cols());
    for (Eigen::Index j = 0; j < dr.cols(); ++j) {
      terms[static_cast<std::size_t>(j)] = -dr(i, j) * (renormalized(i, j) / s);
    }
    const float ds = torch_sum(terms.data(), dr.cols());  // sum_to_size: the row's sum
    for (Eigen::Index j = 0; j < dr.cols(); ++j) dy(i, j) = dr(i, j) / s + ds;
  }
  return dy;
}

Matrix zeroing_backward(const Matrix& d, const Matrix& mask) {
  Matrix out(d.rows(), d.cols());
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    out.data()[i] = d.data()[i] * (1.0f - mask.data()[i]);
  }
  return out;
}

Matrix rope_backward(const Matrix& g, const RopeTables& tables, RopePairs pairs) {
  const Eigen::Index d = tables.cos.cols(), half = d / 2;
  if (d == 0 || g.cols() % d != 0 || g.rows() > tables.cos.rows()) {
    throw Error(fmt::format("rope_backward: a [{}, {}] gradient does not fit tables of [{}, {}]",
                            g.rows(), g.cols(), tables.cos.rows(), d));
  }
  Matrix out(g.rows(), g.cols());
  std::vector<float> turned(static_cast<std::size_t>(d));  // g · sin, one head's block
  for (Eigen::Index i = 0; i < g.rows(); ++i) {
    const float* cos = &tables.cos(i, 0);
    const float* sin = &tables.sin(i, 0);
    for (Eigen::Index h = 0; h < g.cols(); h += d) {
      const float* gi = &g(i, h);
      for (Eigen::Index c = 0; c < d; ++c) turned[static_cast<std::size_t>(c)] = gi[c] * sin[c];
      for (Eigen::Index c = 0; c < d; ++c) {
        // rotateᵀ: the column that c's rotated value came from, and its sign.
        const Eigen::Index from = pairs == RopePairs::kHalf ? (c < half ? c + half : c - half)
                                                            : (c % 2 == 0 ? c + 1 : c - 1);
        const bool keep_sign = pairs == RopePairs::kHalf ? c < half : c % 2 == 0;
        const float back = turned[static_cast<std::size_t>(from)];
        out(i, h + c) = (gi[c] * cos[c] + (keep_sign ? back : -back)) + 0.0f;
      }
    }
  }
  return out;
}

Matrix transposed_product(const Matrix& a, const Matrix& b, int threads, MatmulKernel kernel) {
  return transposed_matmul(a, b, threads, kernel);
}

Matrix items_transposed_product(const Matrix& a, const Matrix& b, std::int64_t items, int threads,
                                MatmulKernel kernel) {
  if (items <= 1 || b.cols() == 1) return transposed_product(a, b, threads, kernel);
  const Eigen::Index rows = a.rows() / static_cast<Eigen::Index>(items);
  if (rows * static_cast<Eigen::Index>(items) != a.rows() || b.rows() != a.rows()) {
    throw std::logic_error("items_transposed_product: the items' rows differ");
  }
  // Each item's product as one row of a (items, m · n) matrix, summed over its rows.
  Matrix per_item(static_cast<Eigen::Index>(items), a.cols() * b.cols());
  for (std::int64_t i = 0; i < items; ++i) {
    const Eigen::Index r0 = static_cast<Eigen::Index>(i) * rows;
    const Matrix g =
        transposed_product(a.middleRows(r0, rows), b.middleRows(r0, rows), threads, kernel);
    std::copy(g.data(), g.data() + g.size(), per_item.row(static_cast<Eigen::Index>(i)).data());
  }
  const Matrix sum = torch_sum_rows(per_item);  // (1, m · n)
  Matrix out(a.cols(), b.cols());
  std::copy(sum.data(), sum.data() + sum.size(), out.data());
  return out;
}

Matrix column_sums(const Matrix& g) { return torch_sum_rows(g); }

Matrix sgd_step(const Matrix& w, const Matrix& g, double lr) {
  const auto eta = static_cast<float>(lr);
  Matrix out(w.rows(), w.cols());
  for (Eigen::Index i = 0; i < w.size(); ++i) out.data()[i] = w.data()[i] - eta * g.data()[i];
  return out;
}

}  // namespace attn
