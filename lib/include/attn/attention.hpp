#pragma once

// The steps of scaled dot-product attention, one function per step of the lesson, in float32.
// Each is the math of its step; the PyTorch kernels they call (torch_kernels.hpp) give them
// PyTorch's operation order, so PyTorch's bits.

#include <cmath>

#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// What the softmax gives for a row whose every score is −inf (every key masked).
enum class MaskedRows {
  kNan,   // nan, as torch.softmax gives (exp(−inf − (−inf)) is exp(nan))
  kZero,  // zeros, as the math path of scaled_dot_product_attention gives
};

// Q = X W_q (and K = X W_k, V = X W_v): x (T, d_in) @ w (d_in, d_out) -> (T, d_out).
// Requires: x.cols() == w.rows(). Throws Error naming both shapes otherwise.
Matrix project(const Matrix& x, const Matrix& w, int threads = 1,
               MatmulKernel kernel = MatmulKernel::kReference);

// ω = Q Kᵀ: q (T_q, d_k), k (T_k, d_k) -> (T_q, T_k).
// Requires: q.cols() == k.cols(). Throws Error naming both shapes otherwise.
Matrix omega_scores(const Matrix& q, const Matrix& k, int threads = 1,
                    MatmulKernel kernel = MatmulKernel::kReference);

// ω / √d_k, a float32 division by (float)sqrt(d_k) as PyTorch's `omega / d_k**0.5`.
// Requires: d_k >= 1.
Matrix scale(const Matrix& omega, Eigen::Index d_k, int threads = 1);
// scale in the matrix's own memory: the same numbers, no new (T_q, T_k) matrix. With row_max,
// also each row's largest scaled score, (T_q, 1), for softmax_in_place.
Matrix scale_in_place(Matrix omega, Eigen::Index d_k, int threads = 1, Matrix* row_max = nullptr);

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
// Without `keep_exponentials`, exponentials is left empty (0 x 0) and the weights are computed in
// its place: the same numbers, one (T_q, T_k) matrix fewer.
// The scores must not be nan (ω is checked for finite values before it gets here).
SoftmaxParts softmax_parts(const Matrix& scores, TorchKernel kernel,
                           MaskedRows masked_rows = MaskedRows::kNan, int threads = 1,
                           bool keep_exponentials = true);
// softmax_parts without exponentials, the weights computed in the scores' own memory. With
// row_max (scale_in_place's), each row's max is taken from it rather than read from the row
// again: the same weights (a largest score of 0 may carry the other sign, which no exp(s − m)
// sees).
SoftmaxParts softmax_in_place(Matrix scores, TorchKernel kernel,
                              MaskedRows masked_rows = MaskedRows::kNan, int threads = 1,
                              const Matrix* row_max = nullptr);

// a.sum(dim=-1, keepdim=True), added in the order of ATen's sum kernel. Returns: (rows, 1).
// Rows on up to `threads` threads, the same bits for any count.
Matrix row_sums(const Matrix& a, int threads = 1);

// Whether a row of attention weights summing to `sum` is a softmax's, whose sum is 1 up to
// rounding: not a row whose every key is masked (nan, or 0 by --masked-rows zero).
inline bool softmax_row(float sum) { return std::isfinite(sum) && sum != 0.0f; }

// a / a.sum(dim=-1, keepdim=True): each row divided by its sum, added in the order of ATen's
// sum kernel (a row of zeros gives nan, as in PyTorch). Returns: the same shape.
Matrix renormalize_rows(const Matrix& a);

// Z = A V: a (T_q, T_k) @ v (T_k, d_v) -> (T_q, d_v).
// Requires: a.cols() == v.rows(). Throws Error naming both shapes otherwise.
Matrix context_vectors(const Matrix& a, const Matrix& v, int threads = 1,
                       MatmulKernel kernel = MatmulKernel::kReference);

}  // namespace attn
