// GPT-2's pre-tokenizer, encoder.py's pattern written out by hand:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Python's `regex` tries the alternatives in order at each position and takes the first that
// matches; each is greedy.

#include <utf8proc.h>

#include "attn/tokenizer_gpt2.hpp"

namespace attn {

Gpt2Class gpt2_class(char32_t cp) {
  switch (cp) {  // White_Space
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return Gpt2Class::kSpace;
    default:
      if (cp >= 0x2000 && cp <= 0x200A) return Gpt2Class::kSpace;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return Gpt2Class::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return Gpt2Class::kNumber;
    default:
      return Gpt2Class::kOther;
  }
}

namespace {

// One character of the text: its code point, its class and its length in bytes.
struct Character {
  char32_t cp = 0;
  Gpt2Class cls = Gpt2Class::kOther;
  std::size_t len = 1;
};

Character character_at(std::string_view text, std::size_t i) {
  Character c;
  c.len = decode_utf8(text, i, c.cp);
  if (c.len == 0) c.len = 1;  // not reached: the text was checked
  c.cls = gpt2_class(c.cp);
  return c;
}

// The end (a byte offset) of the match that begins at byte i, the text read from i on only as
// far as the match needs.
std::size_t match_end(std::string_view text, std::size_t i) {
  const std::size_t n = text.size();
  // 's|'t|'re|'ve|'m|'ll|'d (lower case only): ASCII, so bytes are characters here.
  if (text[i] == '\'' && i + 1 < n) {
    const char a = text[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      const char b = text[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the class of the character after an optional
  // space chooses the alternative; the run is of that class.
  const Character first = character_at(text, i);
  std::size_t k = i;
  Character chosen = first;
  if (first.cp == U' ' && i + 1 < n) k = i + 1, chosen = character_at(text, k);
  if (chosen.cls != Gpt2Class::kSpace) {
    std::size_t end = k + chosen.len;
    while (end < n) {
      const Character c = character_at(text, end);
      if (c.cls != chosen.cls) break;
      end += c.len;
    }
    return end;
  }
  // `\s+(?!\S)`: the run of white space, less its last character when something other than
  // white space follows; `\s+`: a single white-space character before it.
  std::size_t end = i + first.len, last = i, run = 1;
  while (end < n) {
    const Character c = character_at(text, end);
    if (c.cls != Gpt2Class::kSpace) break;
    last = end, end += c.len, ++run;
  }
  if (end < n && run >= 2) return last;
  return end;
}

}  // namespace

bool Gpt2Pieces::next(std::string_view& piece) {
  if (at_ >= text_.size()) return false;
  const std::size_t end = match_end(text_, at_);
  piece = text_.substr(at_, end - at_);
  at_ = end;
  return true;
}

std::vector<std::string_view> gpt2_pieces(std::string_view text) {
  std::vector<std::string_view> pieces;
  Gpt2Pieces reader(text);
  for (std::string_view piece; reader.next(piece);) pieces.push_back(piece);
  return pieces;
}

}  // namespace attn
