#include "attn/tensor_format.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/error.hpp"

using attn::Matrix;

namespace {
Matrix row(std::initializer_list<float> values) {
  Matrix m(1, static_cast<Eigen::Index>(values.size()));
  Eigen::Index j = 0;
  for (const float v : values) m(0, j++) = v;
  return m;
}
}  // namespace

TEST_CASE("fixed notation, one width for all elements, as PyTorch prints") {
  Matrix m(2, 2);
  m << 0.3374f, -0.1778f, 1.8951f, 0.4954f;
  CHECK(attn::format_tensor(m, 4) ==
        "tensor([[ 0.3374, -0.1778],\n"
        "        [ 1.8951,  0.4954]])");
  CHECK(attn::format_tensor(row({0.5313f, 1.3607f}), 4, true) == "tensor([0.5313, 1.3607])");
  CHECK(attn::format_tensor(row({0.5313f, 1.3607f}), 2, true) == "tensor([0.53, 1.36])");
}

TEST_CASE("rounding is of the exact float value: -0.26264992 prints -0.2626") {
  CHECK(attn::format_tensor(row({-0.26264992f, 1.0001f}), 4, true) == "tensor([-0.2626,  1.0001])");
}

TEST_CASE("scientific notation when the range is wide or values are tiny or huge") {
  CHECK(attn::format_tensor(row({1.0f, 2000.5f}), 4, true) == "tensor([1.0000e+00, 2.0005e+03])");
  CHECK(attn::format_tensor(row({0.00005f, 0.5f}), 4, true) == "tensor([5.0000e-05, 5.0000e-01])");
  CHECK(attn::format_tensor(row({2e8f, 3e8f}), 2, true) == "tensor([2.00e+08, 3.00e+08])");
}

TEST_CASE("integer mode for all-integer tensors, with the trailing dot") {
  CHECK(attn::format_tensor(row({1.0f, 0.0f, -3.0f}), 4, true) == "tensor([ 1.,  0., -3.])");
  CHECK(attn::format_tensor(row({0.0f, 0.0f}), 4, true) == "tensor([0., 0.])");
}

TEST_CASE("non-finite values and negative zero") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(attn::format_tensor(row({0.5f, -inf, std::nanf("")}), 4, true) ==
        "tensor([0.5000,   -inf,    nan])");
  CHECK(attn::format_tensor(row({-0.0f, 0.25f}), 4, true) == "tensor([0.0000, 0.2500])");
}

TEST_CASE("rows wider than 80 columns wrap where PyTorch wraps them") {
  Matrix m(1, 10);
  for (Eigen::Index j = 0; j < 10; ++j) m(0, j) = -0.5f;
  // (80 - 8) / (7 + 2) = 8 elements per line inside a matrix.
  CHECK(attn::format_tensor(m, 4) ==
        "tensor([[-0.5000, -0.5000, -0.5000, -0.5000, -0.5000, -0.5000, -0.5000, -0.5000,\n"
        "         -0.5000, -0.5000]])");
}

TEST_CASE("precision outside 0..8 is refused") {
  CHECK_THROWS_WITH_AS(attn::format_tensor(row({1.0f}), 9),
                       "precision 9 is out of range: allowed 0..8", attn::Error);
}

TEST_CASE("every element is fmt's text of the double, at every precision and in every mode") {
  // The formatter writes with formats compiled ahead; this is the same text as fmt's run-time
  // "{:.{}e}", "{:.{}f}" and "{:.0f}." on a wide range of floats, zeros of both signs included.
  std::uint32_t state = 12345;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  std::vector<float> values = {0.0f,
                               -0.0f,
                               -1e-30f,
                               1e-30f,
                               9.99995f,
                               -9.99995f,
                               0.5f,
                               -0.5f,
                               std::numeric_limits<float>::max(),
                               -std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 4000; ++i) {
    float v;
    do {
      const std::uint32_t bits = next();
      std::memcpy(&v, &bits, sizeof v);
    } while (!std::isfinite(v));
    values.push_back(v);
  }
  const auto reference = [](float f, int p, bool sci, bool integer) {
    const double v = f;
    std::string s = sci       ? fmt::format("{:.{}e}", v, p)
                    : integer ? fmt::format("{:.0f}", v) + "."
                              : fmt::format("{:.{}f}", v, p);
    if (s[0] == '-' && s.find_first_not_of("0.", 1) == s.find_first_of("eE", 1)) s.erase(0, 1);
    return s;
  };
  // Scientific mode: a wide range; integer mode: integers; fixed mode: values within 1e-4..1e3.
  Matrix wide(1, static_cast<Eigen::Index>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) wide(0, static_cast<Eigen::Index>(i)) = values[i];
  Matrix integers(1, 200), fixed(1, 200);
  for (Eigen::Index j = 0; j < 200; ++j) {
    integers(0, j) = static_cast<float>(static_cast<int>(next() % 2001) - 1000);
    fixed(0, j) = (static_cast<float>(next() % 100000) / 100.0f + 0.5f) * (j % 2 ? -1.0f : 1.0f);
  }
  for (int p = 0; p <= 8; ++p) {
    CAPTURE(p);
    const attn::TensorFormatter s(wide.data(), wide.size(), p);
    const attn::TensorFormatter n(integers.data(), integers.size(), p);
    const attn::TensorFormatter f(fixed.data(), fixed.size(), p);
    char buf[64];
    for (const float v : values)
      REQUIRE(std::string(buf, s.write(buf, v)) == reference(v, p, true, false));
    for (Eigen::Index j = 0; j < 200; ++j) {
      REQUIRE(std::string(buf, n.write(buf, integers(0, j))) ==
              reference(integers(0, j), p, false, true));
      REQUIRE(std::string(buf, f.write(buf, fixed(0, j))) ==
              reference(fixed(0, j), p, false, false));
    }
    // The rows pad every element to the widest, as the formatter's own width says.
    const std::string text = attn::format_tensor(fixed, p);
    CHECK(text.find(f.format(fixed(0, 0))) != std::string::npos);
  }
}
