// The blocked matrix product on the attention's shapes, in steady state: each product repeated,
// the median time reported. Not a test; tests/bench/bench.py runs it (section 4).
// Usage: attn_gemm_bench THREADS [T...]   (default T: 512 1024 2048 4096)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "attn/gemm.hpp"

namespace {

struct Shape {
  const char* name;
  long m, n, k;
  bool b_transposed;  // B read as Kᵀ from K, as ω = Q Kᵀ does
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: attn_gemm_bench THREADS [T...]\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  std::vector<long> ts;
  for (int i = 2; i < argc; ++i) ts.push_back(std::atol(argv[i]));
  if (ts.empty()) ts = {512, 1024, 2048, 4096};
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::printf("gemm_blocked (%.*s), %d thread%s, median of 21 after a warmup\n",
              static_cast<int>(attn::gemm_isa_name().size()), attn::gemm_isa_name().data(), threads,
              threads == 1 ? "" : "s");
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
      std::vector<double> times;
      for (int r = 0; r < 22; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        attn::gemm_blocked(am, bm, c.data(), s.n, threads);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) times.push_back(sec);
      }
      std::sort(times.begin(), times.end());
      const double median = times[times.size() / 2];
      std::printf("T=%ld %s: %.3f ms %.1f GFLOP/s\n", t, s.name, median * 1e3,
                  2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                      static_cast<double>(s.k) / median / 1e9);
    }
  }
  return 0;
}
