#include "attn/simd.hpp"

#include <atomic>

namespace attn {

namespace {

std::atomic<bool> g_enabled{true};

bool cpu_avx2() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

bool cpu_avx512() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

}  // namespace

bool use_avx2() { return cpu_avx2() && g_enabled.load(std::memory_order_relaxed); }
bool use_avx512() { return cpu_avx512() && g_enabled.load(std::memory_order_relaxed); }
void set_simd_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

}  // namespace attn
