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

// The text's characters and where each begins (one more entry: the text's end).
struct Characters {
  std::vector<char32_t> cp;
  std::vector<Gpt2Class> cls;
  std::vector<std::size_t> offset;
};

Characters characters(std::string_view text) {
  Characters c;
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    std::size_t len = decode_utf8(text, i, cp);
    if (len == 0) len = 1;  // not reached: the text was checked
    c.cp.push_back(cp);
    c.cls.push_back(gpt2_class(cp));
    c.offset.push_back(i);
    i += len;
  }
  c.offset.push_back(text.size());
  return c;
}

// 's|'t|'re|'ve|'m|'ll|'d (lower case only): the end of the match at i, or 0.
std::size_t contraction(const Characters& c, std::size_t i) {
  const std::size_t n = c.cp.size();
  if (c.cp[i] != U'\'' || i + 1 >= n) return 0;
  const char32_t a = c.cp[i + 1];
  if (a == U's' || a == U't' || a == U'm' || a == U'd') return i + 2;
  if (i + 2 >= n) return 0;
  const char32_t b = c.cp[i + 2];
  if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) {
    return i + 3;
  }
  return 0;
}

// The end of the match that begins at character i.
std::size_t match_end(const Characters& c, std::size_t i) {
  const std::size_t n = c.cp.size();
  if (const std::size_t end = contraction(c, i)) return end;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the class of the character after an optional
  // space chooses the alternative; the run is of that class.
  const std::size_t k = c.cp[i] == U' ' && i + 1 < n ? i + 1 : i;
  if (c.cls[k] != Gpt2Class::kSpace) {
    std::size_t end = k + 1;
    while (end < n && c.cls[end] == c.cls[k]) ++end;
    return end;
  }
  // `\s+(?!\S)`: the run of white space, less its last character when something other than
  // white space follows; `\s+`: a single white-space character before it.
  std::size_t end = i + 1;
  while (end < n && c.cls[end] == Gpt2Class::kSpace) ++end;
  if (end < n && end - i >= 2) return end - 1;
  return end;
}

}  // namespace

std::vector<std::string_view> gpt2_pieces(std::string_view text) {
  const Characters c = characters(text);
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < c.cp.size();) {
    const std::size_t end = match_end(c, i);
    pieces.push_back(text.substr(c.offset[i], c.offset[end] - c.offset[i]));
    i = end;
  }
  return pieces;
}

}  // namespace attn
