#include "attn/tokenizer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "attn/error.hpp"

using Words = std::vector<std::string>;

TEST_CASE("the walkthrough's sentence: commas dropped, split on spaces, sorted by code point") {
  const Words words = attn::tokenize("Life is short, eat dessert first");
  CHECK(words == Words{"Life", "is", "short", "eat", "dessert", "first"});
  const attn::Vocabulary vocab = attn::build_vocabulary(words);
  // Upper case sorts before lower case, as Python's sorted().
  CHECK(vocab.words() == Words{"Life", "dessert", "eat", "first", "is", "short"});
  CHECK(attn::encode(vocab, words) == std::vector<std::int64_t>{0, 4, 5, 2, 1, 3});
}

TEST_CASE("repeated words get one id each, numbered without gaps") {
  const Words words = attn::tokenize("the cat sat on the mat, the end");
  const attn::Vocabulary vocab = attn::build_vocabulary(words);
  CHECK(vocab.words() == Words{"cat", "end", "mat", "on", "sat", "the"});
  CHECK(attn::encode(vocab, words) == std::vector<std::int64_t>{5, 0, 4, 3, 5, 2, 5, 1});
}

TEST_CASE("white space as Python's str.split() knows it, in any script") {
  CHECK(attn::tokenize("  a\tb\nc\r\nd  ") == Words{"a", "b", "c", "d"});
  CHECK(attn::tokenize("no\u00a0break\u3000ideographic\u2003em") ==
        Words{"no", "break", "ideographic", "em"});
  CHECK(attn::tokenize("我 爱 你") == Words{"我", "爱", "你"});
  CHECK(attn::tokenize("naïve café, résumé") == Words{"naïve", "café", "résumé"});
  CHECK(attn::tokenize("a,b ,c,") == Words{"ab", "c"});
  CHECK(attn::tokenize(" , ,, ").empty());
  CHECK(attn::tokenize("").empty());
}

TEST_CASE("code point order for non-ASCII words") {
  const attn::Vocabulary vocab = attn::build_vocabulary({"é", "z", "Z", "我", "a"});
  CHECK(vocab.words() == Words{"Z", "a", "z", "é", "我"});
}

TEST_CASE("invalid UTF-8 and control characters are refused with their byte offset") {
  CHECK_THROWS_WITH_AS(attn::tokenize("ab\xff"),
                       "the sentence is not valid UTF-8 (byte 2): a sentence must be UTF-8 text",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::tokenize("\xc3"),
                       "the sentence is not valid UTF-8 (byte 0): a sentence must be UTF-8 text",
                       attn::Error);
  CHECK_THROWS_AS(attn::tokenize("\xc0\xaf"), attn::Error);      // overlong '/'
  CHECK_THROWS_AS(attn::tokenize("\xed\xa0\x80"), attn::Error);  // a surrogate
  CHECK_THROWS_WITH_AS(attn::tokenize("a\x1b[31mb"),
                       "the sentence has a control character (byte 1): only printable text and "
                       "white space are allowed",
                       attn::Error);
  // In a batch, or the cross-attention's second sentence, the message names which text.
  CHECK_THROWS_WITH_AS(attn::tokenize("ok a\x01", "sentence 3 of 4"),
                       "sentence 3 of 4 has a control character (byte 4): only printable text "
                       "and white space are allowed",
                       attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::word_tokenizer()->tokens("ok \xff", "the key and value sentence"),
      "the key and value sentence is not valid UTF-8 (byte 3): a sentence must be UTF-8 text",
      attn::Error);
}

TEST_CASE("a word that is not in the dictionary") {
  const attn::Vocabulary vocab({"a"});
  CHECK(vocab.size() == 1);
  CHECK_THROWS_WITH_AS(vocab.id("b"), "the word 'b' is not in the dictionary", attn::Error);
}

TEST_CASE("a large dictionary finds every word's id, and no word it does not hold") {
  // Enough words for the table to grow many times and its probes to wrap around its end; words
  // that share long prefixes, the empty word, non-ASCII ones, and ids with gaps.
  Words words;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 20000; ++i) {
    words.push_back(i % 3 == 0   ? "prefix-shared-by-many-" + std::to_string(i)
                    : i % 3 == 1 ? "é" + std::to_string(i)
                                 : std::to_string(i));
    ids.push_back(7 + 3 * static_cast<std::int64_t>(i));
  }
  words.push_back("");
  ids.push_back(ids.back() + 1);
  const attn::Vocabulary vocab(words, ids);
  CHECK(vocab.size() == 20001);
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (vocab.id(words[i]) != ids[i]) FAIL("word ", words[i], ": id ", vocab.id(words[i]));
  }
  for (const char* missing : {"prefix-shared-by-many-1", "é0", "20000", "-1", " ", "prefix"}) {
    CHECK_THROWS_WITH_AS(
        vocab.id(missing),
        ("the word '" + std::string(missing) + "' is not in the dictionary").c_str(), attn::Error);
  }
  // The walkthrough's dictionary of the same words: sorted, numbered from 0.
  const attn::Vocabulary sorted = attn::build_vocabulary(words);
  CHECK(sorted.size() == 20001);
  CHECK(std::is_sorted(sorted.words().begin(), sorted.words().end()));
  CHECK(sorted.id("") == 0);
  CHECK(sorted.id(sorted.words().back()) == 20000);
}

TEST_CASE("UTF-8: each character's length, and the first byte that is not UTF-8") {
  char32_t cp = 0;
  CHECK(attn::decode_utf8("a", 0, cp) == 1);
  CHECK(cp == U'a');
  CHECK(attn::decode_utf8("x我", 1, cp) == 3);
  CHECK(cp == U'我');
  CHECK(attn::decode_utf8("\xf0\x9f\x98\x80", 0, cp) == 4);
  CHECK(cp == U'\U0001F600');
  CHECK(attn::decode_utf8("\xc0\xaf", 0, cp) == 0);  // overlong
  CHECK(attn::decode_utf8("\xe6\x88", 0, cp) == 0);  // cut short
  CHECK(attn::invalid_utf8_offset("Life is short") == std::string_view::npos);
  CHECK(attn::invalid_utf8_offset("") == std::string_view::npos);
  CHECK(attn::invalid_utf8_offset("caf\xe9 au lait") == 3);
  CHECK(attn::invalid_utf8_offset(std::string_view("\xff\xfeL\0i", 5)) == 0);  // UTF-16
  CHECK(attn::is_control(U'\0'));
  CHECK(attn::is_control(U'\x1b'));
  CHECK(attn::is_control(U'\x7f'));
  CHECK(attn::is_control(U'\x9b'));
  CHECK_FALSE(attn::is_control(U' '));
  CHECK_FALSE(attn::is_control(U'\xa0'));
}

TEST_CASE(
    "escape_controls: control characters, stray bytes and backslashes as Python writes them") {
  CHECK(attn::escape_controls("Life is short, 我 é 😀") == "Life is short, 我 é 😀");
  CHECK(attn::escape_controls("\x1b[2J\x1b]0;pwned\x07x") == "\\x1b[2J\\x1b]0;pwned\\x07x");
  CHECK(attn::escape_controls(std::string("a\tb\nc\rd\0e", 9)) == "a\\tb\\nc\\rd\\x00e");
  CHECK(attn::escape_controls("\x7f\xc2\x80\xc2\x9b\xc2\x9f\xc2\xa0") ==
        "\\x7f\\x80\\x9b\\x9f\xc2\xa0");  // DEL and the C1 controls; U+00A0 is not one
  CHECK(attn::escape_controls("C:\\dir") == "C:\\\\dir");
  CHECK(attn::escape_controls("caf\xe9\xff") == "caf\\xe9\\xff");
}

TEST_CASE("escape_controls for text shown escaped already: backslashes as they are") {
  using attn::EscapeStyle;
  // GPT-2's readable tokens: their \xNN and \\ stand as they are, as kRepr would double them.
  CHECK(attn::escape_controls("␣\\xf0\\x9f\\x98", EscapeStyle::kShown) == "␣\\xf0\\x9f\\x98");
  CHECK(attn::escape_controls("␣\\\\", EscapeStyle::kShown) == "␣\\\\");
  CHECK(attn::escape_controls("␣\\xf0", EscapeStyle::kRepr) == "␣\\\\xf0");
  // Whatever control character or stray byte it still held is escaped as kRepr's.
  CHECK(attn::escape_controls("a\tb\x1b[2J\xff\u202e", EscapeStyle::kShown) ==
        "a\\tb\\x1b[2J\\xff\\u202e");
}

TEST_CASE("escape_controls for a message: every escape as \\xNN, backslashes as they are") {
  using attn::EscapeStyle;
  CHECK(attn::escape_controls("a\\b C:\\dir é 我", EscapeStyle::kMessage) == "a\\b C:\\dir é 我");
  CHECK(attn::escape_controls(std::string("a\tb\nc\rd\0e\x1b[31m", 14), EscapeStyle::kMessage) ==
        "a\\x09b\\x0ac\\x0dd\\x00e\\x1b[31m");
  CHECK(attn::escape_controls("\x7f\xc2\x9b", EscapeStyle::kMessage) == "\\x7f\\x9b");
  // A lone 0x9b, which a terminal in an 8-bit mode reads as CSI, and a Latin-1 name.
  CHECK(attn::escape_controls("x\x9b"
                              "2J caf\xe9.txt",
                              EscapeStyle::kMessage) ==
        "x\\x9b"
        "2J caf\\xe9.txt");
}

TEST_CASE("escape_controls for Python's repr of a str: every character that is not printable") {
  using attn::EscapeStyle;
  // Python 3.11: repr('a\xa0b\u2028c\u2029d\u3000e\u1680f\u2000g\u200ah\u202fi\u205fj\x85k')
  CHECK(attn::escape_controls("a\u00a0b\u2028c\u2029d\u3000e\u1680f\u2000g\u200ah\u202fi\u205fj"
                              "\u0085k",
                              EscapeStyle::kStrRepr) ==
        "a\\xa0b\\u2028c\\u2029d\\u3000e\\u1680f\\u2000g\\u200ah\\u202fi\\u205fj\\x85k");
  // Format characters (a byte order mark, a zero-width joiner, U+180E, a soft hyphen), private
  // use; printable text, tabs and backslashes as kRepr writes them.
  CHECK(attn::escape_controls("\ufeffLife\u200d\u180e\u00ad\ue000\U000f0000",
                              EscapeStyle::kStrRepr) ==
        "\\ufeffLife\\u200d\\u180e\\xad\\ue000\\U000f0000");
  CHECK(attn::escape_controls("a\tb\\c é 我 😀 \x1b\xff", EscapeStyle::kStrRepr) ==
        "a\\tb\\\\c é 我 😀 \\x1b\\xff");
  // Labels (kRepr) keep the characters that are not controls, but for those that reorder or
  // break the line: a right-to-left override would show the rest of the line backwards.
  CHECK(attn::escape_controls("a\u00a0b\ufeff") == "a\u00a0b\ufeff");
  CHECK(attn::escape_controls("ab\u202ec \u2066d\u2069 \u200f\u061c\u2028") ==
        "ab\\u202ec \\u2066d\\u2069 \\u200f\\u061c\\u2028");
  CHECK(attn::escape_controls("x\u202e.txt", EscapeStyle::kMessage) == "x\\u202e.txt");
  CHECK(attn::moves_the_line(U'\u202a'));
  CHECK_FALSE(attn::moves_the_line(U'\u200d'));  // a joiner keeps emoji sequences whole
  CHECK(attn::is_printable(U' '));
  CHECK(attn::is_printable(U'\u00e9'));
  CHECK_FALSE(attn::is_printable(U'\u3000'));
  CHECK_FALSE(attn::is_printable(U'\U000e0001'));  // a language tag, Cf
  CHECK(attn::python_escape(U'\U0010ffff') == "\\U0010ffff");
}

TEST_CASE("words are counted as tokenize splits them, before any is stored") {
  // The count lets a run be refused for the memory limit before its words take the memory: it
  // must be tokenize's count for every text tokenize accepts, and nothing where it refuses one.
  const std::vector<std::string> texts = {"Life is short, eat dessert first",
                                          "",
                                          " ",
                                          ",",
                                          ", ,, ,",
                                          "a",
                                          "a,",
                                          ",a",
                                          "a , b",
                                          "  a\tb\nc\r\nd  ",
                                          "x\u3000y\u00a0z\u2028w",
                                          "caf\u00e9 na\u00efve",
                                          "a,b,c",
                                          "\u00a0,\u00a0",
                                          "end with space ",
                                          "\u6f22\u5b57 \u304b\u306a",
                                          "a\u0085b\u1680c\u202fd"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    const std::optional<std::size_t> n = attn::count_words(text);
    REQUIRE(n.has_value());
    CHECK(*n == attn::tokenize(text).size());
    CHECK(attn::word_tokenizer()->count(text) == n);
  }
  for (const std::string& bad : {std::string("a \xff b"), std::string("a\x01 b"),
                                 std::string("\xc3"), std::string("ok \x7f")}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(attn::tokenize(bad), attn::Error);
    CHECK_FALSE(attn::count_words(bad).has_value());
  }
}
