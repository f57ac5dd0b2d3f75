#include "attn/attention.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "attn/error.hpp"
#include "attn/parallel.hpp"

namespace attn {

namespace {

std::string shape_str(const Matrix& m) {
  return "[" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "]";
}

void require_inner(const Matrix& a, const Matrix& b, Eigen::Index a_inner, Eigen::Index b_inner,
                   const char* what) {
  if (a_inner != b_inner) {
    throw Error(std::string(what) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                " do not fit together");
  }
}

}  // namespace

Matrix project(const Matrix& x, const Matrix& w, int threads, MatmulKernel kernel) {
  require_inner(x, w, x.cols(), w.rows(), "projection X W");
  return matmul(x, w, threads, kernel);  // (T, d_in) @ (d_in, d_out) -> (T, d_out)
}

Matrix omega_scores(const Matrix& q, const Matrix& k, int threads, MatmulKernel kernel) {
  require_inner(q, k, q.cols(), k.cols(), "scores Q Kᵀ");
  return matmul_transposed(q, k, threads, kernel);  // ω = Q Kᵀ -> (T_q, T_k)
}

namespace {

// out = omega / √d_k, element by element; out may be omega. With row_max, also each row's
// largest quotient, (T_q, 1).
void scale_to(const Matrix& omega, Eigen::Index d_k, int threads, Matrix& out,
              Matrix* row_max = nullptr) {
  if (d_k < 1) throw Error("d_k " + std::to_string(d_k) + " is too small: it must be >= 1");
  const auto root = static_cast<float>(std::sqrt(static_cast<double>(d_k)));  // d_k**0.5
  const auto n = static_cast<std::size_t>(omega.cols());
  const float* in = omega.data();
  float* to = out.data();
  // Counted as the softmax counts its work, though a division is cheaper: so that from a block of
  // 2¹⁶ scores on, each thread scales the rows it computed and goes on with, not the other
  // core's (design.md, "Two cores and one block of data").
  if (row_max != nullptr) row_max->resize(omega.rows(), 1);
  parallel_for(omega.rows(), threads, 16.0 * static_cast<double>(omega.size()),
               [&](std::int64_t begin, std::int64_t end) {
                 if (row_max == nullptr) {
                   const auto first = static_cast<std::size_t>(begin) * n;
                   torch_divide(in + first, root, to + first,
                                static_cast<std::size_t>(end - begin) * n);
                   return;
                 }
                 for (std::int64_t r = begin; r < end; ++r) {
                   const auto first = static_cast<std::size_t>(r) * n;
                   (*row_max)(r, 0) = torch_divide_row_max(in + first, root, to + first, n);
                 }
               });
}

}  // namespace

Matrix scale(const Matrix& omega, Eigen::Index d_k, int threads) {
  Matrix s = uninitialized_matrix(omega.rows(), omega.cols());  // (T_q, T_k)
  scale_to(omega, d_k, threads, s);
  return s;
}

Matrix scale_in_place(Matrix omega, Eigen::Index d_k, int threads, Matrix* row_max) {
  scale_to(omega, d_k, threads, omega, row_max);
  return omega;
}

Matrix causal_mask(Eigen::Index t_q, Eigen::Index t_k) {
  Matrix mask = uninitialized_matrix(t_q, t_k);  // (T_q, T_k)
  for (Eigen::Index i = 0; i < t_q; ++i) {
    for (Eigen::Index j = 0; j < t_k; ++j) mask(i, j) = j > i ? 1.0f : 0.0f;
  }
  return mask;
}

Matrix apply_mask(const Matrix& omega, const Matrix& mask) {
  if (omega.rows() != mask.rows() || omega.cols() != mask.cols()) {
    throw Error("mask: shapes " + shape_str(omega) + " and " + shape_str(mask) + " differ");
  }
  Matrix masked = uninitialized_matrix(omega.rows(), omega.cols());  // (T_q, T_k)
  masked = omega;
  for (Eigen::Index i = 0; i < masked.size(); ++i) {
    if (mask.data()[i] != 0.0f) masked.data()[i] = -std::numeric_limits<float>::infinity();
  }
  return masked;
}

namespace {

// softmax_parts's work. p.weights is already (T_q, T_k) and may hold the scores themselves
// (`scores` aliasing it): each row reads its scores before it writes its weights.
void softmax_into(const Matrix& scores, TorchKernel kernel, MaskedRows masked_rows, int threads,
                  bool keep_exponentials, SoftmaxParts& p, const Matrix* row_max = nullptr) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // Every key masked: exp(−inf − (−inf)) is exp(nan) in torch.softmax, and the nan that an x86
  // subtraction creates has the sign bit set (0xffc00000).
  const float torch_nan = std::bit_cast<float>(0xffc00000u);
  const Eigen::Index n = scores.cols();
  p.row_max.resize(scores.rows(), 1);                                              // m: (T_q, 1)
  if (keep_exponentials) p.exponentials = uninitialized_matrix(scores.rows(), n);  // e
  p.row_sum.resize(scores.rows(), 1);                                              // Σ: (T_q, 1)
  // Rows in parallel: each row is computed the same way on any thread.
  const double work = 16.0 * static_cast<double>(scores.size());
  parallel_for(scores.rows(), threads, work, [&](std::int64_t begin, std::int64_t end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      const float* s = &scores(i, 0);
      float* w = n > 0 ? &p.weights(i, 0) : nullptr;
      float* e = keep_exponentials && n > 0 ? &p.exponentials(i, 0) : w;
      // m = max_j s_j
      const float m = n == 0 ? -kInf : row_max ? (*row_max)(i, 0) : torch_row_max(s, n, kernel);
      p.row_max(i, 0) = m;
      if (m == -kInf) {
        if (keep_exponentials) p.exponentials.row(i).setConstant(torch_nan);
        p.row_sum(i, 0) = torch_nan;
        p.weights.row(i).setConstant(masked_rows == MaskedRows::kZero ? 0.0f : torch_nan);
        continue;
      }
      // e_j = exp(s_j − m), Σ = Σ_j e_j, w_j = e_j · (1 / Σ)
      const float sum = torch_exp_sum(s, n, m, kernel, e);
      p.row_sum(i, 0) = sum;
      torch_scale_row(e, n, 1.0f / sum, kernel, w);
    }
  });
}

}  // namespace

SoftmaxParts softmax_parts(const Matrix& scores, TorchKernel kernel, MaskedRows masked_rows,
                           int threads, bool keep_exponentials) {
  SoftmaxParts p;
  p.weights = uninitialized_matrix(scores.rows(), scores.cols());  // A: (T_q, T_k)
  softmax_into(scores, kernel, masked_rows, threads, keep_exponentials, p);
  return p;
}

SoftmaxParts softmax_in_place(Matrix scores, TorchKernel kernel, MaskedRows masked_rows,
                              int threads, const Matrix* row_max) {
  SoftmaxParts p;
  p.weights = std::move(scores);
  softmax_into(p.weights, kernel, masked_rows, threads, false, p, row_max);
  return p;
}

Matrix softmax_rows(const Matrix& scores, TorchKernel kernel, MaskedRows masked_rows, int threads) {
  return softmax_parts(scores, kernel, masked_rows, threads).weights;
}

Matrix row_sums(const Matrix& a, int threads) {
  Matrix sums(a.rows(), 1);  // (T_q, 1)
  parallel_for(a.rows(), threads, 4.0 * static_cast<double>(a.size()),
               [&](std::int64_t begin, std::int64_t end) {
                 for (Eigen::Index i = begin; i < end; ++i) {
                   sums(i, 0) = torch_sum(&a(i, 0), a.cols());
                 }
               });
  return sums;
}

Matrix renormalize_rows(const Matrix& a) {
  Matrix r = uninitialized_matrix(a.rows(), a.cols());  // (T_q, T_k)
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const float sum = torch_sum(&a(i, 0), a.cols());
    for (Eigen::Index j = 0; j < a.cols(); ++j) r(i, j) = a(i, j) / sum;
  }
  return r;
}

Matrix context_vectors(const Matrix& a, const Matrix& v, int threads, MatmulKernel kernel) {
  require_inner(a, v, a.cols(), v.rows(), "context A V");
  return matmul(a, v, threads, kernel);  // Z = A V -> (T_q, d_v)
}

}  // namespace attn
