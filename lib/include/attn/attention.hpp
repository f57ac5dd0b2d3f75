#pragma once

// The steps of scaled dot-product attention, one function per step of the lesson, in float32
// with the operation order that reproduces PyTorch's results on these shapes.

#include "attn/matrix.hpp"
#include "attn/torch_random.hpp"

namespace attn {

// What the softmax gives for a row whose every score is −inf (every key masked).
enum class MaskedRows {
  kNan,   // nan, as torch.softmax gives (exp(−inf − (−inf)) is exp(nan))
  kZero,  // zeros, as the math path of scaled_dot_product_attention gives
};

// a @ b with naive left-to-right float32 accumulation, acc = fl(acc + fl(a_ik * b_kj)), as the
// reference BLAS that Debian's PyTorch links computes it.
// Requires: a.cols() == b.rows(). Returns: (a.rows(), b.cols()).
// Rows are computed on up to `threads` threads; the result is the same bits for any count.
Matrix matmul(const Matrix& a, const Matrix& b, int threads = 1);

// Q = X W_q (and K = X W_k, V = X W_v): x (T, d_in) @ w (d_in, d_out) -> (T, d_out).
// Requires: x.cols() == w.rows(). Throws Error naming both shapes otherwise.
Matrix project(const Matrix& x, const Matrix& w, int threads = 1);

// ω = Q Kᵀ: q (T_q, d_k), k (T_k, d_k) -> (T_q, T_k).
// Requires: q.cols() == k.cols(). Throws Error naming both shapes otherwise.
Matrix omega_scores(const Matrix& q, const Matrix& k, int threads = 1);

// ω / √d_k, a float32 division by (float)sqrt(d_k) as PyTorch's `omega / d_k**0.5`.
// Requires: d_k >= 1.
Matrix scale(const Matrix& omega, Eigen::Index d_k);

// The causal mask: 1 where key j > query i (j is later than i), 0 elsewhere, as
// torch.triu(torch.ones(t_q, t_k), diagonal=1). Returns: (t_q, t_k).
Matrix causal_mask(Eigen::Index t_q, Eigen::Index t_k);

// ω.masked_fill(mask == 1, −inf). Requires: equal shapes. Returns: the shape of omega.
Matrix apply_mask(const Matrix& omega, const Matrix& mask);

// softmax(s, dim=-1) row by row: m = max, e_j = exp(s_j - m), the sum of the e_j, then
// e_j * (1 / sum), as PyTorch's CPU kernel (_vec_softmax_lastdim). exp is torch_expf, and the
// sum is added in the order of ATen's 8-lane reduce_all, for the kernel flavour.
// A row whose every score is −inf follows `masked_rows`.
// Returns: the same shape; every other row sums to 1 within rounding.
Matrix softmax_rows(const Matrix& scores, TorchKernel kernel,
                    MaskedRows masked_rows = MaskedRows::kNan, int threads = 1);

// The softmax's intermediates, as softmax_rows computes them.
struct SoftmaxParts {
  Matrix row_max;       // m_i = max_j s_ij: (T_q, 1); −inf for a fully masked row
  Matrix exponentials;  // e_ij = exp(s_ij − m_i): (T_q, T_k)
  Matrix row_sum;       // Σ_j e_ij: (T_q, 1)
  Matrix weights;       // A_ij = e_ij · (1 / Σ_j e_ij): (T_q, T_k)
};
// softmax_rows with its intermediates; a fully masked row has nan exponentials and sum.
SoftmaxParts softmax_parts(const Matrix& scores, TorchKernel kernel,
                           MaskedRows masked_rows = MaskedRows::kNan, int threads = 1);

// a.sum(dim=-1, keepdim=True), added in the order of ATen's sum kernel. Returns: (rows, 1).
Matrix row_sums(const Matrix& a);

// a / a.sum(dim=-1, keepdim=True): each row divided by its sum, added in the order of ATen's
// sum kernel (a row of zeros gives nan, as in PyTorch). Returns: the same shape.
Matrix renormalize_rows(const Matrix& a);

// Z = A V: a (T_q, T_k) @ v (T_k, d_v) -> (T_q, d_v).
// Requires: a.cols() == v.rows(). Throws Error naming both shapes otherwise.
Matrix context_vectors(const Matrix& a, const Matrix& v, int threads = 1);

// torch.exp on one float: SLEEF's expf_u10 (as PyTorch's AVX2 kernels vectorise it) for kAvx2,
// the C library's expf for kDefault.
float torch_expf(float x, TorchKernel kernel);

}  // namespace attn
