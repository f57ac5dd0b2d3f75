#pragma once

// Tokenization as the walkthrough does it: drop commas, split on white space, number the sorted
// distinct words.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The sentence's words in order: commas removed, split on white space (Python's str.split():
// ASCII and Unicode white space). A word is whatever white space separates, in any script.
// Requires: valid UTF-8 without control characters other than white space.
// Throws Error naming the byte offset of invalid UTF-8 or of a control character.
std::vector<std::string> tokenize(std::string_view sentence);

// The dictionary: distinct words sorted by code point (Python's sorted()), numbered from 0.
class Vocabulary {
 public:
  // Requires: nothing; duplicates are merged.
  explicit Vocabulary(std::vector<std::string> words);

  // Words in id order.
  const std::vector<std::string>& words() const { return words_; }
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  // The id of `word`. Throws Error if the word is not in the dictionary.
  std::int64_t id(std::string_view word) const;

 private:
  std::vector<std::string> words_;  // sorted, distinct
};

// build_vocabulary(words): the dictionary of a sentence's words.
Vocabulary build_vocabulary(const std::vector<std::string>& words);

// ---- UTF-8, as the tool reads it (sentences, and labels in files) and shows it ----

// The length in bytes (1 to 4) of the UTF-8 character at text[i], with its code point in `cp`;
// 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and values above
// U+10FFFF are invalid). Requires: i < text.size().
std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& cp);

// The offset of the first byte of `text` that is not valid UTF-8, or std::string_view::npos.
std::size_t invalid_utf8_offset(std::string_view text);

// A control character: U+0000 to U+001F, U+007F (DEL), U+0080 to U+009F (the C1 controls).
bool is_control(char32_t cp);

// Text as it may be written to a terminal: each control character and each byte that is not
// valid UTF-8 escaped as Python's repr() writes it inside the quotes (\t, \n, \r, otherwise
// \x1b, \x7f, \x9b), and a backslash as \\, so that no text from a file can move the cursor,
// clear the screen or set the window's title, and the escaped text reads back unambiguously.
// Everything else is unchanged.
std::string escape_controls(std::string_view text);

// encode(vocabulary, words): each word's id, in sentence order.
std::vector<std::int64_t> encode(const Vocabulary& vocabulary,
                                 const std::vector<std::string>& words);

}  // namespace attn
