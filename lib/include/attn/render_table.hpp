#pragma once

// The trace as tables: CSV for spreadsheets and scripts, Markdown for handouts.

#include <string>
#include <vector>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn {

// One row per cell, with a header:
//   step,head,batch,row,col,row_label,col_label,value
// head and batch are 1-based or empty; row and col 1-based; value the shortest decimal that
// reads back as the same float32 (nan, inf, -inf as words). Fields are quoted as RFC 4180 says.
std::string render_csv(const Trace& trace);
// The same text in parts of about a MiB, one after another (a long trace's is not held twice).
std::vector<std::string> render_csv_parts(const Trace& trace);

// A heading, then the text trace's header (sentence, settings, dictionary, token ids) in a
// block fenced with tildes, so that a handout says what it shows. Then per step: a heading with its
// number, id and title, the equation and shape, with options.describe what it computes (in
// italics), then a table whose header row names the columns (keys, or 1..n) and whose first column
// names the rows (tokens, or 1..n); values at options.precision decimals.
std::string render_markdown(const Trace& trace, const TextOptions& options);
// The same text in parts of about a MiB, one after another.
std::vector<std::string> render_markdown_parts(const Trace& trace, const TextOptions& options);

}  // namespace attn
