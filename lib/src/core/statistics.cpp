#include "attn/statistics.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>
#include <numeric>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "attn/attention.hpp"
#include "attn/parallel.hpp"
#include "attn/simd.hpp"
#include "hash_wide.hpp"

namespace attn {

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

// The finite values' min, max and sum, and their count.
struct Stats {
  double lo = INFINITY, hi = -INFINITY, sum = 0.0;
  std::int64_t finite = 0;
};

#if defined(__x86_64__)
// row_stats's finite path on 8 lanes: the same min, max and eight partial sums (lane j % 8).
// Returns false, having done nothing, if a value is not finite.
__attribute__((target("avx2"))) bool finite_row_stats_avx2(const float* v, Eigen::Index n,
                                                           Stats& st) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(FLT_MAX);
  __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  __m256 lo = _mm256_set1_ps(v[0]), hi = lo;
  __m256d part0 = _mm256_setzero_pd(), part1 = _mm256_setzero_pd();  // lanes 0-3, 4-7
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(v + j);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(x, abs_mask), big, _CMP_LE_OQ));
    lo = _mm256_min_ps(lo, x), hi = _mm256_max_ps(hi, x);
    part0 = _mm256_add_pd(part0, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    part1 = _mm256_add_pd(part1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  if (_mm256_movemask_ps(ok) != 0xff) return false;
  alignas(32) float l8[8], h8[8];
  alignas(32) double part[8];
  _mm256_store_ps(l8, lo), _mm256_store_ps(h8, hi);
  _mm256_store_pd(part, part0), _mm256_store_pd(part + 4, part1);
  float lo_f = l8[0], hi_f = h8[0];
  for (int l = 1; l < 8; ++l) lo_f = std::min(lo_f, l8[l]), hi_f = std::max(hi_f, h8[l]);
  for (int l = 0; j < n; ++j, ++l) {
    if (!(std::fabs(v[j]) <= FLT_MAX)) return false;
    lo_f = std::min(lo_f, v[j]), hi_f = std::max(hi_f, v[j]);
    part[l] += static_cast<double>(v[j]);
  }
  st.lo = static_cast<double>(lo_f) + 0.0, st.hi = static_cast<double>(hi_f) + 0.0;  // −0 → 0
  st.finite = n;
  for (double p : part) st.sum += p;
  return true;
}
#endif

// One row. When every value is finite: the min, the max, and the sum as eight partial sums
// (lane j % 8) added at the end, so that the vectorised path gives the same numbers; otherwise
// the plain loop over the finite values.
Stats row_stats(const float* v, Eigen::Index n) {
  Stats st;
#if defined(__x86_64__)
  if (n > 0 && use_avx2()) {
    if (finite_row_stats_avx2(v, n, st)) return st;
    st = Stats{};
  }
#endif
  bool all_finite = true;
  for (Eigen::Index j = 0; j < n; ++j) all_finite = all_finite && std::fabs(v[j]) <= FLT_MAX;
  if (all_finite && n > 0) {
    float lo = v[0], hi = v[0];
    double part[8] = {};
    Eigen::Index j = 0;
    for (; j + 8 <= n; j += 8) {
      for (int l = 0; l < 8; ++l) {
        lo = v[j + l] < lo ? v[j + l] : lo;
        hi = v[j + l] > hi ? v[j + l] : hi;
        part[l] += static_cast<double>(v[j + l]);
      }
    }
    for (int l = 0; j < n; ++j, ++l) {
      lo = v[j] < lo ? v[j] : lo;
      hi = v[j] > hi ? v[j] : hi;
      part[l] += static_cast<double>(v[j]);
    }
    st.lo = static_cast<double>(lo) + 0.0, st.hi = static_cast<double>(hi) + 0.0;  // −0 → 0
    st.finite = n;
    for (double p : part) st.sum += p;
    return st;
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!std::isfinite(v[j])) continue;
    st.lo = std::min(st.lo, static_cast<double>(v[j]));
    st.hi = std::max(st.hi, static_cast<double>(v[j]));
    st.sum += static_cast<double>(v[j]), ++st.finite;
  }
  return st;
}

// Adds the rows of m to st, rows on up to `threads` threads, combined in row order, and runs
// `hash` (the checksum of the same values) meanwhile: the hash is the first of the loop's chunks
// and the rows' ranges the others, taken by whichever thread is free, so that with two threads
// one hashes while the other takes the statistics, instead of both taking the statistics and
// then one thread hashing alone (docs/design.md, Performance).
void add_rows(const Matrix& m, int threads, Stats& st, const std::function<void()>& hash) {
  std::vector<Stats> rows(static_cast<std::size_t>(m.rows()));
  const std::int64_t ranges = std::min<std::int64_t>(m.rows(), 8 * std::max(threads, 1));
  parallel_chunks(1 + ranges, 1, threads, static_cast<double>(m.size()),
                  [&](std::int64_t begin, std::int64_t end) {
                    for (std::int64_t c = begin; c < end; ++c) {
                      if (c == 0) {
                        hash();
                        continue;
                      }
                      for (std::int64_t i = m.rows() * (c - 1) / ranges; i < m.rows() * c / ranges;
                           ++i) {
                        rows[static_cast<std::size_t>(i)] = row_stats(&m(i, 0), m.cols());
                      }
                    }
                  });
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
  std::uint64_t checksum = 0;
  add_rows(m, threads, st, [&] { checksum = xxh3_64(m); });
  return statistics_of(st, m.size(), checksum);
}

namespace {

// The glance's part of one block of rows, the first of which is row `first` of the whole.
void glance_rows(const Matrix& weights, Eigen::Index first, std::int64_t queries, int threads,
                 AttentionGlance& g) {
  const Matrix sums = row_sums(weights, threads);
  for (Eigen::Index i = 0; i < sums.rows(); ++i) {
    if (std::isfinite(sums(i, 0))) {
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

void RowDigester::add(const Matrix& rows, int threads) {
  State& st = *state_;
  add_rows(rows, threads, st.stats, [&] {
    hash_update(st.hash, rows.data(), static_cast<std::size_t>(rows.size()) * sizeof(float));
  });
  if (st.glance_queries) glance_rows(rows, st.rows, *st.glance_queries, threads, st.glance);
  st.rows += rows.rows();
  st.cols = rows.cols();
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
