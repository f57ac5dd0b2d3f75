#include "attn/attention.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "attn/error.hpp"
#include "attn/simd.hpp"
#include "attn/torch_kernels.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;
namespace test = attn::test;

TEST_CASE("matmul accumulates left to right in float32") {
  Matrix a(1, 3), b(3, 1);
  a << 1e8f, 1.0f, -1e8f;
  b << 1.0f, 1.0f, 1.0f;
  // ((1e8 + 1) - 1e8) in float32 is 0: the order is the reference BLAS's.
  CHECK(attn::matmul(a, b)(0, 0) == 0.0f);
}

TEST_CASE("shapes that do not fit are refused with both shapes") {
  const Matrix x = Matrix::Zero(6, 3), w = Matrix::Zero(4, 2);
  CHECK_THROWS_WITH_AS(attn::project(x, w),
                       "projection X W: shapes [6, 3] and [4, 2] do not fit together", attn::Error);
  CHECK_THROWS_WITH_AS(attn::omega_scores(Matrix::Zero(6, 2), Matrix::Zero(6, 3)),
                       "scores Q Kᵀ: shapes [6, 2] and [6, 3] do not fit together", attn::Error);
  CHECK_THROWS_WITH_AS(attn::context_vectors(Matrix::Zero(6, 6), Matrix::Zero(5, 4)),
                       "context A V: shapes [6, 6] and [5, 4] do not fit together", attn::Error);
  CHECK_THROWS_AS(attn::scale(Matrix::Zero(2, 2), 0), attn::Error);
}

TEST_CASE("scale divides by the float square root of d_k") {
  Matrix omega(1, 1);
  omega << 1.0f;
  CHECK(attn::scale(omega, 2)(0, 0) == 1.0f / static_cast<float>(std::sqrt(2.0)));
}

TEST_CASE("the scaling gives the plain division's bits on every vector path, in place or not") {
  // Every tail length of a 16- and a 32-lane loop, and values a division rounds or saturates:
  // subnormals, the largest floats, zeros of both signs, infinities and nan.
  std::vector<attn::Isa> paths;
  for (const attn::Isa isa : {attn::Isa::kPlain, attn::Isa::kAvx2, attn::Isa::kAvx512}) {
    if (isa <= attn::cpu_isa()) paths.push_back(isa);
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-40.0f, 40.0f);
  for (const Eigen::Index cols : {1, 7, 15, 16, 17, 31, 32, 33, 47, 64, 100}) {
    Matrix omega(3, cols);
    for (Eigen::Index i = 0; i < omega.size(); ++i) {
      omega.data()[i] = i % 5 == 4 ? specials[static_cast<std::size_t>(i / 5) % 9] : u(gen);
    }
    for (const std::int64_t d_k : {1, 2, 3, 64, 128, 1000}) {
      const auto root = static_cast<float>(std::sqrt(static_cast<double>(d_k)));
      for (const attn::Isa isa : paths) {
        attn::limit_isa(isa);
        const Matrix s = attn::scale(omega, d_k);
        const Matrix in_place = attn::scale_in_place(omega, d_k);
        attn::limit_isa(attn::cpu_isa());
        CAPTURE(cols);
        CAPTURE(d_k);
        CAPTURE(attn::isa_name(isa));
        for (Eigen::Index i = 0; i < omega.size(); ++i) {
          const float want = omega.data()[i] / root;
          CHECK(std::bit_cast<std::uint32_t>(s.data()[i]) == std::bit_cast<std::uint32_t>(want));
          CHECK(std::bit_cast<std::uint32_t>(in_place.data()[i]) ==
                std::bit_cast<std::uint32_t>(want));
        }
      }
    }
  }
}

TEST_CASE("softmax rows: sum to one, stay finite for huge scores, uniform for equal scores") {
  for (const TorchKernel kernel : test::kKernels) {
    Matrix s(3, 4);
    s << 1e30f, -1e30f, 0.0f, 1e30f,  //
        2.5f, 2.5f, 2.5f, 2.5f,       //
        -3.0f, 0.0f, 1.0f, 100.0f;
    const Matrix a = attn::softmax_rows(s, kernel);
    CHECK(a.allFinite());
    CHECK(a(0, 0) == 0.5f);
    CHECK(a(0, 3) == 0.5f);
    CHECK(a(0, 1) == 0.0f);
    for (Eigen::Index j = 0; j < 4; ++j) CHECK(a(1, j) == 0.25f);
    for (Eigen::Index i = 0; i < 3; ++i) CHECK(std::fabs(a.row(i).sum() - 1.0f) <= 1e-6f);
  }
}

TEST_CASE("torch_expf is within one ulp of the C library's expf on the softmax's range") {
  int worst_ulps = 0;
  for (float x = -103.0f; x <= 0.0f; x += 0.0137f) {
    const float a = attn::torch_expf(x, TorchKernel::kAvx2);
    const float b = std::exp(x);
    const int ulps = std::abs(std::bit_cast<std::int32_t>(a) - std::bit_cast<std::int32_t>(b));
    worst_ulps = std::max(worst_ulps, ulps);
  }
  CHECK(worst_ulps <= 1);
  CHECK(attn::torch_expf(0.0f, TorchKernel::kAvx2) == 1.0f);
  CHECK(attn::torch_expf(-200.0f, TorchKernel::kAvx2) == 0.0f);
  CHECK(attn::torch_expf(std::numeric_limits<float>::infinity(), TorchKernel::kAvx2) ==
        std::numeric_limits<float>::infinity());
}

TEST_CASE(
    "softmax_parts: the row max, the exponentials, the sum, and the weights softmax_rows gives") {
  Matrix s(2, 3);
  s << 1.0f, 2.0f, 3.0f, -std::numeric_limits<float>::infinity(), 0.5f, 0.5f;
  for (const TorchKernel kernel : test::kKernels) {
    const attn::SoftmaxParts p = attn::softmax_parts(s, kernel);
    CHECK(p.row_max(0, 0) == 3.0f);
    CHECK(p.exponentials(0, 2) == 1.0f);
    CHECK(p.exponentials(1, 0) == 0.0f);
    CHECK(p.row_sum(1, 0) == 2.0f);
    CHECK(test::bits_of(p.weights) == test::bits_of(attn::softmax_rows(s, kernel)));
    CHECK(p.weights(1, 1) == 0.5f);
  }
}

namespace {

// The vector paths this CPU runs (AVX2, AVX-512), not the plain code.
std::vector<attn::Isa> vector_isas() {
  std::vector<attn::Isa> paths;
  for (const attn::Isa isa : {attn::Isa::kAvx2, attn::Isa::kAvx512}) {
    if (isa <= attn::cpu_isa()) paths.push_back(isa);
  }
  return paths;
}

}  // namespace

TEST_CASE("the softmax backward's row dot gives the plain loop's bits, in both flavours") {
  // Σ_j x_j y_j in ATen's 8 lanes: fused (the AVX2 kernel) or rounded first (the default one).
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<Eigen::Index> lengths;
  for (Eigen::Index n = 0; n <= 40; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {255, 1000, 4097});
  for (const Eigen::Index n : lengths) {
    CAPTURE(n);
    std::vector<float> x(static_cast<std::size_t>(n)), y(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = u(gen), y[j] = u(gen) * 1e-3f;
    for (const attn::TorchKernel kernel : test::kKernels) {
      attn::set_simd_enabled(false);
      const float plain = attn::torch_dot_reduce_all(x.data(), y.data(), n, kernel);
      attn::set_simd_enabled(true);
      const float fast = attn::torch_dot_reduce_all(x.data(), y.data(), n, kernel);
      CHECK(std::bit_cast<std::uint32_t>(fast) == std::bit_cast<std::uint32_t>(plain));
    }
  }
  // The two flavours differ somewhere, so that the test tells them apart.
  std::vector<float> x(1000), y(1000);
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = u(gen), y[j] = u(gen);
  int differ = 0;
  for (Eigen::Index n = 9; n <= 1000; ++n) {
    differ += attn::torch_dot_reduce_all(x.data(), y.data(), n, attn::TorchKernel::kAvx2) !=
              attn::torch_dot_reduce_all(x.data(), y.data(), n, attn::TorchKernel::kDefault);
  }
  CHECK(differ > 0);
}

TEST_CASE("tensor.sum's cascade gives the plain code's bits on every vector path") {
  // torch_sum's cascade of 8-lane vectors in registers (AVX2 and AVX-512 paths) against the
  // plain code's lanes: lengths with every tail, every level of the cascade (blocks of 16 vectors
  // of 4 and more), and values of very different sizes, so that any other order rounds otherwise.
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::int64_t> lengths;
  for (std::int64_t n = 1; n <= 140; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {511, 512, 513, 2047, 2048, 4100, 8191, 65536, 262151});
  for (const std::int64_t n : lengths) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = u(gen) * std::ldexp(1.0f, static_cast<int>((i * 7) % 41) - 20);
    attn::set_simd_enabled(false);
    const float plain = attn::torch_sum(v.data(), n);
    attn::set_simd_enabled(true);
    for (const attn::Isa isa : vector_isas()) {
      attn::limit_isa(isa);
      const float fast = attn::torch_sum(v.data(), n);
      attn::limit_isa(attn::cpu_isa());
      CAPTURE(n);
      CAPTURE(attn::isa_name(isa));
      CHECK(std::bit_cast<std::uint32_t>(fast) == std::bit_cast<std::uint32_t>(plain));
    }
  }
}

TEST_CASE("the vectorised softmax gives the plain code's bits, in both flavours, on every path") {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-130.0f, 130.0f);
  const float inf = std::numeric_limits<float>::infinity();
  // Rows of every length up to 40 (tails of every size), and long ones, with masked keys and
  // exponents below −104 (0), near the limits, and equal scores.
  std::vector<Eigen::Index> lengths;
  for (Eigen::Index n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {255, 1000, 4097});
  for (const Eigen::Index n : lengths) {
    attn::Matrix s(6, n);
    for (Eigen::Index i = 0; i < s.size(); ++i) s.data()[i] = u(gen);
    s.row(1).setConstant(3.0f);
    for (Eigen::Index j = 0; j < n; j += 3) s(2, j) = -inf;
    s.row(3).setConstant(-inf);  // fully masked
    s(4, 0) = 1e30f;
    for (const attn::TorchKernel kernel : test::kKernels) {
      for (const auto rows : {attn::MaskedRows::kNan, attn::MaskedRows::kZero}) {
        attn::set_simd_enabled(false);
        const attn::SoftmaxParts plain = attn::softmax_parts(s, kernel, rows, 1);
        attn::set_simd_enabled(true);
        for (const attn::Isa isa : vector_isas()) {
          attn::limit_isa(isa);
          const attn::SoftmaxParts fast = attn::softmax_parts(s, kernel, rows, 2);
          const attn::SoftmaxParts fused = attn::softmax_parts(s, kernel, rows, 1, false);
          attn::limit_isa(attn::cpu_isa());
          CAPTURE(n);
          CAPTURE(attn::isa_name(isa));
          CHECK(test::bits_of(fast.row_max) == test::bits_of(plain.row_max));
          CHECK(test::bits_of(fast.exponentials) == test::bits_of(plain.exponentials));
          CHECK(test::bits_of(fast.row_sum) == test::bits_of(plain.row_sum));
          CHECK(test::bits_of(fast.weights) == test::bits_of(plain.weights));
          CHECK(test::bits_of(fused.weights) == test::bits_of(plain.weights));
          CHECK(fused.exponentials.size() == 0);
        }
      }
    }
  }
}

TEST_CASE(
    "the scaling's row maxima are the quotients' largest, and its quotients the same, on every "
    "path") {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-50.0f, 50.0f);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Eigen::Index> lengths;
  for (Eigen::Index n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {100, 4097});
  for (const Eigen::Index n : lengths) {
    attn::Matrix s(4, n);
    for (Eigen::Index i = 0; i < s.size(); ++i) s.data()[i] = u(gen);
    for (Eigen::Index j = 0; j < n; j += 2) s(1, j) = -inf;  // masked keys
    s.row(2).setConstant(-inf);                              // every key masked
    s(3, n - 1) = 1e30f;                                     // the largest last
    const attn::Matrix whole = attn::scale(s, 7);
    for (int i = 0; i <= static_cast<int>(attn::cpu_isa()); ++i) {
      attn::limit_isa(static_cast<attn::Isa>(i));
      attn::Matrix row_max;
      const attn::Matrix scaled = attn::scale_in_place(s, 7, 2, &row_max);
      attn::limit_isa(attn::cpu_isa());
      CAPTURE(n);
      CAPTURE(i);
      CHECK(test::bits_of(scaled) == test::bits_of(whole));
      REQUIRE(row_max.rows() == s.rows());
      for (Eigen::Index r = 0; r < s.rows(); ++r) CHECK(row_max(r, 0) == whole.row(r).maxCoeff());
    }
  }
}

TEST_CASE(
    "a row's max on the vector paths is the 8 lanes' maxima in order, where a 0 or nan makes the "
    "order count") {
  // Lane j % 8 takes max_ps(lane, s_j), which returns s_j where the two are equal or either is
  // nan; then the lanes and the tail by std::fmax. In another order (several vectors side by
  // side) the largest value is the same, but not the sign of a 0 nor what a nan leaves.
  const auto lanes_max = [](const attn::Matrix& s) {
    float lane[8];
    std::fill(std::begin(lane), std::end(lane), -std::numeric_limits<float>::infinity());
    Eigen::Index j = 0;
    for (; j + 8 <= s.cols(); ++j) lane[j % 8] = lane[j % 8] > s(0, j) ? lane[j % 8] : s(0, j);
    float r = lane[0];
    for (int l = 1; l < 8; ++l) r = std::fmax(r, lane[l]);
    for (; j < s.cols(); ++j) r = std::fmax(r, s(0, j));
    return r;
  };
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-9.0f, -1.0f);
  for (const Eigen::Index n : {64, 100, 255, 4097}) {
    for (int kind = 0; kind < 4; ++kind) {
      attn::Matrix s(1, n);
      for (Eigen::Index j = 0; j < n; ++j) s(0, j) = u(gen);
      if (kind == 0) s(0, 8) = 0.0f, s(0, 32) = -0.0f;  // one lane's two zeros, -0 last
      if (kind == 1) s(0, 3) = -0.0f, s(0, 43) = 0.0f;  // and 0 last
      if (kind == 2) s(0, 5) = 2.0f, s(0, 45) = std::numeric_limits<float>::quiet_NaN();
      if (kind == 3) s(0, n - 1) = std::numeric_limits<float>::quiet_NaN();
      for (const attn::Isa isa : vector_isas()) {
        attn::limit_isa(isa);
        const attn::SoftmaxParts p = attn::softmax_parts(s, attn::TorchKernel::kAvx2);
        attn::limit_isa(attn::cpu_isa());
        CAPTURE(n);
        CAPTURE(kind);
        CAPTURE(attn::isa_name(isa));
        CHECK(std::bit_cast<std::uint32_t>(p.row_max(0, 0)) ==
              std::bit_cast<std::uint32_t>(lanes_max(s)));
      }
    }
  }
}

TEST_CASE(
    "the vectorised exp gives the plain SLEEF port's bits over the softmax's whole range, on every "
    "path") {
  // Every float from −128 to 0 at a stride, and the special values: exp(s − max) has s − max <= 0.
  std::vector<float> xs;
  for (std::uint32_t b = 0x80000000u; b <= 0xc3000000u; b += 97)
    xs.push_back(std::bit_cast<float>(b));
  xs.insert(xs.end(), {-std::numeric_limits<float>::infinity(), -104.0f, -103.99999f, 0.0f});
  const auto n = static_cast<Eigen::Index>(xs.size());
  attn::Matrix row(1, n);
  for (Eigen::Index j = 0; j < n; ++j) row(0, j) = xs[static_cast<std::size_t>(j)];
  row(0, 0) = 0.0f;  // the row max, so that s − max = s
  attn::set_simd_enabled(false);
  const attn::SoftmaxParts plain = attn::softmax_parts(row, attn::TorchKernel::kAvx2);
  attn::set_simd_enabled(true);
  CHECK(n > 10'000'000);
  for (Eigen::Index j = 0; j < n; j += 100'003) {
    CHECK(std::bit_cast<std::uint32_t>(plain.exponentials(0, j)) ==
          std::bit_cast<std::uint32_t>(attn::torch_expf(row(0, j), attn::TorchKernel::kAvx2)));
  }
  for (const attn::Isa isa : vector_isas()) {
    attn::limit_isa(isa);
    const attn::SoftmaxParts fast = attn::softmax_parts(row, attn::TorchKernel::kAvx2);
    attn::limit_isa(attn::cpu_isa());
    CAPTURE(attn::isa_name(isa));
    CHECK(test::bits_of(fast.exponentials) == test::bits_of(plain.exponentials));
    CHECK(test::bits_of(fast.row_sum) == test::bits_of(plain.row_sum));
  }
}
