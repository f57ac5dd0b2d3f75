#pragma once

// Tokenizers: the Tokenizer interface, and the walkthrough's, which drops commas, splits on
// white space and numbers the sorted distinct words. UTF-8 as the tool reads and shows it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The sentence's words in order: commas removed, split on white space (Python's str.split():
// ASCII and Unicode white space). A word is whatever white space separates, in any script.
// Requires: valid UTF-8 without control characters other than white space.
// Throws Error naming the text (`which`: "sentence 2 of 3") and the byte offset, from 0, of
// invalid UTF-8 or of a control character.
std::vector<std::string> tokenize(std::string_view sentence,
                                  std::string_view which = "the sentence");

// How many words tokenize(sentence) gives, counted without storing them; nullopt where tokenize
// would throw.
std::optional<std::size_t> count_words(std::string_view sentence);

// White space as Python's str.isspace() defines it: ASCII's and Unicode's.
bool is_space(char32_t c);

// Whether the text is empty or white space alone (Python's str.isspace(): ASCII and Unicode),
// as a blank line of a batch is. Invalid UTF-8 is not blank.
bool is_blank(std::string_view text);

// A dictionary: tokens and their ids, numbered from 0 (the walkthrough's) or given (a
// tokenizer's fixed vocabulary, of which a run's dictionary holds the tokens it uses).
class Vocabulary {
 public:
  // Tokens numbered from 0. Requires: distinct tokens, in id order.
  explicit Vocabulary(std::vector<std::string> tokens);
  // Tokens with their ids. Requires: distinct tokens, one id each, ids increasing.
  Vocabulary(std::vector<std::string> tokens, std::vector<std::int64_t> ids);

  // Tokens in id order.
  const std::vector<std::string>& words() const { return words_; }
  // Their ids, in the same order.
  const std::vector<std::int64_t>& ids() const { return id_list_; }
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  // One more than the largest id: the fewest rows an embedding table of these ids has (size()
  // when the tokens are numbered from 0).
  std::int64_t end_id() const { return id_list_.empty() ? 0 : id_list_.back() + 1; }
  // The id of `word`. Throws Error if the word is not in the dictionary.
  std::int64_t id(std::string_view word) const;

 private:
  // Fills slots_ from words_.
  void index();

  std::vector<std::string> words_;  // in id order
  std::vector<std::int64_t> id_list_;
  // An open-addressing table of words_'s positions (−1: empty), at most half full, probed in
  // turn from a word's hash: a lookup allocates nothing, and building it takes one block, not a
  // node per word (with std::unordered_map, a run of 16,384 words spent 4 ms more on it).
  std::vector<std::int32_t> slots_;
};

// The walkthrough's dictionary of a sentence's words: the distinct words sorted by code point
// (Python's sorted()), numbered from 0.
Vocabulary build_vocabulary(const std::vector<std::string>& words);

// How text becomes tokens and ids: the seam where a tokenizer plugs into the trace.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Its name, as the settings name it: "words".
  virtual std::string_view name() const = 0;
  // The tokens of one text, in order. `which` names the text in messages ("the sentence").
  // Throws Error for text it cannot tokenize (invalid UTF-8, a control character).
  virtual std::vector<std::string> tokens(std::string_view text, std::string_view which) const = 0;
  // How many tokens `tokens` gives, where that can be counted without storing them (so that a
  // text too long for the memory limit is refused before its tokens take the memory); nullopt
  // where it cannot, or where `tokens` would throw.
  virtual std::optional<std::size_t> count(std::string_view /*text*/) const { return std::nullopt; }
  // The dictionary of a run whose texts have these tokens: every id the run uses.
  virtual Vocabulary vocabulary(const std::vector<std::string>& tokens) const = 0;
  // A token as a reader sees it in the dictionary and the labels.
  virtual std::string display(std::string_view token) const = 0;
  // Whether display() writes what a terminal must not see as escapes already (GPT-2's partial
  // bytes as \xNN, its invisible characters as \u200d), so that every view shows its labels as
  // they are (EscapeStyle::kShown) rather than escaping their backslashes a second time.
  virtual bool display_escapes() const { return false; }
  // The id that pads the shorter texts of a batch: by default the one after the dictionary's.
  virtual std::int64_t padding_id(const Vocabulary& vocabulary) const {
    return vocabulary.end_id();
  }
};

// The walkthrough's tokenizer: commas dropped, words split on white space (tokenize), the
// sorted distinct words numbered from 0 (build_vocabulary); each word shown as it is.
class WordTokenizer final : public Tokenizer {
 public:
  std::string_view name() const override { return "words"; }
  std::vector<std::string> tokens(std::string_view text, std::string_view which) const override;
  std::optional<std::size_t> count(std::string_view text) const override {
    return count_words(text);
  }
  Vocabulary vocabulary(const std::vector<std::string>& tokens) const override {
    return build_vocabulary(tokens);
  }
  std::string display(std::string_view token) const override { return std::string(token); }
};

// The one WordTokenizer, shared.
std::shared_ptr<const Tokenizer> word_tokenizer();

// ---- UTF-8, as the tool reads it (sentences, and labels in files) and shows it ----

// The length in bytes (1 to 4) of the UTF-8 character at text[i], with its code point in `cp`;
// 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and values above
// U+10FFFF are invalid). Requires: i < text.size().
std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& cp);

// The offset of the first byte of `text` that is not valid UTF-8, or std::string_view::npos.
std::size_t invalid_utf8_offset(std::string_view text);

// A control character: U+0000 to U+001F, U+007F (DEL), U+0080 to U+009F (the C1 controls).
bool is_control(char32_t cp);

// A character that reorders or breaks the rest of a line on a terminal: the bidirectional
// controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and the line and
// paragraph separators U+2028, U+2029.
bool moves_the_line(char32_t cp);

// Python's str.isprintable() for one character: false for the control, format (U+FEFF, U+200D),
// surrogate, private-use and unassigned characters and for the separators other than the space
// (U+00A0, U+2028, U+2029, U+3000), by libutf8proc's Unicode version.
bool is_printable(char32_t cp);

// A character as Python's repr() escapes it: \xNN up to U+00FF, \uNNNN up to U+FFFF, else
// \UNNNNNNNN, in lowercase hex (\xa0, \u2028, \U000f0000).
std::string python_escape(char32_t cp);

// How escape_controls writes what it escapes.
enum class EscapeStyle {
  // As Python's repr() writes it inside the quotes: \t, \n, \r, otherwise \x1b, \x7f, \x9b;
  // a backslash as \\, so that the escaped text reads back unambiguously.
  kRepr,
  // Python's repr() of a str, inside its quotes: as kRepr, and every other character that
  // str.isprintable() rejects escaped too (python_escape: \xa0, \u3000, \ufeff), so that a
  // quoted sentence or word shows its white space and its invisible characters.
  kStrRepr,
  // For an error message that quotes what the user typed: every escaped character or byte as
  // \xNN (a newline as \x0a), and a backslash left as it is (`--steps 'a\b'` is quoted as a\b).
  kMessage,
  // For text that a tokenizer shows escaped already (Tokenizer::display_escapes: GPT-2's byte
  // that is only part of a character as \xf0): as kRepr, but a backslash left as it is, so that
  // \xf0 is not shown as \\xf0. A control character that it still holds is escaped as kRepr's.
  kShown,
};

// Text as it may be written to a terminal: each control character (is_control), each character
// that reorders or breaks the line (moves_the_line) and each byte that is not valid UTF-8
// escaped, so that no text from a file or an argument can move the cursor, clear the screen, set
// the window's title, split a line or show its characters in another order. Everything else is
// unchanged, but for kStrRepr's characters that are not printable.
std::string escape_controls(std::string_view text, EscapeStyle style = EscapeStyle::kRepr);

// encode(vocabulary, words): each word's id, in sentence order.
std::vector<std::int64_t> encode(const Vocabulary& vocabulary,
                                 const std::vector<std::string>& words);

}  // namespace attn
