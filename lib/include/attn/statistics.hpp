#pragma once

// What the summary and the timings report of a trace: statistics, checksums, the attention's
// most-attended keys, and each step's time and rate. Computed here; the renderers only format.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

// The statistics of one matrix: of its finite values the min, max and mean (their count 0: all
// nan), how many are not finite, and the XXH3-64 checksum of its float32 bits.
struct MatrixStatistics {
  double min = 0, max = 0, mean = 0;
  std::int64_t finite = 0, nonfinite = 0;
  std::uint64_t checksum = 0;
};
// Rows on up to `threads` threads, added in row order: the same numbers for any count, and for
// the vectorised and the plain code.
MatrixStatistics matrix_statistics(const Matrix& m, int threads = 1);

// Whether all n floats are finite (none inf or nan), on the widest vectors the CPU runs.
bool all_finite(const float* v, std::size_t n);

// XXH3-64 (seed 0) of the little-endian bytes of the float32 values, row-major: Python's
// xxhash.xxh3_64_hexdigest(t.numpy().astype('<f4').tobytes()) of the same tensor.
std::uint64_t xxh3_64(const Matrix& m);

// What an attention_weights step says at a glance: the largest |Σ_j A_ij − 1| of its rows that
// attend to a key (not a row whose every key is masked: nan, or 0 by the masked-rows rule), and
// for the first queries their three most-attended keys (ties: the earlier key), among the keys
// of nonzero weight: a masked key is never listed.
struct AttentionGlance {
  double largest_residual = 0;
  struct Query {
    Eigen::Index row = 0;
    bool masked = false;  // a row that masks every key (nan, or every weight 0): no top keys
    std::vector<std::pair<Eigen::Index, float>> top;  // (key column, weight), largest first, > 0
  };
  std::vector<Query> queries;
};
AttentionGlance attention_glance(const Matrix& weights, std::int64_t queries, int threads = 1);

// The queries whose most-attended keys the summary lists.
inline constexpr std::int64_t kSummaryQueries = 5;

// What a step computed rows at a time keeps of its values instead of them (Step::digest): the
// same numbers that matrix_statistics and, for attention weights, attention_glance give of the
// whole matrix.
struct StepDigest {
  Eigen::Index rows = 0, cols = 0;
  MatrixStatistics statistics;
  std::optional<AttentionGlance> glance;  // for attention_weights
};

// Digests a matrix given a block of rows at a time, top to bottom.
class RowDigester {
 public:
  // `glance_queries`: the first queries whose most-attended keys are kept; none without a glance.
  explicit RowDigester(std::optional<std::int64_t> glance_queries = std::nullopt);
  ~RowDigester();
  RowDigester(RowDigester&&) noexcept;
  // The next rows; the same number of columns each time. Rows on up to `threads` threads. True
  // when every value of these rows is finite (their statistics count the finite ones).
  bool add(const Matrix& rows, int threads = 1);
  StepDigest finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Each step's wall time and, for a matrix product, its rate; then the totals.
struct StepTiming {
  const Step* step;
  double seconds, gflops;  // gflops 0 when the step is no product
};
struct Timings {
  std::vector<StepTiming> steps;
  double product_seconds = 0, product_gflops = 0, step_seconds = 0;
};
Timings step_timings(const Trace& trace);

}  // namespace attn
