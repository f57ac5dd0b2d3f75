#include "attn/render_explain.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>

#include "attn/describe.hpp"
#include "attn/error.hpp"
#include "attn/render_explain_grad.hpp"
#include "attn/text_width.hpp"
#include "support/hostile_labels.hpp"

TEST_CASE("the explained cell ends in the value the trace prints") {
  const attn::Trace trace = attn::run_trace({});
  const std::string out = attn::render_explain(trace, 2, 5, {});
  CHECK(out.find(
            "   0.5667 × 0.1920 = 0.1088\n   1.8269 × 0.6467 = 1.1815\n   sum: ω₂,₅ = 1.2903\n") !=
        std::string::npos);
  CHECK(out.find("2. scaled: ω₂,₅ / √2 = 1.2903 / 1.4142 = 0.9124") != std::string::npos);
  CHECK(out.find("m₂ = 2.4542 (key 2, 'is')") != std::string::npos);
  CHECK(out.find("5. their sum: Σ₂ = 1.4556") != std::string::npos);
  CHECK(out.find("A₂,₅ = e₂,₅ / Σ₂ = 0.2140 / 1.4556 = 0.1470") != std::string::npos);
  // Every cell: the last line's value is the trace's, printed the same way.
  const attn::Matrix& a = trace.step("attention_weights").values;
  for (int i = 1; i <= 6; ++i) {
    for (int j = 1; j <= 6; ++j) {
      const std::string e = attn::render_explain(trace, i, j, {});
      // PyTorch's indices count from 0.
      CHECK(e.find(fmt::format("the trace's attention_weights[{}, {}] = {:.4f}", i - 1, j - 1,
                               a(i - 1, j - 1))) != std::string::npos);
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
  // The heading is wrapped at a space: read it as one line.
  std::string heading = out.substr(out.find("A₁,₂: how much"));
  heading = heading.substr(0, heading.find("\nin PyTorch"));
  std::string one_line;
  for (std::size_t k = 0; k < heading.size(); ++k) {
    if (heading.compare(k, 3, "\n  ") == 0)
      one_line += ' ', k += 2;
    else
      one_line += heading[k];
  }
  heading = one_line;
  CHECK(heading ==
        "A₁,₂: how much token 1 ('" + shown[0] + "') attends to key 2 ('" + shown[1] + "')");
  // Step 4's lines: "key N 'label'" padded to one width, then exp(...).
  std::vector<std::size_t> columns;
  for (std::size_t at = 0; (at = out.find("\n   key ", at)) != std::string::npos; ++at) {
    columns.push_back(out.find("exp(", at) - at);
  }
  REQUIRE(columns.size() == 3);
  CHECK(columns[0] == columns[1]);
  CHECK(columns[1] == columns[2]);
}

TEST_CASE("the keys' lines line up in terminal columns: wide, combining and right-to-left words") {
  attn::TraceConfig c;
  c.sentences = {
      "我们 \xF0\x9F\x98\x80 nai\xCC\x88ve x e\xCC\x81te\xCC\x81 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D"};
  c.backward = true;
  c.causal = true;
  c.decode = true;
  const attn::Trace trace = attn::run_trace(c);
  // Step 4 of --explain, --explain-grad's terms, and --decode's key cache: after each key's
  // label, what follows starts in one terminal column.
  for (const std::string& out :
       {attn::render_explain(trace, 6, 5, {}), attn::render_explain_grad(trace, 6, 5, {}),
        attn::render_explain(trace, 4, 2, {})}) {
    CAPTURE(out);
    std::map<std::size_t, std::vector<std::size_t>> columns;  // by the lines' indent
    for (std::size_t at = 0; (at = out.find("   key ", at)) != std::string::npos; ++at) {
      const std::size_t label = out.find_first_not_of("0123456789", at + 7);
      if (label == at + 7 || out.compare(label, 2, " '") != 0) continue;  // not a key's line
      const std::size_t line = out.rfind('\n', at) + 1;
      const std::size_t after = out.find_first_not_of(' ', out.find("  ", label));
      columns[at + 3 - line].push_back(attn::display_width(out.substr(line, after - line)));
    }
    REQUIRE_FALSE(columns.empty());
    for (const auto& entry : columns) {
      const std::size_t indent = entry.first;
      const std::vector<std::size_t>& of_indent = entry.second;
      CAPTURE(indent);
      CHECK(of_indent.size() >= 4);  // 6 keys; the cache of query 4: 4
      for (const std::size_t column : of_indent) CHECK(column == of_indent[0]);
    }
  }
}

TEST_CASE("one notation: a cell has a comma, PyTorch's 0-based index is shown beside it") {
  const std::string out = attn::render_explain(attn::run_trace({}), 2, 5, {});
  CHECK(out.find("A₂,₅: how much token 2 ('is') attends to key 5 ('dessert')\n"
                 "in PyTorch, which counts from 0: attention_weights[1, 4]\n") !=
        std::string::npos);
  CHECK(out.find("4. each exponential e₂,ⱼ = exp(s₂,ⱼ − m₂)") != std::string::npos);
  CHECK(out.find("A₂₅") == std::string::npos);
}

TEST_CASE("--describe: each stage of the arithmetic says what its step computes") {
  attn::TextOptions options;
  options.describe = true;
  const std::string out = attn::render_explain(attn::run_trace({}), 2, 5, options);
  for (const char* id :
       {"omega", "scaled_scores", "row_max", "exponentials", "row_sums", "attention_weights"}) {
    const std::string first_words = std::string(attn::describe_step(id)).substr(0, 20);
    CHECK_MESSAGE(out.find("   (" + first_words) != std::string::npos, id);
  }
  for (std::size_t at = 0, end; at < out.size(); at = end + 1) {
    end = out.find('\n', at);
    CHECK(attn::display_width(std::string_view(out).substr(at, end - at)) <= 80);
  }
}
