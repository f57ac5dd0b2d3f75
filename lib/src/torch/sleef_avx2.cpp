// Built with -mavx2 -mfma (lib/CMakeLists.txt): see sleef_avx2.hpp. It includes no header with
// inline functions of the rest of the library, so that no AVX2 copy of one can stand in for the
// baseline copy elsewhere.

#include "sleef_avx2.hpp"

#include <immintrin.h>

namespace attn::sleef_avx2 {

namespace {
using Binary = __m256 (*)(__m256, __m256);
using Unary = __m256 (*)(__m256);
}  // namespace

std::size_t pow_blocks(const void* pow, float base, const float* e, float* out, std::size_t n) {
  const auto f = reinterpret_cast<Binary>(const_cast<void*>(pow));
  const __m256 b = _mm256_set1_ps(base);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(out + i, f(b, _mm256_loadu_ps(e + i)));
    _mm256_storeu_ps(out + i + 8, f(b, _mm256_loadu_ps(e + i + 8)));
  }
  return i;
}

void map(const void* f, const float* x, float* out, std::size_t n) {
  const auto g = reinterpret_cast<Unary>(const_cast<void*>(f));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, g(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  alignas(32) float lanes[8] = {};
  for (std::size_t j = i; j < n; ++j) lanes[j - i] = x[j];
  _mm256_store_ps(lanes, g(_mm256_load_ps(lanes)));
  for (std::size_t j = i; j < n; ++j) out[j] = lanes[j - i];
}

}  // namespace attn::sleef_avx2
