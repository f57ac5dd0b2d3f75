#pragma once

// A step of a trace as a standalone SVG 1.1 figure, for slides and papers: the terminal
// heatmap's grid, colours and legend (render_heatmap.hpp), drawn with no external font or
// reference, so that any browser, rsvg-convert or a slide program shows it alone.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct SvgOptions {
  int precision = 4;  // decimals in each cell, fixed notation. Requires: 0 <= precision <= 8.
};

// The largest grid (rows or columns) whose cells show their values; a larger one is drawn as
// blocks without text, its rows and columns numbered, with a key number → token below.
inline constexpr Eigen::Index kSvgMaxValueCells = 24;

// One figure of the steps `steps` (indices into trace.steps, in order; the slices of one step,
// or one slice): a title (the step's id, title and equation, then the sentence — shortened when
// long — and the settings, as the text view's brief header has them), then one panel per slice
// in a grid (up to 2 panels across for 2 or 4 slices, else 3), each titled with its head and
// sentence where those apply. A panel is the heatmap of its slice: row labels (tokens, or
// numbered dimensions) down the left, column labels (the keys of a score step, or the numbers
// 1..n of its dimensions) across the top, each cell coloured as the terminal's 24-bit heatmap
// colours it (ramp_rgb over the slice's own scale: sequential min..max, diverging ±max|v|) with
// its value at options.precision decimals in black or white by the colour's luminance; −inf and
// nan cells are white and marked "×" in blocks. Under the grid, its legend: the ramp with its
// ends (and 0 for a diverging ramp). Labels are shown as escape_controls shows them, then
// escaped for XML. Deterministic: the same trace and options give the same bytes.
// Throws attn::Error when `steps` is empty, names no step of the trace, names steps of different
// ids, or a step without values (released), or when options.precision is outside 0..8.
std::string render_svg(const Trace& trace, std::span<const std::size_t> steps,
                       const SvgOptions& options);

// The figure of every step of the trace, which must be the slices of one step (after
// select_steps with one id). Throws attn::Error naming the ids when there are several, or none.
std::string render_svg(const Trace& trace, const SvgOptions& options);

// The same figures in parts of about a MiB, whose concatenation is render_svg's text: a large
// grid's figure is never one string that grows by copying itself (a program writes the parts one
// after another).
std::vector<std::string> render_svg_parts(const Trace& trace, std::span<const std::size_t> steps,
                                          const SvgOptions& options);
std::vector<std::string> render_svg_parts(const Trace& trace, const SvgOptions& options);

// Text for XML character data and attribute values: &, <, >, " and ' as entities. Requires:
// text holds no control character other than tab (escape_controls removes them).
std::string xml_escape(std::string_view text);

}  // namespace attn
