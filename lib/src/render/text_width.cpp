// Display widths from libutf8proc: grapheme clusters (UAX #29) and each character's width
// (East Asian Width, emoji presentation), as terminals draw them.

#include "attn/text_width.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>

namespace attn {

namespace {

constexpr utf8proc_int32_t kTextPresentation = 0xFE0E;   // VS15: draw the character as text
constexpr utf8proc_int32_t kEmojiPresentation = 0xFE0F;  // VS16: draw it as an emoji

// The width of one grapheme cluster: its first character's, made two columns by an emoji
// variation selector (❤️ is U+2764 U+FE0F) and one by a text variation selector. A ZWJ
// sequence (👩‍💻) is one cluster, as wide as its first emoji; a flag, a pair of regional
// indicators (🇫🇷), is two columns.
std::size_t cluster_width(utf8proc_int32_t first, bool emoji, bool text) {
  if (first >= 0x1F1E6 && first <= 0x1F1FF) return 2;
  const int w = utf8proc_charwidth(first);
  if (emoji && w == 1) return 2;
  if (text && w == 2) return 1;
  return static_cast<std::size_t>(w < 0 ? 0 : w);
}

}  // namespace

std::size_t display_width(std::string_view text) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  std::size_t width = 0;
  utf8proc_int32_t state = 0, previous = -1, first = -1;
  bool emoji = false, plain = false;
  for (utf8proc_ssize_t i = 0; i < size;) {
    if (bytes[i] < 0x80 && (i + 1 == size || bytes[i + 1] < 0x80)) {
      // ASCII between ASCII: a cluster of its own, one column (the common case, fast).
      if (first >= 0) width += cluster_width(first, emoji, plain);
      first = -1, previous = -1, state = 0;
      ++width, ++i;
      continue;
    }
    utf8proc_int32_t cp = -1;
    const utf8proc_ssize_t len = utf8proc_iterate(bytes + i, size - i, &cp);
    if (len <= 0) {  // a byte that is not UTF-8: one column of its own
      if (first >= 0) width += cluster_width(first, emoji, plain);
      first = -1, previous = -1, state = 0;
      ++width, ++i;
      continue;
    }
    if (previous < 0 || utf8proc_grapheme_break_stateful(previous, cp, &state)) {
      if (first >= 0) width += cluster_width(first, emoji, plain);
      first = cp, emoji = false, plain = false;
    } else if (cp == kEmojiPresentation) {
      emoji = true;
    } else if (cp == kTextPresentation) {
      plain = true;
    }
    previous = cp;
    i += len;
  }
  if (first >= 0) width += cluster_width(first, emoji, plain);
  return width;
}

std::string wrap_words(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out;
  const std::size_t indent_width = display_width(indent);
  std::size_t column = 0;  // of the line being written
  bool line_empty = true;  // no word on it yet
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    // The line's leading spaces are kept (they indent it); the words after are wrapped.
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    out.append(line.substr(0, lead));
    std::size_t start = out.size();  // where the line's words begin
    column = lead;
    line_empty = true;
    line.remove_prefix(lead);
    // Words are what lies between single spaces, so a run of spaces stays as it was (an empty
    // word between each two); a line is broken at a space, and ends with its last word.
    for (bool more = !line.empty(); more;) {
      const std::size_t end = line.find(' ');
      const std::string_view word = line.substr(0, end);
      more = end != std::string_view::npos;
      line = more ? line.substr(end + 1) : std::string_view{};
      const std::size_t w = display_width(word);
      if (!line_empty && column + 1 + w > width) {
        while (out.size() > start && out.back() == ' ') out.pop_back();  // ends with a word
        out += '\n';
        // A word that fits the line only without the indent goes without it.
        const bool indented = indent_width + w <= width || w > width;
        if (indented) out.append(indent);
        start = out.size();
        column = indented ? indent_width : 0;
        line_empty = true;
      }
      if (line_empty && word.empty()) continue;  // the spaces at a break
      if (!line_empty) out += ' ', ++column;
      out.append(word);
      column += w;
      line_empty = false;
    }
    if (newline != std::string_view::npos) out += '\n';
  }
  return out;
}

}  // namespace attn
