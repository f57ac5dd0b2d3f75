#pragma once

// The backward pass of self-attention: the gradients of a scalar loss, one function per step,
// in float32, in the operation orders of PyTorch's autograd (each product sums its inner
// dimension left to right, as the forward's products do; the softmax's row sum in the order of
// ATen's vec::map2_reduce_all). lesson_backward.cpp records them as steps.

#include <cstdint>
#include <string_view>

#include "attn/attention.hpp"
#include "attn/matrix.hpp"
#include "attn/rope.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// The scalar that the backward pass differentiates.
enum class Loss {
  kSum,  // L = out.sum(): every element of the attention's final output
  kMse,  // L = ((out − target)**2).mean()
};

// L of `out` (all items' final outputs, rows one after another): out.sum() in the order of
// ATen's sum kernel, or ((out − target)**2).mean(), the squares summed so and divided by their
// number. ATen reads a tensor in the order of its memory: with `transposed_items` > 0, `out` is
// that many items' transposed views, (W_o Zᵀ)ᵀ, whose memory holds each item's columns in turn
// (and out − target, made in out's layout, the same). Requires: target of out's shape for kMse.
float loss_value(const Matrix& out, Loss loss, const Matrix& target,
                 std::int64_t transposed_items = 0);

// dL/d out: ones for kSum; (1 / N) · (2 · (out − target)) for kMse, as MeanBackward and
// PowBackward compute it.
Matrix loss_gradient(const Matrix& out, Loss loss, const Matrix& target);

// The softmax's backward, torch's _softmax_backward_data: dS = (dA − r) ⊙ A, where
// r_i = Σ_j dA_ij · A_ij is added in the order of ATen's 8-lane map2_reduce_all for the kernel.
// a: the softmax's output (nan in rows whose every key is masked); da: dL/dA. Both (T, T_k).
// `row_dot` receives r: (T, 1).
Matrix softmax_backward(const Matrix& a, const Matrix& da, TorchKernel kernel, Matrix& row_dot);

// The causal lesson's other way, backwards through `renormalized = zeroed / s`, s_i the row's
// sum (zeroed.sum(dim=-1), in ATen's order): DivBackward's dR / s, plus the sum's gradient
// ds_i = Σ_j −dR_ij · ((zeroed_ij / s_i) / s_i) (added in ATen's sum order), which SumBackward
// hands to every cell of the row. zeroed, renormalized, dr: (T, T_k). Returns dL/d zeroed.
Matrix renormalize_backward(const Matrix& zeroed, const Matrix& renormalized, const Matrix& dr);

// Through `zeroed = unmasked ⊙ (1 − M)`: d ⊙ (1 − M), as MulBackward multiplies (a masked cell is
// d · 0, signed as d). d, mask: (T, T_k).
Matrix zeroing_backward(const Matrix& d, const Matrix& mask);

// Back through the rotary embeddings x' = x·cos + rotate(x)·sin (rope_rotate's tables and
// pairs): dx = g·cos + rotateᵀ(g·sin), where rotateᵀ, the rotation's transpose, turns by the
// opposite angle: cat(y[d/2:], −y[:d/2]) (half) or (y₁, −y₀, y₃, −y₂, …) (interleaved). Each
// product is rounded, as autograd's MulBackward rounds it; the sum adds +0 too, as autograd adds
// the zeros of the slices' gradients (a sum of −0 and −0 is +0 there). g: (rows, k · d_head),
// row i at position i, each block of d_head columns on its own. Requires the tables' shape as
// rope_rotate does.
Matrix rope_backward(const Matrix& g, const RopeTables& tables, RopePairs pairs);

// Through the scaling ω / √d_k and the mask: dS / (float)√d_k, 0 where mask is 1 (masked_fill's
// backward). mask: (T, T_k) or 0 x 0 for none.
Matrix scores_backward(const Matrix& ds, Eigen::Index d_k, const Matrix& mask);

// aᵀ @ b, each cell summed over the rows of a and b in order: (r, m) and (r, n) -> (m, n).
// The gradient of a weight from its input and its output's gradient (rows of every batch item,
// one after another, as PyTorch folds a batched X @ W or X @ Wᵀ into one product).
Matrix transposed_product(const Matrix& a, const Matrix& b, int threads = 1,
                          MatmulKernel kernel = MatmulKernel::kReference);

// The same gradient, aᵀ @ b, of a weight applied as W.matmul(xᵀ) to a batch of `items` items
// (a's and b's rows: each item's in turn, the same number each). PyTorch folds such a batch into
// one product only where b is one column wide (xᵀ's last stride is then 1); otherwise it expands
// W to the batch and multiplies item by item (bmm), and the expand's backward adds the items'
// products as `sum(dim=0)` does (torch_sum_rows). One item, or one column: transposed_product.
Matrix items_transposed_product(const Matrix& a, const Matrix& b, std::int64_t items,
                                int threads = 1, MatmulKernel kernel = MatmulKernel::kReference);

// Σ over the rows of g, as ATen's sum over dim 0 adds them (torch_sum_rows): (r, n) -> (1, n).
// A bias's gradient (sum_to_size's sum over the broadcast rows).
Matrix column_sums(const Matrix& g);

// w − η · g, as `w - lr * w.grad` computes it in float32.
Matrix sgd_step(const Matrix& w, const Matrix& g, double lr);

}  // namespace attn
