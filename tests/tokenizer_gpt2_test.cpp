#include "attn/tokenizer_gpt2.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/trace.hpp"

using nlohmann::json;
using Ids = std::vector<std::int64_t>;

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path);
  return json::parse(in);
}

const json& reference() {
  static const json j = read_json(ATTN_REFERENCE_DIR "/gpt2_tokens.json");
  return j;
}

bool in_ranges(const json& ranges, char32_t cp) {
  for (const json& r : ranges) {
    if (cp >= r[0].get<char32_t>() && cp <= r[1].get<char32_t>()) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("GPT-2's ids of a few hundred strings equal encoder.py's") {
  const json& cases = reference().at("cases");
  REQUIRE(cases.size() >= 300);
  for (const json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    CAPTURE(attn::escape_controls(text));
    CHECK(attn::gpt2_encode(text) == c.at("ids").get<Ids>());
  }
}

TEST_CASE("GPT-2's ids of texts with long pieces equal encoder.py's, and their counts") {
  // Pieces of 65 to 3000 bytes take the heap's BPE, not the rounds that encoder.py runs.
  const json cases = read_json(ATTN_REFERENCE_DIR "/gpt2_long_tokens.json").at("cases");
  REQUIRE(cases.size() >= 40);
  std::size_t long_pieces = 0;
  for (const json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    CAPTURE(attn::escape_controls(text));
    const Ids want = c.at("ids").get<Ids>();
    CHECK(attn::gpt2_encode(text) == want);
    CHECK(attn::gpt2_count(text) == want.size());
    for (const std::string_view piece : attn::gpt2_pieces(text)) long_pieces += piece.size() > 64;
  }
  CHECK(long_pieces >= 40);
}

TEST_CASE("GPT-2's count is the number of ids, or nothing where the tokenizer refuses") {
  for (const json& c : reference().at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    CAPTURE(attn::escape_controls(text));
    CHECK(attn::gpt2_count(text) == c.at("ids").size());
  }
  CHECK(attn::gpt2_count("") == std::nullopt);
  CHECK(attn::gpt2_count("caf\xe9") == std::nullopt);
  CHECK(attn::gpt2_tokenizer()->count("Life is short, eat dessert first") == 7u);
  // A word of 200,000 letters: counted and encoded by the heap's BPE (encoder.py's rounds take
  // minutes on a megabyte), the same number of ids both ways, every letter kept.
  std::string word;
  std::uint32_t x = 1;
  for (int i = 0; i < 200000; ++i) {
    x = (x * 75 + 74) % 65537;
    word += static_cast<char>('a' + x % 26);
  }
  const std::vector<std::int64_t> ids = attn::gpt2_encode(word);
  CHECK(attn::gpt2_count(word) == ids.size());
  std::string joined;
  for (const std::int64_t id : ids) joined += attn::gpt2_token(id);
  CHECK(joined == word);
}

TEST_CASE("the pattern's classes are Python regex's for every code point") {
  const json& ref = reference();
  std::vector<attn::Gpt2Class> want(0x110000, attn::Gpt2Class::kOther);
  auto mark = [&](const json& ranges, attn::Gpt2Class cls) {
    for (const json& r : ranges) {
      for (auto cp = r[0].get<char32_t>(); cp <= r[1].get<char32_t>(); ++cp) want[cp] = cls;
    }
  };
  mark(ref.at("letters"), attn::Gpt2Class::kLetter);
  mark(ref.at("numbers"), attn::Gpt2Class::kNumber);
  mark(ref.at("white_space"), attn::Gpt2Class::kSpace);
  // Where Python's regex and JavaScript's \s differ, and Python's str.isspace():
  CHECK(in_ranges(ref.at("white_space"), 0x85));
  CHECK_FALSE(in_ranges(ref.at("white_space"), 0xFEFF));
  CHECK_FALSE(in_ranges(ref.at("white_space"), 0x180E));
  CHECK_FALSE(in_ranges(ref.at("white_space"), 0x1C));
  std::size_t differ = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (attn::gpt2_class(cp) != want[cp]) {
      if (++differ <= 10) FAIL_CHECK("U+" << std::hex << static_cast<std::uint32_t>(cp));
    }
  }
  CHECK(differ == 0);
}

TEST_CASE("the pre-tokenizer's pieces") {
  using Pieces = std::vector<std::string_view>;
  CHECK(attn::gpt2_pieces("Life is short, eat") == Pieces{"Life", " is", " short", ",", " eat"});
  CHECK(attn::gpt2_pieces("a   b") == Pieces{"a", "  ", " b"});
  CHECK(attn::gpt2_pieces("a  ") == Pieces{"a", "  "});
  CHECK(attn::gpt2_pieces("it's IT'S") == Pieces{"it", "'s", " IT", "'", "S"});
  CHECK(attn::gpt2_pieces("a\n\nb") == Pieces{"a", "\n", "\n", "b"});
  CHECK(attn::gpt2_pieces("x \u0085y") == Pieces{"x", " ", "\u0085", "y"});
  CHECK(attn::gpt2_pieces("x\ufeffy") == Pieces{"x", "\ufeff", "y"});
  CHECK(attn::gpt2_pieces(" 42!!") == Pieces{" 42", "!!"});
  CHECK(attn::gpt2_pieces("it'") == Pieces{"it", "'"});
  CHECK(attn::gpt2_pieces("'") == Pieces{"'"});
  CHECK(attn::gpt2_pieces(" ") == Pieces{" "});
  CHECK(attn::gpt2_pieces(" é中") == Pieces{" é中"});
  CHECK(attn::gpt2_pieces("a \u3000b") == Pieces{"a", " ", "\u3000", "b"});
  CHECK(attn::gpt2_pieces("x'll've") == Pieces{"x", "'ll", "'ve"});
  CHECK(attn::gpt2_pieces("  \n a") == Pieces{"  \n", " a"});
  CHECK(attn::gpt2_pieces("ab  ") == Pieces{"ab", "  "});
  // The reader: the same pieces, one at a time.
  Pieces one_at_a_time;
  attn::Gpt2Pieces reader("Life is short,  eat\n");
  for (std::string_view piece; reader.next(piece);) one_at_a_time.push_back(piece);
  CHECK(one_at_a_time == Pieces{"Life", " is", " short", ",", " ", " eat", "\n"});
}

TEST_CASE("every id's token and back, the byte tokens and <|endoftext|>") {
  for (std::int64_t id = 0; id < attn::kGpt2VocabSize; ++id) {
    REQUIRE(attn::gpt2_id(attn::gpt2_token(id)) == id);
  }
  CHECK(attn::gpt2_token(0) == "!");
  CHECK(attn::gpt2_token(220) == "Ġ");
  CHECK(attn::gpt2_token(198) == "Ċ");
  CHECK(attn::gpt2_token(attn::kGpt2EndOfText) == "<|endoftext|>");
  CHECK_THROWS_WITH_AS(attn::gpt2_token(50257), "GPT-2 has no token 50257: its ids are 0 to 50256",
                       attn::Error);
  CHECK_THROWS_AS(attn::gpt2_id("not a token"), attn::Error);
}

TEST_CASE("encoder.json is the tokenizer's vocabulary, id for id") {
  const json encoder = read_json(ATTN_REFERENCE_DIR "/../gpt2/encoder.json");
  REQUIRE(encoder.size() == static_cast<std::size_t>(attn::kGpt2VocabSize));
  for (const auto& item : encoder.items()) {
    const std::string& token = item.key();  // not a structured binding: clang 14's lambdas
    REQUIRE_MESSAGE(attn::gpt2_token(item.value().get<std::int64_t>()) == token, token);
  }
}

TEST_CASE("tokens as a reader sees them") {
  CHECK(attn::gpt2_readable("Ġshort") == "␣short");
  CHECK(attn::gpt2_readable("Ċ") == "↵");
  CHECK(attn::gpt2_readable("ĉ") == "⇥");
  CHECK(attn::gpt2_readable("čĊ") == "\\r↵");
  std::string nel;  // NEL's two byte tokens, joined
  for (const std::int64_t id : attn::gpt2_encode("\u0085")) nel += attn::gpt2_token(id);
  CHECK(attn::gpt2_readable(nel) == "\\x85");
  CHECK(attn::gpt2_readable("ï»¿") == "\\ufeff");    // BOM
  CHECK(attn::gpt2_readable("æĪ") == "\\xe6\\x88");  // two bytes of 我
  CHECK(attn::gpt2_readable("ĠæĪĳ") == "␣我");
  // A backslash is doubled, so that \x80 is always a byte and \r a carriage return: the bytes of a
  // backslash and an r read \\r.
  CHECK(attn::gpt2_readable("\\") == "\\\\");
  CHECK(attn::gpt2_readable("\\r") == "\\\\r");
  CHECK(attn::gpt2_readable("<|endoftext|>") == "<|endoftext|>");
}

TEST_CASE("the Tokenizer: tokens, a dictionary of GPT-2's ids, refusals") {
  const auto tok = attn::gpt2_tokenizer();
  CHECK(tok->name() == "gpt2");
  const auto tokens = tok->tokens("Life is short, eat dessert first", "the sentence");
  CHECK(tokens ==
        std::vector<std::string>{"Life", "Ġis", "Ġshort", ",", "Ġeat", "Ġdessert", "Ġfirst"});
  const attn::Vocabulary v = tok->vocabulary(tokens);
  CHECK(v.ids() == Ids{11, 318, 717, 1790, 4483, 14662, 23084});
  CHECK(v.words()[1] == "Ġis");
  CHECK(v.end_id() == 23085);
  CHECK(attn::encode(v, tokens) == Ids{14662, 318, 1790, 11, 4483, 23084, 717});
  CHECK(tok->display("Ġis") == "␣is");
  CHECK(tok->padding_id(v) == attn::kGpt2EndOfText);
  CHECK_THROWS_WITH_AS(tok->tokens("", "the sentence"),
                       "the sentence is empty: give at least one character", attn::Error);
  CHECK_THROWS_WITH_AS(tok->tokens("ab\xff", "sentence 2 of 3"),
                       "sentence 2 of 3 is not valid UTF-8 (byte 2): a sentence must be UTF-8 text",
                       attn::Error);
  CHECK(tok->tokens(" ", "the sentence") == std::vector<std::string>{"Ġ"});
}

TEST_CASE("a trace over GPT-2's ids: labels shown readably, ids as GPT-2's") {
  attn::TraceConfig c;
  c.tokenizer = attn::gpt2_tokenizer();
  c.vocab_size = attn::kGpt2VocabSize;
  c.sentences = {"Life is short"};
  const attn::Trace t = attn::run_trace(c);
  CHECK(t.inputs[0].ids == Ids{14662, 318, 1790});
  CHECK(t.inputs[0].words == std::vector<std::string>{"Life", "␣is", "␣short"});
  CHECK(t.inputs[0].tokens == std::vector<std::string>{"Life", "Ġis", "Ġshort"});
  CHECK(t.steps.front().row_labels == t.inputs[0].words);
  c.vocab_size = 1790;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "vocabulary size 1790 is smaller than the sentence's token ids need (gpt2 "
                       "tokens, the largest id 14662): it must be at least 14663",
                       attn::Error);
}

TEST_CASE("a batch of GPT-2 texts is padded with <|endoftext|>") {
  attn::TraceConfig c;
  c.tokenizer = attn::gpt2_tokenizer();
  c.vocab_size = attn::kGpt2VocabSize;
  c.sentences = {"Life is short", "Hello"};
  const attn::Trace t = attn::run_trace(c);
  REQUIRE(t.pad_id);
  CHECK(*t.pad_id == attn::kGpt2EndOfText);
  CHECK(t.inputs[1].ids == Ids{15496, 50256, 50256});
}
