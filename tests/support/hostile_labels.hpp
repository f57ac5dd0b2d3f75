// Row labels as a file may give them, holding control characters, for the renderers' tests: each
// renderer must show them escaped, never write them to the terminal raw.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attn/tokenizer.hpp"
#include "attn/trace.hpp"

namespace attn::test {

// ESC sequences that would clear the screen and set the window's title, with BEL; a newline, a
// carriage return and NUL; DEL, the C1 control CSI (U+009B) and a backslash.
inline std::vector<std::string> hostile_labels() {
  return {"\x1b[2J\x1b]0;pwned\x07x", std::string("a\nb\rc\0", 6),
          "\x7f\xc2\x9b"
          "31m\\"};
}
// The same labels as the text outputs show them.
inline std::vector<std::string> hostile_labels_escaped() {
  return {"\\x1b[2J\\x1b]0;pwned\\x07x", "a\\nb\\rc\\x00", "\\x7f\\x9b31m\\\\"};
}

// A trace of X (3 × 2) given with the hostile labels, as --x FILE gives them.
inline Trace hostile_trace() {
  TraceConfig c;
  Matrix x(3, 2);  // (T, d_in)
  x << 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f;
  c.x = GivenMatrix{x, "x.json", hostile_labels()};
  c.d_kq = c.d_v = 2;
  return run_trace(c);
}

// Whether `text` holds a control character other than the newline that ends a line, or a byte
// that is not UTF-8: what a terminal could take for a command.
inline bool has_raw_control(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(text, i, cp);
    if (len == 0 || (cp != U'\n' && is_control(cp))) return true;
    i += len;
  }
  return false;
}

}  // namespace attn::test
