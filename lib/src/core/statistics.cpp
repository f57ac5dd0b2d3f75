#include "attn/statistics.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "attn/attention.hpp"
#include "attn/parallel.hpp"
#include "attn/simd.hpp"
#include "hash_wide.hpp"
#include "statistics_kernels.hpp"

namespace attn {

#if defined(__x86_64__)
using statistics_detail::finite_rows2_stats;
using statistics_detail::finite_rows4_stats;
#endif
using statistics_detail::row_stats;
using statistics_detail::Stats;

namespace {

// XXH3 over the bytes, or added to a streaming state, on the widest vectors the paths may use:
// the same hash on every path.
std::uint64_t hash_bytes(const void* data, std::size_t bytes) {
#if defined(__x86_64__)
  if (use_avx512()) return hash_avx512::xxh3_64(data, bytes);
  if (use_avx2()) return hash_avx2::xxh3_64(data, bytes);
#endif
  return XXH3_64bits(data, bytes);
}
void hash_update(XXH3_state_t& state, const void* data, std::size_t bytes) {
#if defined(__x86_64__)
  if (use_avx512()) return hash_avx512::xxh3_update(&state, data, bytes);
  if (use_avx2()) return hash_avx2::xxh3_update(&state, data, bytes);
#endif
  (void)XXH3_64bits_update(&state, data, bytes);
}

}  // namespace

std::uint64_t xxh3_64(const Matrix& m) {
  static_assert(std::endian::native == std::endian::little,
                "the checksum is of little-endian bytes");
  return hash_bytes(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
}

namespace {

// Adds the rows of m to st, in row order, and their bytes to `hash`. On one thread, each group
// of rows of about 64 KiB is hashed right after its statistics, while it is in the L2 cache, so
// that a large matrix is read from memory once, not twice (a (1024, 1024) step out of cache:
// 0.43 ms for the two passes, 0.2 for the hash alone). On more, a block of rows of a long input's
// scores (at least 2¹⁶ values and fewer than 2²⁰) is split as the products, the scaling and the
// softmax split its rows, one contiguous share per thread: each thread takes its share's
// statistics, then hashes its share once the share before it is hashed, so that every row is read
// by the core that wrote it; read on the other core, the rows cost that core's next writes to the
// same memory (design.md, "Two cores and one block of data"). A larger matrix is split as before:
// the hash is the first of the loop's chunks and the rows' ranges the others, so that one thread
// hashes while the other takes the statistics (docs/design.md, Performance).
void add_rows(const Matrix& m, int threads, Stats& st, XXH3_state_t& hash) {
  std::vector<Stats> rows(static_cast<std::size_t>(m.rows()));
  // Four rows at a time on the AVX-512 path (eight rows at a time spilled registers and took half
  // as long again), two on the AVX2 path (four spilled), else one at a time.
#if defined(__x86_64__)
  const bool fours = m.cols() > 0 && use_avx512();
  const bool twos = m.cols() > 0 && !fours && use_avx2();
#endif
  const auto stats_of = [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; i += 4) {
      const Eigen::Index group_end = std::min(end, i + 4);
#if defined(__x86_64__)
      Stats* group = &rows[static_cast<std::size_t>(i)];
      if (fours && group_end - i == 4 && finite_rows4_stats(&m(i, 0), m.cols(), m.cols(), group)) {
        continue;
      }
      if (twos && group_end - i == 4 && finite_rows2_stats(&m(i, 0), m.cols(), m.cols(), group) &&
          finite_rows2_stats(&m(i + 2, 0), m.cols(), m.cols(), group + 2)) {
        continue;
      }
#endif
      for (Eigen::Index r = i; r < group_end; ++r) {
        rows[static_cast<std::size_t>(r)] = row_stats(&m(r, 0), m.cols());
      }
    }
  };

  const auto hash_rows = [&](Eigen::Index first, Eigen::Index end) {
    hash_update(hash, m.data() + first * m.cols(),
                static_cast<std::size_t>((end - first) * m.cols()) * sizeof(float));
  };
  constexpr Eigen::Index kSharesFrom = Eigen::Index{1} << 16, kSharesBelow = Eigen::Index{1} << 20;
  if (threads > 1 && m.rows() > 1 && m.size() >= kSharesFrom && m.size() < kSharesBelow) {
    const std::int64_t parts = std::min<std::int64_t>(m.rows(), threads);
    std::atomic<std::int64_t> hashed{0};  // shares hashed so far, in order
    // Waking the other threads is worth it here even below parallel_for's rule for small work.
    parallel_for(parts, threads, 1e9, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        const Eigen::Index first = m.rows() * p / parts, last = m.rows() * (p + 1) / parts;
        // The hash is one chain through the rows in order, so share 0 hashes first and the
        // others take their statistics while it does: the chain is never kept waiting for a
        // share's statistics. Share p waits only for shares before it, which a thread has taken
        // (parallel_for's calling thread runs share 0 first, then takes the others' in order).
        if (p > 0) stats_of(first, last);
        // After a while it yields: with more threads than CPUs, the one it waits for may need
        // the CPU it would hold (--threads 8 on 2 CPUs, T = 1,500: 0.51 s, and 0.04 s).
        for (int i = 0; hashed.load(std::memory_order_acquire) != p; ++i) {
          if (i < 4096) {
            spin_pause();
          } else {
            std::this_thread::yield();
          }
        }
        hash_rows(first, last);
        hashed.store(p + 1, std::memory_order_release);
        if (p == 0) stats_of(first, last);
      }
    });
  } else if (threads <= 1) {
    constexpr Eigen::Index kGroupFloats = 16 * 1024;  // 64 KiB
    const Eigen::Index group =
        std::max<Eigen::Index>(1, kGroupFloats / std::max<Eigen::Index>(1, m.cols()));
    for (Eigen::Index first = 0; first < m.rows(); first += group) {
      const Eigen::Index end = std::min(m.rows(), first + group);
      stats_of(first, end);
      hash_rows(first, end);
    }
  } else {
    const std::int64_t ranges = std::min<std::int64_t>(m.rows(), 8 * threads);
    parallel_chunks(1 + ranges, 1, threads, static_cast<double>(m.size()),
                    [&](std::int64_t begin, std::int64_t end) {
                      for (std::int64_t c = begin; c < end; ++c) {
                        if (c == 0) {
                          hash_rows(0, m.rows());
                        } else {
                          stats_of(m.rows() * (c - 1) / ranges, m.rows() * c / ranges);
                        }
                      }
                    });
  }
  for (const Stats& r : rows) {
    st.lo = std::min(st.lo, r.lo), st.hi = std::max(st.hi, r.hi);
    st.sum += r.sum, st.finite += r.finite;
  }
}

MatrixStatistics statistics_of(const Stats& st, std::int64_t size, std::uint64_t checksum) {
  MatrixStatistics out;
  out.min = st.lo;
  out.max = st.hi;
  out.finite = st.finite;
  out.mean = st.finite ? st.sum / static_cast<double>(st.finite) : 0.0;
  out.nonfinite = size - st.finite;
  out.checksum = checksum;
  return out;
}

}  // namespace

MatrixStatistics matrix_statistics(const Matrix& m, int threads) {
  Stats st;
  XXH3_state_t hash;
  XXH3_64bits_reset(&hash);
  add_rows(m, threads, st, hash);
  return statistics_of(st, m.size(), XXH3_64bits_digest(&hash));
}

namespace {

// The glance's part of one block of rows, the first of which is row `first` of the whole.
void glance_rows(const Matrix& weights, Eigen::Index first, std::int64_t queries, int threads,
                 AttentionGlance& g) {
  const Matrix sums = row_sums(weights, threads);
  for (Eigen::Index i = 0; i < sums.rows(); ++i) {
    if (softmax_row(sums(i, 0))) {
      g.largest_residual = std::max(g.largest_residual, std::fabs(sums(i, 0) - 1.0));
    }
  }
  for (Eigen::Index i = 0; i < weights.rows() && first + i < queries; ++i) {
    AttentionGlance::Query q;
    q.row = first + i;
    if (weights.row(i).allFinite()) {
      // Only keys the query attends to: a masked key's weight is 0, and so is no answer.
      std::vector<Eigen::Index> order;
      for (Eigen::Index j = 0; j < weights.cols(); ++j) {
        if (weights(i, j) > 0.0f) order.push_back(j);
      }
      const auto top = std::min<std::size_t>(3, order.size());
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                        order.end(), [&](Eigen::Index a, Eigen::Index b) {
                          const float x = weights(i, a), y = weights(i, b);  // finite
                          return x > y || (x == y && a < b);
                        });
      for (std::size_t k = 0; k < top; ++k) q.top.emplace_back(order[k], weights(i, order[k]));
    }
    q.masked = q.top.empty();
    g.queries.push_back(std::move(q));
  }
}

}  // namespace

AttentionGlance attention_glance(const Matrix& weights, std::int64_t queries, int threads) {
  AttentionGlance g;
  glance_rows(weights, 0, queries, threads, g);
  return g;
}

struct RowDigester::State {
  Stats stats;
  XXH3_state_t hash;
  Eigen::Index rows = 0, cols = 0;
  std::optional<std::int64_t> glance_queries;
  AttentionGlance glance;
};

RowDigester::RowDigester(std::optional<std::int64_t> glance_queries)
    : state_(std::make_unique<State>()) {
  XXH3_64bits_reset(&state_->hash);
  state_->glance_queries = glance_queries;
}
RowDigester::~RowDigester() = default;
RowDigester::RowDigester(RowDigester&&) noexcept = default;

bool RowDigester::add(const Matrix& rows, int threads) {
  State& st = *state_;
  const std::int64_t finite_before = st.stats.finite;
  add_rows(rows, threads, st.stats, st.hash);
  if (st.glance_queries) glance_rows(rows, st.rows, *st.glance_queries, threads, st.glance);
  st.rows += rows.rows();
  st.cols = rows.cols();
  return st.stats.finite - finite_before == rows.size();
}

StepDigest RowDigester::finish() const {
  const State& st = *state_;
  StepDigest d;
  d.rows = st.rows;
  d.cols = st.cols;
  d.statistics = statistics_of(st.stats, st.rows * st.cols, XXH3_64bits_digest(&st.hash));
  if (st.glance_queries) d.glance = st.glance;
  return d;
}

Timings step_timings(const Trace& trace) {
  Timings t;
  double multiply_adds = 0.0;
  for (const Step& s : trace.steps) {
    double rate = 0.0;
    if (s.multiply_adds > 0.0 && s.seconds > 0.0) {
      rate = 2.0 * s.multiply_adds / s.seconds / 1e9;
      t.product_seconds += s.seconds, multiply_adds += s.multiply_adds;
    }
    t.steps.push_back({&s, s.seconds, rate});
    t.step_seconds += s.seconds;
  }
  if (t.product_seconds > 0.0) t.product_gflops = 2.0 * multiply_adds / t.product_seconds / 1e9;
  return t;
}

}  // namespace attn
