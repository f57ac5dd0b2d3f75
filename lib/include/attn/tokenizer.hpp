#pragma once

// Tokenization as the walkthrough does it: drop commas, split on white space, number the sorted
// distinct words.

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

// encode(vocabulary, words): each word's id, in sentence order.
std::vector<std::int64_t> encode(const Vocabulary& vocabulary,
                                 const std::vector<std::string>& words);

}  // namespace attn
