// Fuzzes attn::tokenize on any bytes, then, for a sentence of 1 to 64 words, build_vocabulary
// and encode: the dictionary is sorted and distinct (by code point, which is byte order), holds
// every word, and each word's id is in range and names that word.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view sentence(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words;
  try {
    words = attn::tokenize(sentence);
  } catch (const attn::Error&) {
    return 0;  // invalid UTF-8 or a control character, refused with its byte offset
  }
  // A word is never empty and holds neither a comma nor ASCII white space.
  for (const std::string& w : words) {
    if (w.empty() || w.find_first_of(", \t\n\v\f\r") != std::string::npos) __builtin_trap();
  }
  if (words.empty() || words.size() > 64) return 0;

  const attn::Vocabulary vocabulary = attn::build_vocabulary(words);
  const std::vector<std::string>& dictionary = vocabulary.words();
  // Sorted and distinct: each word strictly before the next, comparing bytes as unsigned.
  for (std::size_t i = 1; i < dictionary.size(); ++i) {
    if (!(dictionary[i - 1] < dictionary[i])) __builtin_trap();
  }
  if (vocabulary.size() < 1 || vocabulary.size() > static_cast<std::int64_t>(words.size())) {
    __builtin_trap();
  }
  const std::vector<std::int64_t> ids = attn::encode(vocabulary, words);  // (T,)
  if (ids.size() != words.size()) __builtin_trap();
  std::vector<bool> used(dictionary.size(), false);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocabulary.size()) __builtin_trap();
    const auto id = static_cast<std::size_t>(ids[t]);
    if (dictionary[id] != words[t]) __builtin_trap();
    used[id] = true;
  }
  // Every dictionary word comes from the sentence.
  if (!std::all_of(used.begin(), used.end(), [](bool u) { return u; })) __builtin_trap();
  return 0;
}
