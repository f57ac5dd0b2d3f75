// GPT-2's tokenizer: its tables (read once from the compiled-in vocab.bpe), BPE, and the
// Tokenizer that the trace uses.

#include "attn/tokenizer_gpt2.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <unordered_map>
#include <utility>

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
  auto printable = [](int b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  };
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

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// The tables, in flat arrays (no allocation per token), so that they load in milliseconds:
// every token's string in one buffer, and two open-addressing hash tables (linear probing,
// 2^17 slots for about 50,000 entries): string -> id, and (left id, right id) -> merge rank.
struct Tables {
  static constexpr std::size_t kSlots = std::size_t{1} << 17;
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::array<std::int32_t, 256> byte_id{};            // byte -> its token's id
  std::array<std::int16_t, 324> byte_of_character{};  // bytes_to_unicode()'s inverse, or -1
  std::string text;                                   // every token's string, in id order
  std::vector<std::uint32_t> start{0};                // token i is text[start[i], start[i + 1])
  std::vector<std::int32_t> id_slots = std::vector<std::int32_t>(kSlots, -1);
  std::vector<std::uint64_t> pair_slots = std::vector<std::uint64_t>(kSlots, kEmpty);
  std::vector<std::int32_t> pair_ranks = std::vector<std::int32_t>(kSlots, -1);

  std::string_view token(std::int32_t id) const {
    const auto i = static_cast<std::size_t>(id);
    return std::string_view(text).substr(start[i], start[i + 1] - start[i]);
  }
  // The id of a token's string, or -1.
  std::int32_t id(std::string_view s) const {
    for (std::size_t slot = fnv1a(s) & (kSlots - 1);; slot = (slot + 1) & (kSlots - 1)) {
      if (id_slots[slot] < 0 || token(id_slots[slot]) == s) return id_slots[slot];
    }
  }
  // The rank of the merge of two adjacent tokens, or -1.
  std::int32_t rank(std::uint64_t key) const {
    for (std::size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> 47;;
         slot = (slot + 1) & (kSlots - 1)) {
      if (pair_slots[slot] == key || pair_slots[slot] == kEmpty) return pair_ranks[slot];
    }
  }
  void add_token(std::string_view left, std::string_view right = {}) {
    text.append(left).append(right);  // reserved in full: the views stay valid
    start.push_back(static_cast<std::uint32_t>(text.size()));
    const auto id = static_cast<std::int32_t>(start.size() - 2);
    std::size_t slot = fnv1a(token(id)) & (kSlots - 1);
    while (id_slots[slot] >= 0) slot = (slot + 1) & (kSlots - 1);
    id_slots[slot] = id;
  }
  void add_merge(std::uint64_t key, std::int32_t rank) {
    std::size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> 47;
    while (pair_slots[slot] != kEmpty) slot = (slot + 1) & (kSlots - 1);
    pair_slots[slot] = key;
    pair_ranks[slot] = rank;
  }
};

// One merge line "left right": the tokens' ids. Throws (a damaged build) if either is unknown.
std::pair<std::int32_t, std::int32_t> merge_ids(const Tables& t, std::string_view line) {
  const std::size_t space = line.find(' ');
  const std::int32_t left = t.id(line.substr(0, space));
  const std::int32_t right = space == std::string_view::npos ? -1 : t.id(line.substr(space + 1));
  if (left < 0 || right < 0) throw Error(fmt::format("GPT-2's merges are damaged at '{}'", line));
  return {left, right};
}

Tables load_tables() {
  Tables t;
  std::string_view bpe = gpt2_detail::vocab_bpe();
  // A merge's token is at most its line's length: the buffer never moves.
  t.text.reserve(bpe.size() + 2 * 256 + 16);
  t.start.reserve(kGpt2VocabSize + 1);
  t.byte_of_character.fill(-1);
  const ByteCharacters bc = byte_characters();
  for (std::size_t id = 0; id < 256; ++id) {
    const unsigned char b = bc.order[id];
    std::string token;
    append_utf8(token, bc.of_byte[b]);
    t.add_token(token);
    t.byte_id[b] = static_cast<std::int32_t>(id);
    t.byte_of_character[bc.of_byte[b]] = static_cast<std::int16_t>(b);
  }
  bpe.remove_prefix(bpe.find('\n') + 1);  // "#version: 0.2"
  while (!bpe.empty()) {
    const std::size_t end = bpe.find('\n');
    const std::string_view line = bpe.substr(0, end);
    bpe.remove_prefix(end == std::string_view::npos ? bpe.size() : end + 1);
    if (line.empty()) continue;
    const auto [left, right] = merge_ids(t, line);
    t.add_merge(pair_key(left, right), static_cast<std::int32_t>(t.start.size() - 1 - 256));
    t.add_token(t.token(left), t.token(right));
  }
  t.add_token("<|endoftext|>");
  if (static_cast<std::int64_t>(t.start.size() - 1) != kGpt2VocabSize) {
    throw Error(fmt::format("GPT-2's merges are damaged: {} tokens", t.start.size() - 1));
  }
  return t;
}

const Tables& tables() {
  static const Tables t = load_tables();
  return t;
}

// encoder.py's bpe(), as it runs: the piece's byte tokens, merged lowest rank first, every
// occurrence of that pair left to right, until no adjacent pair has a merge. Each merge scans
// the whole piece: for a short piece.
std::vector<std::int32_t> bpe_by_rounds(const Tables& t, std::string_view piece) {
  std::vector<std::int32_t> word;
  word.reserve(piece.size());
  for (const char c : piece) word.push_back(t.byte_id[static_cast<unsigned char>(c)]);
  std::vector<std::int32_t> merged;
  while (word.size() > 1) {
    std::int32_t best = std::numeric_limits<std::int32_t>::max();
    std::uint64_t best_pair = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const std::uint64_t key = pair_key(word[i], word[i + 1]);
      const std::int32_t r = t.rank(key);
      if (r >= 0 && r < best) {
        best = r;
        best_pair = key;
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

// The same tokens from a heap of the adjacent pairs that have a merge, taken in order of rank,
// then of position, each merged if it is still there (a pair that overlapped one merged just
// before is not): O(n log n), for a long piece, where a scan per merge would take minutes on a
// megabyte. The order is encoder.py's: the token that merge r makes is newer than both of its
// parts (vocab.bpe lists a merge after those that make its parts), so every pair a merge of
// rank r makes ranks after r, and encoder.py's rounds take the ranks in increasing order, each
// round merging that rank's pairs left to right, as the heap does.
std::vector<std::int32_t> bpe_by_heap(const Tables& t, std::string_view piece) {
  // The tokens in a list, each at its first byte's place: its id (-1 once merged into the token
  // before it), and the places of the tokens before and after it (-1: none).
  const auto n = static_cast<std::int32_t>(piece.size());
  std::vector<std::int32_t> id(piece.size()), prev(piece.size()), next(piece.size());
  for (std::int32_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    id[at] = t.byte_id[static_cast<unsigned char>(piece[at])];
    prev[at] = i - 1;
    next[at] = i + 1 < n ? i + 1 : -1;
  }
  // A merge's rank and the place of its pair's first token: still there if the two tokens at
  // that place are still its pair (a pair's rank names it).
  struct Pair {
    std::int32_t rank, at;
  };
  const auto after = [](const Pair& a, const Pair& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.at > b.at;  // a min-heap
  };
  const auto key_at = [&](std::int32_t at) {
    const std::int32_t right = next[static_cast<std::size_t>(at)];
    return right < 0
               ? Tables::kEmpty
               : pair_key(id[static_cast<std::size_t>(at)], id[static_cast<std::size_t>(right)]);
  };
  std::vector<Pair> heap;
  heap.reserve(piece.size());
  for (std::int32_t i = 0; i + 1 < n; ++i) {
    if (const std::int32_t r = t.rank(key_at(i)); r >= 0) heap.push_back({r, i});
  }
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const Pair p = heap.back();
    heap.pop_back();
    const auto at = static_cast<std::size_t>(p.at);
    if (id[at] < 0 || t.rank(key_at(p.at)) != p.rank) continue;
    const auto right = static_cast<std::size_t>(next[at]);
    id[at] = 256 + p.rank;  // merge r makes token 256 + r
    id[right] = -1;
    next[at] = next[right];
    if (next[at] >= 0) prev[static_cast<std::size_t>(next[at])] = p.at;
    for (const std::int32_t changed : {prev[at], p.at}) {
      if (changed < 0) continue;
      if (const std::int32_t r = t.rank(key_at(changed)); r >= 0) {
        heap.push_back({r, changed});
        std::push_heap(heap.begin(), heap.end(), after);
      }
    }
  }
  std::vector<std::int32_t> word;
  for (std::int32_t i = 0; i >= 0; i = next[static_cast<std::size_t>(i)]) {
    word.push_back(id[static_cast<std::size_t>(i)]);  // the first token is never merged away
  }
  return word;
}

// Pieces up to this long by rounds, longer ones by the heap: the same tokens, and each the
// quicker there (400 KB of distinct 9-byte pieces: 61 ms by rounds, 66 by the heap; of 17-byte
// pieces, 61 and 51; of 33-byte pieces, 65 and 41).
constexpr std::size_t kBpeRoundsUpTo = 16;

std::vector<std::int32_t> bpe(const Tables& t, std::string_view piece) {
  if (piece.size() <= kBpeRoundsUpTo) return bpe_by_rounds(t, piece);
  // The heap's places are 32-bit: a sentence is at most 1 GiB (the reader's cap).
  if (piece.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw Error(fmt::format("a piece of {} bytes is more than GPT-2's tokenizer takes (2 GiB)",
                            piece.size()));
  }
  return bpe_by_heap(t, piece);
}

// Bytes as a reader sees them: a space as ␣, a newline as ↵, a tab as ⇥, any other character
// that Python's repr() would escape as repr() writes it (\r, \x85, \xa0, \u200d), a byte that
// is not part of a whole UTF-8 character as \xNN, and so a backslash as \\ (\x80 is then always a
// byte, never the text \x80, whose first token reads \\).
std::string readable_bytes(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(bytes, i, cp);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(bytes[i++]));
      continue;
    }
    if (cp == U'\\') {
      out += "\\\\";
    } else if (cp == U' ') {
      out += "␣";
    } else if (cp == U'\n') {
      out += "↵";
    } else if (cp == U'\t') {
      out += "⇥";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (!is_printable(cp)) {
      out += python_escape(cp);
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
    throw Error(
        fmt::format("{} is not valid UTF-8 (byte {}): a sentence must be UTF-8 text", which, bad));
  }
  const Tables& t = tables();
  std::unordered_map<std::string_view, std::vector<std::int32_t>> cache;  // encoder.py's cache
  std::vector<std::int64_t> ids;
  Gpt2Pieces pieces(text);
  for (std::string_view piece; pieces.next(piece);) {
    auto it = cache.find(piece);
    if (it == cache.end()) it = cache.emplace(piece, bpe(t, piece)).first;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  }
  return ids;
}

std::optional<std::size_t> gpt2_count(std::string_view text) {
  if (text.empty() || invalid_utf8_offset(text) != std::string_view::npos) return std::nullopt;
  const Tables& t = tables();
  // Each distinct piece's count, forgotten when there are many: a text of distinct words would
  // otherwise hold a table as large as its tokens.
  constexpr std::size_t kRemembered = std::size_t{1} << 16;
  std::unordered_map<std::string_view, std::size_t> counts;
  std::size_t total = 0;
  Gpt2Pieces pieces(text);
  for (std::string_view piece; pieces.next(piece);) {
    auto it = counts.find(piece);
    if (it == counts.end()) {
      if (counts.size() >= kRemembered) counts.clear();
      it = counts.emplace(piece, bpe(t, piece).size()).first;
    }
    total += it->second;
  }
  return total;
}

std::string_view gpt2_token(std::int64_t id) {
  if (id < 0 || id >= kGpt2VocabSize) {
    throw Error(fmt::format("GPT-2 has no token {}: its ids are 0 to {}", id, kGpt2VocabSize - 1));
  }
  return tables().token(static_cast<std::int32_t>(id));
}

std::int64_t gpt2_id(std::string_view token) {
  const std::int32_t id = tables().id(token);
  if (id < 0) throw Error(fmt::format("'{}' is not one of GPT-2's tokens", escape_controls(token)));
  return id;
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
  for (const std::int64_t id : gpt2_encode(text, which)) out.emplace_back(gpt2_token(id));
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
  for (const std::int64_t id : ids) words.emplace_back(gpt2_token(id));
  return Vocabulary(std::move(words), std::move(ids));
}

std::shared_ptr<const Tokenizer> gpt2_tokenizer() {
  static const auto tokenizer = std::make_shared<const Gpt2Tokenizer>();
  return tokenizer;
}

}  // namespace attn
