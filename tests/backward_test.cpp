// The backward pass against torch.autograd (data/reference/*/backward_*.json, made by
// tests/reference/make_backward_references.py), and its math's properties.

#include "attn/backward.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include "attn/names.hpp"
#include "attn/trace.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;

namespace {

// The settings of a backward reference, as a TraceConfig.
attn::TraceConfig backward_config(const attn::test::json& ref, TorchKernel kernel) {
  const attn::test::json& s = ref.at("settings");
  attn::TraceConfig c;
  if (s.contains("queries_from")) {
    c.sentences = {s.at("sentences")[0].get<std::string>()};
    c.cross = s.at("sentences")[1].get<std::string>();
  } else if (s.contains("sentences")) {
    c.sentences = s.at("sentences").get<std::vector<std::string>>();
  } else {
    c.sentences = {s.at("sentence").get<std::string>()};
  }
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  const bool d_out = s.contains("d_out");
  c.d_kq = s.at(d_out ? "d_out" : "d_kq").get<std::int64_t>();
  c.d_v = s.at(d_out ? "d_out" : "d_v").get<std::int64_t>();
  c.heads = s.at("heads").get<std::int64_t>();
  if (s.contains("multihead")) {
    c.multihead = attn::parse_multihead(s.at("multihead").get<std::string>());
  }
  std::string init = s.at("init").get<std::string>();
  std::replace(init.begin(), init.end(), '_', '-');
  c.init = attn::parse_init(init);
  c.causal = s.at("causal").get<bool>();
  if (s.contains("masked_rows")) {
    c.masked_rows = attn::parse_masked_rows(s.at("masked_rows").get<std::string>());
  }
  c.kernel = kernel;
  c.backward = true;
  c.loss = attn::parse_name<attn::Loss>("loss", s.at("loss").get<std::string>());
  if (s.contains("target")) {
    const auto rows = s.at("target").get<std::vector<std::vector<float>>>();
    Matrix t(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows[0].size()));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < rows[i].size(); ++j) {
        t(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
      }
    }
    c.target = attn::GivenMatrix{t, "target.json", {}};
  }
  if (s.contains("lr")) c.learning_rate = s.at("lr").get<double>();
  // Today's variants.
  if (s.contains("kv_heads")) c.kv_heads = s.at("kv_heads").get<std::int64_t>();
  if (s.contains("window")) c.window = s.at("window").get<std::int64_t>();
  if (s.contains("rope")) {
    c.rope = s.at("rope").get<bool>();
    c.rope_theta = s.at("rope_theta").get<double>();
    c.rope_pairs =
        attn::parse_name<attn::RopePairs>("rope pairs", s.at("rope_pairs").get<std::string>());
  }
  if (s.contains("decode")) c.decode = s.at("decode").get<bool>();
  if (s.contains("online_softmax")) c.online_softmax = s.at("online_softmax").get<std::int64_t>();
  return c;
}

std::optional<int> index_of(const attn::test::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(j.get<int>());
}

}  // namespace

TEST_CASE("every gradient equals torch.autograd's, in both kernel flavours") {
  const char* cases[] = {"article",
                         "repeated_mse",
                         "causal_fox",
                         "heads2_wrapper",
                         "heads2_split",
                         "heads2_split_causal_rand",
                         "cross",
                         "init_linear_mse",
                         "init_rand_transposed",
                         "batch_padded_zero",
                         "batch_padded_nan_causal",
                         "split_one_head_batch",
                         "bias_t20_d6_mse",
                         "bias_t20_d12_mse",
                         "bias_t20_d40_mse",
                         "bias_batch_d4_mse",
                         "long_t12",
                         "long_t20_wrapper2_mse",
                         "long_t40_split_causal_linear",
                         "window_3_fox",
                         "window_2_batch_zero_split",
                         "decode_t10",
                         "online_b3_t11_wrapper2",
                         "rope_half_t10",
                         "rope_interleaved_split_causal",
                         "rope_interleaved_wrapper2_mse",
                         "gqa_4_2_linear",
                         "mqa_4_1_rand_causal",
                         "gqa_6_3_rand_transposed_cross",
                         "split_rand_transposed_w2",
                         "split_rand_transposed_batch_mse",
                         "rand_transposed_batch_wrapper2",
                         "rand_transposed_batch_18",
                         "rand_transposed_batch_d_in1",
                         "gqa_rope_window_t12",
                         "mqa_rope_batch_online"};
  for (const TorchKernel kernel : attn::test::kKernels) {
    for (const char* name : cases) {
      const std::string file = std::string("backward_") + name + ".json";
      const attn::test::json ref = attn::test::load_reference(kernel, file);
      const std::string what = std::string(attn::kernel_name(kernel)) + " " + file;
      CAPTURE(what);
      const attn::Trace trace = attn::run_trace(backward_config(ref, kernel));
      // Every gradient the trace holds has autograd's to compare with (r, grad_row_dot, is no
      // tensor of autograd's: the softmax's backward forms it inside).
      std::set<std::string> stored;
      for (const attn::test::json& expected : ref.at("steps")) {
        stored.insert(expected.at("id").get<std::string>() + " " + expected.at("head").dump() +
                      " " + expected.at("batch").dump());
      }
      for (const attn::Step& s : trace.steps) {
        if (s.kind < attn::StepKind::kLoss || s.kind > attn::StepKind::kLossAfterStep ||
            s.kind == attn::StepKind::kGradRowDot) {
          continue;
        }
        const auto number = [](const std::optional<int>& i) {
          return i ? std::to_string(*i) : std::string("null");
        };
        CHECK_MESSAGE(stored.contains(s.id + " " + number(s.head) + " " + number(s.batch)),
                      s.id << " head " << number(s.head) << " batch " << number(s.batch)
                           << " has no reference");
      }
      for (const attn::test::json& expected : ref.at("steps")) {
        const auto id = expected.at("id").get<std::string>();
        const attn::Step& step =
            trace.step(id, index_of(expected.at("head")), index_of(expected.at("batch")));
        const std::string where = what + " " + id + " head " + expected.at("head").dump() +
                                  " batch " + expected.at("batch").dump();
        // Rotary embeddings: the tables are PyTorch's bits in both flavours (SLEEF's cos, sin
        // and pow in the AVX2 one), so every rotated step is too. A batch's weight gradients are
        // the batched product's (make_backward_references.py: batched_weight_grads).
        attn::test::check_bits(step.values, expected, where);
      }
    }
  }
}

TEST_CASE("one step of gradient descent lowers the loss for a small learning rate") {
  for (const bool split : {false, true}) {
    for (const attn::Loss loss : {attn::Loss::kSum}) {
      attn::TraceConfig c;
      c.backward = true;
      c.loss = loss;
      c.learning_rate = 1e-3;
      c.causal = split;
      if (split) {
        c.heads = 2;
        c.multihead = attn::MultiheadForm::kSplit;
        c.d_kq = c.d_v = 4;
        c.init = attn::WeightInit::kLinear;
      }
      const attn::Trace t = attn::run_trace(c);
      CHECK(t.step("loss_after_step").values(0, 0) < t.step("loss").values(0, 0));
    }
  }
}

TEST_CASE("the gradient of ω agrees with a finite difference of the loss") {
  // dL/dW_q[0, 0] against (L(W_q + h) − L(W_q − h)) / 2h, in double-checked float32.
  attn::TraceConfig c;
  c.backward = true;
  const attn::Trace base = attn::run_trace(c);
  const Matrix w = base.step("w_query").values;
  const float g = base.step("grad_w_query").values(0, 0);
  const float h = 1e-2f;
  auto loss_with = [&](float delta) {
    attn::TraceConfig d = c;
    Matrix shifted = w;
    shifted(0, 0) += delta;
    d.w_query = attn::GivenMatrix{shifted, "w", {}};
    return attn::run_trace(d).step("loss").values(0, 0);
  };
  const float numeric = (loss_with(h) - loss_with(-h)) / (2 * h);
  CHECK(numeric == doctest::Approx(g).epsilon(1e-2));
}
