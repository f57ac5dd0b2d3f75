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
