#pragma once

// The trace as tables: CSV for spreadsheets and scripts, Markdown for handouts.

#include <string>

#include "attn/trace.hpp"

namespace attn {

// One row per cell, with a header:
//   step,head,batch,row,col,row_label,col_label,value
// head and batch are 1-based or empty; row and col 1-based; value the shortest decimal that
// reads back as the same float32 (nan, inf, -inf as words). Fields are quoted as RFC 4180 says.
std::string render_csv(const Trace& trace);

// Per step: a heading with its number, id and title, the equation and shape, then a table whose
// header row names the columns (keys, or 1..n) and whose first column names the rows (tokens,
// or 1..n); values at `precision` decimals.
std::string render_markdown(const Trace& trace, int precision);

}  // namespace attn
