#include "attn/statistics.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
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
// The end of a row's finite path on 8 lanes: the lanes' min and max, the values from j on (fewer
// than 8), and the eight partial sums added in order. False if a value is not finite: one of
// those from j on, or one before j, which made its lane's partial sum inf or nan (a partial sum
// of finite floats in double cannot overflow, and a sum that is inf or nan stays so).
bool finish_row_stats(const float* v, Eigen::Index j, Eigen::Index n, const float (&l8)[8],
                      const float (&h8)[8], double (&part)[8], Stats& st) {
  for (const double p : part) {
    if (!std::isfinite(p)) return false;
  }
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

// row_stats's finite path on 8 lanes: the same min, max and eight partial sums (lane j % 8).
// No value is checked in the loop: a value that is not finite shows in its lane's partial sum.
// Returns false, having changed nothing, if a value is not finite.
__attribute__((target("avx2"))) bool finite_row_stats_avx2(const float* v, Eigen::Index n,
                                                           Stats& st) {
  __m256 lo = _mm256_set1_ps(v[0]), hi = lo;
  __m256d part0 = _mm256_setzero_pd(), part1 = _mm256_setzero_pd();  // lanes 0-3, 4-7
  Eigen::Index j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(v + j);
    lo = _mm256_min_ps(lo, x), hi = _mm256_max_ps(hi, x);
    part0 = _mm256_add_pd(part0, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    part1 = _mm256_add_pd(part1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  alignas(32) float l8[8], h8[8];
  alignas(32) double part[8];
  _mm256_store_ps(l8, lo), _mm256_store_ps(h8, hi);
  _mm256_store_pd(part, part0), _mm256_store_pd(part + 4, part1);
  Stats out;
  if (!finish_row_stats(v, j, n, l8, h8, part, out)) return false;
  st = out;
  return true;
}

// Values 0-7 (kHalf 0) or 8-15 (kHalf 1) of x.
template <int kHalf>
__attribute__((target("avx512f"), always_inline)) inline __m256 half_of(__m512 x) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(x), kHalf));
}

// The same on AVX-512, 16 values of each row a step: their min and max on 16 lanes, and each
// half added in turn to the row's eight partial sums in one register (values j .. j + 7, then
// j + 8 .. j + 15: lane j % 8's order), for kRows rows `ld` floats apart at once: each row's sums
// are chains of additions in order, which one row's loop waits on, and four rows' chains side by
// side keep the adder busy. Returns false, having changed nothing, if a value is not finite.
template <int kRows>
__attribute__((target("avx512f"))) bool finite_rows_stats_avx512(const float* v, Eigen::Index ld,
                                                                 Eigen::Index n, Stats* st) {
  __m512 lo[kRows], hi[kRows];
  __m512d part[kRows];  // lanes 0-7
  for (int r = 0; r < kRows; ++r) {
    lo[r] = hi[r] = _mm512_set1_ps(v[r * ld]);
    part[r] = _mm512_setzero_pd();
  }
  Eigen::Index j = 0;
  for (; j + 16 <= n; j += 16) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      // The masked forms, with every lane: GCC 12 warns of the plain ones' undefined inputs.
      const __m512 x = _mm512_loadu_ps(v + r * ld + j);
      lo[r] = _mm512_maskz_min_ps(0xffff, lo[r], x), hi[r] = _mm512_maskz_max_ps(0xffff, hi[r], x);
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<0>(x)));
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<1>(x)));
    }
  }
  if (j + 8 <= n) {
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_maskz_loadu_ps(0x00ff, v + r * ld + j);  // values j .. j + 7
      lo[r] = _mm512_mask_min_ps(lo[r], 0x00ff, lo[r], x);
      hi[r] = _mm512_mask_max_ps(hi[r], 0x00ff, hi[r], x);
      part[r] = _mm512_add_pd(part[r], _mm512_maskz_cvtps_pd(0xff, half_of<0>(x)));
    }
    j += 8;
  }
  Stats out[kRows];
  for (int r = 0; r < kRows; ++r) {
    alignas(64) float l16[16], h16[16];
    alignas(64) double p8[8];
    _mm512_store_ps(l16, lo[r]), _mm512_store_ps(h16, hi[r]);
    _mm512_store_pd(p8, part[r]);
    float l8[8], h8[8];
    for (int l = 0; l < 8; ++l) {
      l8[l] = std::min(l16[l], l16[l + 8]), h8[l] = std::max(h16[l], h16[l + 8]);
    }
    if (!finish_row_stats(v + r * ld, j, n, l8, h8, p8, out[r])) return false;
  }
  for (int r = 0; r < kRows; ++r) st[r] = out[r];
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
  // Four rows at a time where the AVX-512 path can take them all (eight rows at a time spilled
  // registers and took half as long again; on AVX2 two, three or four rows at a time measured the
  // same as one), else one at a time.
#if defined(__x86_64__)
  const bool fours = m.cols() > 0 && use_avx512();
#endif
  const auto stats_of = [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; i += 4) {
      const Eigen::Index group_end = std::min(end, i + 4);
#if defined(__x86_64__)
      if (fours && group_end - i == 4 &&
          finite_rows_stats_avx512<4>(&m(i, 0), m.cols(), m.cols(),
                                      &rows[static_cast<std::size_t>(i)])) {
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
        while (hashed.load(std::memory_order_acquire) != p) spin_pause();
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

// A value is finite unless its exponent bits are all ones, and then (and only then) adding 1 to
// the exponent carries into the sign bit: integer and, add and or, with no branch per value.
bool all_finite_plain(const float* v, std::size_t n) {
  std::uint32_t carried = 0;
  for (std::size_t i = 0; i < n; ++i) {
    carried |= (std::bit_cast<std::uint32_t>(v[i]) & 0x7f800000u) + 0x00800000u;
  }
  return (carried & 0x80000000u) == 0;
}

#if defined(__x86_64__)
// The same, 64 floats a step in four independent chains, then the rest one at a time.
__attribute__((target("avx512f"))) bool all_finite_avx512(const float* v, std::size_t n) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), one = _mm512_set1_epi32(0x00800000);
  __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      const __m512i x = _mm512_loadu_si512(v + i + 16 * k);
      acc[k] = _mm512_or_si512(acc[k], _mm512_add_epi32(_mm512_and_si512(x, exponent), one));
    }
  }
  const __m512i all =
      _mm512_or_si512(_mm512_or_si512(acc[0], acc[1]), _mm512_or_si512(acc[2], acc[3]));
  if (_mm512_test_epi32_mask(all, _mm512_set1_epi32(INT32_MIN)) != 0) return false;
  return all_finite_plain(v + i, n - i);
}

__attribute__((target("avx2"))) bool all_finite_avx2(const float* v, std::size_t n) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000), one = _mm256_set1_epi32(0x00800000);
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      const __m256i x = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(v + i + 8 * static_cast<unsigned>(k)));
      acc[k] = _mm256_or_si256(acc[k], _mm256_add_epi32(_mm256_and_si256(x, exponent), one));
    }
  }
  const __m256i all =
      _mm256_or_si256(_mm256_or_si256(acc[0], acc[1]), _mm256_or_si256(acc[2], acc[3]));
  if (_mm256_movemask_ps(_mm256_castsi256_ps(all)) != 0) return false;
  return all_finite_plain(v + i, n - i);
}
#endif

}  // namespace

bool all_finite(const float* v, std::size_t n) {
#if defined(__x86_64__)
  if (use_avx512()) return all_finite_avx512(v, n);
  if (use_avx2()) return all_finite_avx2(v, n);
#endif
  return all_finite_plain(v, n);
}

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
