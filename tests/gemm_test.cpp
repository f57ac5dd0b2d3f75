#include "attn/gemm.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "attn/attention.hpp"
#include "attn/parallel.hpp"
#include "attn/simd.hpp"
#include "support/reference.hpp"

namespace {

using attn::GemmIsa;
using attn::Matrix;
using attn::StridedMatrix;

Matrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(gen);
  return m;
}

// The blocked product as gemm.hpp defines it, one cell at a time.
Matrix blocked_definition(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows(), b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < b.cols(); ++j) {
      float total = 0.0f;
      for (Eigen::Index p0 = 0; p0 < a.cols(); p0 += attn::kGemmBlockK) {
        float s = 0.0f;
        const Eigen::Index p1 = std::min<Eigen::Index>(a.cols(), p0 + attn::kGemmBlockK);
        for (Eigen::Index p = p0; p < p1; ++p) s = std::fma(a(i, p), b(p, j), s);
        total = p0 == 0 ? s : total + s;
      }
      c(i, j) = total;
    }
  }
  return c;
}

Matrix run(const Matrix& a, const Matrix& b, int threads, GemmIsa isa) {
  Matrix c(a.rows(), b.cols());
  gemm_blocked({a.data(), a.rows(), a.cols(), a.cols(), 1},
               {b.data(), b.rows(), b.cols(), b.cols(), 1}, c.data(), b.cols(), threads, isa);
  return c;
}

bool same_bits(const Matrix& x, const Matrix& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("the blocked product is its definition, bit for bit, on every ISA and thread count") {
  // Shapes with edges in every direction: fewer rows than a tile, columns past a sliver, inner
  // dimensions across one and several blocks of 256, one of 0, a B too wide to pack whole (7 x
  // 4096 x 2304: two groups of blocks, 32 MiB at most at a time), A's rows 4 and 8 KiB apart
  // (k = 1024 and 2048), which fall into one set of the L1 data cache, and one block of k with
  // more columns than a panel of half the L2 holds (13 x 1300 x 200: panels of 640 columns with a
  // 1 MiB L2 and 320 with 512 KiB on the vector paths, the last one short).
  const std::vector<std::array<Eigen::Index, 3>> shapes = {
      {1, 1, 1},       {5, 7, 3},     {13, 33, 257},  {12, 32, 256}, {25, 65, 600},
      {100, 3, 40},    {7, 200, 513}, {300, 130, 70}, {4, 9, 0},     {7, 4096, 2304},
      {50, 130, 1024}, {7, 64, 2048}, {13, 1300, 200}};
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2}) {
    if (!attn::gemm_isa_supported(isa)) {
      // The kernel this CPU lacks cannot run here; say so rather than pass in silence.
      const char* name = isa == GemmIsa::kAvx512 ? "AVX-512" : "AVX2";
      MESSAGE("skipped: this CPU has no " << name << ", so its kernel is not run");
      std::printf("skipped: this CPU has no %s, so its kernel is not run\n", name);
    }
  }
  std::uint32_t seed = 1;
  for (const auto& shape : shapes) {
    // Named copies, not structured bindings: clang 14 refuses CAPTURE's lambda over a binding.
    const Eigen::Index m = shape[0], n = shape[1], k = shape[2];
    const Matrix a = random_matrix(m, k, seed++), b = random_matrix(k, n, seed++);
    const Matrix want = k == 0 ? Matrix(Matrix::Zero(m, n)) : blocked_definition(a, b);
    for (GemmIsa isa : {GemmIsa::kBest, GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kGeneric}) {
      if (!attn::gemm_isa_supported(isa)) continue;
      for (int threads : {1, 2, 3}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(isa));
        CAPTURE(threads);
        CHECK(same_bits(run(a, b, threads, isa), want));
      }
    }
  }
}

TEST_CASE("the L2 cache's size is read from the CPU, or 512 KiB where it does not say") {
  // Every x86-64 CPU of the last decade has from 256 KiB to a few MiB of L2 per core; a misread
  // CPUID field (the wrong register or bits) gives 0, bytes for KiB, or gigabytes.
  const std::int64_t bytes = attn::l2_cache_bytes();
  CAPTURE(bytes);
  CHECK(bytes >= 64 * 1024);
  CHECK(bytes <= 64 * 1024 * 1024);
  CHECK(bytes % 1024 == 0);
  CHECK(attn::l2_cache_bytes() == bytes);  // read once
}

TEST_CASE("the CPU's FMA is read as libgcc reads it, and implied by the vectorised paths") {
  // cpu_has_fma() (the plain paths' choice of fmaf, exact_fma.hpp) reads CPUID itself, so that
  // the program does not link libgcc's start-up code; here it must agree with that code.
#if defined(__x86_64__)
  __builtin_cpu_init();
  CHECK(attn::cpu_has_fma() == (__builtin_cpu_supports("fma") != 0));
#endif
  if (attn::cpu_isa() >= attn::Isa::kAvx2) CHECK(attn::cpu_has_fma());
}

TEST_CASE("the plain kernel keeps fmaf's bits where its double arithmetic would not") {
  // The plain path computes its fmas in double where the CPU has no FMA (exact_fma.hpp) and
  // computes a tile again one fmaf at a time when a sum may not round as fmaf: halfway between
  // two floats (1 + 2^-24 + 2^-60 rounded onto 1 + 2^-24), a subnormal float, beyond FLT_MAX,
  // nan. Each cell against its definition, in tiles among ordinary ones.
  const float trap_a = 1.0f + 0x1p-12f, trap_b = 0x1p-24f * (1.0f - 0x1p-12f + 0x1p-24f);
  const float pairs[][2] = {{trap_a, trap_b},  {1e-30f, 1e-20f},     {1e30f, 1e20f},
                            {1e-30f, -1e-10f}, {NAN, 1.0f},          {INFINITY, 0.0f},
                            {-trap_a, trap_b}, {FLT_TRUE_MIN, 0.5f}, {3e38f, 2.0f}};
  for (const auto& pair : pairs) {
    Matrix a = random_matrix(9, 300, 81), b = random_matrix(300, 11, 82);
    // Cell (4, 5): its chain reaches 1 at step 1, then meets the pair at step 2.
    a.row(4).setZero();
    b.col(5).setZero();
    a(4, 0) = 1.0f, b(0, 5) = 1.0f, a(4, 1) = pair[0], b(1, 5) = pair[1];
    // Cell (2, 3): the pair at its first step.
    a(2, 0) = pair[0], b(0, 3) = pair[1];
    const Matrix want = blocked_definition(a, b);
    CAPTURE(pair[0]);
    CAPTURE(pair[1]);
    for (int threads : {1, 2}) {
      const Matrix got = run(a, b, threads, GemmIsa::kGeneric);
      // nan's payload aside, every bit.
      bool same = true;
      for (Eigen::Index i = 0; i < got.size(); ++i) {
        const float x = got.data()[i], y = want.data()[i];
        same = same && ((std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0);
      }
      CHECK(same);
    }
  }
}

TEST_CASE("the blocked product reads A's rows in place, however far apart") {
  // A block of columns of a wider matrix, its rows 1024 floats apart, with edges in every
  // direction: the same bits as its contiguous copy, on every path.
  const Matrix wide = random_matrix(29, 1024, 61), b = random_matrix(300, 70, 62);
  const Matrix a = wide.leftCols(300);
  const Matrix want = blocked_definition(a, b);
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kGeneric}) {
    if (!attn::gemm_isa_supported(isa)) continue;
    for (int threads : {1, 2}) {
      CAPTURE(static_cast<int>(isa));
      CAPTURE(threads);
      Matrix c(29, 70);
      attn::gemm_blocked({wide.data(), 29, 300, 1024, 1}, {b.data(), 300, 70, 70, 1}, c.data(), 70,
                         threads, isa);
      CHECK(same_bits(c, want));
    }
  }
}

TEST_CASE("the blocked product reads a transposed A in place") {
  // Aᵀ B with A read in place (row stride 1, column stride A's width), as the backward pass's
  // products read it: the AVX2 kernel's steps for a row-major A are written out, and this is
  // its other loop, with k across several blocks of 256 and a tail of fewer than 16 steps.
  for (const Eigen::Index k : {Eigen::Index{37}, Eigen::Index{300}, Eigen::Index{520}}) {
    const Matrix a_cols = random_matrix(k, 45, 71), b = random_matrix(k, 40, 72);
    const Matrix want = blocked_definition(a_cols.transpose(), b);
    for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kGeneric}) {
      if (!attn::gemm_isa_supported(isa)) continue;
      for (int threads : {1, 2}) {
        CAPTURE(k);
        CAPTURE(static_cast<int>(isa));
        CAPTURE(threads);
        Matrix c(45, 40);
        attn::gemm_blocked({a_cols.data(), 45, k, 1, 45}, {b.data(), k, 40, 40, 1}, c.data(), 40,
                           threads, isa);
        CHECK(same_bits(c, want));
      }
    }
  }
}

TEST_CASE("on several threads, each thread's own copy of B is the product's B, every time") {
  // A B of at most 1 MiB packed is packed by each thread into memory of its own, kept between
  // products: each product must use its own B, whichever of the pool's threads take part
  // (the pool grown to eight threads first, so that any of its workers may join a loop on two),
  // and a B too large for the copies must still give the same bits.
  attn::parallel_for(8, 8, 1e9, [](std::int64_t, std::int64_t) {});
  CHECK(attn::pool_threads() >= 8);
  const Matrix a = random_matrix(200, 1024, 71);
  const Matrix b1 = random_matrix(1024, 128, 72), b2 = random_matrix(1024, 128, 73);
  const Matrix wide = random_matrix(1024, 700, 74);  // 2.9 MiB packed: one shared copy
  const Matrix want1 = blocked_definition(a, b1), want2 = blocked_definition(a, b2);
  const Matrix want_wide = blocked_definition(a, wide);
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kGeneric}) {
    if (!attn::gemm_isa_supported(isa)) continue;
    for (int threads : {2, 3, 8, 2}) {
      CAPTURE(static_cast<int>(isa));
      CAPTURE(threads);
      for (int round = 0; round < 3; ++round) {
        CHECK(same_bits(run(a, b1, threads, isa), want1));
        CHECK(same_bits(run(a, b2, threads, isa), want2));
        CHECK(same_bits(run(a, wide, threads, isa), want_wide));
      }
    }
  }
}

TEST_CASE("the blocked product reads a transposed operand in place") {
  // Kᵀ's slivers are packed 8 columns by 8 rows at a time on the vector paths, one float at a
  // time on the plain one: inner sizes with and without a tail of fewer than 8, and slivers cut
  // by the matrix's edge.
  for (const Eigen::Index d : {Eigen::Index{40}, Eigen::Index{43}, Eigen::Index{300}}) {
    const Matrix q = random_matrix(70, d, 11), k = random_matrix(90, d, 12);
    const Matrix k_t = k.transpose();
    for (const attn::Isa isa : {attn::Isa::kPlain, attn::cpu_isa()}) {
      attn::limit_isa(isa);
      CAPTURE(d);
      CAPTURE(attn::isa_name(isa));
      Matrix c(70, 90);
      attn::gemm_blocked({q.data(), 70, d, d, 1}, {k.data(), d, 90, 1, d}, c.data(), 90, 2);
      CHECK(same_bits(c, blocked_definition(q, k_t)));
      CHECK(same_bits(attn::omega_scores(q, k, 1, attn::MatmulKernel::kBlocked), c));
    }
    attn::limit_isa(attn::cpu_isa());
  }
}

TEST_CASE("the blocked product is within float32 rounding of the reference order") {
  // |c - c_ref| <= 2 k u Σ_p |a_ip| |b_pj|, u = 2^-24: both are sums of k rounded products.
  const Matrix a = random_matrix(64, 1000, 21), b = random_matrix(1000, 48, 22);
  const Matrix fast = attn::matmul(a, b, 1, attn::MatmulKernel::kBlocked);
  const Matrix ref = attn::matmul(a, b, 1, attn::MatmulKernel::kReference);
  const Matrix bound = a.cwiseAbs() * b.cwiseAbs();
  int outside = 0;
  for (Eigen::Index i = 0; i < fast.size(); ++i) {
    const double tol = 2.0 * 1000 * std::ldexp(1.0, -24) * bound.data()[i];
    if (std::fabs(double{fast.data()[i]} - double{ref.data()[i]}) > tol) ++outside;
  }
  CHECK(outside == 0);
  CHECK_FALSE(same_bits(fast, ref));  // the orders do differ
}

TEST_CASE("auto takes the blocked kernel from 2^20 multiply-adds") {
  using attn::MatmulKernel;
  CHECK(attn::matmul_kernel_for(MatmulKernel::kAuto, 64, 128, 128) == MatmulKernel::kBlocked);
  CHECK(attn::matmul_kernel_for(MatmulKernel::kAuto, 64, 128, 127) == MatmulKernel::kReference);
  CHECK(attn::matmul_kernel_for(MatmulKernel::kAuto, 6, 2, 3) == MatmulKernel::kReference);
  CHECK(attn::matmul_kernel_for(MatmulKernel::kReference, 4096, 4096, 4096) ==
        MatmulKernel::kReference);
  CHECK(attn::matmul_kernel_for(MatmulKernel::kBlocked, 1, 1, 1) == MatmulKernel::kBlocked);
}

TEST_CASE("B packed once gives every block of rows the bits of the whole product") {
  // A head's keys packed once, its queries a block of rows at a time: each block's cells are the
  // whole product's, on every ISA, for blocks that do not divide the rows, and with B transposed.
  const std::vector<std::array<Eigen::Index, 3>> shapes = {
      {1, 1, 1}, {13, 33, 257}, {50, 70, 128}, {31, 17, 600}, {4, 9, 0}};
  std::uint32_t seed = 40;
  for (const auto& shape : shapes) {
    // Named copies, not structured bindings: clang 14 refuses CAPTURE's lambda over a binding.
    const Eigen::Index m = shape[0], n = shape[1], k = shape[2];
    const Matrix a = random_matrix(m, k, seed++), b = random_matrix(k, n, seed++);
    const Matrix b_rows_t = b.transpose();  // (n, k): read as bᵀ in place
    for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kGeneric}) {
      if (!attn::gemm_isa_supported(isa)) continue;
      const Matrix want = run(a, b, 1, isa);
      const attn::GemmPackedB packed({b.data(), k, n, n, 1}, 2, isa);
      const attn::GemmPackedB packed_t({b_rows_t.data(), k, n, 1, k}, 1, isa);
      CHECK(packed.rows() == k);
      CHECK(packed.cols() == n);
      for (Eigen::Index rows : {Eigen::Index{1}, Eigen::Index{5}, Eigen::Index{7}, m}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(isa));
        CAPTURE(rows);
        Matrix c(m, n), c_t(m, n);
        for (Eigen::Index first = 0; first < m; first += rows) {
          const Eigen::Index count = std::min(rows, m - first);
          const StridedMatrix block{a.data() + first * k, count, k, k, 1};
          attn::gemm_blocked(block, packed, c.data() + first * n, n, 2);
          attn::gemm_blocked(block, packed_t, c_t.data() + first * n, n, 1);
        }
        CHECK(same_bits(c, want));
        CHECK(same_bits(c_t, want));
      }
    }
  }
}

TEST_CASE("a product prepared for blocks of rows keeps the whole product's kernel and bits") {
  using attn::MatmulKernel;
  const Matrix q = random_matrix(300, 64, 51), k = random_matrix(280, 64, 52);
  const Matrix v = random_matrix(280, 48, 53);
  for (MatmulKernel kernel :
       {MatmulKernel::kAuto, MatmulKernel::kReference, MatmulKernel::kBlocked}) {
    CAPTURE(static_cast<int>(kernel));
    const Matrix omega = attn::omega_scores(q, k, 2, kernel);
    const attn::RowBlockProduct keys(k, /*transposed=*/true, q.rows(), kernel);
    const attn::RowBlockProduct values(v, /*transposed=*/false, q.rows(), kernel);
    // auto decides by the whole product (300 x 64 by 64 x 280 is over 2^20), not by a block's.
    CHECK(keys.kernel() == attn::matmul_kernel_for(kernel, 300, 280, 64));
    Matrix blocks(300, 280), z(300, 48);
    for (Eigen::Index first = 0; first < 300; first += 7) {
      const Eigen::Index count = std::min<Eigen::Index>(7, 300 - first);
      blocks.middleRows(first, count) = keys.rows(q, first, count, 2);
      z.middleRows(first, count) = values.rows(omega, first, count, 1);
    }
    CHECK(same_bits(blocks, omega));
    CHECK(same_bits(z, attn::context_vectors(omega, v, 1, kernel)));
  }
}

TEST_CASE("parallel loops run every index once, in the ranges they promise, call after call") {
  // parallel_for: at most `threads` contiguous ranges [n·p / parts, n·(p + 1) / parts);
  // parallel_chunks: chunks of `grain`, the last shorter. Whichever thread runs a range, each
  // index is run once; many calls in a row reuse the pool's threads.
  for (const int threads : {1, 2, 3, 8}) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1000}}) {
      for (int call = 0; call < 200; ++call) {
        std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
        std::mutex m;
        std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
        attn::parallel_for(n, threads, 1e9, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) ++seen[static_cast<std::size_t>(i)];
          const std::lock_guard<std::mutex> lock(m);
          ranges.emplace_back(b, e);
        });
        for (const auto& s : seen) REQUIRE(s.load() == 1);
        const std::int64_t parts = std::min<std::int64_t>(n, threads);
        REQUIRE(static_cast<std::int64_t>(ranges.size()) == parts);
        for (const auto& [b, e] : ranges) {
          bool found = false;
          for (std::int64_t p = 0; p < parts; ++p) {
            found = found || (b == n * p / parts && e == n * (p + 1) / parts);
          }
          REQUIRE(found);
        }
        const std::int64_t grain = 1 + call % 13;
        std::vector<std::atomic<int>> chunked(static_cast<std::size_t>(n));
        std::atomic<bool> bad_chunk{false};  // no assertion off the test's thread
        attn::parallel_chunks(n, grain, threads, 1e9, [&](std::int64_t b, std::int64_t e) {
          if (b % grain != 0 || (e - b != grain && e != n)) bad_chunk = true;
          for (std::int64_t i = b; i < e; ++i) ++chunked[static_cast<std::size_t>(i)];
        });
        REQUIRE_FALSE(bad_chunk.load());
        for (const auto& s : chunked) REQUIRE(s.load() == 1);
      }
    }
  }
}

TEST_CASE("on two threads, each thread runs contiguous chunks: its share's front, another's end") {
  // Share 0, the calling thread's, is chunks [0, 32); share 1 is [32, 64). A thread runs its own
  // share from the front and then takes from the end of the other's, so the chunks each thread
  // runs are at most two contiguous runs, however the threads are scheduled (chunks handed out
  // in turn would interleave). Each chunk takes a while, so that both threads take part.
  for (int call = 0; call < 20; ++call) {
    std::mutex m;
    std::map<std::thread::id, std::vector<std::int64_t>> ran;
    attn::parallel_chunks(64, 1, 2, 1e9, [&](std::int64_t b, std::int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      const std::lock_guard<std::mutex> lock(m);
      ran[std::this_thread::get_id()].push_back(b);
    });
    std::vector<int> seen(64);
    for (auto& [id, chunks] : ran) {
      std::sort(chunks.begin(), chunks.end());
      int runs = 1;
      for (std::size_t i = 1; i < chunks.size(); ++i) runs += chunks[i] != chunks[i - 1] + 1;
      CHECK(runs <= 2);
      for (const std::int64_t c : chunks) ++seen[static_cast<std::size_t>(c)];
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == 64);
  }
}

TEST_CASE("an exception in a parallel loop reaches the caller, on whichever thread it was thrown") {
  for (int call = 0; call < 100; ++call) {
    const std::int64_t bad = call % 8;  // the chunk that throws: any thread may run it
    CHECK_THROWS_AS(attn::parallel_chunks(8, 1, 2, 1e9,
                                          [&](std::int64_t b, std::int64_t) {
                                            if (b == bad) throw std::runtime_error("chunk");
                                          }),
                    std::runtime_error);
    CHECK_THROWS_AS(attn::parallel_for(2, 2, 1e9,
                                       [&](std::int64_t b, std::int64_t) {
                                         if (b == call % 2) throw std::runtime_error("range");
                                       }),
                    std::runtime_error);
  }
  // The pool still works after them.
  std::atomic<int> sum{0};
  attn::parallel_chunks(100, 7, 2, 1e9,
                        [&](std::int64_t b, std::int64_t e) { sum += static_cast<int>(e - b); });
  CHECK(sum.load() == 100);
}

TEST_CASE("the pool's first worker starts on another CPU than the thread that made it") {
  // Linux may start a new thread on its creator's CPU and move it only milliseconds later; the
  // pool moves its worker to another allowed CPU at once, then allows it any again.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  if (CPU_COUNT(&allowed) < 2 || attn::pool_threads() > 1) {
    MESSAGE("skipped: needs two allowed CPUs and a pool with no worker yet");
    return;
  }
  const int here = sched_getcpu();
  std::atomic<int> worker_cpu{-1}, caller_cpu{-1};
  attn::parallel_for(2, 2, 1e9, [&](std::int64_t begin, std::int64_t) {
    if (begin == 0) caller_cpu = sched_getcpu();
    if (attn::pool_thread() != 0) {
      worker_cpu = sched_getcpu();
      return;
    }
    // The caller's share waits for the worker (10 s at most), so that the worker takes a share.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (worker_cpu.load() < 0 && std::chrono::steady_clock::now() < until) attn::spin_pause();
  });
  REQUIRE(worker_cpu.load() >= 0);
  if (caller_cpu.load() != here) {
    MESSAGE("skipped: the calling thread moved to another CPU during the loop");
    return;
  }
  // Where the worker was as it started: afterwards the system may move it anywhere it is
  // allowed (back beside the caller, when another process keeps the other CPU busy).
  const int started = attn::pool_start_cpu(1);
  CHECK(started >= 0);
  CHECK(started != here);
  CHECK(CPU_ISSET(started, &allowed));
  CHECK(CPU_ISSET(worker_cpu.load(), &allowed));
  CHECK(attn::pool_start_cpu(0) == -1);
  CHECK(attn::pool_start_cpu(attn::pool_threads()) == -1);
  // Afterwards the worker may run on any allowed CPU: a loop's chunks still all run.
  std::atomic<int> sum{0};
  attn::parallel_chunks(64, 1, 2, 1e9,
                        [&](std::int64_t b, std::int64_t e) { sum += static_cast<int>(e - b); });
  CHECK(sum.load() == 64);
}
