#pragma once

// Heatmaps of a trace's steps, as a teacher would draw them on the board: tokens down the left,
// keys (or numbered dimensions) across the top, each cell coloured by its value, and a legend.
// Every line fits the width it is given.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

// How cells are coloured.
enum class ColorMode {
  kShade,  // no colour: shading characters · ░ ▒ ▓ █ from low to high (or small to large |v|)
  k256,        // the xterm 256-colour palette: explicit indices, a few distinct levels
  kTrueColor,  // 24-bit colour, continuous
};

std::string_view color_mode_name(ColorMode mode);  // "never", "256", "24bit"

// How a heatmap draws its cells.
enum class HeatmapForm {
  kAuto,    // the values when the grid fits the width, else the blocks
  kValues,  // each cell's value in fixed notation on its colour (in bands of columns if too wide)
  kBlocks,  // one coloured block per cell, two columns wide where that fits, else one
};

struct HeatmapOptions {
  ColorMode color = ColorMode::kShade;
  int precision = 4;  // decimals in each cell, fixed notation. Requires: 0 <= precision <= 8.
  HeatmapForm form = HeatmapForm::kAuto;
  std::size_t width = 80;  // columns every line fits in. Requires: width >= 20.
  bool describe = false;   // each step's description (step_info(kind).description) under its header
};

// One heatmap per step of the trace, in order: a header (step, id, title, where), the equation,
// the rows' and columns' meaning, then the grid and a legend. Rows are the step's row labels (or
// numbers); columns are its column labels (the keys of a score step) or the numbers 1..n of its
// dimensions. A 1 × n step is one row.
//
// Values form: each value at options.precision decimals (fixed, never scientific), right-aligned
// in its column, with each column label ending where its values end (display width, so CJK and
// emoji line up). When the labels make the grid too wide, the columns are numbered and a key
// below gives number → token; when even that is too wide, the columns are split into bands.
// Blocks form: one block per cell, the rows and columns numbered (the column numbers written
// downwards, one digit per line, over their blocks when they are wider than a block), a key
// number → token below, wrapped to the width; bands of columns when even one-column blocks are
// too wide.
//
// Colour: steps whose catalogue entry has signed_values (ω, the scaled scores, Q, K, V, Z, ...)
// use a diverging ramp centred on 0 (blue below, red above, light grey at 0) over ±max|v|; the
// others (the weights, exponentials, the mask) a sequential viridis-like ramp from the smallest to
// the largest finite value. Shading without colour shows the size; for a signed step the values
// form's numbers carry the sign and two-column blocks mark a negative cell with '-'. −inf and nan
// cells are not coloured (× when shaded). The legend gives the ends (and 0 for a signed step).
//
// Throws attn::Error when options.width < 20 or options.precision is outside 0..8.
std::vector<std::string> render_heatmap_blocks(const Trace& trace, const HeatmapOptions& options);

// render_heatmap_blocks, one after the other with a blank line between.
std::string render_heatmaps(const Trace& trace, const HeatmapOptions& options);

// ---- The palettes (render_heatmap_palette.cpp) ------------------------------------------------

struct Rgb {
  int r = 0, g = 0, b = 0;
};

enum class Ramp {
  kSequential,  // low to high: dark purple, blue, teal, green, yellow (viridis)
  kDiverging,   // −max|v| to +max|v|: dark blue, light grey at 0, dark red (ColorBrewer's RdBu)
};

// The ramp's colour at t in [0, 1] (clamped), for 24-bit colour: continuous. For the diverging
// ramp t = 0.5 is 0.
Rgb ramp_rgb(Ramp ramp, double t);
// Whether text on this colour should be black (true) or white: whichever contrasts more with it
// by WCAG's relative luminance, so the contrast is at least 4.58:1 on any colour (AA asks 4.5).
// The terminal heatmap, the SVG figures and the HTML page choose a cell's text colour by it.
bool is_light(const Rgb& c);

// WCAG's contrast ratio of two colours, 1 to 21.
double contrast_ratio(const Rgb& a, const Rgb& b);
// The ramp's xterm-256 indices, low to high: chosen by hand so that neighbours differ (the
// sequential ones also grow lighter), not rounded to the colour cube. The diverging ramp has an
// odd count, its middle one the neutral colour.
std::span<const int> ramp_xterm_levels(Ramp ramp);
// The level of t in [0, 1] (clamped): an index into ramp_xterm_levels.
std::size_t ramp_level(Ramp ramp, double t);
// The colour xterm draws for an index of its 6 × 6 × 6 cube (16..231) or grey ramp (232..255).
// Requires: 16 <= index <= 255.
Rgb xterm_rgb(int index);

}  // namespace attn
