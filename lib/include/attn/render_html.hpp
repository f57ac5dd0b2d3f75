#pragma once

// The trace as one self-contained HTML lesson page (--format html): every step with its equation,
// shape, description and token-labelled matrix, heatmaps in the terminal's palettes, each
// attention weight's working on hover, focus or tap (--explain's numbers), the attention as lines
// from a query to its keys, a projector mode and a print stylesheet. All CSS and JavaScript are
// inline (compiled in from lib/src/render/html/); the page makes no network request.

#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct HtmlOptions {
  int precision = 4;               // decimals shown. Requires: 0 <= precision <= 8.
  std::vector<std::string> steps;  // the ids of the steps shown, all when empty
};

// Steps whose matrix has more cells than this are drawn on a canvas by the page's script (from
// the exact values in the page's data); smaller ones are <table>s written here, each cell's value
// as text on its colour.
inline constexpr long kHtmlTableCells = 64 * 64;

// The page. Each shown step is a <section class="step">; a matrix of at most kHtmlTableCells
// cells is a <table> whose cells hold their values at options.precision decimals (fixed_text, as
// the heatmap prints them) on the heatmap's 24-bit colour of the same value. The page's data (a
// <script type="application/json" id="attn-data">) holds the workings of every head and sentence
// (the queries, keys, scores, scaled scores, each row's max, exponentials and sum by
// work_out_cell's kernel, and the weights, every float32 exact), the ramps' anchor colours and
// each step's range, so the script draws the same colours and --explain's numbers.
// Requires: the trace is whole (not select_steps'd): the workings need its queries, keys, ω,
// scaled scores and weights whether or not they are shown.
// Throws Error for a precision outside 0..8, or an id of options.steps that no step of the trace
// has (naming it and the ids it has).
std::string render_html(const Trace& trace, const HtmlOptions& options);

}  // namespace attn
