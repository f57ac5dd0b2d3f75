#include "attn/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/attention.hpp"
#include "attn/decode.hpp"
#include "attn/grouping.hpp"

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
  if (c.rope) {
    // The rows before the rotation: the head's columns of Q and K, as head_queries_keys.
    const bool split = c.multihead == MultiheadForm::kSplit;
    const std::optional<int> step_head = split ? std::nullopt : head;
    const Matrix& q0 = trace.step(StepKind::kQueries, step_head, batch).values;
    const Matrix& k0 = trace.step(StepKind::kKeys, step_head, batch).values;
    const Eigen::Index d = q.cols();
    const std::int64_t kv = c.kv_heads == 0 ? c.heads : c.kv_heads;
    const Eigen::Index from = split ? head.value_or(0) * d : 0;
    const Eigen::Index k_from = split ? kv_head_of(head.value_or(0), c.heads, kv) * d : 0;
    w.q_unrotated = q0.block(qi, from, 1, d);
    w.k_unrotated = k0.block(kj, k_from, 1, d);
  }
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

DecodedToken decoded_token(const Trace& trace, std::optional<int> head, std::optional<int> batch,
                           Eigen::Index qi) {
  auto step = [&](StepKind kind) {
    return &trace.step(fmt::format("{}_t{}", step_info(kind).id, qi + 1), head, batch);
  };
  DecodedToken d;
  d.query = step(StepKind::kDecodeQuery);
  d.key = step(StepKind::kDecodeKey);
  d.value = step(StepKind::kDecodeValue);
  d.key_cache = step(StepKind::kKeyCache);
  d.value_cache = step(StepKind::kValueCache);
  d.scores = step(StepKind::kDecodeScores);
  d.weights = step(StepKind::kDecodeWeights);
  d.context = step(StepKind::kDecodeContext);
  d.first = qi + 1 - d.key_cache->values.rows();
  const Matrix& z = trace.step(StepKind::kContextVectors, head, batch).values;
  d.difference = largest_difference(d.context->values, z.row(qi));
  return d;
}

OnlineRowCheck online_row_check(const Trace& trace, std::optional<int> head,
                                std::optional<int> batch, Eigen::Index qi) {
  const Matrix& s = trace.step(StepKind::kScaledScores, head, batch).values;
  const Matrix& online = trace.step(StepKind::kOnlineContext, head, batch).values;
  const Matrix& z = trace.step(StepKind::kContextVectors, head, batch).values;
  OnlineRowCheck r;
  const Eigen::Index b = trace.config.online_softmax;
  for (Eigen::Index from = 0, tile = 0; from < s.cols(); from += b, ++tile) {
    const Eigen::Index n = std::min(b, s.cols() - from);
    if ((s.row(qi).segment(from, n).array() == -INFINITY).all()) r.skipped.push_back(tile);
  }
  r.difference = largest_difference(online.row(qi), z.row(qi));
  return r;
}

}  // namespace attn
