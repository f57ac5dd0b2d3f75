#pragma once

// Shared by the text renderers (render_text.cpp, render_explain.cpp); not part of the library's
// interface.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/render_text.hpp"
#include "attn/tokenizer.hpp"
#include "attn/trace.hpp"

namespace attn::render_detail {

// A long output written in parts of about a MiB: never one string that grows by copying itself,
// nor joined into one more copy of the whole (cli writes the parts one after another).
class PartWriter {
 public:
  PartWriter() { current_.reserve(kReservedBytes); }
  // The part being written; the same string object for the writer's life.
  std::string& text() { return current_; }
  // Starts a new part once the current one holds a MiB or more. A part's memory is taken whole
  // at its start, a MiB and 64 KiB, so that less than 64 KiB written past the MiB before this is
  // called never makes it grow by doubling: a part holds about its text, not up to twice it.
  void cut_if_long() {
    if (current_.size() >= kPartBytes) {
      parts_.push_back(std::move(current_));
      current_ = std::string();
      current_.reserve(kReservedBytes);
    }
  }
  // The parts, the last one too.
  std::vector<std::string> finish() && {
    if (!current_.empty()) parts_.push_back(std::move(current_));
    return std::move(parts_);
  }

 private:
  static constexpr std::size_t kPartBytes = std::size_t{1} << 20;
  static constexpr std::size_t kReservedBytes = kPartBytes + (std::size_t{64} << 10);
  std::string current_;
  std::vector<std::string> parts_;
};

// The parts one after another, in one string.
std::string joined(const std::vector<std::string>& parts);

// x⁽²⁾: a name with a superscript index in parentheses.
std::string sup(std::string_view name, std::int64_t i);
// ω₂,₅: one cell, row and column (tokens, counted from 1) apart by a comma, so that it never reads
// as ω₂₅, row 25 of ω.
std::string sub2(std::string_view name, std::int64_t i, std::int64_t j);
// The digits of n as subscripts: ₁₂.
std::string subscript(std::int64_t n);
// The width the text views keep to, as PyTorch's printing does (linewidth 80).
inline constexpr std::size_t kTextWidth = 80;
// `prefix` then `items` joined by `sep`, broken between items (never inside one) so that lines
// stay within kTextWidth; the lines after the first begin with `indent`.
std::string wrap_items(std::string_view prefix, const std::vector<std::string>& items,
                       std::string_view sep, std::string_view indent);
// `text` wrapped at its spaces to kTextWidth, the lines after the first beginning with `indent`,
// then a newline.
std::string wrapped_line(std::string_view text, std::string_view indent = "  ");
// Every line of `text` wider than kTextWidth wrapped at its spaces, its later lines indented 3
// more than it; the others as they are. For the views that write out arithmetic whose length
// the numbers set (--explain, --explain-grad, --query).
std::string fit_to_width(std::string text);
// True when the run is the walkthrough's own: its sentence, no --cross, no --x, one head, so that
// its variable names (x_2, query_2, omega_24) mean what they say.
bool is_walkthrough(const Trace& trace);
// "1 token", "6 tokens": a count and its noun, plural when it is not 1.
std::string counted(std::size_t n, std::string_view noun);
// How a trace's labels (its tokens, or a file's row labels) are escaped for a terminal
// (escape_controls), so that a label from a file never reaches it raw: on their own as kRepr and
// inside a repr's quotes as kStrRepr; or both as kShown where the tokenizer shows its tokens
// escaped already (GPT-2's ␣\xf0\x9f\x98), so that no view escapes their backslashes again.
struct LabelEscapes {
  EscapeStyle bare = EscapeStyle::kRepr;       // "# ␣is", "1 Life"
  EscapeStyle quoted = EscapeStyle::kStrRepr;  // 'is' (python_str_repr)
};
LabelEscapes label_escapes(const TraceConfig& config);
// Labels as escape_controls shows them in `style` (LabelEscapes::bare).
std::vector<std::string> escaped(const std::vector<std::string>& labels,
                                 EscapeStyle style = EscapeStyle::kRepr);
// One row of a matrix as a 1-D tensor: tensor([...]).
std::string vector_text(const Matrix& m, Eigen::Index row, int precision);
// Python's repr of a str: 'Life', "don't", 'a\x1bb', 'a\xa0b', '\ufeffLife' (every character that
// str.isprintable() rejects escaped as Python does: escape_controls' kStrRepr; a token that its
// tokenizer shows escaped already with LabelEscapes::quoted, kShown).
std::string python_str_repr(std::string_view s, EscapeStyle style = EscapeStyle::kStrRepr);
// "key N 'word'" for each word, numbered from first + 1 and padded in terminal columns (a CJK
// character takes two, a combining accent none) to the widest word's repr and 8 more, or to the
// widest label: the column after them starts in one place. `style` as python_str_repr's.
std::vector<std::string> padded_key_labels(const std::vector<std::string>& words,
                                           std::int64_t first = 0,
                                           EscapeStyle style = EscapeStyle::kStrRepr);
// A number in a written-out sum at `precision` decimals; a negative factor in parentheses. One
// that is 1e8 or more in size, or not 0 but 0 at `precision` decimals, in scientific notation
// (−5.4165e+37, 3.2000e-06), as PyTorch's printing switches to it.
std::string number(float v, int precision, bool factor = true);
// Throws Error unless query is a token of the (query) sentence and key one of the keys'
// sentence (1-based), naming the value and the sentence's length.
void check_query_and_key(const Trace& trace, std::int64_t query, std::int64_t key);
// The sentence (or input), the settings, the dictionary and the token ids; without the last two
// (a count instead) when `brief`, for long inputs.
void append_preamble(std::string& out, const Trace& trace, bool brief = false);
// " (head 2 of 4, sentence 1 of 3)", or empty.
// A head as every view names it: "head 2 of 4"; in a model's trace, "layer 5, head 1" (both from
// 0, as the checkpoint numbers them). Brief: "head 2", "L5H1".
std::string head_text(const TraceConfig& config, int head, bool brief = false);

std::string where_text(const Trace& trace, const std::optional<int>& head,
                       const std::optional<int>& batch);
// What a heatmap leaves uncoloured, as its legend says it: "−inf cells (masked) are not
// coloured", "nan cells …", "−inf (masked) and nan cells …" (a row masked whole gives nan).
std::string uncoloured_cells(const Matrix& m);
// A step's heading, "step I/N [ID] TITLE (head h of H, sentence b of B)", within `width` columns:
// broken at the title's spaces, its later lines indented by two; the parenthesis is never broken.
std::string step_heading(const Trace& trace, std::size_t index, std::size_t width);

// The leading part of PyTorch's index into step `s`'s whole tensor, from 0: the step's sentence
// and head, for the dimensions its tensor has of them (B, H: none for one sentence, no H in the
// wrapper form, whose heads are tensors of their own). {} for one sentence and one head; {1, 0}
// for sentence 2's first head of the split form in a batch.
std::vector<std::int64_t> torch_slice_index(const Step& s);
// PyTorch's index, from 0, of a value of step `s`'s whole tensor: torch_slice_index, then `cell`
// (a matrix's row and column, or a row). "[2, 0]"; a batch's split heads: "[1, 0, 2, 0]".
std::string torch_index(const Step& s, std::initializer_list<Eigen::Index> cell);

// The lines of a tensor, each row followed by "# label" in one aligned column when labels exist;
// when that column would pass 80, each label goes on a line of its own above its row instead (a
// comment inside the brackets, as Python reads it too). `as_vector`: a 1-D tensor. The labels
// are escaped in `style` (LabelEscapes::bare).
void append_labelled_tensor(std::string& out, const Matrix& m,
                            const std::vector<std::string>& row_labels, int precision,
                            bool as_vector, EscapeStyle style);

}  // namespace attn::render_detail
