// The plan of a run: every step it will record, in order, with its shape. run_trace records
// exactly these (the Recorder checks each step against it), and the memory estimate
// (memory_estimate.cpp) adds them up.

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "attn/decode.hpp"
#include "attn/online_softmax.hpp"
#include "attn/trace.hpp"
#include "modern.hpp"

namespace attn {

namespace {

// Appends the steps of one head's incremental decoding: per token, its q, k and v, the cache,
// and its row of scores, weights and context; then the check.
void plan_decode(std::vector<PlannedStep>& plan, std::int64_t t_q, std::int64_t d_k,
                 std::int64_t d_v, std::int64_t window) {
  for (std::int64_t t = 0; t < t_q; ++t) {
    const std::int64_t n = t + 1 - cache_start(t, window);
    plan.push_back({StepKind::kDecodeQuery, 1, d_k});
    plan.push_back({StepKind::kDecodeKey, 1, d_k});
    plan.push_back({StepKind::kDecodeValue, 1, d_v});
    plan.push_back({StepKind::kKeyCache, n, d_k});
    plan.push_back({StepKind::kValueCache, n, d_v});
    plan.push_back({StepKind::kDecodeScores, 1, n});
    plan.push_back({StepKind::kDecodeWeights, 1, n});
    plan.push_back({StepKind::kDecodeContext, 1, d_v});
  }
  plan.push_back({StepKind::kDecodeCheck, t_q, d_v});
}

// Appends the steps of one head's attention: ω, the mask, the scaling, the softmax, the causal
// lesson and the context vectors.
void plan_head(std::vector<PlannedStep>& plan, const TraceConfig& c, std::int64_t t_q,
               std::int64_t t_k, std::int64_t d_v, bool masked) {
  const std::int64_t d_k = c.multihead == MultiheadForm::kSplit ? c.d_kq / c.heads : c.d_kq;
  auto square = [&](StepKind kind) { plan.push_back({kind, t_q, t_k}); };
  plan.push_back({StepKind::kOmega, t_q, t_k, d_k});
  if (masked) {
    square(StepKind::kMask);
    square(StepKind::kMaskedOmega);
  }
  square(StepKind::kScaledScores);
  if (c.softmax_steps) {  // a row's maximum and its sum: t_k values each
    plan.push_back({StepKind::kRowMax, t_q, 1, t_k});
    square(StepKind::kExponentials);
    plan.push_back({StepKind::kRowSums, t_q, 1, t_k});
  }
  square(StepKind::kAttentionWeights);
  if (c.softmax_steps) plan.push_back({StepKind::kWeightSums, t_q, 2});
  if (c.causal && !c.model) {
    square(StepKind::kUnmaskedWeights);
    square(StepKind::kZeroedWeights);
    square(StepKind::kRenormalizedWeights);
  }
  plan.push_back({StepKind::kContextVectors, t_q, d_v, t_k});
  if (c.decode) plan_decode(plan, t_q, d_k, d_v, c.window);
  if (c.online_softmax > 0) {
    const std::int64_t tiles = tile_count(t_k, c.online_softmax);
    for (StepKind kind : {StepKind::kOnlineMax, StepKind::kOnlineRescale, StepKind::kOnlineSum}) {
      plan.push_back({kind, t_q, tiles});
    }
    plan.push_back({StepKind::kOnlineOutput, t_q, d_v});
    plan.push_back({StepKind::kOnlineContext, t_q, d_v});
  }
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

// The weights' layout: (d_in, d_out) for rand, (d_out, d_in) otherwise.
// `inner_q` and `inner_kv`: the inner dimension of the products that compute them (the
// weights' gradients: the tokens of X and of X₂), or 0.
void plan_weight_like(std::vector<PlannedStep>& plan, const TraceConfig& c, StepKind q, StepKind k,
                      StepKind v, std::int64_t inner_q = 0, std::int64_t inner_kv = 0) {
  const bool rand = c.init == WeightInit::kRand;
  auto weight = [&](StepKind kind, std::int64_t d_out, std::int64_t inner) {
    plan.push_back({kind, rand ? c.d_in : d_out, rand ? d_out : c.d_in, inner});
  };
  const bool split = c.multihead == MultiheadForm::kSplit;
  for (std::int64_t h = 0; h < (split ? 1 : c.heads); ++h) {
    weight(q, c.d_kq, inner_q);
    weight(k, split ? kv_width(c) : c.d_kq, inner_kv);
    weight(v, split ? kv_width(c) : c.d_v, inner_kv);
  }
}

// The backward pass (lesson_backward.cpp): the loss, the output's gradient (split form), each
// head's chain back to Q and K, the weights', X's and the embedding table's gradients, then the
// step of gradient descent.
void plan_backward(std::vector<PlannedStep>& plan, const TraceConfig& c, std::int64_t t_q,
                   std::int64_t t_k, std::int64_t batch, std::int64_t tokens) {
  const bool split = c.multihead == MultiheadForm::kSplit;
  const bool linear = c.init == WeightInit::kLinear;
  const std::int64_t d_head_v = split ? c.d_v / c.heads : c.d_v;
  const std::int64_t d_head_k = split ? c.d_kq / c.heads : c.d_kq;
  const bool grouped = split && c.kv_heads != c.heads;
  plan.push_back({StepKind::kLoss, 1, 1});
  if (split) {
    for (std::int64_t b = 0; b < batch; ++b) plan.push_back({StepKind::kGradOutput, t_q, c.d_v});
    plan.push_back({StepKind::kGradWOut, c.d_kq, c.d_kq, t_q * batch});
    if (linear) plan.push_back({StepKind::kGradBOut, 1, c.d_kq});
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    // The split form's dL/dZ is dL/d out through W_o: a product.
    const std::int64_t through_w_o = split ? c.d_kq : 0;
    if (c.heads > 1) {
      plan.push_back({StepKind::kGradContextConcat, t_q, c.heads * d_head_v, through_w_o});
    }
    for (std::int64_t h = 0; h < c.heads; ++h) {
      plan.push_back({StepKind::kGradContext, t_q, d_head_v, c.heads == 1 ? through_w_o : 0});
      plan.push_back({StepKind::kGradAttentionWeights, t_q, t_k, d_head_v});
      plan.push_back({StepKind::kGradValues, t_k, d_head_v, t_q});
      plan.push_back({StepKind::kGradRowDot, t_q, 1, t_k});  // a row's dot product: t_k values
      plan.push_back({StepKind::kGradScaledScores, t_q, t_k});
      plan.push_back({StepKind::kGradOmega, t_q, t_k});
      if (c.causal) {  // the causal lesson's other way, backwards
        for (StepKind kind : {StepKind::kGradZeroedWeights, StepKind::kGradUnmaskedWeights,
                              StepKind::kGradOmegaOtherWay}) {
          plan.push_back({kind, t_q, t_k});
        }
      }
      // With rotary embeddings the products are dL/dQ' and dL/dK', turned back after.
      if (c.rope) {
        plan.push_back({StepKind::kGradRotatedQueries, t_q, d_head_k, t_k});
        plan.push_back({StepKind::kGradRotatedKeys, t_k, d_head_k, t_q});
      }
      plan.push_back({StepKind::kGradQueries, t_q, d_head_k, c.rope ? 0 : t_k});
      if (!(c.rope && grouped)) {
        plan.push_back({StepKind::kGradKeys, t_k, d_head_k, c.rope ? 0 : t_q});
      }
    }
    if (grouped) {  // each K/V head's gradient: its query heads' summed
      plan.push_back({StepKind::kGradSharedKeys, t_k, kv_width(c)});
      if (c.rope) plan.push_back({StepKind::kGradKeys, t_k, kv_width(c)});
      plan.push_back({StepKind::kGradSharedValues, t_k, kv_width(c)});
    }
  }
  // The weights' gradients: Xᵀ dL/dQ over every item's tokens (X₂'s for K and V).
  plan_weight_like(plan, c, StepKind::kGradWQuery, StepKind::kGradWKey, StepKind::kGradWValue,
                   t_q * batch, c.cross ? t_k : t_q * batch);
  // X's gradient: a product through each weight, summed (X₂'s: through W_k and W_v).
  const std::int64_t heads = split ? 1 : c.heads;
  const std::int64_t through_q = heads * c.d_kq,
                     through_kv = heads * (split ? 2 * kv_width(c) : c.d_kq + c.d_v);
  for (std::int64_t b = 0; b < batch; ++b) {
    plan.push_back(
        {StepKind::kGradEmbeddings, t_q, c.d_in, c.cross ? through_q : through_q + through_kv});
  }
  if (c.cross) plan.push_back({StepKind::kGradEmbeddings2, t_k, c.d_in, through_kv});
  if (tokens > 0) plan.push_back({StepKind::kGradEmbeddingTable, tokens, c.d_in});
  if (!c.learning_rate) return;
  plan_weight_like(plan, c, StepKind::kStepWQuery, StepKind::kStepWKey, StepKind::kStepWValue);
  if (split) {
    plan.push_back({StepKind::kStepWOut, c.d_kq, c.d_kq});
    if (linear) plan.push_back({StepKind::kStepBOut, 1, c.d_kq});
  }
  // The loss after the step: the forward pass again, each item's products.
  const std::int64_t forward =
      split ? t_q * c.d_kq * c.d_in + 2 * t_k * kv_width(c) * c.d_in +
                  c.heads * 2 * t_q * t_k * d_head_k + t_q * c.d_kq * c.d_kq
            : c.heads * (t_q * c.d_kq * c.d_in + t_k * (c.d_kq + c.d_v) * c.d_in +
                         t_q * t_k * (c.d_kq + c.d_v));
  plan.push_back({StepKind::kLossAfterStep, 1, 1, batch * forward});
}

// A model's trace (lesson_model.cpp): per item its embeddings, then its stream entering the layer
// and ln_1; the layer's weights; then per item Q, K and V, each traced head (its Q, K and V
// first), the heads side by side and c_proj.
std::vector<PlannedStep> plan_model(const TraceConfig& c, std::int64_t t, std::int64_t batch,
                                    bool padded) {
  const std::int64_t d = c.d_in;
  std::vector<PlannedStep> plan;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (StepKind kind :
         {StepKind::kTokenEmbeddings, StepKind::kPositionEmbeddings, StepKind::kEmbeddings}) {
      plan.push_back({kind, t, d});
    }
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    if (c.layer > 0) plan.push_back({StepKind::kResidualStream, t, d});
    plan.push_back({StepKind::kLayerNorm, t, d});
  }
  for (StepKind kind : {StepKind::kWQuery, StepKind::kWKey, StepKind::kWValue}) {
    plan.push_back({kind, d, d});
  }
  for (StepKind kind : {StepKind::kBQuery, StepKind::kBKey, StepKind::kBValue}) {
    plan.push_back({kind, 1, d});
  }
  plan.push_back({StepKind::kWOut, d, d});
  plan.push_back({StepKind::kBOut, 1, d});
  for (std::int64_t b = 0; b < batch; ++b) {
    for (StepKind kind : {StepKind::kQueries, StepKind::kKeys, StepKind::kValues}) {
      plan.push_back({kind, t, d, d});
    }
    for (std::int64_t h = 0; h < c.heads; ++h) {
      if (!head_traced(c, h)) continue;
      for (const StepKind kind :
           {StepKind::kHeadQueries, StepKind::kHeadKeys, StepKind::kHeadValues}) {
        plan.push_back({kind, t, d / c.heads});
      }
      plan_head(plan, c, t, t, d / c.heads, true);
    }
    if (c.heads > 1) plan.push_back({StepKind::kContextConcat, t, d});
    plan.push_back({StepKind::kOutput, t, d, d});
  }
  (void)padded;  // the mask is recorded either way: GPT-2 is causal
  return plan;
}

}  // namespace

std::vector<PlannedStep> plan_steps(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k,
                                    std::int64_t batch, bool padded, std::int64_t tokens) {
  const bool split = c.multihead == MultiheadForm::kSplit;
  const bool masked = c.causal || padded;
  if (c.model) return plan_model(c, t_q, batch, padded);
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
      plan.push_back({StepKind::kQueries, t_q, c.d_kq, c.d_in});
      const std::int64_t d_k = split ? kv_width(c) : c.d_kq;
      plan.push_back({StepKind::kKeys, t_k, d_k, c.d_in});
      plan.push_back({StepKind::kValues, t_k, split ? kv_width(c) : c.d_v, c.d_in});
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
    if (split) plan.push_back({StepKind::kOutput, t_q, c.d_v, c.d_v});
  }
  if (c.backward) plan_backward(plan, c, t_q, t_k, batch, tokens);
  return plan;
}

std::vector<std::string> each_planned_id(const std::vector<PlannedStep>& plan) {
  std::vector<std::string> ids;
  ids.reserve(plan.size());
  std::int64_t token = 0;  // the decoded token of the steps from a kDecodeQuery on (from 1)
  for (const PlannedStep& s : plan) {
    std::string id(step_info(s.kind).id);
    if (s.kind >= StepKind::kDecodeQuery && s.kind <= StepKind::kDecodeContext) {
      if (s.kind == StepKind::kDecodeQuery) ++token;
      id += "_t" + std::to_string(token);
    } else {
      token = 0;
    }
    ids.push_back(std::move(id));
  }
  return ids;
}

std::vector<std::string> planned_step_ids(const std::vector<PlannedStep>& plan) {
  std::vector<std::string> ids;
  std::unordered_set<std::string> seen;
  for (std::string& id : each_planned_id(plan)) {
    if (seen.insert(id).second) ids.push_back(std::move(id));
  }
  return ids;
}

std::size_t planned_stop(const std::vector<PlannedStep>& plan, std::span<const std::string> shown) {
  if (shown.empty()) return plan.size();
  const std::vector<std::string> ids = each_planned_id(plan);
  std::size_t stop = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (step_id_chosen(shown, ids[i])) stop = i + 1;
  }
  return stop == 0 ? plan.size() : stop;  // an id the plan lacks is refused by the caller
}

double planned_work(const PlannedStep& step) {
  // A value's cost in multiply-adds, about: on one thread at T = 2048 (d_in 1024, d_kq = d_v =
  // 128, `--timings`, Zen 5), a scaled score cost as much as 6 of ω's multiply-adds, a weight 45
  // and a value of the embedding, drawn from the normal distribution, 150. A product's values
  // are checked and summarised as the others are.
  constexpr double kValue = 16.0, kDrawn = 150.0;
  const bool drawn = step.kind == StepKind::kEmbeddings || step.kind == StepKind::kEmbeddings2;
  const double per_value = static_cast<double>(step.inner) + (drawn ? kDrawn : kValue);
  return static_cast<double>(step.rows) * static_cast<double>(step.cols) * per_value;
}

bool rows_at_a_time(const TraceConfig& c) {
  return c.release_scores && c.stream_scores && !c.decode && c.online_softmax == 0;
}

std::int64_t score_block_rows(const TraceConfig& c, std::int64_t t_k) {
  if (c.score_block_rows > 0) return c.score_block_rows;
  // About 1 MiB of scores per thread (up to 4), so that each thread's rows of a block stay in its
  // L2 cache from ω to Z.
  const std::int64_t per = std::clamp(c.threads, 1, 4);
  const std::int64_t rows =
      (std::int64_t{1} << 18) * per / std::max<std::int64_t>(t_k, 1) / 48 * 48;
  return std::max<std::int64_t>(rows, 48);
}

}  // namespace attn
