// Fuzzes GPT-2's tokenizer on any bytes: text that is not UTF-8 is refused by gpt2_encode and not
// counted; for UTF-8 text, the pieces cover the text in order, gpt2_count is the number of ids,
// and the ids' tokens, turned back into bytes (bytes_to_unicode() undone), are the text: BPE, by
// rounds or from the heap for a piece over 16 bytes, loses and repeats nothing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "attn/tokenizer_gpt2.hpp"

namespace {

// A printable byte of Latin-1 stands for itself in a token; the others, in order, for U+0100 on.
bool printable(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

// The bytes a token stands for.
std::string token_bytes(std::string_view token) {
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    char32_t cp = 0;
    const std::size_t len = attn::decode_utf8(token, i, cp);
    if (len == 0) __builtin_trap();  // a token's string is UTF-8
    i += len;
    if (cp < 256) {
      if (!printable(static_cast<int>(cp))) __builtin_trap();
      bytes += static_cast<char>(cp);
      continue;
    }
    int n = static_cast<int>(cp - 256);  // the n-th byte that is not printable
    int b = 0;
    for (; b < 256; ++b) {
      if (!printable(b) && n-- == 0) break;
    }
    if (b == 256) __builtin_trap();
    bytes += static_cast<char>(b);
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<std::size_t> count = attn::gpt2_count(text);
  std::vector<std::int64_t> ids;
  try {
    ids = attn::gpt2_encode(text);
  } catch (const attn::Error&) {
    // Only text that is not UTF-8 is refused, and it is not counted.
    if (attn::invalid_utf8_offset(text) == std::string_view::npos || count) __builtin_trap();
    return 0;
  }
  if (text.empty()) {
    if (count || !ids.empty()) __builtin_trap();
    return 0;
  }
  if (!count || *count != ids.size()) __builtin_trap();
  std::string pieces;
  for (const std::string_view piece : attn::gpt2_pieces(text)) {
    if (piece.empty()) __builtin_trap();
    pieces += piece;
  }
  if (pieces != text) __builtin_trap();
  std::string joined;
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= attn::kGpt2EndOfText) __builtin_trap();  // text never makes <|endoftext|>
    joined += token_bytes(attn::gpt2_token(id));
  }
  if (joined != text) __builtin_trap();
  return 0;
}
