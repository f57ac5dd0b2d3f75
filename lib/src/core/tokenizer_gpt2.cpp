// GPT-2's tokenizer: its tables (read once from the compiled-in vocab.bpe), BPE, and the
// Tokenizer that the trace uses.

#include "attn/tokenizer_gpt2.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <limits>
#include <unordered_map>

#include "attn/error.hpp"
#include "gpt2_data.hpp"

namespace attn {

namespace {

// The character that stands for each byte in encoder.json (encoder.py's bytes_to_unicode):
// the printable bytes of Latin-1 stand for themselves, the other 68, in order, for U+0100 on.
// `order` lists the bytes in the order of their ids 0 to 255.
struct ByteCharacters {
  std::array<char32_t, 256> of_byte{};
  std::array<unsigned char, 256> order{};
};

ByteCharacters byte_characters() {
  ByteCharacters bc;
  auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; };
  std::size_t next = 0;
  for (int b = 0; b < 256; ++b) {
    if (printable(b)) bc.order[next++] = static_cast<unsigned char>(b);
  }
  char32_t extra = 256;
  for (int b = 0; b < 256; ++b) {
    if (!printable(b)) bc.order[next++] = static_cast<unsigned char>(b);
    bc.of_byte[static_cast<std::size_t>(b)] = printable(b) ? static_cast<char32_t>(b) : extra++;
  }
  return bc;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {  // below U+0800: every character of bytes_to_unicode()
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

struct Tables {
  std::array<std::int32_t, 256> byte_id{};               // byte -> its token's id
  std::array<std::int16_t, 324> byte_of_character{};     // bytes_to_unicode()'s inverse, or -1
  std::vector<std::string> tokens;                       // id -> encoder.json's string
  std::unordered_map<std::string_view, std::int32_t> ids;  // views into `tokens`
  std::unordered_map<std::uint64_t, std::int32_t> ranks;   // (left id, right id) -> merge rank
};

// One merge line "left right": the tokens' ids. Throws (a damaged build) if either is unknown.
std::pair<std::int32_t, std::int32_t> merge_ids(const Tables& t, std::string_view line) {
  const std::size_t space = line.find(' ');
  const auto left = t.ids.find(line.substr(0, space));
  const auto right =
      space == std::string_view::npos ? t.ids.end() : t.ids.find(line.substr(space + 1));
  if (left == t.ids.end() || right == t.ids.end()) {
    throw Error(fmt::format("GPT-2's merges are damaged at '{}'", line));
  }
  return {left->second, right->second};
}

void add_token(Tables& t, std::string token) {
  const auto id = static_cast<std::int32_t>(t.tokens.size());
  t.tokens.push_back(std::move(token));
  t.ids.emplace(t.tokens.back(), id);  // `tokens` never reallocates: reserved in full
}

Tables load_tables() {
  Tables t;
  t.tokens.reserve(kGpt2VocabSize);
  t.ids.reserve(kGpt2VocabSize);
  t.ranks.reserve(kGpt2VocabSize - 257);
  const ByteCharacters bc = byte_characters();
  t.byte_of_character.fill(-1);
  for (std::size_t id = 0; id < 256; ++id) {
    const unsigned char b = bc.order[id];
    std::string token;
    append_utf8(token, bc.of_byte[b]);
    add_token(t, std::move(token));
    t.byte_id[b] = static_cast<std::int32_t>(id);
    t.byte_of_character[bc.of_byte[b]] = b;
  }
  std::string_view bpe = gpt2_detail::vocab_bpe();
  bpe.remove_prefix(bpe.find('\n') + 1);  // "#version: 0.2"
  while (!bpe.empty()) {
    const std::size_t end = bpe.find('\n');
    const std::string_view line = bpe.substr(0, end);
    bpe.remove_prefix(end == std::string_view::npos ? bpe.size() : end + 1);
    if (line.empty()) continue;
    const auto [left, right] = merge_ids(t, line);
    t.ranks.emplace(pair_key(left, right), static_cast<std::int32_t>(t.tokens.size() - 256));
    add_token(t, t.tokens[static_cast<std::size_t>(left)] + t.tokens[static_cast<std::size_t>(right)]);
  }
  add_token(t, "<|endoftext|>");
  if (static_cast<std::int64_t>(t.tokens.size()) != kGpt2VocabSize) {
    throw Error(fmt::format("GPT-2's merges are damaged: {} tokens", t.tokens.size()));
  }
  return t;
}

const Tables& tables() {
  static const Tables t = load_tables();
  return t;
}

// Python's str.isprintable() for one character: not a control, format, surrogate, private-use
// or unassigned character, nor a separator other than the space.
bool python_printable(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return false;
    case UTF8PROC_CATEGORY_ZS:
      return cp == U' ';
    default:
      return true;
  }
}

// encoder.py's bpe(): the piece's byte tokens, merged lowest rank first, every occurrence of
// that pair left to right, until no adjacent pair has a merge.
std::vector<std::int32_t> bpe(const Tables& t, std::string_view piece) {
  std::vector<std::int32_t> word;
  word.reserve(piece.size());
  for (const char c : piece) word.push_back(t.byte_id[static_cast<unsigned char>(c)]);
  std::vector<std::int32_t> merged;
  while (word.size() > 1) {
    std::int32_t best = std::numeric_limits<std::int32_t>::max();
    std::uint64_t best_pair = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = t.ranks.find(pair_key(word[i], word[i + 1]));
      if (it != t.ranks.end() && it->second < best) {
        best = it->second;
        best_pair = it->first;
      }
    }
    if (best == std::numeric_limits<std::int32_t>::max()) break;
    merged.clear();
    for (std::size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && pair_key(word[i], word[i + 1]) == best_pair) {
        merged.push_back(256 + best);  // merge r makes token 256 + r
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word.swap(merged);
  }
  return word;
}

// Bytes as a reader sees them: a space as ␣, a newline as ↵, a tab as ⇥, any other character
// that Python's repr() would escape as repr() writes it (\r, \x85, \xa0, \u200d), and a byte
// that is not part of a whole UTF-8 character as \xNN.
std::string readable_bytes(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(bytes, i, cp);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(bytes[i++]));
      continue;
    }
    if (cp == U' ') {
      out += "␣";
    } else if (cp == U'\n') {
      out += "↵";
    } else if (cp == U'\t') {
      out += "⇥";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (!python_printable(cp)) {
      out += cp < 0x100     ? fmt::format("\\x{:02x}", static_cast<unsigned>(cp))
             : cp < 0x10000 ? fmt::format("\\u{:04x}", static_cast<unsigned>(cp))
                            : fmt::format("\\U{:08x}", static_cast<unsigned>(cp));
    } else {
      out.append(bytes.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> gpt2_encode(std::string_view text, std::string_view which) {
  if (const std::size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    throw Error(fmt::format("{} is not valid UTF-8 (byte {}): a sentence must be UTF-8 text",
                            which, bad));
  }
  const Tables& t = tables();
  std::unordered_map<std::string_view, std::vector<std::int32_t>> cache;  // encoder.py's cache
  std::vector<std::int64_t> ids;
  for (const std::string_view piece : gpt2_pieces(text)) {
    auto it = cache.find(piece);
    if (it == cache.end()) it = cache.emplace(piece, bpe(t, piece)).first;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  }
  return ids;
}

const std::string& gpt2_token(std::int64_t id) {
  if (id < 0 || id >= kGpt2VocabSize) {
    throw Error(fmt::format("GPT-2 has no token {}: its ids are 0 to {}", id, kGpt2VocabSize - 1));
  }
  return tables().tokens[static_cast<std::size_t>(id)];
}

std::int64_t gpt2_id(std::string_view token) {
  const auto it = tables().ids.find(token);
  if (it == tables().ids.end()) {
    throw Error(fmt::format("'{}' is not one of GPT-2's tokens", escape_controls(token)));
  }
  return it->second;
}

std::string gpt2_readable(std::string_view token) {
  const Tables& t = tables();
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(token, i, cp);
    if (len == 0 || cp >= t.byte_of_character.size() || t.byte_of_character[cp] < 0) {
      return escape_controls(token);  // not a token's string (<|endoftext|>): shown as it is
    }
    bytes += static_cast<char>(t.byte_of_character[cp]);
    i += len;
  }
  return readable_bytes(bytes);
}

std::vector<std::string> Gpt2Tokenizer::tokens(std::string_view text,
                                               std::string_view which) const {
  if (text.empty()) {
    throw Error(fmt::format("{} is empty: give at least one character", which));
  }
  std::vector<std::string> out;
  for (const std::int64_t id : gpt2_encode(text, which)) out.push_back(gpt2_token(id));
  return out;
}

Vocabulary Gpt2Tokenizer::vocabulary(const std::vector<std::string>& tokens) const {
  std::vector<std::int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back(gpt2_id(token));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> words;
  words.reserve(ids.size());
  for (const std::int64_t id : ids) words.push_back(gpt2_token(id));
  return Vocabulary(std::move(words), std::move(ids));
}

std::shared_ptr<const Tokenizer> gpt2_tokenizer() {
  static const auto tokenizer = std::make_shared<const Gpt2Tokenizer>();
  return tokenizer;
}

}  // namespace attn
