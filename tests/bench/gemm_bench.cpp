// The blocked matrix product on the attention's shapes, in steady state: each product repeated,
// the median time reported, against the FMA peak of one core for the vector width the product's
// code uses. Not a test; tests/bench/bench.py runs it (section 5). On one thread the times are
// the thread's CPU time, so that other processes on a shared machine do not count.
// Usage: attn_gemm_bench THREADS [--isa avx512|avx2|generic|all] [T...]
//   (default T: 512 1024 2048 4096; default --isa all: every one of avx512 and avx2 this CPU
//   runs, else generic)
// Output, printed at the end: the measured peaks, a title line, then one line per ISA and shape:
//   avx2 T=512 X W_q (T x 1024 @ 1024 x 128): 0.123 ms 120.0 GFLOP/s 88.8 % of peak
//     (min 118.1 max 121.3 GFLOP/s)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string_view>
#include <vector>

#include "attn/gemm.hpp"
#include "attn/memory.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_BENCH_X86 1
#endif

namespace {

struct Shape {
  const char* name;
  long m, n, k;
  bool b_transposed;  // B read as Kᵀ from K, as ω = Q Kᵀ does
};

struct Isa {
  attn::GemmIsa isa;
  const char* name;
  double peak;  // GFLOP/s of one core, this ISA's vector width
};

volatile float g_sink;  // where the FMA loops' results go, so that they are computed

// On one thread, the time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which a shared
// machine's other processes do not inflate; on several, the wall time.
bool g_cpu_time = false;
double now_seconds() {
  if (g_cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The FMA peak of one core: 12 independent chains of fused multiply-adds in registers (the loop
// of bench.py's section 4), 2 * lanes * 12 * iterations over the time, the best of 5 runs. The
// chains' sum goes to a volatile, so that each fma is done.
#define ATTN_FMA_PEAK_LOOP(Vec, kLanes, set1, fmadd, add)                                   \
  constexpr long kIters = 20'000'000;                                                       \
  double best = 0.0;                                                                        \
  for (int run = 0; run < 5; ++run) {                                                       \
    const Vec a = set1(0.9999999f), b = set1(1e-7f);                                        \
    Vec c0 = set1(1), c1 = set1(2), c2 = set1(3), c3 = set1(4), c4 = set1(5), c5 = set1(6); \
    Vec c6 = set1(7), c7 = set1(8), c8 = set1(9), c9 = set1(10), c10 = set1(11);            \
    Vec c11 = set1(12);                                                                     \
    const double t0 = now_seconds();                                                        \
    for (long it = 0; it < kIters; ++it) {                                                  \
      c0 = fmadd(c0, a, b), c1 = fmadd(c1, a, b), c2 = fmadd(c2, a, b);                     \
      c3 = fmadd(c3, a, b), c4 = fmadd(c4, a, b), c5 = fmadd(c5, a, b);                     \
      c6 = fmadd(c6, a, b), c7 = fmadd(c7, a, b), c8 = fmadd(c8, a, b);                     \
      c9 = fmadd(c9, a, b), c10 = fmadd(c10, a, b), c11 = fmadd(c11, a, b);                 \
    }                                                                                       \
    const double sec = now_seconds() - t0;                                                  \
    const Vec sum = add(add(add(add(c0, c1), add(c2, c3)), add(add(c4, c5), add(c6, c7))),  \
                        add(add(c8, c9), add(c10, c11)));                                   \
    g_sink = reinterpret_cast<const float*>(&sum)[0];                                       \
    best = std::max(best, 12.0 * (kLanes)*2.0 * static_cast<double>(kIters) / sec / 1e9);   \
  }                                                                                         \
  return best

#ifdef ATTN_BENCH_X86
__attribute__((target("avx2,fma"))) double fma_peak_avx2() {
  ATTN_FMA_PEAK_LOOP(__m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps);
}
__attribute__((target("avx512f"))) double fma_peak_avx512() {
  ATTN_FMA_PEAK_LOOP(__m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps);
}
#endif
#define ATTN_SCALAR_FMA(x, y, z) __builtin_fmaf(x, y, z)
#define ATTN_SCALAR_SET(x) static_cast<float>(x)
#define ATTN_SCALAR_ADD(x, y) ((x) + (y))
double fma_peak_generic() {
  ATTN_FMA_PEAK_LOOP(float, 1, ATTN_SCALAR_SET, ATTN_SCALAR_FMA, ATTN_SCALAR_ADD);
}

std::vector<Isa> isas_to_run(std::string_view which) {
  std::vector<Isa> out;
  const auto add = [&](attn::GemmIsa isa, const char* name) {
    if (attn::gemm_isa_supported(isa)) out.push_back({isa, name, 0.0});
  };
  if (which == "all" || which == "avx512") add(attn::GemmIsa::kAvx512, "avx512");
  if (which == "all" || which == "avx2") add(attn::GemmIsa::kAvx2, "avx2");
  if (which == "generic" || (which == "all" && out.empty())) {
    add(attn::GemmIsa::kGeneric, "generic");
  }
  return out;
}

// Measures each ISA's peak again and keeps the higher: on a shared machine one measurement can
// be slowed by the other processes.
void measure_peaks(std::vector<Isa>& isas) {
  for (Isa& i : isas) {
#ifdef ATTN_BENCH_X86
    if (i.isa == attn::GemmIsa::kAvx512) i.peak = std::max(i.peak, fma_peak_avx512());
    if (i.isa == attn::GemmIsa::kAvx2) i.peak = std::max(i.peak, fma_peak_avx2());
#endif
    if (i.isa == attn::GemmIsa::kGeneric) i.peak = std::max(i.peak, fma_peak_generic());
  }
}

// One product's times: the median and the spread of the 21 repetitions.
struct Result {
  const Isa* isa;
  long t;
  const char* shape;
  double flop, median, fastest, slowest;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: attn_gemm_bench THREADS [--isa avx512|avx2|generic|all] [T...]\n");
    return 2;
  }
  char* end = nullptr;
  const long threads_arg = std::strtol(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || threads_arg < 1 || threads_arg > 256) {
    std::fprintf(stderr,
                 "attn_gemm_bench: THREADS must be a whole number from 1 to 256, not '%s'\n",
                 argv[1]);
    return 2;
  }
  const int threads = static_cast<int>(threads_arg);
  // The heap as attn-trace keeps it: a product's packed B is the last one's memory, not pages
  // mapped and faulted in again for every product.
  attn::keep_heap();
  g_cpu_time = threads <= 1;
  std::string_view which = "all";
  std::vector<long> ts;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
      which = argv[++i];
    } else {
      const long t = std::strtol(argv[i], &end, 10);
      if (end == argv[i] || *end != '\0' || t < 1) {
        std::fprintf(stderr, "attn_gemm_bench: T must be a whole number of 1 or more, not '%s'\n",
                     argv[i]);
        return 2;
      }
      ts.push_back(t);
    }
  }
  if (ts.empty()) ts = {512, 1024, 2048, 4096};
  std::vector<Isa> isas = isas_to_run(which);
  if (isas.empty()) {
    std::fprintf(stderr, "attn_gemm_bench: this CPU does not run --isa %.*s\n",
                 static_cast<int>(which.size()), which.data());
    return 2;
  }
  // The heap made ready as a run makes it: every matrix, and the packed B, in 2 MiB pages where
  // the system gives them. Made for the largest shape (A V: A is T x T), whose memory the
  // smaller ones reuse.
  const double largest = static_cast<double>(*std::max_element(ts.begin(), ts.end()));
  attn::prepare_heap(4.0 * (largest * largest + 2.0 * largest * 1024.0 + 1024.0 * 128.0), threads);
  measure_peaks(isas);
  std::vector<Result> results;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const long t : ts) {
    const Shape shapes[] = {{"X W_q (T x 1024 @ 1024 x 128)", t, 128, 1024, false},
                            {"Q K^T (T x 128 @ 128 x T)", t, t, 128, true},
                            {"A V (T x T @ T x 128)", t, 128, t, false}};
    for (const Shape& s : shapes) {
      std::vector<float> a(static_cast<std::size_t>(s.m * s.k)),
          b(static_cast<std::size_t>(s.k * s.n));
      std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
      for (float& x : a) x = u(gen);
      for (float& x : b) x = u(gen);
      const attn::StridedMatrix am{a.data(), s.m, s.k, s.k, 1};
      const attn::StridedMatrix bm = s.b_transposed
                                         ? attn::StridedMatrix{b.data(), s.k, s.n, 1, s.k}
                                         : attn::StridedMatrix{b.data(), s.k, s.n, s.n, 1};
      const double flop =
          2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      for (const Isa& isa : isas) {
        std::vector<double> times;
        for (int r = 0; r < 22; ++r) {
          const double t0 = now_seconds();
          attn::gemm_blocked(am, bm, c.data(), s.n, threads, isa.isa);
          const double sec = now_seconds() - t0;
          if (r > 0) times.push_back(sec);
        }
        std::sort(times.begin(), times.end());
        results.push_back(
            {&isa, t, s.name, flop, times[times.size() / 2], times.front(), times.back()});
      }
    }
  }
  measure_peaks(isas);  // again at the end; the higher of the two counts
  std::printf(
      "FMA peak of one core (12 independent fma chains in registers, best of 10 at the start and "
      "end):");
  for (const Isa& i : isas) std::printf(" %s %.1f GFLOP/s", i.name, i.peak);
  std::printf(
      "\ngemm_blocked, %d thread%s, median of 21 after a warmup (%s), %% of the ISA's peak per "
      "thread, spread = min and max of the 21\n",
      threads, threads == 1 ? "" : "s", g_cpu_time ? "the thread's CPU time" : "wall time");
  for (const Result& r : results) {
    const double rate = r.flop / r.median / 1e9;
    std::printf("%s T=%ld %s: %.3f ms %.1f GFLOP/s %.1f %% of peak (min %.1f max %.1f GFLOP/s)\n",
                r.isa->name, r.t, r.shape, r.median * 1e3, rate,
                100.0 * rate / threads / r.isa->peak, r.flop / r.slowest / 1e9,
                r.flop / r.fastest / 1e9);
  }
  return 0;
}
