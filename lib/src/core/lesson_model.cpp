// A GPT-2 checkpoint's steps: the token and position embeddings, the stream entering the layer
// traced and its ln_1, the layer's weights cut from c_attn and c_proj, and Q, K, V with their
// biases. The heads' attention is the lesson's own (lesson_attend.cpp).

#include <fmt/format.h>

#include "attn/attention.hpp"
#include "attn/gpt2_model.hpp"
#include "lesson.hpp"

namespace attn::lesson {

Inputs embed_model(Trace& trace, Recorder& rec) {
  const TraceConfig& c = rec.config();
  const Gpt2Checkpoint& model = *c.model;
  const auto t = static_cast<std::int64_t>(trace.inputs[0].words.size());
  const Matrix positions = model.position_rows(t);  // wpe[0 … T−1]
  std::string note;
  if (trace.pad_id) {
    note = fmt::format("'{}' rows are token {}'s (GPT-2 has no padding token); the mask hides them",
                       kPadToken, *trace.pad_id);
  }
  Inputs inputs;
  const bool several = trace.inputs.size() > 1;
  for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
    const TokenizedSentence& s = trace.inputs[b];
    const auto index = static_cast<int>(b);
    const Matrix& tokens =
        rec.add(StepKind::kTokenEmbeddings, "wte[ids]", {"T", "d_model"}, model.token_rows(s.ids),
                index, std::nullopt, {.rows = s.words, .note = note});
    const Matrix& at = rec.add(StepKind::kPositionEmbeddings, fmt::format("wpe[0 … {}]", t - 1),
                               {"T", "d_model"}, positions, index, std::nullopt, {.rows = s.words});
    // Two finite rows can sum past float32's range: refused here, not as the queries' nan.
    inputs.x.push_back(&require_finite(
        rec.add(StepKind::kEmbeddings, "h₀ = wte[ids] + wpe[0 … T−1]", {"T", "d_model"},
                tokens + at, index, std::nullopt,
                {.rows = s.words,
                 .title = several ? "" : "the model's input: token plus position embeddings"}),
        "the input embeddings h₀ = wte[ids] + wpe"));
  }
  return inputs;
}

Weights model_weights(Recorder& rec) {
  const TraceConfig& c = rec.config();
  const Gpt2Layer layer = c.model->attention(c.layer);
  const Eigen::Index d = c.d_in;
  const std::string h = fmt::format("h.{}.attn.", c.layer);
  auto record = [&](StepKind kind, const std::string& equation, std::vector<std::string> dims,
                    Matrix values) -> const Matrix& {
    return rec.add(kind, equation, std::move(dims), std::move(values), std::nullopt, std::nullopt);
  };
  Weights w;
  HeadWeights hw;
  const char* parts[] = {"0 : d", "d : 2d", "2d : 3d"};
  const StepKind weights[] = {StepKind::kWQuery, StepKind::kWKey, StepKind::kWValue};
  const char* names[] = {"W_q", "W_k", "W_v"};
  WeightView* cut[] = {&hw.w_q, &hw.w_k, &hw.w_v};
  for (int p = 0; p < 3; ++p) {
    *cut[p] = record(weights[p], fmt::format("{} = {}c_attn.weight[:, {}]", names[p], h, parts[p]),
                     {"d_model", "d_model"}, layer.c_attn_weight.middleCols(p * d, d));
  }
  const StepKind biases[] = {StepKind::kBQuery, StepKind::kBKey, StepKind::kBValue};
  const char* bias_names[] = {"b_q", "b_k", "b_v"};
  Matrix* bias[] = {&w.b_q, &w.b_k, &w.b_v};
  for (int p = 0; p < 3; ++p) {
    *bias[p] = record(biases[p], fmt::format("{} = {}c_attn.bias[{}]", bias_names[p], h, parts[p]),
                      {"d_model"}, layer.c_attn_bias.middleCols(p * d, d));
  }
  w.heads.push_back(std::move(hw));
  w.w_o = record(StepKind::kWOut, fmt::format("W_o = {}c_proj.weight", h), {"d_model", "d_model"},
                 layer.attn_proj_weight);
  w.b_o = record(StepKind::kBOut, fmt::format("b_o = {}c_proj.bias", h), {"d_model"},
                 layer.attn_proj_bias);
  return w;
}

std::vector<const Matrix*> enter_layer(Recorder& rec, const std::vector<const Matrix*>& h0,
                                       const std::vector<TokenizedSentence>& inputs) {
  const TraceConfig& c = rec.config();
  const Gpt2Checkpoint& model = *c.model;
  std::vector<Matrix> h;
  for (const Matrix* x : h0) h.push_back(*x);
  for (std::int64_t l = 0; l < c.layer; ++l) {
    const Gpt2Layer block = model.layer(l);  // a block's weights are tens of MB: read once
    for (Matrix& stream : h)
      stream = gpt2_block(stream, block, model.config(), l,
                          {.torch = c.kernel, .matmul = c.matmul, .threads = c.threads});
  }
  const Gpt2Layer norm = model.ln_1(c.layer);
  const std::string stream = c.layer > 0 ? fmt::format("h_{}", c.layer) : "h₀";
  std::string note = fmt::format(
      "after {} whole block{}: each adds attn(ln_1(h)) and then mlp(ln_2(h)) ({}) to the stream",
      c.layer, c.layer > 1 ? "s" : "", activation_name(model.config().activation));
  if (model.config().activation == Gpt2Activation::kGeluNew && c.kernel == TorchKernel::kAvx2 &&
      !sleef_runs()) {
    // PyTorch's AVX2 kernels run SLEEF's AVX2 tanh, which cannot run here.
    note += fmt::format("; not PyTorch's AVX2 bits: {}, so gelu_new's tanh is the C library's",
                        sleef_missing());
  }
  std::vector<const Matrix*> x;
  for (std::size_t b = 0; b < h.size(); ++b) {
    const int item = static_cast<int>(b);
    const std::vector<std::string>& words = inputs[b].words;
    if (c.layer > 0) {
      rec.add(StepKind::kResidualStream,
              c.layer == 1 ? "h_1 = block_0(h₀)"
                           : fmt::format("h_{} = block_{}(… block_0(h₀))", c.layer, c.layer - 1),
              {"T", "d_model"}, require_finite(h[b], "the residual stream"), item, std::nullopt,
              {.rows = words,
               .note = note,
               .title = fmt::format("the residual stream entering layer {}", c.layer)});
    }
    x.push_back(&rec.add(
        StepKind::kLayerNorm, fmt::format("X = h.{}.ln_1({})", c.layer, stream), {"T", "d_model"},
        layer_norm(h[b], norm.ln_1_weight, norm.ln_1_bias, model.config().layer_norm_epsilon,
                   fmt::format("h.{}.ln_1", c.layer), c.kernel),
        item, std::nullopt, {.rows = words}));
  }
  return x;
}

Qkv model_project(Recorder& rec, const Item& item, const Weights& w) {
  const TraceConfig& c = rec.config();
  auto one = [&](StepKind kind, const char* out, const Matrix& weight, const Matrix& bias,
                 const char* names, const char* what) {
    Matrix m = addmm(bias, item.x, weight, c.threads, c.matmul);  // c_attn's Conv1D, cut
    const Matrix& recorded = require_finite(
        rec.add(kind, fmt::format("{} = X {}", out, names), {"T", "d_model"}, std::move(m),
                item.index, std::nullopt, {.rows = item.queries.words}),
        what);
    rec.mark_product(item.x.rows(), weight.cols(), item.x.cols());
    return &recorded;
  };
  const HeadWeights& hw = w.heads[0];
  return {one(StepKind::kQueries, "Q", hw.w_q, w.b_q, "W_q + b_q", "the queries Q"),
          one(StepKind::kKeys, "K", hw.w_k, w.b_k, "W_k + b_k", "the keys K"),
          one(StepKind::kValues, "V", hw.w_v, w.b_v, "W_v + b_v", "the values V")};
}

}  // namespace attn::lesson
