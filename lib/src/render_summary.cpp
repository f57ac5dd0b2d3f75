#include "attn/render_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "attn/attention.hpp"
#include "attn/gemm.hpp"
#include "attn/parallel.hpp"
#include "attn/simd.hpp"
#include "render_common.hpp"

namespace attn {

using namespace render_detail;

std::uint64_t xxh3_64(const Matrix& m) {
  static_assert(std::endian::native == std::endian::little,
                "the checksum is of little-endian bytes");
  return XXH3_64bits(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
}

namespace {

// " h2 s1": the step's head and sentence, 1-based.
std::string where(const Step& s) {
  std::string w;
  if (s.head) w += fmt::format(" h{}", *s.head + 1);
  if (s.batch) w += fmt::format(" s{}", *s.batch + 1);
  return w;
}

std::string g(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("-"); }

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

// The whole matrix: rows on up to `threads` threads, combined in row order.
Stats matrix_stats(const Matrix& m, int threads) {
  std::vector<Stats> rows(static_cast<std::size_t>(m.rows()));
  parallel_for(m.rows(), threads, static_cast<double>(m.size()),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) {
                   rows[static_cast<std::size_t>(i)] = row_stats(&m(i, 0), m.cols());
                 }
               });
  Stats st;
  for (const Stats& r : rows) {
    st.lo = std::min(st.lo, r.lo), st.hi = std::max(st.hi, r.hi);
    st.sum += r.sum, st.finite += r.finite;
  }
  return st;
}

}  // namespace

std::string summary_head(const Trace& trace) {
  std::string out;
  append_preamble(out, trace, /*brief=*/true);
  out += fmt::format("\n{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {}\n", "step", "shape", "min",
                     "max", "mean", "nonfinite", "xxh3_64");
  return out;
}

std::string summary_step_line(const Step& s, int threads) {
  const Stats st = matrix_stats(s.values, threads);
  return fmt::format("{:<28} {:>12} {:>12} {:>12} {:>12} {:>8}  {:016x}\n", s.id + where(s),
                     fmt::format("[{}, {}]", s.values.rows(), s.values.cols()), g(st.lo), g(st.hi),
                     st.finite ? g(st.sum / static_cast<double>(st.finite)) : std::string("-"),
                     s.values.size() - st.finite, xxh3_64(s.values));
}

std::string summary_attention(const Step& s, std::int64_t queries, int threads) {
  if (s.id != "attention_weights") return {};
  std::string out;
  const Matrix sums = row_sums(s.values, threads);
  double residual = 0.0;
  for (Eigen::Index i = 0; i < sums.rows(); ++i) {
    if (std::isfinite(sums(i, 0))) residual = std::max(residual, std::fabs(sums(i, 0) - 1.0));
  }
  out += fmt::format("\nattention_weights{}: largest |row sum − 1| = {:.1e}\n", where(s), residual);
  const Eigen::Index n = std::min<Eigen::Index>(queries, s.values.rows());
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!s.values.row(i).allFinite()) {
      out += fmt::format("  query {} {} masks every key\n", i + 1,
                         python_str_repr(s.row_labels.at(static_cast<std::size_t>(i))));
      continue;
    }
    std::vector<Eigen::Index> order(static_cast<std::size_t>(s.values.cols()));
    std::iota(order.begin(), order.end(), 0);
    const auto top = std::min<std::size_t>(3, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                      [&](Eigen::Index a, Eigen::Index b) {
                        const float x = s.values(i, a), y = s.values(i, b);  // finite
                        return x > y || (x == y && a < b);
                      });
    std::vector<std::string> best;
    for (std::size_t k = 0; k < top; ++k) {
      const Eigen::Index j = order[k];
      best.push_back(fmt::format("{} {:.4f}",
                                 python_str_repr(s.col_labels.at(static_cast<std::size_t>(j))),
                                 s.values(i, j)));
    }
    out += fmt::format("  query {} {} attends most to {}\n", i + 1,
                       python_str_repr(s.row_labels.at(static_cast<std::size_t>(i))),
                       join(best, ", "));
  }
  return out;
}

namespace {

// The line without its trailing spaces, and a newline.
std::string trimmed(std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

std::string gflops(double multiply_adds, double seconds) {
  return fmt::format("{:.1f}", 2.0 * multiply_adds / seconds / 1e9);
}

}  // namespace

std::string render_timings(const Trace& trace, double total_seconds, double output_seconds) {
  const TraceConfig& c = trace.config;
  std::string out = fmt::format(
      "attn-trace: timings: {} thread{}, matmul {}, blocked kernel code {}\n{:<28} {:>14} {:>10} "
      "{}\n",
      c.threads, c.threads == 1 ? "" : "s", matmul_name(c.matmul), gemm_isa_name(), "step", "shape",
      "ms", "GFLOP/s");
  double steps = 0.0, product_seconds = 0.0, multiply_adds = 0.0;
  for (const Step& s : trace.steps) {
    std::string rate;
    if (s.multiply_adds > 0.0 && s.seconds > 0.0) {
      rate = gflops(s.multiply_adds, s.seconds);
      product_seconds += s.seconds, multiply_adds += s.multiply_adds;
    }
    const std::string shape =
        s.shape.size() >= 2 ? fmt::format("[{}, {}]", s.shape[s.shape.size() - 2], s.shape.back())
                            : fmt::format("[{}]", s.shape.empty() ? 0 : s.shape.back());
    out += trimmed(fmt::format("{:<28} {:>14} {:>10.3f} {:>9}", s.id + where(s), shape,
                               1e3 * s.seconds, rate));
    steps += s.seconds;
  }
  out += trimmed(
      fmt::format("{:<28} {:>14} {:>10.3f} {:>9}", "matrix products", "", 1e3 * product_seconds,
                  product_seconds > 0.0 ? gflops(multiply_adds, product_seconds) : std::string()));
  for (const auto& [label, seconds] :
       {std::pair{"all steps", steps}, {"output", output_seconds}, {"total", total_seconds}}) {
    out += fmt::format("{:<28} {:>14} {:>10.3f}\n", label, "", 1e3 * seconds);
  }
  return out;
}

std::string render_summary(const Trace& trace, std::int64_t queries, int threads) {
  std::string out = summary_head(trace);
  for (const Step& s : trace.steps) out += summary_step_line(s, threads);
  for (const Step& s : trace.steps) out += summary_attention(s, queries, threads);
  return out;
}

}  // namespace attn
