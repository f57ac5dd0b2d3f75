#include "attn/render_text.hpp"

#include <doctest/doctest.h>

#include "attn/error.hpp"
#include "attn/text_width.hpp"
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

TEST_CASE("the query path: one notation, PyTorch's index beside the token's number") {
  const std::string path = attn::render_query_path(attn::run_trace({}), 2, 5, {});
  // x⁽²⁾ counts from 1; X[1] is PyTorch's row, counted from 0.
  CHECK(path.find("the path of token 2, 'is' (row 1 in PyTorch, which counts from 0)\n") !=
        std::string::npos);
  CHECK(
      path.find("\nx⁽²⁾ = X[1]: its embedding (the walkthrough's x_2 = embedded_sentence[1])\n") !=
      std::string::npos);
  // A row of ω and one cell read differently.
  CHECK(path.find(
            "\nω₂,₅ = q⁽²⁾ · k⁽⁵⁾: the score of key 5, 'dessert'; in PyTorch\n"
            "  queries[1].dot(keys[4]) (the walkthrough's omega_24 = query_2.dot(keys[4]))\n") !=
        std::string::npos);
  CHECK(
      path.find("\nω₂ = q⁽²⁾ Kᵀ: its score for every key (the walkthrough's omega_2); columns:") !=
      std::string::npos);
  CHECK(path.find("\nA₂ = softmax(ω₂ / √d_k)") != std::string::npos);
  CHECK(path.find("z⁽²⁾ = Σⱼ A₂,ⱼ v⁽ʲ⁾") != std::string::npos);
}

TEST_CASE("the walkthrough's variable names appear only in the walkthrough's own run") {
  attn::TraceConfig other;
  other.sentences = {"Life is short, eat cake first"};
  for (const auto& [config, query] :
       {std::pair{other, std::int64_t{2}}, std::pair{attn::TraceConfig{}, std::int64_t{3}}}) {
    const std::string path = attn::render_query_path(attn::run_trace(config), query, 5, {});
    CHECK(path.find("walkthrough") == std::string::npos);
    CHECK(path.find("query_2") == std::string::npos);
    CHECK(path.find("queries[" + std::to_string(query - 1) + "].dot(keys[4])") !=
          std::string::npos);
  }
  attn::TraceConfig heads;
  heads.heads = 2;
  CHECK(attn::render_query_path(attn::run_trace(heads), 2, 5, {}).find("walkthrough") ==
        std::string::npos);
}

TEST_CASE("text, the query path and --describe stay within 80 columns, wrapped between words") {
  attn::TraceConfig c;
  std::string sentence;
  for (int i = 0; i < 40; ++i) sentence += (i ? " word" : "word") + std::to_string(i);
  c.sentences = {sentence};
  c.causal = true;
  const attn::Trace trace = attn::run_trace(c);
  attn::TextOptions options;
  options.describe = true;
  for (const std::string& out :
       {attn::render_text(trace, options), attn::render_query_path(trace, 3, 2, options)}) {
    for (std::size_t at = 0, end; at < out.size(); at = end + 1) {
      end = out.find('\n', at);
      const std::string_view line = std::string_view(out).substr(at, end - at);
      CHECK_MESSAGE(attn::display_width(line) <= 80, line);
    }
    // Every word whole: "word17" never split.
    for (int i = 0; i < 40; ++i) {
      const std::string word = "word" + std::to_string(i);
      CHECK(out.find(word) != std::string::npos);
    }
  }
  // The dictionary breaks between entries, never inside one.
  const std::string text = attn::render_text(trace, {});
  CHECK(text.find("{'word0': 0, 'word1': 1, 'word10': 2,") != std::string::npos);
  CHECK(text.find(",\n 'word") != std::string::npos);
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

TEST_CASE("a label too long for its line is broken between its words, above its row and in lists") {
  attn::TraceConfig c;
  attn::Matrix x(2, 2);  // (T, d_in)
  x << 1.0f, 2.0f, 3.0f, 4.0f;
  std::string sentence;
  for (int i = 0; i < 20; ++i) sentence += (i ? " 我word" : "我word") + std::to_string(i);
  c.x = attn::GivenMatrix{x, "x.csv", {sentence, "short"}};
  c.d_kq = c.d_v = 2;
  const std::string text = attn::render_text(attn::run_trace(c), {});
  int runs = 0;
  std::string run;  // a run of comment lines of the long label, joined by spaces
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    const std::string_view line = std::string_view(text).substr(at, end - at);
    CHECK_MESSAGE(attn::display_width(line) <= 80, line);
    const std::size_t hash = line.find("# 我word");
    if (hash != std::string_view::npos) {
      CHECK(line.substr(0, hash).find_first_not_of(' ') == std::string_view::npos);
      if (!run.empty()) run += ' ';
      run += line.substr(hash + 2);
    } else if (!run.empty()) {
      CHECK(run == sentence);
      ++runs, run.clear();
    }
  }
  CHECK(runs >= 8);  // above its row in each step labelled by tokens
  CHECK(text.find("# short\n") != std::string::npos);
  // In the keys' list, between the label's words, with the list's indent.
  CHECK(text.find("columns: keys 我word0 我word1") != std::string::npos);
  CHECK(text.find("\n    我word") != std::string::npos);
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
  // The keys' list, broken between labels to stay within 80 columns.
  std::string joined = text;
  for (std::size_t at; (at = joined.find(",\n    ")) != std::string::npos;) {
    joined.replace(at, 6, ", ");
  }
  CHECK(joined.find("rows: queries; columns: keys " + shown[0] + ", " + shown[1] + ", " + shown[2] +
                    "\n") != std::string::npos);
  // The query path names its token as Python's repr would.
  const std::string path = attn::render_query_path(trace, 1, 3, {});
  CHECK_FALSE(attn::test::has_raw_control(path));
  CHECK(path.find("the path of token 1, '" + shown[0] + "' (row 0 in PyTorch") !=
        std::string::npos);
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

TEST_CASE("a sentence's Unicode white space and invisible characters are shown as repr does") {
  // Python 3.11: repr() of the sentence, and of its dictionary's words; U+180E and U+FEFF are not
  // white space (the word keeps them), and not printable either.
  attn::TraceConfig c;
  c.sentences = {"a\u00a0b\u2028c\u2029d\u3000e\u1680f\u202fg\u205fh\u2000\u200ai\u180ej\ufeff"};
  const std::string text = attn::render_text(attn::run_trace(c), {});
  CHECK(text.starts_with(
      "sentence:\n  'a\\xa0b\\u2028c\\u2029d\\u3000e\\u1680f\\u202fg\\u205fh\\u2000"
      "\\u200ai\\u180ej\\ufeff'\n"));
  CHECK(text.find("'h': 7,\n 'i\\u180ej\\ufeff': 8}\n") != std::string::npos);
}
