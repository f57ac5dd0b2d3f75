#pragma once

// How many terminal columns UTF-8 text takes: East Asian wide and fullwidth characters take two,
// combining marks and zero-width characters none, everything else one.

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

// The display width of UTF-8 text (invalid bytes count one column each).
std::size_t display_width(std::string_view text);

// `text` wrapped at word boundaries (spaces) so that no line is wider than `width` columns, the
// lines after the first starting with `indent` (whose width counts; a word that fits a line only
// without it goes without it). A word wider than a line stays whole on a line of its own: words
// are never split. Newlines in `text`, each line's leading spaces and runs of spaces between
// words are kept, except where a line breaks: no line ends with a space.
// Requires: width > display_width(indent).
std::string wrap_words(std::string_view text, std::size_t width, std::string_view indent = "");

}  // namespace attn
