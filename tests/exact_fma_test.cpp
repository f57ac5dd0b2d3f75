#include "attn/exact_fma.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>

namespace {

// The same float, bit for bit; any nan matches any nan (their payloads are not compared).
bool same(float x, float y) {
  return (std::isnan(x) && std::isnan(y)) ||
         std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}

// a·b + c whose exact value lies just above the point halfway between 1 and the next float: a
// double rounds it onto that point, and rounding the double to float then ties to 1 (even),
// where fmaf rounds up. a = 1 + 2^-12, b = 2^-24 (1 - 2^-12 + 2^-24): a·b = 2^-24 + 2^-60.
constexpr float kTrapA = 1.0f + 0x1p-12f, kTrapB = 0x1p-24f * (1.0f - 0x1p-12f + 0x1p-24f);

}  // namespace

TEST_CASE("exact_fma is fmaf, bit for bit, where a double sum rounded twice would not be") {
  CHECK(std::fma(kTrapA, kTrapB, 1.0f) == 1.0f + 0x1p-23f);
  const double twice = static_cast<double>(kTrapA) * kTrapB + 1.0;
  CHECK(static_cast<float>(twice) == 1.0f);  // the trap is real
  CHECK(attn::exact_fma(kTrapA, kTrapB, 1.0f) == 1.0f + 0x1p-23f);
  CHECK(attn::exact_fma(-kTrapA, kTrapB, -1.0f) == -1.0f - 0x1p-23f);
  // Just below the halfway point: rounds down.
  CHECK(attn::exact_fma(kTrapA, -kTrapB, 1.0f + 0x1p-23f) ==
        std::fma(kTrapA, -kTrapB, 1.0f + 0x1p-23f));
#ifdef ATTN_FMA_BY_DOUBLE
  CHECK(attn::fma_by_double(kTrapA, kTrapB, 1.0f) == 1.0f + 0x1p-23f);
  CHECK(attn::fma_by_double(-kTrapA, kTrapB, -1.0f) == -1.0f - 0x1p-23f);
#endif
}

TEST_CASE("exact_fma matches the FMA instruction on millions of inputs of every kind") {
  // Random bit patterns (every exponent, subnormals, infinities, nans), floats of the sizes a
  // product meets, and sums that cancel or land on halfway points; each against std::fma, which
  // is exact on every CPU (the instruction, or the C library's emulation).
  std::mt19937 gen(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 60), kind(0, 4);
  const auto draw = [&]() -> float {
    switch (kind(gen)) {
      case 0:
        return std::bit_cast<float>(bits(gen));
      case 1:
        return std::ldexp(unit(gen), exponent(gen));
      case 2:
        return unit(gen);
      case 3:  // a float with few significant bits: sums of them are often exact, or halfway
        return std::ldexp(std::round(unit(gen) * 64.0f), exponent(gen) / 8);
      default:
        return 0.0f;
    }
  };
  int wrong = 0, wrong_by_double = 0;
  for (int i = 0; i < 4'000'000; ++i) {
    const float a = draw(), b = draw();
    // c: a random float, or -a·b rounded (cancellation), or a·b's neighbour.
    const float product = a * b;
    const float c = i % 3 == 0 ? draw() : i % 3 == 1 ? -product : std::nextafter(product, 0.0f);
    const float want = std::fma(a, b, c);
    if (!same(attn::exact_fma(a, b, c), want)) ++wrong;
#ifdef ATTN_FMA_BY_DOUBLE
    if (!same(attn::fma_by_double(a, b, c), want)) ++wrong_by_double;
#endif
  }
  CHECK(wrong == 0);
  CHECK(wrong_by_double == 0);
  // The edges: zeros of either sign, the largest float and overflow, the smallest normal float
  // and subnormal results.
  const float edges[] = {0.0f,     -0.0f,    1.0f,      -1.0f,        FLT_MAX,
                         -FLT_MAX, FLT_MIN,  -FLT_MIN,  FLT_TRUE_MIN, 0x1p-75f,
                         0x1p64f,  INFINITY, -INFINITY, NAN,          3.0f};
  for (const float a : edges) {
    for (const float b : edges) {
      for (const float c : edges) {
        CAPTURE(a);
        CAPTURE(b);
        CAPTURE(c);
        CHECK(same(attn::exact_fma(a, b, c), std::fma(a, b, c)));
#ifdef ATTN_FMA_BY_DOUBLE
        CHECK(same(attn::fma_by_double(a, b, c), std::fma(a, b, c)));
#endif
      }
    }
  }
}
