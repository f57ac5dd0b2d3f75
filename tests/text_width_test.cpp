#include "attn/text_width.hpp"

#include <doctest/doctest.h>

TEST_CASE("display width: ASCII one column, CJK two, combining marks none") {
  CHECK(attn::display_width("dessert") == 7);
  CHECK(attn::display_width("我爱你") == 6);
  CHECK(attn::display_width("한국어") == 6);
  CHECK(attn::display_width("café") == 4);
  CHECK(attn::display_width("cafe\u0301") == 4);  // e + combining acute
  CHECK(attn::display_width("ｆｕｌｌ") == 8);    // fullwidth Latin
  CHECK(attn::display_width("") == 0);
  CHECK(attn::display_width("\xff") == 1);  // invalid UTF-8: one column per byte
}

TEST_CASE("display width: emoji as a terminal draws them") {
  CHECK(attn::display_width("\u2764") == 1);        // ❤ alone: text presentation
  CHECK(attn::display_width("\u2764\uFE0F") == 2);  // ❤️: the emoji variation selector
  CHECK(attn::display_width("\U0001F600") == 2);    // 😀
  CHECK(attn::display_width("\U0001F469\u200D\U0001F4BB") == 2);  // 👩‍💻, a ZWJ sequence
  CHECK(attn::display_width("\U0001F1EB\U0001F1F7") == 2);        // 🇫🇷, a flag
  CHECK(attn::display_width("\U0001F44D\U0001F3FD") == 2);        // 👍🏽, with a skin tone
  CHECK(attn::display_width("a\u2764\uFE0Fb") == 4);
  CHECK(attn::display_width("\u231A\uFE0E") == 1);  // ⌚︎: the text variation selector
}

TEST_CASE("wrap_words: at spaces, never inside a word, with the indent counted") {
  CHECK(attn::wrap_words("one two three", 80) == "one two three");
  CHECK(attn::wrap_words("one two three", 7) == "one two\nthree");
  CHECK(attn::wrap_words("one two three", 8, "  ") == "one two\n  three");
  // A word wider than the line stays whole.
  CHECK(attn::wrap_words("a unbreakableword b", 6) == "a\nunbreakableword\nb");
  // Newlines, leading spaces and runs of spaces are kept.
  CHECK(attn::wrap_words("  x y\nz  w", 80) == "  x y\nz  w");
  CHECK(attn::wrap_words("aa  bb", 3) == "aa\nbb");   // no line ends with a space
  CHECK(attn::wrap_words("aa   bb", 2) == "aa\nbb");  // nor begins with one after a break
  // A word that fits only without the indent goes without it.
  CHECK(attn::wrap_words("a abcdef", 6, "  ") == "a\nabcdef");
  CHECK(attn::wrap_words("ab\n", 80) == "ab\n");
  // Widths are display widths: 我爱 is four columns.
  CHECK(attn::wrap_words("我爱 我爱 我爱", 9) == "我爱 我爱\n我爱");
  CHECK(attn::wrap_words("", 10).empty());
}
