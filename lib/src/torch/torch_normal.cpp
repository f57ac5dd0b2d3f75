// torch.normal_ (ATen's normal_fill for 16 and more values, at::normal_distribution below
// that): Box-Muller over the generator's uniforms (torch_random.cpp), with the same bits on every
// path.

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <span>

#if defined(__x86_64__)
#include <immintrin.h>
#define ATTN_X86 1
#endif

#include "attn/exact_fma.hpp"
#include "attn/simd.hpp"
#include "attn/torch_random.hpp"

namespace attn {

// ---------------------------------------------------------------------------------------------
// Box-Muller of normal_fill_16_AVX2: Cephes log and sincos from ATen's avx_mathfun.h, with the
// fma placement that GCC 12 produces for that header at -O2 -mfma (exhaustively verified).

namespace {

float bits_to_float(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t float_to_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

float cephes_log(float x) {
  x = std::fmax(x, FLT_MIN);
  const std::uint32_t xb = float_to_bits(x);
  const int e_i = static_cast<int>(xb >> 23) - 127;
  const float m = bits_to_float((xb & ~0x7F800000u) | float_to_bits(0.5f));  // in [0.5, 1)
  float e = static_cast<float>(e_i) + 1.0f;
  float tmp = 0.0f;
  if (m < 0.707106781186547524f) {
    tmp = m;
    e = e - 1.0f;
  }
  float v = (m - 1.0f) + tmp;
  const float z = v * v;
  float y = 7.0376836292E-2f;
  y = exact_fma(y, v, -1.1514610310E-1f);
  y = exact_fma(y, v, 1.1676998740E-1f);
  y = exact_fma(y, v, -1.2420140846E-1f);
  y = exact_fma(y, v, 1.4249322787E-1f);
  y = exact_fma(y, v, -1.6668057665E-1f);
  y = exact_fma(y, v, 2.0000714765E-1f);
  y = exact_fma(y, v, -2.4999993993E-1f);
  y = exact_fma(y, v, 3.3333331174E-1f);
  y = y * v;
  y = exact_fma(y, z, e * -2.12194440e-4f);
  y = exact_fma(z, -0.5f, y);
  v = v + y;
  v = exact_fma(e, 0.693359375f, v);
  return v;
}

struct SinCos {
  float sin;
  float cos;
};

SinCos cephes_sincos(float theta) {
  std::uint32_t sign_sin = float_to_bits(theta) & 0x80000000u;
  float x = std::fabs(theta);
  int j = static_cast<int>(std::trunc(x * 1.27323954473516f));  // 4 / pi
  j = (j + 1) & ~1;
  const float yq = static_cast<float>(j);
  sign_sin ^= static_cast<std::uint32_t>(j & 4) << 29;
  const std::uint32_t sign_cos = static_cast<std::uint32_t>(~(j - 2) & 4) << 29;
  const bool poly = (j & 2) == 0;
  x = exact_fma(yq, -0.78515625f, x);
  x = exact_fma(yq, -2.4187564849853515625e-4f, x);
  x = exact_fma(yq, -3.77489497744594108e-8f, x);
  const float z = x * x;
  float yc = exact_fma(2.443315711809948E-5f, z, -1.388731625493765E-3f);
  yc = exact_fma(yc, z, 4.166664568298827E-2f);
  yc = yc * z;
  yc = exact_fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;
  float ys = exact_fma(-1.9515295891E-4f, z, 8.3321608736E-3f);
  ys = exact_fma(ys, z, -1.6666654611E-1f);
  ys = ys * z;
  ys = exact_fma(ys, x, x);
  const float s = poly ? ys : yc;
  const float c = poly ? yc : ys;
  return {bits_to_float(float_to_bits(s) ^ sign_sin), bits_to_float(float_to_bits(c) ^ sign_cos)};
}

#ifdef ATTN_X86
// cephes_log, cephes_sincos and the Box-Muller step above on 8 lanes: the same operations in the
// same order (the branches as selects that leave the other lanes' values bit-exact), so the same
// bits as the scalar code. It is ATen's own vectorisation of normal_fill_16.
__attribute__((target("avx2,fma"), always_inline)) inline void box_muller_avx2(float* block,
                                                                               __m256 mu,
                                                                               __m256 sd) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256 u1 = _mm256_sub_ps(one, _mm256_loadu_ps(block));
  const __m256 u2 = _mm256_loadu_ps(block + 8);

  // cephes_log(u1)
  const __m256 x = _mm256_max_ps(u1, _mm256_set1_ps(FLT_MIN));
  const __m256i xb = _mm256_castps_si256(x);
  const __m256i e_i = _mm256_sub_epi32(_mm256_srli_epi32(xb, 23), _mm256_set1_epi32(127));
  const __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(xb, _mm256_set1_epi32(static_cast<int>(~0x7F800000u))),
                      _mm256_castps_si256(_mm256_set1_ps(0.5f))));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(e_i), one);
  const __m256 small = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  const __m256 tmp = _mm256_and_ps(small, m);
  e = _mm256_blendv_ps(e, _mm256_sub_ps(e, one), small);
  __m256 v = _mm256_add_ps(_mm256_sub_ps(m, one), tmp);
  const __m256 z = _mm256_mul_ps(v, v);
  __m256 y = _mm256_set1_ps(7.0376836292E-2f);
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(-1.1514610310E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(1.1676998740E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(-1.2420140846E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(1.4249322787E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(-1.6668057665E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(2.0000714765E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(-2.4999993993E-1f));
  y = _mm256_fmadd_ps(y, v, _mm256_set1_ps(3.3333331174E-1f));
  y = _mm256_mul_ps(y, v);
  y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(-2.12194440e-4f)));
  y = _mm256_fmadd_ps(z, _mm256_set1_ps(-0.5f), y);
  v = _mm256_add_ps(v, y);
  const __m256 log_u1 = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), v);
  const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), log_u1));

  // cephes_sincos(2 pi u2)
  const __m256 theta = _mm256_mul_ps(_mm256_set1_ps(6.28318548f), u2);
  __m256i sign_sin = _mm256_castps_si256(_mm256_and_ps(theta, sign));
  __m256 t = _mm256_andnot_ps(sign, theta);
  __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(t, _mm256_set1_ps(1.27323954473516f)));
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
  const __m256 yq = _mm256_cvtepi32_ps(j);
  const __m256i four = _mm256_set1_epi32(4);
  sign_sin = _mm256_xor_si256(sign_sin, _mm256_slli_epi32(_mm256_and_si256(j, four), 29));
  const __m256i sign_cos =
      _mm256_slli_epi32(_mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), four), 29);
  const __m256 poly = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
  t = _mm256_fmadd_ps(yq, _mm256_set1_ps(-0.78515625f), t);
  t = _mm256_fmadd_ps(yq, _mm256_set1_ps(-2.4187564849853515625e-4f), t);
  t = _mm256_fmadd_ps(yq, _mm256_set1_ps(-3.77489497744594108e-8f), t);
  const __m256 zz = _mm256_mul_ps(t, t);
  __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps(2.443315711809948E-5f), zz,
                              _mm256_set1_ps(-1.388731625493765E-3f));
  yc = _mm256_fmadd_ps(yc, zz, _mm256_set1_ps(4.166664568298827E-2f));
  yc = _mm256_mul_ps(yc, zz);
  yc = _mm256_fmadd_ps(yc, zz, _mm256_xor_ps(_mm256_mul_ps(zz, _mm256_set1_ps(0.5f)), sign));
  yc = _mm256_add_ps(yc, one);
  __m256 ys =
      _mm256_fmadd_ps(_mm256_set1_ps(-1.9515295891E-4f), zz, _mm256_set1_ps(8.3321608736E-3f));
  ys = _mm256_fmadd_ps(ys, zz, _mm256_set1_ps(-1.6666654611E-1f));
  ys = _mm256_mul_ps(ys, zz);
  ys = _mm256_fmadd_ps(ys, t, t);
  const __m256 s = _mm256_blendv_ps(yc, ys, poly);
  const __m256 c = _mm256_blendv_ps(ys, yc, poly);
  const __m256 sin = _mm256_xor_ps(s, _mm256_castsi256_ps(sign_sin));
  const __m256 cos = _mm256_xor_ps(c, _mm256_castsi256_ps(sign_cos));

  _mm256_storeu_ps(block, _mm256_fmadd_ps(_mm256_mul_ps(radius, cos), sd, mu));
  _mm256_storeu_ps(block + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, sin), sd, mu));
}

__attribute__((target("avx2,fma"))) void normal_fill_16_avx2(float* block, float mean, float std) {
  box_muller_avx2(block, _mm256_set1_ps(mean), _mm256_set1_ps(std));
}

// normal_fill_16_avx2 on `count` blocks of 16 in a row, two at a time, with no call or check
// between them.
__attribute__((target("avx2,fma"))) void normal_fill_blocks_avx2(float* blocks, std::size_t count,
                                                                 float mean, float std) {
  const __m256 mu = _mm256_set1_ps(mean), sd = _mm256_set1_ps(std);
  std::size_t k = 0;
  for (; k + 2 <= count; k += 2) {
    box_muller_avx2(blocks + 16 * k, mu, sd);
    box_muller_avx2(blocks + 16 * k + 16, mu, sd);
  }
  if (k < count) box_muller_avx2(blocks + 16 * k, mu, sd);
}

// GCC 12's AVX-512 intrinsics start some results from an undefined value (GCC bug 105593): its
// -Wuninitialized is a false alarm here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// box_muller_avx2 on two blocks at once, in 16 lanes: lanes 0-7 are the first block's
// pairs, lanes 8-15 the second's. Each lane takes the same operations in the same order as
// there (the compares give masks, the selects are blends), so the same bits.
__attribute__((target("avx512f"), always_inline)) inline void box_muller_avx512(float* blocks,
                                                                                __m512 mu,
                                                                                __m512 sd) {
  const __m512 a = _mm512_loadu_ps(blocks), b = _mm512_loadu_ps(blocks + 16);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512 u1 = _mm512_sub_ps(one, _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)));
  const __m512 u2 = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2));

  // cephes_log(u1)
  const __m512 x = _mm512_max_ps(u1, _mm512_set1_ps(FLT_MIN));
  const __m512i xb = _mm512_castps_si512(x);
  const __m512i e_i = _mm512_sub_epi32(_mm512_srli_epi32(xb, 23), _mm512_set1_epi32(127));
  const __m512 m = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(xb, _mm512_set1_epi32(static_cast<int>(~0x7F800000u))),
                      _mm512_castps_si512(_mm512_set1_ps(0.5f))));
  __m512 e = _mm512_add_ps(_mm512_cvtepi32_ps(e_i), one);
  const __mmask16 small = _mm512_cmp_ps_mask(m, _mm512_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  const __m512 tmp = _mm512_maskz_mov_ps(small, m);
  e = _mm512_mask_sub_ps(e, small, e, one);
  __m512 v = _mm512_add_ps(_mm512_sub_ps(m, one), tmp);
  const __m512 z = _mm512_mul_ps(v, v);
  __m512 y = _mm512_set1_ps(7.0376836292E-2f);
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(-1.1514610310E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(1.1676998740E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(-1.2420140846E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(1.4249322787E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(-1.6668057665E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(2.0000714765E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(-2.4999993993E-1f));
  y = _mm512_fmadd_ps(y, v, _mm512_set1_ps(3.3333331174E-1f));
  y = _mm512_mul_ps(y, v);
  y = _mm512_fmadd_ps(y, z, _mm512_mul_ps(e, _mm512_set1_ps(-2.12194440e-4f)));
  y = _mm512_fmadd_ps(z, _mm512_set1_ps(-0.5f), y);
  v = _mm512_add_ps(v, y);
  const __m512 log_u1 = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), v);
  const __m512 radius = _mm512_sqrt_ps(_mm512_mul_ps(_mm512_set1_ps(-2.0f), log_u1));

  // cephes_sincos(2 pi u2)
  const __m512 theta = _mm512_mul_ps(_mm512_set1_ps(6.28318548f), u2);
  const __m512i theta_bits = _mm512_castps_si512(theta);
  __m512i sign_sin = _mm512_and_si512(theta_bits, sign);
  __m512 t = _mm512_castsi512_ps(_mm512_andnot_si512(sign, theta_bits));
  __m512i j = _mm512_cvttps_epi32(_mm512_mul_ps(t, _mm512_set1_ps(1.27323954473516f)));
  j = _mm512_and_si512(_mm512_add_epi32(j, _mm512_set1_epi32(1)), _mm512_set1_epi32(~1));
  const __m512 yq = _mm512_cvtepi32_ps(j);
  const __m512i four = _mm512_set1_epi32(4);
  sign_sin = _mm512_xor_si512(sign_sin, _mm512_slli_epi32(_mm512_and_si512(j, four), 29));
  const __m512i sign_cos =
      _mm512_slli_epi32(_mm512_andnot_si512(_mm512_sub_epi32(j, _mm512_set1_epi32(2)), four), 29);
  const __mmask16 poly =
      _mm512_cmpeq_epi32_mask(_mm512_and_si512(j, _mm512_set1_epi32(2)), _mm512_setzero_si512());
  t = _mm512_fmadd_ps(yq, _mm512_set1_ps(-0.78515625f), t);
  t = _mm512_fmadd_ps(yq, _mm512_set1_ps(-2.4187564849853515625e-4f), t);
  t = _mm512_fmadd_ps(yq, _mm512_set1_ps(-3.77489497744594108e-8f), t);
  const __m512 zz = _mm512_mul_ps(t, t);
  __m512 yc = _mm512_fmadd_ps(_mm512_set1_ps(2.443315711809948E-5f), zz,
                              _mm512_set1_ps(-1.388731625493765E-3f));
  yc = _mm512_fmadd_ps(yc, zz, _mm512_set1_ps(4.166664568298827E-2f));
  yc = _mm512_mul_ps(yc, zz);
  const __m512 half_zz = _mm512_mul_ps(zz, _mm512_set1_ps(0.5f));
  yc = _mm512_fmadd_ps(yc, zz,
                       _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(half_zz), sign)));
  yc = _mm512_add_ps(yc, one);
  __m512 ys =
      _mm512_fmadd_ps(_mm512_set1_ps(-1.9515295891E-4f), zz, _mm512_set1_ps(8.3321608736E-3f));
  ys = _mm512_fmadd_ps(ys, zz, _mm512_set1_ps(-1.6666654611E-1f));
  ys = _mm512_mul_ps(ys, zz);
  ys = _mm512_fmadd_ps(ys, t, t);
  const __m512 s = _mm512_mask_blend_ps(poly, yc, ys);
  const __m512 c = _mm512_mask_blend_ps(poly, ys, yc);
  const __m512 sin = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(s), sign_sin));
  const __m512 cos = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(c), sign_cos));

  const __m512 n1 = _mm512_fmadd_ps(_mm512_mul_ps(radius, cos), sd, mu);  // lanes j of each
  const __m512 n2 = _mm512_fmadd_ps(_mm512_mul_ps(radius, sin), sd, mu);  // lanes j + 8
  _mm512_storeu_ps(blocks, _mm512_shuffle_f32x4(n1, n2, _MM_SHUFFLE(1, 0, 1, 0)));
  _mm512_storeu_ps(blocks + 16, _mm512_shuffle_f32x4(n1, n2, _MM_SHUFFLE(3, 2, 3, 2)));
}

// box_muller_avx512 on `count` pairs of blocks in a row, two pairs at a time.
__attribute__((target("avx512f"))) void normal_fill_blocks_avx512(float* blocks, std::size_t count,
                                                                  float mean, float std) {
  const __m512 mu = _mm512_set1_ps(mean), sd = _mm512_set1_ps(std);
  std::size_t k = 0;
  for (; k + 2 <= count; k += 2) {
    box_muller_avx512(blocks + 32 * k, mu, sd);
    box_muller_avx512(blocks + 32 * k + 32, mu, sd);
  }
  if (k < count) box_muller_avx512(blocks + 32 * k, mu, sd);
}
#pragma GCC diagnostic pop

#endif

}  // namespace

void normal_fill_blocks(std::span<float> blocks, float mean, float std, TorchKernel kernel) {
  std::size_t k = 0;
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && use_avx512()) {
    normal_fill_blocks_avx512(blocks.data(), blocks.size() / 32, mean, std);
    k = blocks.size() / 32 * 32;
  }
  if (kernel == TorchKernel::kAvx2 && use_avx2()) {
    normal_fill_blocks_avx2(blocks.data() + k, (blocks.size() - k) / 16, mean, std);
    return;
  }
#endif
  for (; k + 16 <= blocks.size(); k += 16) {
    normal_fill_16(blocks.subspan(k).first<16>(), mean, std, kernel);
  }
}

void normal_fill_16(std::span<float, 16> block, float mean, float std, TorchKernel kernel) {
#ifdef ATTN_X86
  if (kernel == TorchKernel::kAvx2 && use_avx2()) {
    normal_fill_16_avx2(block.data(), mean, std);
    return;
  }
#endif
  for (std::size_t j = 0; j < 8; ++j) {
    const float u1 = 1.0f - block[j];  // (0, 1]: the radius
    const float u2 = block[j + 8];     // [0, 1): the angle
    if (kernel == TorchKernel::kAvx2) {
      const float radius = std::sqrt(-2.0f * cephes_log(u1));
      const SinCos sc = cephes_sincos(6.28318548f * u2);
      const float n1 = radius * sc.cos;
      const float n2 = radius * sc.sin;
      // The explicit _mm256_fmadd_ps; it also turns a radius of -0 into +0.
      block[j] = exact_fma(n1, std, mean);
      block[j + 8] = exact_fma(n2, std, mean);
    } else {
      const float radius = std::sqrt(-2.0f * std::log(u1));
      // 2 * pi * u2 is computed in double, then rounded to float.
      const auto theta = static_cast<float>(6.283185307179586 * static_cast<double>(u2));
      block[j] = radius * std::cos(theta) * std + mean;
      block[j + 8] = radius * std::sin(theta) * std + mean;
    }
  }
}

namespace {

// at::normal_distribution<double> with the generator's cache: the path for n < 16.
float normal_small(TorchGenerator& gen, float mean, float std) {
  double z;
  if (auto& cache = gen.normal_cache(); cache) {
    z = *cache;
    cache.reset();
  } else {
    const double u1 = gen.uniform01_double();  // the angle
    const double u2 = gen.uniform01_double();  // the radius
    const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = 2.0 * 3.141592653589793 * u1;
    cache = r * std::sin(theta);
    z = r * std::cos(theta);
  }
  return static_cast<float>(z * static_cast<double>(std) + static_cast<double>(mean));
}

}  // namespace

void normal_(std::span<float> out, TorchGenerator& gen, float mean, float std, TorchKernel kernel) {
  const std::size_t n = out.size();
  if (n < 16) {
    for (float& v : out) v = normal_small(gen, mean, std);
    return;
  }
  gen.fill_uniform01(out);  // all n uniforms first
  normal_fill_blocks(out.first(n / 16 * 16), mean, std, kernel);
  if (n % 16 != 0) {
    // The tail: 16 fresh uniforms over the last 16 slots, overwriting finished normals.
    const std::span<float, 16> tail = out.last<16>();
    for (float& v : tail) v = gen.uniform01();
    normal_fill_16(tail, mean, std, kernel);
  }
}

}  // namespace attn
