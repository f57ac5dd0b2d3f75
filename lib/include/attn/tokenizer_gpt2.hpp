#pragma once

// GPT-2's tokenizer: OpenAI's byte-level BPE (encoder.py of github.com/openai/gpt-2), with its
// 50,257 tokens and 50,000 merges (data/gpt2/encoder.json and vocab.bpe, compiled in).
//
// How the ids work. Text is split by encoder.py's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (\p{L} letters, \p{N} numbers, \s Unicode's White_Space, as Python's `regex` module has them),
// each piece's UTF-8 bytes become byte tokens, and adjacent tokens are merged, lowest merge rank
// first, until no pair of them has a merge. A token is written as encoder.json writes it: each
// byte as one character of bytes_to_unicode() (the printable bytes of Latin-1 as themselves,
// the others as U+0100 and up: a space is "Ġ", a newline "Ċ"), so "Ġshort" is " short".
// Ids 0 to 255 are the 256 byte tokens, in bytes_to_unicode()'s order; id 256 + r is the token
// that merge r makes (vocab.bpe's line r + 2); 50256 is "<|endoftext|>", which text never
// makes (it is tokenized as the characters it is made of, as encoder.py does).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/tokenizer.hpp"

namespace attn {

// GPT-2's vocabulary size: 256 bytes, 50,000 merges, <|endoftext|>.
inline constexpr std::int64_t kGpt2VocabSize = 50257;
// <|endoftext|>'s id: what pads a batch's shorter texts (GPT-2 has no padding token).
inline constexpr std::int64_t kGpt2EndOfText = 50256;

// GPT-2's token ids of `text`, as encoder.py's encode() gives them. `which` names the text in
// messages ("the sentence"). Throws Error naming the byte offset of invalid UTF-8.
std::vector<std::int64_t> gpt2_encode(std::string_view text, std::string_view which = "the text");

// How many ids gpt2_encode(text) gives, counted without storing them (nor the text's pieces):
// nullopt for an empty text or one that is not valid UTF-8, which Gpt2Tokenizer refuses. Both
// throw Error for a piece (a run of one class, no space in it) over 2 GiB, which no sentence is.
std::optional<std::size_t> gpt2_count(std::string_view text);

// The token with this id, as encoder.json writes it ("Ġshort"); valid for the program's life.
// Throws Error for an id outside 0 to 50256.
std::string_view gpt2_token(std::int64_t id);

// The id of a token written as encoder.json writes it. Throws Error if there is no such token.
std::int64_t gpt2_id(std::string_view token);

// A token as a reader sees it: its bytes as UTF-8, a space shown as ␣, and control characters
// and bytes that are not whole UTF-8 characters escaped as Python's repr() writes them ("\n",
// "\xe6"). "Ġshort" is "␣short", "Ċ" is "\n".
std::string gpt2_readable(std::string_view token);

// What the pre-tokenizer's pattern sees in a character: \p{L} (Unicode categories Lu, Ll, Lt,
// Lm, Lo), \p{N} (Nd, Nl, No), \s (Unicode's White_Space, as Python's `regex` module has it:
// U+0085 is, U+FEFF and U+180E are not; U+001C to U+001F, which Python's str.isspace() counts,
// are not), or anything else.
enum class Gpt2Class { kLetter, kNumber, kSpace, kOther };
Gpt2Class gpt2_class(char32_t cp);

// encoder.py's pre-tokenizer: the pieces of `text`, in order, that BPE then splits into
// tokens. Requires: valid UTF-8.
std::vector<std::string_view> gpt2_pieces(std::string_view text);

// The same pieces one at a time, read from the text as they are taken, so that a long text is
// not held again as characters or pieces:
//   Gpt2Pieces reader(text);
//   for (std::string_view piece; reader.next(piece);) ...
// Requires: valid UTF-8 that outlives the reader.
class Gpt2Pieces {
 public:
  explicit Gpt2Pieces(std::string_view text) : text_(text) {}
  // The next piece; false after the last.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

// GPT-2's tokenizer behind the Tokenizer interface: tokens() gives encoder.json's strings,
// vocabulary() the distinct tokens with their GPT-2 ids (in id order, not numbered from 0),
// display() the readable form. Any valid UTF-8 text, control characters included.
class Gpt2Tokenizer final : public Tokenizer {
 public:
  std::string_view name() const override { return "gpt2"; }
  std::vector<std::string> tokens(std::string_view text, std::string_view which) const override;
  std::optional<std::size_t> count(std::string_view text) const override {
    return gpt2_count(text);
  }
  Vocabulary vocabulary(const std::vector<std::string>& tokens) const override;
  std::string display(std::string_view token) const override { return gpt2_readable(token); }
  bool display_escapes() const override { return true; }
  std::int64_t padding_id(const Vocabulary&) const override { return kGpt2EndOfText; }
};

// The one Gpt2Tokenizer, shared; its tables are read on first use (a few milliseconds).
std::shared_ptr<const Tokenizer> gpt2_tokenizer();

}  // namespace attn
