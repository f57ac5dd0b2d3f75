#pragma once

// The backward pass of self-attention: the gradients of a scalar loss, one function per step,
// in float32, in the operation orders of PyTorch's autograd (each product sums its inner
// dimension left to right, as the forward's products do; the softmax's row sum in the order of
// ATen's vec::map2_reduce_all). lesson_backward.cpp records them as steps.

#include <cstdint>
#include <string_view>

#include "attn/attention.hpp"
#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// The scalar that the backward pass differentiates.
enum class Loss {
  kSum,  // L = out.sum(): every element of the attention's final output
  kMse,  // L = ((out − target)**2).mean()
};

// L of `out` (all items' final outputs, rows one after another): out.sum() in the order of
// ATen's sum kernel, or ((out − target)**2).mean(), the squares summed so and divided by their
// number. Requires: target of out's shape for kMse.
float loss_value(const Matrix& out, Loss loss, const Matrix& target);

// dL/d out: ones for kSum; (1 / N) · (2 · (out − target)) for kMse, as MeanBackward and
// PowBackward compute it.
Matrix loss_gradient(const Matrix& out, Loss loss, const Matrix& target);

// The softmax's backward, torch's _softmax_backward_data: dS = (dA − r) ⊙ A, where
// r_i = Σ_j dA_ij · A_ij is added in the order of ATen's 8-lane map2_reduce_all for the kernel.
// a: the softmax's output (nan in rows whose every key is masked); da: dL/dA. Both (T, T_k).
// `row_dot` receives r: (T, 1).
Matrix softmax_backward(const Matrix& a, const Matrix& da, TorchKernel kernel, Matrix& row_dot);

// Through the scaling ω / √d_k and the mask: dS / (float)√d_k, 0 where mask is 1 (masked_fill's
// backward). mask: (T, T_k) or 0 x 0 for none.
Matrix scores_backward(const Matrix& ds, Eigen::Index d_k, const Matrix& mask);

// aᵀ @ b, each cell summed over the rows of a and b in order: (r, m) and (r, n) -> (m, n).
// The gradient of a weight from its input and its output's gradient (rows of every batch item,
// one after another, as PyTorch folds a batched product into one).
Matrix transposed_product(const Matrix& a, const Matrix& b, int threads = 1,
                          MatmulKernel kernel = MatmulKernel::kReference);

// Σ over the rows of g, in order, from 0: (r, n) -> (1, n). A bias's gradient.
Matrix column_sums(const Matrix& g);

// w − η · g, as `w - lr * w.grad` computes it in float32.
Matrix sgd_step(const Matrix& w, const Matrix& g, double lr);

}  // namespace attn
