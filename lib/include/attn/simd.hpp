#pragma once

// The vectorised code paths (AVX2 with FMA, AVX-512) and the switch that turns them off. Every
// vectorised path computes the same bits as its plain C++ counterpart: the tests turn them off to
// show it, and a CPU without them runs the plain code.

namespace attn {

// Whether this CPU has AVX2 and FMA, and the vectorised paths are on.
bool use_avx2();
// Whether this CPU has AVX-512F, and the vectorised paths are on.
bool use_avx512();

// On by default. For tests: off runs the plain C++ code on any CPU.
void set_simd_enabled(bool on);

}  // namespace attn
