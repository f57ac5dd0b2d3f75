#pragma once

// Calls into libsleef's AVX2 functions (Sleef_powf8_u10avx2, Sleef_cosf8_u10avx2,
// Sleef_sinf8_u10avx2, Sleef_tanhf8_u10avx2), whose arguments and results are __m256 values in ymm
// registers. sleef_avx2.cpp is compiled with -mavx2 -mfma, so that every compiler passes them as
// SLEEF expects: a caller built without AVX (with only a target attribute on its function) can pass
// them in memory instead, and then SLEEF reads garbage (clang under the sanitizers does). The
// functions are given as the addresses dlsym returned; call them only on a CPU with AVX2 and FMA.

#include <cstddef>

namespace attn::sleef_avx2 {

// out[i] = pow(base, e[i]) over blocks of two 8-lane vectors (ATen's vectorised loop); returns
// how many elements it wrote, a multiple of 16. `pow` is Sleef_powf8_u10avx2.
std::size_t pow_blocks(const void* pow, float base, const float* e, float* out, std::size_t n);

// out[i] = f(x[i]) for every element, 8 at a time, the last partial vector padded with zeros
// (vec::map); out may be x. `f` is Sleef_cosf8_u10avx2, Sleef_sinf8_u10avx2 or
// Sleef_tanhf8_u10avx2.
void map(const void* f, const float* x, float* out, std::size_t n);

}  // namespace attn::sleef_avx2
