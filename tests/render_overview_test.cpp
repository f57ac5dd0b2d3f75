#include "attn/render_overview.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/text_width.hpp"

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The widest line's display columns.
std::size_t widest(const std::string& text) {
  std::size_t most = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    most = std::max(most, attn::display_width(std::string_view(text).substr(start, end - start)));
    start = end + 1;
  }
  return most;
}

std::string overview(const attn::TraceConfig& c, std::size_t width = 80) {
  return attn::render_overview(attn::outline_trace(c), width);
}

// Variants of the walkthrough, one per seam the overview draws.
std::vector<attn::TraceConfig> variants() {
  std::vector<attn::TraceConfig> configs(8);
  configs[1].causal = true;
  configs[2].softmax_steps = true;
  configs[3].sentences = {"Life is short, eat dessert first", "a b c"};  // padded: masked
  configs[3].heads = 2;
  configs[4].cross = "the cat sat";
  configs[5].heads = 2;
  configs[5].multihead = attn::MultiheadForm::kSplit;
  configs[5].d_kq = configs[5].d_v = 4;
  configs[5].init = attn::WeightInit::kLinear;
  configs[6].causal = true;
  configs[6].softmax_steps = true;
  configs[6].heads = 3;
  configs[7].x = attn::GivenMatrix{attn::Matrix::Ones(5, 3), "x.npy", {}};
  return configs;
}

}  // namespace

TEST_CASE("the overview of the walkthrough: the header, then each matrix and its shape") {
  const std::string out = overview({});
  CHECK(
      out.starts_with("sentence: 'Life is short, eat dessert first'\n"
                      "settings: seed 123, vocab-size 50000, d-in 3, d-kq 2, d-v 4, "
                      "torch-kernel avx2\n"
                      "tokens: 1 sentence of 6 tokens, 6 distinct words\n"));
  CHECK(has(out, "\n  ids [6]\n  → X [6×3] "));
  CHECK(has(out, "\n  → Q [6×2], K [6×2], V [6×4] "));
  CHECK(has(out, "\n    with W_q [3×2], W_k [3×2], W_v [3×4] "));
  CHECK(has(out, "\n  → ω [6×6] "));
  CHECK(has(out, "\n  → ω/√d_k [6×6] "));
  CHECK(has(out, "\n  → A [6×6] "));
  CHECK(has(out, "\n  → Z [6×4] "));
  CHECK(has(out, "context_vectors\n"));
  CHECK(has(out,
            "\nnothing computed; the whole trace: 11 steps, 222 values (888 bytes of float32)\n"));
  CHECK(!has(out, "heads"));
  CHECK(!has(out, "mask"));
}

TEST_CASE("the overview draws each variant's steps: heads, causal, cross, split, a batch") {
  const std::vector<attn::TraceConfig> c = variants();
  const std::string causal = overview(c[1]);
  CHECK(has(causal, "\n  → masked ω [6×6] "));
  CHECK(has(causal, "\n    with M [6×6] "));
  CHECK(has(causal, "\n    the other way: A' [6×6] "));
  CHECK(has(causal, "\n      → A''/Σ [6×6] "));
  const std::string steps = overview(c[2]);
  CHECK(has(steps, "\n  → m [6×1] "));
  CHECK(has(steps, "\n  → e [6×6] "));
  CHECK(has(steps, "\n    check: ΣA [6×2] "));
  const std::string batch = overview(c[3]);
  CHECK(has(batch, "\npipeline of each sentence (2, padded to 6 tokens), from the token ids to"));
  CHECK(has(batch, "\n  2 heads, each:\n  │ → Q [6×2], K [6×2], V [6×4] "));
  CHECK(has(batch, "\n  │   with M [6×6] "));
  CHECK(has(batch, "\n  → Z [6×8] "));
  const std::string cross = overview(c[4]);
  CHECK(has(cross, "\n  ids [6], ids₂ [3]\n  → X [6×3], X₂ [3×3] "));
  CHECK(has(cross, "\n  → Q [6×2], K [3×2], V [3×4] "));
  CHECK(has(cross, "\n  → ω [6×3] "));
  const std::string split = overview(c[5]);
  CHECK(has(split, "\n  → Q [6×4], K [6×4], V [6×4] "));
  CHECK(has(split, "\n    with W_q [4×3], W_k [4×3], W_v [4×3] "));  // nn.Linear's layout
  CHECK(has(split, "\n  2 heads, each on its 2 of the 4 columns of Q, K and V:\n  │ → ω [6×6] "));
  CHECK(has(split, "\n  │ → Z [6×2] "));
  CHECK(has(split, "\n  → out [6×4] "));
  CHECK(has(split, "\n    with W_o [4×4], b_o [1×4] "));
  const std::string x = overview(c[7]);
  CHECK(x.starts_with("input: X from x.npy, 5 tokens of width 3\n"));
  CHECK(has(x, "\n  X [5×3] "));
  CHECK(!has(x, "ids ["));
}

TEST_CASE("the overview draws the backward pass of every variant") {
  // Causal (its other way back), rotary embeddings, shared K/V heads, a step of descent.
  attn::TraceConfig split;
  split.backward = true;
  split.causal = true;
  split.rope = true;
  split.heads = 2;
  split.kv_heads = 1;
  split.multihead = attn::MultiheadForm::kSplit;
  split.d_kq = split.d_v = 4;
  split.learning_rate = 0.01;
  const std::string out = overview(split);
  // Too wide for the id column: each id goes under its line, in that column.
  CHECK(has(out, "\n  │   the other way back: dL/dA'' [6×6]\n"));
  CHECK(has(out, "\n  │ → dL/dQ' [6×2], dL/dK' [6×2]\n"));
  CHECK(has(out, "\n  → Σ_h dL/dK [6×2], dL/dK [6×2], Σ_h dL/dV [6×2]\n"));
  CHECK(has(out, "\n  → L after [1×1] "));
  attn::TraceConfig wrapper = split;
  wrapper.multihead = attn::MultiheadForm::kWrapper;
  wrapper.kv_heads = 0;
  wrapper.d_kq = 2;
  wrapper.decode = true;
  wrapper.online_softmax = 2;
  CHECK(has(overview(wrapper), " dL/dQ' [6×2], dL/dK' [6×2] "));
}

TEST_CASE("the overview's outline has run_trace's tokens, and its plan run_trace's steps") {
  for (const attn::TraceConfig& c : variants()) {
    const attn::Trace outline = attn::outline_trace(c);
    const attn::Trace run = attn::run_trace(c);
    CHECK(outline.steps.empty());
    CHECK(outline.vocabulary.size() == run.vocabulary.size());
    CHECK(outline.pad_id == run.pad_id);
    REQUIRE(outline.inputs.size() == run.inputs.size());
    for (std::size_t b = 0; b < run.inputs.size(); ++b) {
      CHECK(outline.inputs[b].words == run.inputs[b].words);
      CHECK(outline.inputs[b].ids == run.inputs[b].ids);
      CHECK(outline.inputs[b].length == run.inputs[b].length);
    }
    CHECK(outline.cross.has_value() == run.cross.has_value());
    if (run.cross) CHECK(outline.cross->ids == run.cross->ids);
    // The plan the overview draws is what run_trace recorded, step by step.
    const auto t_q = static_cast<std::int64_t>(outline.inputs[0].words.size());
    const std::int64_t t_k =
        outline.cross ? static_cast<std::int64_t>(outline.cross->words.size()) : t_q;
    const std::vector<attn::PlannedStep> plan =
        attn::plan_steps(outline.config, t_q, t_k, static_cast<std::int64_t>(outline.inputs.size()),
                         outline.pad_id.has_value());
    REQUIRE(plan.size() == run.steps.size());
    for (std::size_t i = 0; i < plan.size(); ++i) {
      CHECK(plan[i].kind == run.steps[i].kind);
      CHECK(plan[i].rows == run.steps[i].values.rows());
      CHECK(plan[i].cols == run.steps[i].values.cols());
    }
    // The overview of the computed trace is the overview of the outline.
    CHECK(attn::render_overview(run) == attn::render_overview(outline));
  }
}

TEST_CASE("every line of the overview fits the width, whatever the sentence") {
  std::string long_sentence;
  for (int i = 0; i < 1000; ++i) long_sentence += fmt::format("word{} ", i);
  attn::TraceConfig big;
  big.sentences = {long_sentence};
  big.vocab_size = 100000;
  big.d_in = big.d_kq = big.d_v = 8192;
  big.heads = 64;
  big.causal = true;
  big.softmax_steps = true;
  const std::string out = overview(big);
  CHECK(widest(out) <= 80);
  CHECK(has(out, "(1000 words, shortened)"));
  // What the text trace would need, as the run estimates it, against the limit (wrapped).
  CHECK(has(out, "the text trace would need about"));
  CHECK(has(out, "more than the memory"));
  CHECK(has(out, "of 4.0 GiB"));
  attn::TraceConfig wide_words;  // words wider than a line, and wide (CJK) characters
  wide_words.sentences = {
      std::string(200, 'a') + " 我爱你我爱你我爱你我爱你我爱你我爱你我爱你我爱你我爱你", "b c"};
  for (std::size_t width : std::initializer_list<std::size_t>{40, 60, 80, 120}) {
    for (const attn::TraceConfig& c : variants()) CHECK(widest(overview(c, width)) <= width);
    CHECK(widest(overview(big, width)) <= width);
    CHECK(widest(overview(wide_words, width)) <= width);
  }
  CHECK(has(overview(wide_words), "…"));
  CHECK_THROWS_AS(overview({}, 39), attn::Error);
}

TEST_CASE("the overview refuses what run_trace refuses, with its message") {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const attn::Error& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  std::vector<attn::TraceConfig> bad(4);
  bad[0].vocab_size = 3;
  bad[1].sentences = {"a b", "c d e"};
  bad[1].vocab_size = 5;  // 5 words and the padding token
  bad[2].sentences = {"  "};
  bad[3].heads = 3;
  bad[3].multihead = attn::MultiheadForm::kSplit;
  bad[3].d_kq = bad[3].d_v = 4;  // 4 does not split into 3 heads
  for (const attn::TraceConfig& c : bad) {
    const std::string want = message([&] { attn::run_trace(c); });
    CHECK(want != "nothing thrown");
    CHECK(message([&] { attn::outline_trace(c); }) == want);
  }
  CHECK(message([&] { attn::outline_trace(bad[0]); }) ==
        "vocabulary size 3 is smaller than the sentence's 6 distinct words: it must be at least 6");
}
