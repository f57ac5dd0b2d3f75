#include "attn/torch_kernels.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#if defined(__x86_64__)
#include <dlfcn.h>
#include <immintrin.h>
#define ATTN_X86 1
#endif

#include "attn/exact_fma.hpp"
#include "attn/simd.hpp"
#include "torch_sums.hpp"
#if defined(__x86_64__)
#include "sleef_avx2.hpp"
#endif

namespace attn {

namespace {

using torch_detail::row_sum;
#ifdef ATTN_X86
using torch_detail::lane_sum_avx2;
using torch_detail::lane_sum_from_avx2;
#endif

// SLEEF's xexpf (u10) with FMA, one lane: q = rint(x / ln 2), a two-part reduction, a degree-6
// polynomial, and a scale by 2^q done as two exact multiplications. `fma` is fmaf: std::fma, or
// where the CPU has no FMA its double form (exact_fma.hpp), chosen by the callers (the softmax's
// once per row).
// (exact_fma's own choice at each fma made the chain twice as slow on a CPU with FMA: the plain
// softmax at T = 1024, d_in 64, took 15.3 ms and then 30.1, medians of 20, Zen 5.)
template <float (*fma)(float, float, float)>
float sleef_expf_u10_with(float d) {
  const float q_f = std::nearbyint(d * 1.442695040888963407359924681001892137426645954152985934f);
  // Clamped: converting ±inf or nan (a masked score) to int is undefined; those d are set below.
  const auto q = static_cast<std::int32_t>(std::fmax(-256.0f, std::fmin(q_f, 256.0f)));
  float s = fma(q_f, -0.693145751953125f, d);
  s = fma(q_f, -1.428606765330187045e-06f, s);
  float u = 0.000198527617612853646278381f;
  u = fma(u, s, 0.00139304355252534151077271f);
  u = fma(u, s, 0.00833336077630519866943359f);
  u = fma(u, s, 0.0416664853692054748535156f);
  u = fma(u, s, 0.166666671633720397949219f);
  u = fma(u, s, 0.5f);
  u = 1.0f + fma(s * s, u, s);
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

float std_fma(float a, float b, float c) { return std::fma(a, b, c); }

float sleef_expf_u10(float d) { return sleef_expf_u10_with<std_fma>(d); }

#ifdef ATTN_X86
// sleef_expf_u10 on 8 lanes: the same operations in the same order, so the same bits.
__attribute__((target("avx2,fma"))) __m256 sleef_expf_u10_avx2(__m256 d) {
  const __m256 q_f = _mm256_round_ps(
      _mm256_mul_ps(d, _mm256_set1_ps(1.442695040888963407359924681001892137426645954152985934f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // min(q, 256) gives 256 for nan, as std::fmin does; max(·, −256) then clamps −inf.
  const __m256i q = _mm256_cvttps_epi32(
      _mm256_max_ps(_mm256_min_ps(q_f, _mm256_set1_ps(256.0f)), _mm256_set1_ps(-256.0f)));
  __m256 s = _mm256_fmadd_ps(q_f, _mm256_set1_ps(-0.693145751953125f), d);
  s = _mm256_fmadd_ps(q_f, _mm256_set1_ps(-1.428606765330187045e-06f), s);
  __m256 u = _mm256_set1_ps(0.000198527617612853646278381f);
  u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00139304355252534151077271f));
  u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00833336077630519866943359f));
  u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.0416664853692054748535156f));
  u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.166666671633720397949219f));
  u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.5f));
  u = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
  const __m256i bias = _mm256_set1_epi32(0x7f);
  const __m256i half = _mm256_srai_epi32(q, 1);
  const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 p2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(q, half), bias), 23));
  u = _mm256_mul_ps(_mm256_mul_ps(u, p1), p2);
  u = _mm256_blendv_ps(u, _mm256_setzero_ps(),
                       _mm256_cmp_ps(d, _mm256_set1_ps(-104.0f), _CMP_LT_OQ));
  u = _mm256_blendv_ps(u, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(d, _mm256_set1_ps(100.0f), _CMP_GT_OQ));
  return _mm256_blendv_ps(u, d, _mm256_cmp_ps(d, d, _CMP_UNORD_Q));
}

// The largest of n >= 1 scores, none nan (then max is std::fmax, in any order).
__attribute__((target("avx2,fma"))) float row_max_avx2(const float* s, Eigen::Index n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l) r = std::fmax(r, lanes[l]);
  for (; j < n; ++j) r = std::fmax(r, s[j]);
  return r;
}

// GCC 12's AVX-512 intrinsics start some results from an undefined value (GCC bug 105593): its
// -Wuninitialized is a false alarm here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// sleef_expf_u10 on 16 lanes: the same operations in the same order as the 8 lanes above (the
// rounding of d / ln 2 to nearest, min and max taking the second operand for nan, the blends as
// masked moves), so the same bits.
__attribute__((target("avx512f"))) __m512 sleef_expf_u10_avx512(__m512 d) {
  const __m512 q_f = _mm512_roundscale_ps(
      _mm512_mul_ps(d, _mm512_set1_ps(1.442695040888963407359924681001892137426645954152985934f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i q = _mm512_cvttps_epi32(
      _mm512_max_ps(_mm512_min_ps(q_f, _mm512_set1_ps(256.0f)), _mm512_set1_ps(-256.0f)));
  __m512 s = _mm512_fmadd_ps(q_f, _mm512_set1_ps(-0.693145751953125f), d);
  s = _mm512_fmadd_ps(q_f, _mm512_set1_ps(-1.428606765330187045e-06f), s);
  __m512 u = _mm512_set1_ps(0.000198527617612853646278381f);
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00139304355252534151077271f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00833336077630519866943359f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.0416664853692054748535156f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.166666671633720397949219f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.5f));
  u = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s));
  const __m512i bias = _mm512_set1_epi32(0x7f);
  const __m512i half = _mm512_srai_epi32(q, 1);
  const __m512 p1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, bias), 23));
  const __m512 p2 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(q, half), bias), 23));
  u = _mm512_mul_ps(_mm512_mul_ps(u, p1), p2);
  u = _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.0f), _CMP_LT_OQ),
                         _mm512_setzero_ps());
  u = _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(d, _mm512_set1_ps(100.0f), _CMP_GT_OQ),
                         _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  return _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q), d);
}
#pragma GCC diagnostic pop

// e_j = exp(s_j − m) into e (which may be s), and their sum as lane_sum_avx2 adds it: each 8
// exponentials are added to the lanes as they are made, where a loop over the stored row after
// them waited on each addition's latency.
__attribute__((target("avx2,fma"))) float exp_sum_avx2(const float* s, Eigen::Index n, float m,
                                                       float* e) {
  const __m256 mv = _mm256_set1_ps(m);
  Eigen::Index j = 0;
  if (n < 8) {
    for (; j < n; ++j) e[j] = sleef_expf_u10(s[j] - m);
    return lane_sum_avx2(e, n);
  }
  __m256 lanes = sleef_expf_u10_avx2(_mm256_sub_ps(_mm256_loadu_ps(s), mv));
  _mm256_storeu_ps(e, lanes);
  for (j = 8; j + 8 <= n; j += 8) {
    const __m256 x = sleef_expf_u10_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
    _mm256_storeu_ps(e + j, x);
    lanes = _mm256_add_ps(lanes, x);
  }
  for (Eigen::Index t = j; t < n; ++t) e[t] = sleef_expf_u10(s[t] - m);
  alignas(32) float part[8];
  _mm256_store_ps(part, lanes);
  return lane_sum_from_avx2(part, e, j, n);
}

// Values 0-7 (kHalf 0) or 8-15 (kHalf 1) of x (the masked form, with every lane: GCC 12 warns of
// the plain form's undefined input).
template <int kHalf>
__attribute__((target("avx512f"), always_inline)) inline __m256 half_of(__m512 x) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(x), kHalf));
}

// exp_sum_avx2 with the exponentials on 16 lanes, the tail in one masked step; the sum is still
// the 8-lane one that PyTorch's AVX2 kernel computes: each 16's first 8, then its last 8.
__attribute__((target("avx512f,avx2,fma"))) float exp_sum_avx512(const float* s, Eigen::Index n,
                                                                 float m, float* e) {
  const __m512 mv = _mm512_set1_ps(m);
  Eigen::Index j = 0;
  __m256 lanes = _mm256_setzero_ps();
  if (n >= 16) {
    const __m512 x = sleef_expf_u10_avx512(_mm512_sub_ps(_mm512_loadu_ps(s), mv));
    _mm512_storeu_ps(e, x);
    lanes = _mm256_add_ps(half_of<0>(x), half_of<1>(x));
    for (j = 16; j + 16 <= n; j += 16) {
      const __m512 y = sleef_expf_u10_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + j), mv));
      _mm512_storeu_ps(e + j, y);
      lanes = _mm256_add_ps(_mm256_add_ps(lanes, half_of<0>(y)), half_of<1>(y));
    }
  }
  if (j < n) {
    const auto rest = __mmask16((1u << static_cast<unsigned>(n - j)) - 1u);
    _mm512_mask_storeu_ps(
        e + j, rest, sleef_expf_u10_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(rest, s + j), mv)));
  }
  if (j == 0) return lane_sum_avx2(e, n);
  alignas(32) float part[8];
  _mm256_store_ps(part, lanes);
  return lane_sum_from_avx2(part, e, j, n);
}

// out_i = x_i / d, 16 and 8 lanes at a time (out may be x); a division is correctly rounded at
// any width.
__attribute__((target("avx512f"))) void divide_avx512(const float* x, float d, float* out,
                                                      std::size_t n) {
  const __m512 dv = _mm512_set1_ps(d);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    _mm512_storeu_ps(out + i, _mm512_div_ps(a, dv));
    _mm512_storeu_ps(out + i + 16, _mm512_div_ps(b, dv));
  }
  if (i < n) {
    const auto rest = static_cast<unsigned>(n - i);  // 1 to 31
    const __mmask16 lo = rest >= 16 ? __mmask16(0xffff) : __mmask16((1u << rest) - 1u);
    _mm512_mask_storeu_ps(out + i, lo, _mm512_div_ps(_mm512_maskz_loadu_ps(lo, x + i), dv));
    if (rest > 16) {
      const auto hi = __mmask16((1u << (rest - 16)) - 1u);
      _mm512_mask_storeu_ps(out + i + 16, hi,
                            _mm512_div_ps(_mm512_maskz_loadu_ps(hi, x + i + 16), dv));
    }
  }
}

__attribute__((target("avx2,fma"))) void divide_avx2(const float* x, float d, float* out,
                                                     std::size_t n) {
  const __m256 dv = _mm256_set1_ps(d);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_div_ps(_mm256_loadu_ps(x + i), dv));
  for (; i < n; ++i) out[i] = x[i] / d;
}

// The largest of x's 8 lanes, none nan.
__attribute__((target("avx2"), always_inline)) inline float largest_lane(__m256 x) {
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// divide_avx2 of one row, and the largest quotient (none nan: the quotients of finite scores and
// −inf).
__attribute__((target("avx2,fma"))) float divide_max_avx2(const float* x, float d, float* out,
                                                          std::size_t n) {
  const __m256 dv = _mm256_set1_ps(d);
  __m256 m0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_div_ps(_mm256_loadu_ps(x + i), dv);
    const __m256 b = _mm256_div_ps(_mm256_loadu_ps(x + i + 8), dv);
    _mm256_storeu_ps(out + i, a), _mm256_storeu_ps(out + i + 8, b);
    m0 = _mm256_max_ps(m0, a), m1 = _mm256_max_ps(m1, b);
  }
  float m = largest_lane(_mm256_max_ps(m0, m1));
  for (; i < n; ++i) out[i] = x[i] / d, m = out[i] > m ? out[i] : m;
  return m;
}

// w_j = e_j * inv (w may be e).
__attribute__((target("avx2,fma"))) void scale_row_avx2(const float* e, Eigen::Index n, float inv,
                                                        float* w) {
  const __m256 iv = _mm256_set1_ps(inv);
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(w + j, _mm256_mul_ps(_mm256_loadu_ps(e + j), iv));
  for (; j < n; ++j) w[j] = e[j] * inv;
}

__attribute__((target("avx512f"))) void scale_row_avx512(const float* e, Eigen::Index n, float inv,
                                                         float* w) {
  const __m512 iv = _mm512_set1_ps(inv);
  Eigen::Index j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(w + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), iv));
  if (j < n) {
    const auto rest = __mmask16((1u << static_cast<unsigned>(n - j)) - 1u);
    _mm512_mask_storeu_ps(w + j, rest, _mm512_mul_ps(_mm512_maskz_loadu_ps(rest, e + j), iv));
  }
}

// divide_avx512 of one row, and the largest quotient (the maxima in their masked form, with every
// lane: GCC 12 warns of the plain form's undefined input).
__attribute__((target("avx512f"))) float divide_max_avx512(const float* x, float d, float* out,
                                                           std::size_t n) {
  const __m512 dv = _mm512_set1_ps(d);
  __m512 m0 = _mm512_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_div_ps(_mm512_loadu_ps(x + i), dv);
    const __m512 b = _mm512_div_ps(_mm512_loadu_ps(x + i + 16), dv);
    _mm512_storeu_ps(out + i, a), _mm512_storeu_ps(out + i + 16, b);
    m0 = _mm512_maskz_max_ps(0xffff, m0, a), m1 = _mm512_maskz_max_ps(0xffff, m1, b);
  }
  for (; i < n; i += 16) {
    const auto rest = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    const __m512 a = _mm512_div_ps(_mm512_maskz_loadu_ps(rest, x + i), dv);
    _mm512_mask_storeu_ps(out + i, rest, a);
    m0 = _mm512_mask_max_ps(m0, rest, m0, a);
  }
  const __m512 m = _mm512_maskz_max_ps(0xffff, m0, m1);
  return largest_lane(_mm256_max_ps(half_of<0>(m), half_of<1>(m)));
}

#endif

}  // namespace

float torch_expf(float x, TorchKernel kernel) {
  if (kernel != TorchKernel::kAvx2) return std::exp(x);
#ifdef ATTN_FMA_BY_DOUBLE
  if (!kCpuHasFma) return sleef_expf_u10_with<fma_by_double>(x);
#endif
  return sleef_expf_u10(x);
}

namespace {

#ifdef ATTN_X86
// libsleef's AVX2 functions, the ones PyTorch's AVX2 kernels call (vec256_float.h), loaded on
// first use: only a trace with rotary embeddings in the AVX2 kernels needs them, and every other
// run starts without mapping the library. They are called from sleef_avx2.cpp.
struct SleefAvx2 {
  const void* pow = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  const void* tanh = nullptr;
  std::string_view missing;  // why they cannot run, or empty
};

const SleefAvx2& sleef_library() {
  static const SleefAvx2 loaded = [] {
    SleefAvx2 s;
    if (cpu_isa() < Isa::kAvx2) {
      s.missing = "this CPU has no AVX2 and FMA, which SLEEF's AVX2 code needs";
      return s;
    }
    // The library PyTorch loads (its soname); never closed, as PyTorch keeps it.
    void* lib = dlopen("libsleef.so.3", RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      s.pow = dlsym(lib, "Sleef_powf8_u10avx2");
      s.cos = dlsym(lib, "Sleef_cosf8_u10avx2");
      s.sin = dlsym(lib, "Sleef_sinf8_u10avx2");
      s.tanh = dlsym(lib, "Sleef_tanhf8_u10avx2");
    }
    if (s.pow == nullptr || s.cos == nullptr || s.sin == nullptr || s.tanh == nullptr) {
      s = {};
      s.missing = "libsleef.so.3 (Debian's libsleef3), which PyTorch loads, is not installed";
    }
    return s;
  }();
  return loaded;
}
#endif

}  // namespace

std::string_view sleef_missing() {
#ifdef ATTN_X86
  return sleef_library().missing;
#else
  return "this is not an x86-64 CPU, which SLEEF's AVX2 code needs";
#endif
}

bool sleef_runs() { return sleef_missing().empty(); }

void torch_pow(float base, const float* e, float* out, std::size_t n, TorchKernel kernel) {
  std::size_t i = 0;
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && sleef_runs()) {
    i = sleef_avx2::pow_blocks(sleef_library().pow, base, e, out, n);
  }
#else
  (void)kernel;
#endif
  for (; i < n; ++i) out[i] = std::pow(base, e[i]);
}

void torch_cos(const float* x, float* out, std::size_t n, TorchKernel kernel) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && sleef_runs())
    return sleef_avx2::map(sleef_library().cos, x, out, n);
#else
  (void)kernel;
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = std::cos(x[i]);
}

void torch_sin(const float* x, float* out, std::size_t n, TorchKernel kernel) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && sleef_runs())
    return sleef_avx2::map(sleef_library().sin, x, out, n);
#else
  (void)kernel;
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = std::sin(x[i]);
}

void torch_gelu_new(const float* x, float* out, std::size_t n, TorchKernel kernel) {
  // Python's constants, rounded to float32 as a tensor's operations with a number round them.
  const auto root = static_cast<float>(std::sqrt(2.0 / M_PI));
  const auto kappa = static_cast<float>(0.044715);
  for (std::size_t i = 0; i < n; ++i) {
    const float cube = x[i] * x[i] * x[i];  // torch.pow(x, 3.0)
    out[i] = root * (x[i] + kappa * cube);
  }
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && sleef_runs()) {
    sleef_avx2::map(sleef_library().tanh, out, out, n);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::tanh(out[i]);
  }
#else
  (void)kernel;
  for (std::size_t i = 0; i < n; ++i) out[i] = std::tanh(out[i]);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = 0.5f * x[i] * (1.0f + out[i]);
}

float torch_row_max(const float* s, Eigen::Index n, TorchKernel kernel) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && use_avx2()) return row_max_avx2(s, n);
#endif
  float m = -std::numeric_limits<float>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) m = std::fmax(m, s[j]);
  return m;
}

float torch_exp_sum(const float* s, Eigen::Index n, float m, TorchKernel kernel, float* e) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && use_avx512()) return exp_sum_avx512(s, n, m, e);
  if (kernel == TorchKernel::kAvx2 && use_avx2()) return exp_sum_avx2(s, n, m, e);
#endif
#ifdef ATTN_FMA_BY_DOUBLE
  if (kernel == TorchKernel::kAvx2 && !kCpuHasFma) {
    for (Eigen::Index j = 0; j < n; ++j) e[j] = sleef_expf_u10_with<fma_by_double>(s[j] - m);
    return row_sum(e, n, kernel);
  }
#endif
  for (Eigen::Index j = 0; j < n; ++j) e[j] = torch_expf(s[j] - m, kernel);  // exp(s_j − max)
  return row_sum(e, n, kernel);
}

void torch_divide(const float* x, float d, float* out, std::size_t n) {
#ifdef ATTN_X86
  if (use_avx512()) return divide_avx512(x, d, out, n);
  if (use_avx2()) return divide_avx2(x, d, out, n);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] / d;
}

float torch_divide_row_max(const float* x, float d, float* out, std::size_t n) {
#ifdef ATTN_X86
  if (use_avx512()) return divide_max_avx512(x, d, out, n);
  if (use_avx2()) return divide_max_avx2(x, d, out, n);
#endif
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] / d, m = out[i] > m ? out[i] : m;
  return m;
}

void torch_scale_row(const float* e, Eigen::Index n, float inv, TorchKernel kernel, float* w) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && use_avx512()) return scale_row_avx512(e, n, inv, w);
  if (kernel == TorchKernel::kAvx2 && use_avx2()) return scale_row_avx2(e, n, inv, w);
#endif
  for (Eigen::Index j = 0; j < n; ++j) w[j] = e[j] * inv;
}

}  // namespace attn
