#include "attn/torch_random.hpp"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATTN_X86 1
#endif

#include "attn/exact_fma.hpp"
#include "attn/simd.hpp"

namespace attn {

// ---------------------------------------------------------------------------------------------
// The engine (ATen/core/MT19937RNGEngine.h).

namespace {

// The twist of the 624 state words, in place. Word i takes words i + 1 and (i + 397) % 624,
// split into its two ranges (no modulo): words 397.. not yet twisted for i < 227, then words 0..
// already twisted. Every word reads only words that the scalar order has or has not yet
// rewritten the same way when 16 consecutive words are computed at once (397 and 227 are more
// than 16 apart), so the loops vectorise with the same result.
inline __attribute__((always_inline)) void twist_words(std::uint32_t* state) {
  constexpr std::uint32_t kMatrixA = 0x9908B0DFu;
  auto twist_word = [](std::uint32_t u, std::uint32_t v) {
    const std::uint32_t mixed = (u & 0x80000000u) | (v & 0x7FFFFFFFu);
    // The low bit of v, not of the mixed word, chooses the xor.
    return (mixed >> 1) ^ ((0u - (v & 1u)) & kMatrixA);
  };
  for (int i = 0; i < 227; ++i) state[i] = state[i + 397] ^ twist_word(state[i], state[i + 1]);
  for (int i = 227; i < 623; ++i) {
    state[i] = state[i - 227] ^ twist_word(state[i], state[i + 1]);
  }
  state[623] = state[396] ^ twist_word(state[623], state[0]);
}

// MT19937's tempering of a state word into a draw.
inline __attribute__((always_inline)) std::uint32_t temper(std::uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9D2C5680u;
  y ^= (y << 15) & 0xEFC60000u;
  y ^= y >> 18;
  return y;
}

// Tempered words as uniform floats in [0, 1): exact, a 24-bit integer times a power of two.
inline __attribute__((always_inline)) void words_to_uniform(const std::uint32_t* words, float* out,
                                                            std::size_t k) {
  for (std::size_t j = 0; j < k; ++j) {
    out[j] = static_cast<float>(temper(words[j]) & 0x00FFFFFFu) * 0x1.0p-24f;
  }
}

// The same loops compiled for wider vectors (8 and 16 lanes; the twist's distances, 397 and 227,
// exceed both); integer operations and exact conversions, so the same words and floats on every
// path.
#ifdef ATTN_X86
__attribute__((target("avx2"))) void twist_words_avx2(std::uint32_t* state) { twist_words(state); }
__attribute__((target("avx2"))) void words_to_uniform_avx2(const std::uint32_t* words, float* out,
                                                           std::size_t k) {
  words_to_uniform(words, out, k);
}
__attribute__((target("avx512f"))) void twist_words_avx512(std::uint32_t* state) {
  twist_words(state);
}
__attribute__((target("avx512f"))) void words_to_uniform_avx512(const std::uint32_t* words,
                                                                float* out, std::size_t k) {
  words_to_uniform(words, out, k);
}
#endif

}  // namespace

TorchGenerator::TorchGenerator(std::uint64_t seed) {
  state_[0] = static_cast<std::uint32_t>(seed & 0xFFFFFFFFu);
  for (std::uint32_t j = 1; j < 624; ++j) {
    state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + j;
  }
  left_ = 1;  // the twist happens lazily, on the first draw
  next_ = 0;
}

void TorchGenerator::twist() {
  left_ = 624;
  next_ = 0;
#ifdef ATTN_X86
  if (use_avx512()) return twist_words_avx512(state_.data());
  if (use_avx2()) return twist_words_avx2(state_.data());
#endif
  twist_words(state_.data());
}

std::uint32_t TorchGenerator::random() {
  if (--left_ == 0) twist();
  return temper(state_[next_++]);
}

std::uint64_t TorchGenerator::random64() {
  const std::uint64_t hi = random();
  const std::uint64_t lo = random();
  return (hi << 32) | lo;
}

void TorchGenerator::discard(std::uint64_t count) {
  while (count > 0) {
    // Draws that are possible before the next twist.
    const std::uint64_t before_twist = left_ - 1;
    if (count <= before_twist) {
      left_ -= static_cast<std::uint32_t>(count);
      next_ += static_cast<std::uint32_t>(count);
      return;
    }
    count -= before_twist;
    // The draw that twists: twist() resets left_ and next_, then the draw takes state_[0].
    twist();
    next_ = 1;
    --count;
  }
}

float TorchGenerator::uniform01() {
  // Exact: a 24-bit integer times a power of two.
  return static_cast<float>(random() & 0x00FFFFFFu) * 0x1.0p-24f;
}

void TorchGenerator::fill_uniform01(std::span<float> out) {
  std::size_t i = 0;
  while (i < out.size()) {
    const std::size_t ready = left_ - 1;  // words before the next twist
    if (ready == 0) {
      out[i++] = uniform01();  // twists
      continue;
    }
    const std::size_t k = std::min(ready, out.size() - i);
    const std::uint32_t* words = state_.data() + next_;
#ifdef ATTN_X86
    if (use_avx512()) {
      words_to_uniform_avx512(words, out.data() + i, k);
    } else if (use_avx2()) {
      words_to_uniform_avx2(words, out.data() + i, k);
    } else {
      words_to_uniform(words, out.data() + i, k);
    }
#else
    words_to_uniform(words, out.data() + i, k);
#endif
    next_ += static_cast<std::uint32_t>(k);
    left_ -= static_cast<std::uint32_t>(k);
    i += k;
  }
}

double TorchGenerator::uniform01_double() {
  return static_cast<double>(random64() & ((std::uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

Matrix torch_rand(TorchGenerator& gen, Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);  // (rows, cols), filled in memory order
  gen.fill_uniform01(std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
  return m;
}

void uniform_(std::span<float> out, TorchGenerator& gen, double from, double to,
              TorchKernel kernel) {
  const float lo = static_cast<float>(from);
  const float hi = static_cast<float>(to);
  const float range = hi - lo;
  for (float& v : out) {
    const float x = gen.uniform01();
    // AVX2: GCC contracts the kernel's x * range + from into one fma; the default kernel does not.
    v = kernel == TorchKernel::kAvx2 ? exact_fma(x, range, lo) : x * range + lo;
  }
}

double kaiming_uniform_bound(std::int64_t fan_in) {
  // torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5)) with leaky_relu's gain, in Python's order.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));  // a**2 == 5.000000000000001
  const double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return std::sqrt(3.0) * std_dev;
}

Matrix linear_weight(TorchGenerator& gen, Eigen::Index in_features, Eigen::Index out_features,
                     TorchKernel kernel) {
  Matrix w(out_features, in_features);  // (out, in), as nn.Linear stores it
  const double bound = kaiming_uniform_bound(in_features);
  uniform_(std::span<float>(w.data(), static_cast<std::size_t>(w.size())), gen, -bound, bound,
           kernel);
  return w;
}

Matrix linear_bias(TorchGenerator& gen, Eigen::Index in_features, Eigen::Index out_features,
                   TorchKernel kernel) {
  Matrix b(1, out_features);  // (out,)
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  uniform_(std::span<float>(b.data(), static_cast<std::size_t>(b.size())), gen, -bound, bound,
           kernel);
  return b;
}

}  // namespace attn
