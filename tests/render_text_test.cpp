#include "attn/render_text.hpp"

#include <doctest/doctest.h>

#include "attn/error.hpp"
#include "support/hostile_labels.hpp"

TEST_CASE("the dictionary prints as Python's repr of a dict") {
  CHECK(attn::dictionary_repr(attn::build_vocabulary({"is", "Life"})) == "{'Life': 0, 'is': 1}");
  CHECK(attn::dictionary_repr(attn::build_vocabulary({"don't", "say \"hi\"", "a'b\""})) ==
        "{'a\\'b\"': 0, \"don't\": 1, 'say \"hi\"': 2}");
}

TEST_CASE("rows carry their token as an aligned label, in any script") {
  attn::TraceConfig c;
  c.sentences = {"我 爱 you"};
  const std::string text = attn::render_text(attn::run_trace(c), {});
  CHECK(text.find("tensor([[-0.1925,  0.0384, -1.1418],   # 我\n") == std::string::npos);
  CHECK(text.find("   # 我\n") != std::string::npos);
  CHECK(text.find("])   # you\n") != std::string::npos);
}

TEST_CASE("the query path: the walkthrough's ω₂₄ and the context vector") {
  const attn::Trace trace = attn::run_trace({});
  CHECK(attn::default_path_key(trace) == 5);
  const std::string path = attn::render_query_path(trace, 2, 5, {});
  CHECK(path.find("0.5667 × 0.1920 + 1.8269 × 0.6467 = 1.2903") != std::string::npos);
  CHECK(path.find("tensor([0.5313, 1.3607, 0.7891, 1.3110])") != std::string::npos);
}

TEST_CASE("query and key outside 1..T are refused") {
  const attn::Trace trace = attn::run_trace({});
  CHECK_THROWS_WITH_AS(attn::render_query_path(trace, 7, 1, {}),
                       "query 7 is out of range: the sentence has 6 tokens, allowed 1..6",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::render_query_path(trace, 1, 0, {}),
                       "key 0 is out of range: the sentence has 6 tokens, allowed 1..6",
                       attn::Error);
}

TEST_CASE("labels from a file are shown escaped, never as terminal commands") {
  const attn::Trace trace = attn::test::hostile_trace();
  const std::vector<std::string> shown = attn::test::hostile_labels_escaped();
  const std::string text = attn::render_text(trace, {});
  CHECK_FALSE(attn::test::has_raw_control(text));
  // Each row's label after its values, and the keys' list.
  CHECK(text.find("   # " + shown[0] + "\n") != std::string::npos);
  CHECK(text.find("   # " + shown[1] + "\n") != std::string::npos);
  CHECK(text.find("   # " + shown[2] + "\n") != std::string::npos);
  CHECK(text.find("rows: queries; columns: keys " + shown[0] + ", " + shown[1] + ", " + shown[2] +
                  "\n") != std::string::npos);
  // The query path names its token as Python's repr would.
  const std::string path = attn::render_query_path(trace, 1, 3, {});
  CHECK_FALSE(attn::test::has_raw_control(path));
  CHECK(path.find("the path of token 1, '" + shown[0] + "'\n") != std::string::npos);
}

TEST_CASE("a sentence's white space other than spaces is shown escaped, as Python's repr does") {
  attn::TraceConfig c;
  c.sentences = {
      "a\tb\rc\x0b"
      "d\x1c"
      "e\xc2\x85"
      "f\\g"};
  const std::string text = attn::render_text(attn::run_trace(c), {});
  CHECK_FALSE(attn::test::has_raw_control(text));
  CHECK(text.find("sentence: 'a\\tb\\rc\\x0bd\\x1ce\\x85f\\\\g'\n") != std::string::npos);
}
