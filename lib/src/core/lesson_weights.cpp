// The lesson's weights: drawn as PyTorch draws them, in its creation order, or given.

#include <fmt/format.h>

#include "attn/weights.hpp"
#include "lesson.hpp"
#include "modern.hpp"

namespace attn::lesson {

namespace {

// Records one weight: the drawn one, or the given one in its place. A given weight is still
// drawn, so that every later weight is PyTorch's. The step is handed on at once, while its values
// are in the cache.
const Matrix& record_weight(Recorder& rec, StepKind kind, const std::string& equation,
                            std::vector<std::string> dims, Matrix drawn,
                            const std::optional<GivenMatrix>& given, std::optional<int> head) {
  const Matrix* m = nullptr;
  if (!given) {
    m = &rec.add(kind, equation, std::move(dims), std::move(drawn), std::nullopt, head);
  } else {
    const std::string symbol = equation.substr(0, equation.find(' '));
    m = &rec.add(kind, fmt::format("{} = {}", symbol, given->source), std::move(dims),
                 given->values, std::nullopt, head);
  }
  rec.flush();
  return *m;
}

}  // namespace

Weights draw_weights(Recorder& rec) {
  const TraceConfig& c = rec.config();
  if (c.model) return model_weights(rec);
  TorchGenerator gen(c.seed);  // torch.manual_seed(seed)
  const bool split = c.multihead == MultiheadForm::kSplit;
  const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
  // Grouped-query heads: W_k and W_v of width kv_heads · d_head.
  const bool grouped = split && c.kv_heads != c.heads;
  const std::string kv = grouped ? "d_kv" : kq, kvv = grouped ? "d_kv" : dv;
  const std::int64_t d_k = split ? kv_width(c) : c.d_kq, d_v = split ? kv_width(c) : c.d_v;
  Weights w;
  // The wrapper form: W_q, W_k, W_v for each head in turn; the split form: one set, d_out wide.
  for (std::int64_t h = 0; h < (split ? 1 : c.heads); ++h) {
    const std::optional<int> head = split ? std::nullopt : std::optional<int>(static_cast<int>(h));
    HeadWeights hw;
    hw.w_q = record_weight(rec, StepKind::kWQuery, weight_equation(c.init, "W_q", "d_in", kq),
                           weight_dims(c.init, "d_in", kq),
                           draw_weight(gen, c.init, c.d_in, c.d_kq, c.kernel), c.w_query, head);
    hw.w_k = record_weight(rec, StepKind::kWKey, weight_equation(c.init, "W_k", "d_in", kv),
                           weight_dims(c.init, "d_in", kv),
                           draw_weight(gen, c.init, c.d_in, d_k, c.kernel), c.w_key, head);
    hw.w_v = record_weight(rec, StepKind::kWValue, weight_equation(c.init, "W_v", "d_in", kvv),
                           weight_dims(c.init, "d_in", kvv),
                           draw_weight(gen, c.init, c.d_in, d_v, c.kernel), c.w_value, head);
    w.heads.push_back(std::move(hw));
  }
  if (!split) return w;
  // The output projection: nn.Linear(d_out, d_out) with its bias, or torch.rand(d_out, d_out).
  const bool linear = c.init == WeightInit::kLinear;
  w.w_o = record_weight(
      rec, StepKind::kWOut,
      linear ? "W_o = nn.Linear(d_out, d_out).weight"
             : weight_equation(c.init, "W_o", "d_out", "d_out"),
      {"d_out", "d_out"},
      linear ? linear_weight(gen, c.d_kq, c.d_kq, c.kernel) : torch_rand(gen, c.d_kq, c.d_kq),
      c.w_out, std::nullopt);
  if (linear) {
    w.b_o =
        record_weight(rec, StepKind::kBOut, std::string(step_info(StepKind::kBOut).equation),
                      {"d_out"}, linear_bias(gen, c.d_kq, c.d_kq, c.kernel), c.b_out, std::nullopt);
  }
  return w;
}

}  // namespace attn::lesson
