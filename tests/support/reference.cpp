#include "reference.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "support/sha256.hpp"

namespace attn::test {

json load_reference(TorchKernel kernel, std::string_view file) {
  const std::string path = fmt::format("{}/{}/{}", ATTN_REFERENCE_DIR, kernel_name(kernel), file);
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open reference " + path);
  return json::parse(in);
}

namespace {

std::vector<std::uint32_t> flat_bits(const json& bits) {
  std::vector<std::uint32_t> out;
  if (bits.is_array()) {
    for (const json& b : bits) {
      const std::vector<std::uint32_t> inner = flat_bits(b);
      out.insert(out.end(), inner.begin(), inner.end());
    }
  } else {
    out.push_back(static_cast<std::uint32_t>(std::stoul(bits.get<std::string>(), nullptr, 16)));
  }
  return out;
}

std::pair<Eigen::Index, Eigen::Index> shape_of(const json& tensor) {
  const json& shape = tensor.at("shape");
  if (shape.size() == 0) return {1, 1};
  if (shape.size() == 1) return {1, shape[0].get<Eigen::Index>()};
  return {shape[0].get<Eigen::Index>(), shape[1].get<Eigen::Index>()};
}

}  // namespace

Matrix tensor_from_bits(const json& tensor) {
  const std::vector<std::uint32_t> bits = flat_bits(tensor.at("bits"));
  const auto [rows, cols] = tensor.contains("shape")
                                ? shape_of(tensor)
                                : std::pair<Eigen::Index, Eigen::Index>{1, bits.size()};
  REQUIRE(static_cast<Eigen::Index>(bits.size()) == rows * cols);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = std::bit_cast<float>(bits[static_cast<std::size_t>(i)]);
  return m;
}

std::vector<std::uint32_t> bits_of(const Matrix& m) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.size(); ++i)
    out[static_cast<std::size_t>(i)] = std::bit_cast<std::uint32_t>(m.data()[i]);
  return out;
}

std::string sha256_f32le(const Matrix& m) {
  static_assert(std::endian::native == std::endian::little);
  return sha256_hex(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
}

void check_bits(const Matrix& actual, const json& expected, const std::string& what) {
  const Matrix want = tensor_from_bits(expected);
  INFO(what);
  REQUIRE(actual.size() == want.size());
  const std::vector<std::uint32_t> a = bits_of(actual), b = bits_of(want);
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && differing++ == 0) first = i;
  }
  if (differing > 0) {
    FAIL_CHECK(fmt::format(
        "{} of {} elements differ; first at flat index {}: got {:08x} ({:.9g}), "
        "PyTorch {:08x} ({:.9g})",
        differing, a.size(), first, a[first], actual.data()[first], b[first], want.data()[first]));
  }
}

void check_digest(const Matrix& actual, const json& digest, const std::string& what) {
  INFO(what);
  const auto [rows, cols] = shape_of(digest);
  REQUIRE(actual.rows() * actual.cols() == rows * cols);
  CHECK(sha256_f32le(actual) == digest.at("sha256_f32le").get<std::string>());
  if (digest.contains("first_values")) {
    const Matrix flat = actual.reshaped<Eigen::RowMajor>().transpose();  // (1, n)
    const Matrix first = flat.leftCols(16), last = flat.rightCols(16);
    check_bits(first, digest.at("first_values"), what + ", first 16 values");
    check_bits(last, digest.at("last_values"), what + ", last 16 values");
  }
}

void check_matrix_near(const Matrix& actual, const Matrix& expected, float tolerance,
                       const std::string& what) {
  INFO(what);
  REQUIRE(actual.rows() == expected.rows());
  REQUIRE(actual.cols() == expected.cols());
  float worst = 0.0f;
  Eigen::Index wi = 0, wj = 0;
  for (Eigen::Index i = 0; i < actual.rows(); ++i) {
    for (Eigen::Index j = 0; j < actual.cols(); ++j) {
      const float a = actual(i, j), e = expected(i, j);
      if ((std::isnan(a) && std::isnan(e)) || a == e) continue;  // nan where PyTorch has nan; ±inf
      const float d = std::fabs(a - e);
      if (!(d <= worst)) worst = d, wi = i, wj = j;  // NaN counts as worst
    }
  }
  if (!(worst <= tolerance)) {
    FAIL_CHECK(
        fmt::format("worst cell ({}, {}): got {:.9g}, expected {:.9g}, |diff| {:.3g} > {:.3g}", wi,
                    wj, actual(wi, wj), expected(wi, wj), worst, tolerance));
  }
}

void check_relative(const Matrix& actual, const json& expected, const std::string& what,
                    float relative) {
  const Matrix want = tensor_from_bits(expected);
  float largest = 0.0f;
  for (Eigen::Index i = 0; i < want.size(); ++i) {
    if (std::isfinite(want.data()[i])) largest = std::max(largest, std::fabs(want.data()[i]));
  }
  check_matrix_near(actual, want, relative * largest, what);
}

}  // namespace attn::test
