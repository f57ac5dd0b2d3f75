// The plan of a run: every step it will record, in order, with its shape. run_trace records
// exactly these (the Recorder checks each step against it), and the memory estimate adds them up.

#include <stdexcept>

#include "attn/trace.hpp"
#include "modern.hpp"

namespace attn {

namespace {

// Appends the steps of one head's attention: ω, the mask, the scaling, the softmax, the causal
// lesson and the context vectors.
void plan_head(std::vector<PlannedStep>& plan, const TraceConfig& c, std::int64_t t_q,
               std::int64_t t_k, std::int64_t d_v, bool masked) {
  auto square = [&](StepKind kind) { plan.push_back({kind, t_q, t_k}); };
  square(StepKind::kOmega);
  if (masked) {
    square(StepKind::kMask);
    square(StepKind::kMaskedOmega);
  }
  square(StepKind::kScaledScores);
  if (c.softmax_steps) {
    plan.push_back({StepKind::kRowMax, t_q, 1});
    square(StepKind::kExponentials);
    plan.push_back({StepKind::kRowSums, t_q, 1});
  }
  square(StepKind::kAttentionWeights);
  if (c.softmax_steps) plan.push_back({StepKind::kWeightSums, t_q, 2});
  if (c.causal) {
    square(StepKind::kUnmaskedWeights);
    square(StepKind::kZeroedWeights);
    square(StepKind::kRenormalizedWeights);
  }
  plan.push_back({StepKind::kContextVectors, t_q, d_v});
}

// The weights, in PyTorch's creation order, in the layout the init stores them.
void plan_weights(std::vector<PlannedStep>& plan, const TraceConfig& c) {
  const bool split = c.multihead == MultiheadForm::kSplit;
  const bool rand = c.init == WeightInit::kRand;
  auto weight = [&](StepKind kind, std::int64_t d_out) {
    plan.push_back({kind, rand ? c.d_in : d_out, rand ? d_out : c.d_in});
  };
  for (std::int64_t h = 0; h < (split ? 1 : c.heads); ++h) {
    weight(StepKind::kWQuery, c.d_kq);
    weight(StepKind::kWKey, split ? kv_width(c) : c.d_kq);
    weight(StepKind::kWValue, split ? kv_width(c) : c.d_v);
  }
  if (!split) return;
  plan.push_back({StepKind::kWOut, c.d_kq, c.d_kq});
  if (c.init == WeightInit::kLinear) plan.push_back({StepKind::kBOut, 1, c.d_kq});
}

}  // namespace

std::vector<PlannedStep> plan_steps(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k,
                                    std::int64_t batch, bool padded) {
  const bool split = c.multihead == MultiheadForm::kSplit;
  const bool masked = c.causal || padded;
  std::vector<PlannedStep> plan;
  for (std::int64_t b = 0; b < batch; ++b) plan.push_back({StepKind::kEmbeddings, t_q, c.d_in});
  if (c.cross) plan.push_back({StepKind::kEmbeddings2, t_k, c.d_in});
  plan_weights(plan, c);
  if (c.rope) {
    plan.push_back({StepKind::kRopeCos, t_q, head_width(c)});
    plan.push_back({StepKind::kRopeSin, t_q, head_width(c)});
  }
  const std::int64_t d_head_v = split ? c.d_v / c.heads : c.d_v;
  for (std::int64_t b = 0; b < batch; ++b) {
    auto project = [&] {
      plan.push_back({StepKind::kQueries, t_q, c.d_kq});
      const std::int64_t d_k = split ? kv_width(c) : c.d_kq;
      plan.push_back({StepKind::kKeys, t_k, d_k});
      plan.push_back({StepKind::kValues, t_k, split ? kv_width(c) : c.d_v});
      if (c.rope) {
        plan.push_back({StepKind::kRotatedQueries, t_q, c.d_kq});
        plan.push_back({StepKind::kRotatedKeys, t_k, d_k});
      }
    };
    if (split) project();
    for (std::int64_t h = 0; h < c.heads; ++h) {
      if (!split) project();
      plan_head(plan, c, t_q, t_k, d_head_v, masked);
    }
    if (c.heads > 1) plan.push_back({StepKind::kContextConcat, t_q, c.heads * d_head_v});
    if (split) plan.push_back({StepKind::kOutput, t_q, c.d_v});
  }
  return plan;
}

double estimate_bytes(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k, std::int64_t batch,
                      bool padded) {
  double values = 0.0, squares = 0.0;
  for (const PlannedStep& s : plan_steps(c, t_q, t_k, batch, padded)) {
    const double n = static_cast<double>(s.rows) * static_cast<double>(s.cols);
    values += n;
    // The (T, T_k) steps, whose columns are keys: release_scores frees them head by head.
    if (step_info(s.kind).scores) squares += n;
  }
  if (c.release_scores) {
    // One head's (T, T_k) steps are held at a time; without the causal lesson and the
    // softmax's steps, they are computed in one matrix (and a masked run has its mask).
    const double one = static_cast<double>(t_q) * static_cast<double>(t_k);
    const bool in_place = !c.causal && !c.softmax_steps;
    const double held = in_place ? (c.causal || padded ? 2.0 : 1.0) * one
                                 : squares / static_cast<double>(batch * c.heads);
    values += held - squares;
  }
  return values * (4.0 + c.output_bytes_per_value);
}

}  // namespace attn
