#pragma once

// fmaf(a, b, c): a·b + c rounded once to float, the value an FMA instruction gives, fast on every
// CPU. The vectorised paths use the CPU's FMA instructions; the plain paths need the same bits
// where the CPU has none (an x86-64 CPU without FMA, such as the Celeron and Pentium Silver
// of many small laptops), and there the C library's fmaf emulates the rounding in software, about
// 20 ns a call: the blocked product ran at 0.1 GFLOP/s. Here it is computed in double: a·b is
// exact in double (24 + 24 bits of 53), the sum is rounded once to double, and rounding that to
// float gives fmaf's bits unless the double sum was rounded onto a point exactly halfway between
// two floats (then the second rounding may go the wrong way), is a subnormal float (whose halfway
// points lie elsewhere), or is beyond FLT_MAX or not finite. Those rare cases, and only those,
// call std::fma. Elsewhere (a CPU with FMA, a build that assumes FMA, or not x86-64) it is
// std::fma: the instruction, through the C library's call where the build does not assume it.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "attn/simd.hpp"

#if defined(__x86_64__) && !defined(__FMA__)
#define ATTN_FMA_BY_DOUBLE 1
#endif

namespace attn {

#ifdef ATTN_FMA_BY_DOUBLE
// Whether rounding s, a double computed as (double)a·(double)b + (double)c, to float gives
// fmaf(a, b, c): s is 0, or within the normal floats' range (2^-126 to FLT_MAX), and not exactly
// halfway between two floats (its 29 bits below float precision not 1000…0).
inline bool rounds_as_fmaf(double s) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &s, sizeof bits);
  const std::uint64_t magnitude = bits & 0x7fffffffffffffffu;
  if (magnitude == 0) return true;
  constexpr std::uint64_t kLeastNormalFloat = 0x3810000000000000u;  // 2^-126
  constexpr std::uint64_t kGreatestFloat = 0x47efffffe0000000u;     // FLT_MAX
  if (magnitude < kLeastNormalFloat || magnitude > kGreatestFloat) return false;
  return (bits & 0x1fffffffu) != 0x10000000u;
}

// fmaf(a, b, c) computed in double; std::fma where that is not fmaf.
inline float fma_by_double(float a, float b, float c) {
  const double s = static_cast<double>(a) * static_cast<double>(b) + static_cast<double>(c);
  return rounds_as_fmaf(s) ? static_cast<float>(s) : std::fma(a, b, c);
}

// Whether this CPU has FMA instructions: then fmaf is the instruction, faster than the double
// form where each fma waits for the last (the softmax's exp, a chain of eight: the plain softmax
// at T = 1024, d_in 256, took 5.9 ms with the instruction and 18.3 with the double form, medians
// of 10, Zen 5). Read with simd.cpp's few CPUID instructions: __builtin_cpu_supports links in
// libgcc's start-up code, which issues dozens (each a trap to the hypervisor in a virtual machine).
inline const bool kCpuHasFma = cpu_has_fma();
#endif

inline float exact_fma(float a, float b, float c) {
#ifdef ATTN_FMA_BY_DOUBLE
  if (!kCpuHasFma) return fma_by_double(a, b, c);
#endif
  return std::fma(a, b, c);
}

}  // namespace attn
