#pragma once

// Shared by the text renderers (render_text.cpp, render_explain.cpp); not part of the library's
// interface.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/render_text.hpp"
#include "attn/tokenizer.hpp"
#include "attn/trace.hpp"

namespace attn::render_detail {

// x⁽²⁾: a name with a superscript index in parentheses.
std::string sup(std::string_view name, std::int64_t i);
// ω₂₄, or ω₁₂,₃ when an index has more than one digit.
std::string sub2(std::string_view name, std::int64_t i, std::int64_t j);
// The digits of n as subscripts: ₁₂.
std::string subscript(std::int64_t n);
// "1 token", "6 tokens": a count and its noun, plural when it is not 1.
std::string counted(std::size_t n, std::string_view noun);
// Labels (tokens, or a file's row labels) joined, each as escape_controls shows it: a label from
// a file never reaches the terminal raw.
std::string join_labels(const std::vector<std::string>& labels, std::string_view sep);
// One row of a matrix as a 1-D tensor: tensor([...]).
std::string vector_text(const Matrix& m, Eigen::Index row, int precision);
// Python's repr of a str: 'Life', "don't", 'a\x1bb' (control characters escaped as Python does).
std::string python_str_repr(std::string_view s);
// A number in a written-out sum at `precision` decimals; a negative factor in parentheses.
std::string number(float v, int precision, bool factor = true);
// Throws Error unless query is a token of the (query) sentence and key one of the keys'
// sentence (1-based), naming the value and the sentence's length.
void check_query_and_key(const Trace& trace, std::int64_t query, std::int64_t key);
// The sentence (or input), the settings, the dictionary and the token ids; without the last two
// (a count instead) when `brief`, for long inputs.
void append_preamble(std::string& out, const Trace& trace, bool brief = false);
// " (head 2 of 4, sentence 1 of 3)", or empty.
std::string where_text(const Trace& trace, const std::optional<int>& head,
                       const std::optional<int>& batch);

}  // namespace attn::render_detail
