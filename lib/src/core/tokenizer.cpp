#include "attn/tokenizer.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "attn/error.hpp"

namespace attn {

// libutf8proc decodes: overlong forms, surrogates and values above U+10FFFF are invalid.
std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
  utf8proc_int32_t c = 0;
  const utf8proc_ssize_t len =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()) + i,
                       static_cast<utf8proc_ssize_t>(s.size() - i), &c);
  if (len <= 0) return 0;
  cp = static_cast<char32_t>(c);
  return static_cast<std::size_t>(len);
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

bool moves_the_line(char32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

bool is_printable(char32_t cp) {
  if (cp < 0x80) return !is_control(cp);
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:  // the space is ASCII
      return false;
    default:
      return true;
  }
}

std::string python_escape(char32_t cp) {
  const auto n = static_cast<unsigned>(cp);
  return cp < 0x100     ? fmt::format("\\x{:02x}", n)
         : cp < 0x10000 ? fmt::format("\\u{:04x}", n)
                        : fmt::format("\\U{:08x}", n);
}

std::string escape_controls(std::string_view text, EscapeStyle style) {
  const bool repr = style != EscapeStyle::kMessage;
  const bool str_repr = style == EscapeStyle::kStrRepr;
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
    if (repr && cp == U'\\') {
      out += style == EscapeStyle::kShown ? "\\" : "\\\\";
    } else if (repr && cp == U'\t') {
      out += "\\t";
    } else if (repr && cp == U'\n') {
      out += "\\n";
    } else if (repr && cp == U'\r') {
      out += "\\r";
    } else if (is_control(cp) || moves_the_line(cp) || (str_repr && !is_printable(cp))) {
      out += python_escape(cp);
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

namespace {

// Where a sentence stops being readable: the byte of invalid UTF-8 or of a control character.
struct ScanStop {
  enum { kNone, kInvalidUtf8, kControl } what = kNone;
  std::size_t byte = 0;
};

// The splitting rule, once for tokenize and count_words: piece(i, len) for each character of a
// word (commas are dropped from words), end() at each white space and at the sentence's end.
template <class Piece, class End>
ScanStop scan_words(std::string_view sentence, Piece piece, End end) {
  for (std::size_t i = 0; i < sentence.size();) {
    // An ASCII byte is its own code point; any other starts a sequence that utf8proc decodes.
    char32_t cp = static_cast<unsigned char>(sentence[i]);
    const std::size_t len = cp < 0x80 ? 1 : decode_utf8(sentence, i, cp);
    if (len == 0) return {ScanStop::kInvalidUtf8, i};
    if (is_space(cp)) {
      end();
    } else if (is_control(cp)) {
      return {ScanStop::kControl, i};
    } else if (cp != U',') {
      piece(i, len);
    }
    i += len;
  }
  end();
  return {};
}

}  // namespace

std::vector<std::string> tokenize(std::string_view sentence, std::string_view which) {
  // Room for every word, counted first: growing the vector as it fills copies it and touches
  // twice the memory (a long text's first pages of the heap).
  std::vector<std::string> words;
  words.reserve(count_words(sentence).value_or(0));
  std::string word;
  const ScanStop stop = scan_words(
      sentence, [&](std::size_t i, std::size_t len) { word.append(sentence.substr(i, len)); },
      [&] {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
      });
  if (stop.what == ScanStop::kInvalidUtf8) {
    throw Error(fmt::format("{} is not valid UTF-8 (byte {}): a sentence must be UTF-8 text", which,
                            stop.byte));
  }
  if (stop.what == ScanStop::kControl) {
    throw Error(fmt::format(
        "{} has a control character (byte {}): only printable text and white space are allowed",
        which, stop.byte));
  }
  return words;
}

std::optional<std::size_t> count_words(std::string_view sentence) {
  std::size_t words = 0;
  bool in_word = false;  // a word has begun
  const ScanStop stop = scan_words(
      sentence, [&](std::size_t, std::size_t) { in_word = true; },
      [&] {
        words += in_word;
        in_word = false;
      });
  if (stop.what != ScanStop::kNone) return std::nullopt;
  return words;
}

bool is_blank(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = static_cast<unsigned char>(text[i]);
    const std::size_t len = cp < 0x80 ? 1 : decode_utf8(text, i, cp);
    if (len == 0 || !is_space(cp)) return false;
    i += len;
  }
  return true;
}

Vocabulary::Vocabulary(std::vector<std::string> tokens) : words_(std::move(tokens)) {
  id_list_.reserve(words_.size());
  for (std::size_t i = 0; i < words_.size(); ++i) id_list_.push_back(static_cast<std::int64_t>(i));
  index();
}

Vocabulary::Vocabulary(std::vector<std::string> tokens, std::vector<std::int64_t> ids)
    : words_(std::move(tokens)), id_list_(std::move(ids)) {
  if (id_list_.size() != words_.size()) throw Error("a vocabulary needs one id per token");
  index();
}

void Vocabulary::index() {
  if (words_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 2)) {
    throw Error("a vocabulary of " + std::to_string(words_.size()) + " tokens is too large");
  }
  std::size_t size = 16;
  while (size < 2 * words_.size()) size *= 2;
  slots_.assign(size, -1);
  const std::size_t mask = size - 1;
  for (std::size_t i = 0; i < words_.size(); ++i) {
    std::size_t s = std::hash<std::string_view>()(words_[i]) & mask;
    while (slots_[s] >= 0) s = (s + 1) & mask;  // distinct tokens: no word is found twice
    slots_[s] = static_cast<std::int32_t>(i);
  }
}

std::int64_t Vocabulary::id(std::string_view word) const {
  const std::size_t mask = slots_.size() - 1;  // slots_ is empty only in a moved-from dictionary
  const std::size_t start = std::hash<std::string_view>()(word) & mask;
  for (std::size_t s = start; !slots_.empty() && slots_[s] >= 0; s = (s + 1) & mask) {
    const auto i = static_cast<std::size_t>(slots_[s]);
    if (words_[i] == word) return id_list_[i];
  }
  throw Error("the word '" + std::string(word) + "' is not in the dictionary");
}

Vocabulary build_vocabulary(const std::vector<std::string>& words) {
  // Views sorted, not the strings: a swap moves 16 bytes, and each distinct word is copied once.
  std::vector<std::string_view> sorted(words.begin(), words.end());
  // Byte order, as std::string's: UTF-8 byte order is code point order.
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  return Vocabulary(std::vector<std::string>(sorted.begin(), sorted.end()));
}

std::vector<std::string> WordTokenizer::tokens(std::string_view text,
                                               std::string_view which) const {
  std::vector<std::string> words = tokenize(text, which);
  if (words.empty()) {
    throw Error(std::string(which) +
                " has no words: give at least one word (commas and white space do not count)");
  }
  return words;
}

std::shared_ptr<const Tokenizer> word_tokenizer() {
  static const auto tokenizer = std::make_shared<const WordTokenizer>();
  return tokenizer;
}

std::vector<std::int64_t> encode(const Vocabulary& vocabulary,
                                 const std::vector<std::string>& words) {
  std::vector<std::int64_t> ids;
  ids.reserve(words.size());
  for (const std::string& w : words) ids.push_back(vocabulary.id(w));
  return ids;
}

}  // namespace attn
