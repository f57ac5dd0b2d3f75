#include "attn/simd.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace attn {

namespace {

std::atomic<bool> g_enabled{true};
std::atomic<Isa> g_limit{Isa::kAvx512};  // the most the vectorised paths may use

#if defined(__x86_64__)
// What CPUID and XGETBV say, read once, on first use: three CPUID instructions, where
// __builtin_cpu_supports has libgcc's start-up code issue many (each one a trap to the hypervisor
// in a virtual machine).
struct CpuFeatures {
  bool fma = false;
  bool avx2_fma = false;
  bool avx512f = false;
};

__attribute__((target("xsave"))) CpuFeatures read_cpu() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = (c & bit_OSXSAVE) != 0, avx = (c & bit_AVX) != 0, fma = (c & bit_FMA) != 0;
  if (!osxsave || !avx) return f;
  const unsigned long long xcr0 = _xgetbv(0);
  const bool ymm = (xcr0 & 0x6) == 0x6;    // the OS saves XMM and YMM state
  const bool zmm = (xcr0 & 0xe6) == 0xe6;  // ... and the AVX-512 state
  f.fma = ymm && fma;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  f.avx2_fma = ymm && fma && (b & bit_AVX2) != 0;
  f.avx512f = f.avx2_fma && zmm && (b & bit_AVX512F) != 0;
  return f;
}

const CpuFeatures& cpu() {
  static const CpuFeatures features = read_cpu();
  return features;
}

bool cpu_fma() { return cpu().fma; }
bool cpu_avx2() { return cpu().avx2_fma; }
bool cpu_avx512() { return cpu().avx512f; }

std::int64_t read_l2_bytes() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000006, &a, &b, &c, &d) == 0) return 0;
  return std::int64_t{c >> 16} * 1024;  // ECX bits 31-16: the size in KiB
}
#else
std::int64_t read_l2_bytes() { return 0; }
bool cpu_fma() { return false; }
bool cpu_avx2() { return false; }
bool cpu_avx512() { return false; }
#endif

}  // namespace

std::int64_t l2_cache_bytes() {
  static const std::int64_t bytes = [] {
    const std::int64_t read = read_l2_bytes();
    return read > 0 ? read : std::int64_t{512} * 1024;
  }();
  return bytes;
}

bool cpu_has_fma() { return cpu_fma(); }
bool use_avx2() { return active_isa() >= Isa::kAvx2; }
bool use_avx512() { return active_isa() >= Isa::kAvx512; }

void set_simd_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

Isa cpu_isa() { return cpu_avx512() ? Isa::kAvx512 : cpu_avx2() ? Isa::kAvx2 : Isa::kPlain; }

void limit_isa(Isa isa) { g_limit.store(isa, std::memory_order_relaxed); }

Isa active_isa() {
  if (!g_enabled.load(std::memory_order_relaxed)) return Isa::kPlain;
  return std::min(cpu_isa(), g_limit.load(std::memory_order_relaxed));
}

namespace {
constexpr std::pair<Isa, std::string_view> kIsaNames[] = {
    {Isa::kPlain, "plain"}, {Isa::kAvx2, "avx2"}, {Isa::kAvx512, "avx512"}};
}  // namespace

std::string_view isa_name(Isa isa) {
  for (const auto& [value, name] : kIsaNames) {
    if (value == isa) return name;
  }
  return "?";
}

std::optional<Isa> isa_named(std::string_view name) {
  for (const auto& [value, n] : kIsaNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

}  // namespace attn
