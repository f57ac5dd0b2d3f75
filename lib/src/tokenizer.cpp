#include "attn/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attn/error.hpp"

namespace attn {

// Overlong forms, surrogates and values above U+10FFFF are invalid.
std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len;
  char32_t min;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::size_t invalid_utf8_offset(std::string_view text) {
  char32_t cp = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = decode_utf8(text, i, cp);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool is_control(char32_t c) { return c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0); }

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(text, i, cp);
    if (len == 0) {  // a byte that is not UTF-8: shown as the byte
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (cp == U'\\') {
      out += "\\\\";
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (is_control(cp)) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

// White space as Python's str.isspace() defines it.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

}  // namespace

std::vector<std::string> tokenize(std::string_view sentence) {
  std::vector<std::string> words;
  std::string word;
  for (std::size_t i = 0; i < sentence.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(sentence, i, cp);
    if (len == 0) {
      throw Error("the sentence is not valid UTF-8 (byte " + std::to_string(i) +
                  "): a sentence must be UTF-8 text");
    }
    if (is_space(cp)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else if (is_control(cp)) {
      throw Error("the sentence has a control character (byte " + std::to_string(i) +
                  "): only printable text and white space are allowed");
    } else if (cp != U',') {
      word.append(sentence.substr(i, len));
    }
    i += len;
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

Vocabulary::Vocabulary(std::vector<std::string> words) : words_(std::move(words)) {
  // std::string compares bytes as unsigned char, and UTF-8 byte order is code point order.
  std::sort(words_.begin(), words_.end());
  words_.erase(std::unique(words_.begin(), words_.end()), words_.end());
}

std::int64_t Vocabulary::id(std::string_view word) const {
  const auto it = std::lower_bound(words_.begin(), words_.end(), word);
  if (it == words_.end() || *it != word) {
    throw Error("the word '" + std::string(word) + "' is not in the dictionary");
  }
  return it - words_.begin();
}

Vocabulary build_vocabulary(const std::vector<std::string>& words) { return Vocabulary(words); }

std::vector<std::int64_t> encode(const Vocabulary& vocabulary,
                                 const std::vector<std::string>& words) {
  std::vector<std::int64_t> ids;
  ids.reserve(words.size());
  for (const std::string& w : words) ids.push_back(vocabulary.id(w));
  return ids;
}

}  // namespace attn
