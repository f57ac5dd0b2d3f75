#pragma once

// The vectorised code paths (AVX2 with FMA, AVX-512) and the switch that turns them off. Every
// vectorised path computes the same bits as its plain C++ counterpart: the tests turn them off to
// show it, and a CPU without them runs the plain code.

#include <cstdint>
#include <optional>
#include <string_view>

namespace attn {

// The instruction sets the vectorised paths use, from the least.
enum class Isa { kPlain, kAvx2, kAvx512 };

// Whether this CPU has AVX2 and FMA, and the vectorised paths are on and may use it.
bool use_avx2();
// Whether this CPU has AVX-512F, and the vectorised paths are on and may use it.
bool use_avx512();
// Whether this CPU has FMA instructions and the OS saves the AVX state they use, whatever the
// vectorised paths may use: the plain paths' fmaf is the instruction there (exact_fma.hpp).
bool cpu_has_fma();

// On by default. For tests: off runs the plain C++ code on any CPU.
void set_simd_enabled(bool on);

// The best instruction set this CPU has (kPlain off x86-64, or without AVX2 and FMA).
Isa cpu_isa();
// From now on the vectorised paths use at most `isa` (the CLI's ATTN_ISA): kAvx2 on an AVX-512
// CPU runs the AVX2 code, kPlain the plain C++ code. Every path gives the same bits, so only the
// speed changes. Requires: isa <= cpu_isa() (a higher limit is the CPU's own).
void limit_isa(Isa isa);
// The instruction set the vectorised paths use now: the CPU's, within the limit and the switch.
Isa active_isa();

// The L2 cache of one core, in bytes, as CPUID leaf 0x80000006 gives it (AMD and Intel); 512 KiB
// where the CPU does not say, or is not x86-64. Read once, on first use.
std::int64_t l2_cache_bytes();

// "plain", "avx2", "avx512"; and back (nullopt for any other name).
std::string_view isa_name(Isa isa);
std::optional<Isa> isa_named(std::string_view name);

}  // namespace attn
