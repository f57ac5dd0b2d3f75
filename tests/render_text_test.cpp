#include "attn/render_text.hpp"

#include <doctest/doctest.h>

#include "attn/error.hpp"

TEST_CASE("the dictionary prints as Python's repr of a dict") {
  CHECK(attn::dictionary_repr(attn::Vocabulary({"is", "Life"})) == "{'Life': 0, 'is': 1}");
  CHECK(attn::dictionary_repr(attn::Vocabulary({"don't", "say \"hi\"", "a'b\""})) ==
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
