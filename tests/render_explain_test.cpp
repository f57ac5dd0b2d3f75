#include "attn/render_explain.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "attn/error.hpp"
#include "support/hostile_labels.hpp"

TEST_CASE("the explained cell ends in the value the trace prints") {
  const attn::Trace trace = attn::run_trace({});
  const std::string out = attn::render_explain(trace, 2, 5, {});
  CHECK(out.find(
            "   0.5667 × 0.1920 = 0.1088\n   1.8269 × 0.6467 = 1.1815\n   sum: ω₂₅ = 1.2903\n") !=
        std::string::npos);
  CHECK(out.find("2. scaled: ω₂₅ / √2 = 1.2903 / 1.4142 = 0.9124") != std::string::npos);
  CHECK(out.find("m₂ = 2.4542 (key 2, 'is')") != std::string::npos);
  CHECK(out.find("5. their sum: Σ₂ = 1.4556") != std::string::npos);
  CHECK(out.find("A₂₅ = e₂₅ / Σ₂ = 0.2140 / 1.4556 = 0.1470") != std::string::npos);
  // Every cell: the last line's value is the trace's, printed the same way.
  const attn::Matrix& a = trace.step("attention_weights").values;
  for (int i = 1; i <= 6; ++i) {
    for (int j = 1; j <= 6; ++j) {
      const std::string e = attn::render_explain(trace, i, j, {});
      CHECK(e.find(fmt::format("attention_weights[{}, {}] = {:.4f}", i, j, a(i - 1, j - 1))) !=
            std::string::npos);
    }
  }
}

TEST_CASE("a masked cell and a fully masked row are explained, not computed") {
  attn::TraceConfig c;
  c.causal = true;
  const std::string masked = attn::render_explain(attn::run_trace(c), 2, 5, {});
  CHECK(masked.find("2. masked: key 5 may not be seen from query 2") != std::string::npos);
  CHECK(masked.find("exp(−inf) = 0   ← this cell") != std::string::npos);
  attn::TraceConfig b;
  b.sentences = {"a b", "c"};
  const std::string pad = attn::render_explain(attn::run_trace(b), 2, 1, {});
  CHECK(pad.find("3. every key of row 2 is masked: the softmax of a row of −inf gives nan") !=
        std::string::npos);
}

TEST_CASE("a cell outside the trace is refused") {
  const attn::Trace trace = attn::run_trace({});
  CHECK_THROWS_WITH_AS(attn::render_explain(trace, 0, 1, {}),
                       "query 0 is out of range: the sentence has 6 tokens, allowed 1..6",
                       attn::Error);
}

TEST_CASE("labels from a file are shown escaped, and the keys' lines line up") {
  const std::string out = attn::render_explain(attn::test::hostile_trace(), 1, 2, {});
  CHECK_FALSE(attn::test::has_raw_control(out));
  const std::vector<std::string> shown = attn::test::hostile_labels_escaped();
  CHECK(out.find("how much token 1 ('" + shown[0] + "') attends to key 2 ('" + shown[1] + "')") !=
        std::string::npos);
  // Step 4's lines: "key N 'label'" padded to one width, then exp(...).
  std::vector<std::size_t> columns;
  for (std::size_t at = 0; (at = out.find("\n   key ", at)) != std::string::npos; ++at) {
    columns.push_back(out.find("exp(", at) - at);
  }
  REQUIRE(columns.size() == 3);
  CHECK(columns[0] == columns[1]);
  CHECK(columns[1] == columns[2]);
}
