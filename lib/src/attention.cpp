#include "attn/attention.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "attn/error.hpp"

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

// SLEEF's xexpf (u10) with FMA, one lane: q = rint(x / ln 2), a two-part reduction, a degree-6
// polynomial, and a scale by 2^q done as two exact multiplications.
float sleef_expf_u10(float d) {
  const float q_f = std::nearbyint(d * 1.442695040888963407359924681001892137426645954152985934f);
  const auto q = static_cast<std::int32_t>(q_f);
  float s = std::fma(q_f, -0.693145751953125f, d);
  s = std::fma(q_f, -1.428606765330187045e-06f, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  u = 1.0f + std::fma(s * s, u, s);
  // ldexp2: u * 2^(q >> 1) * 2^(q - (q >> 1)), each power built from its exponent bits.
  auto pow2i = [](std::int32_t e) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(e + 0x7f) << 23);
  };
  const std::int32_t half = q >> 1;
  u = u * pow2i(half) * pow2i(q - half);
  if (d < -104.0f) u = 0.0f;
  if (d > 100.0f) u = std::numeric_limits<float>::infinity();
  if (std::isnan(d)) u = d;
  return u;
}

// The sum of a softmax row as ATen's vec::reduce_all computes it with 8-lane vectors: rows
// shorter than a vector are summed in order; longer rows are summed lane by lane (lane j % 8),
// then the 8 lanes are combined: in order by the default kernel, as a tree of shuffles by AVX2.
float row_sum(const float* e, Eigen::Index n, TorchKernel kernel) {
  constexpr Eigen::Index kLanes = 8;
  if (n == 0) return 0.0f;
  if (n < kLanes) {
    float sum = e[0];
    for (Eigen::Index j = 1; j < n; ++j) sum = sum + e[j];
    return sum;
  }
  float lane[kLanes];
  for (Eigen::Index l = 0; l < kLanes; ++l) lane[l] = e[l];
  for (Eigen::Index j = kLanes; j < n; ++j) lane[j % kLanes] = lane[j % kLanes] + e[j];
  if (kernel == TorchKernel::kDefault) {
    float sum = lane[0];
    for (Eigen::Index l = 1; l < kLanes; ++l) sum = sum + lane[l];
    return sum;
  }
  // _mm256_permute2f128_ps (lane l + lane l^4), then shuffles 0x4E (l^2) and 0xB1 (l^1).
  const float h0 = lane[0] + lane[4], h1 = lane[1] + lane[5];
  const float h2 = lane[2] + lane[6], h3 = lane[3] + lane[7];
  return (h0 + h2) + (h1 + h3);
}

}  // namespace

float torch_expf(float x, TorchKernel kernel) {
  return kernel == TorchKernel::kAvx2 ? sleef_expf_u10(x) : std::exp(x);
}

Matrix matmul(const Matrix& a, const Matrix& b) {
  require_inner(a, b, a.cols(), b.rows(), "matmul");
  Matrix c(a.rows(), b.cols());  // (M, N)
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < b.cols(); ++j) {
      float acc = 0.0f;
      for (Eigen::Index k = 0; k < a.cols(); ++k) acc = acc + a(i, k) * b(k, j);
      c(i, j) = acc;
    }
  }
  return c;
}

Matrix project(const Matrix& x, const Matrix& w) {
  require_inner(x, w, x.cols(), w.rows(), "projection X W");
  return matmul(x, w);  // (T, d_in) @ (d_in, d_out) -> (T, d_out)
}

Matrix omega_scores(const Matrix& q, const Matrix& k) {
  require_inner(q, k, q.cols(), k.cols(), "scores Q Kᵀ");
  const Matrix k_t = k.transpose();  // Kᵀ: (d_k, T_k)
  return matmul(q, k_t);             // ω = Q Kᵀ -> (T_q, T_k)
}

Matrix scale(const Matrix& omega, Eigen::Index d_k) {
  if (d_k < 1) throw Error("d_k " + std::to_string(d_k) + " is too small: it must be >= 1");
  const auto root = static_cast<float>(std::sqrt(static_cast<double>(d_k)));  // d_k**0.5
  Matrix s(omega.rows(), omega.cols());                                       // (T_q, T_k)
  for (Eigen::Index i = 0; i < s.size(); ++i) s.data()[i] = omega.data()[i] / root;
  return s;
}

Matrix softmax_rows(const Matrix& scores, TorchKernel kernel) {
  Matrix a(scores.rows(), scores.cols());  // A: (T_q, T_k)
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    float m = -std::numeric_limits<float>::infinity();
    for (Eigen::Index j = 0; j < scores.cols(); ++j) m = std::fmax(m, scores(i, j));
    for (Eigen::Index j = 0; j < scores.cols(); ++j) {
      a(i, j) = torch_expf(scores(i, j) - m, kernel);  // e_j = exp(s_j - max)
    }
    const float inv = 1.0f / row_sum(&a(i, 0), a.cols(), kernel);
    for (Eigen::Index j = 0; j < scores.cols(); ++j) a(i, j) = a(i, j) * inv;
  }
  return a;
}

Matrix context_vectors(const Matrix& a, const Matrix& v) {
  require_inner(a, v, a.cols(), v.rows(), "context A V");
  return matmul(a, v);  // Z = A V -> (T_q, d_v)
}

}  // namespace attn
