#include "attn/explain.hpp"

#include <cmath>

#include "attn/attention.hpp"

namespace attn {

CellWorking work_out_cell(const Trace& trace, std::optional<int> head, std::optional<int> batch,
                          Eigen::Index qi, Eigen::Index kj) {
  const TraceConfig& c = trace.config;
  const auto [q, k] = trace.head_queries_keys(head, batch);
  const Matrix& omega = trace.step(StepKind::kOmega, head, batch).values;
  const Matrix& scaled = trace.step(StepKind::kScaledScores, head, batch).values;
  CellWorking w;
  w.i = qi;
  w.j = kj;
  w.q = q.row(qi);
  w.k = k.row(kj);
  w.products = w.q.cwiseProduct(w.k);  // float32 products, one rounding each
  w.omega = omega(qi, kj);
  w.root = static_cast<float>(std::sqrt(static_cast<double>(q.cols())));
  w.scaled = scaled(qi, kj);
  w.scaled_row = scaled.row(qi);
  // The row's softmax, by the same kernel as the trace's.
  const SoftmaxParts parts = softmax_parts(w.scaled_row, c.kernel, c.masked_rows);
  w.row_max = parts.row_max(0, 0);
  w.row_masked = std::isinf(w.row_max);
  for (Eigen::Index t = 0; t < w.scaled_row.cols(); ++t) {
    if (w.scaled_row(0, t) == w.row_max) {
      w.argmax = t;
      break;
    }
  }
  w.exponentials = parts.exponentials;
  w.sum = parts.row_sum(0, 0);
  w.weight = parts.weights(0, kj);
  w.trace_weight = trace.step(StepKind::kAttentionWeights, head, batch).values(qi, kj);
  return w;
}

}  // namespace attn
