#pragma once

// The heatmap's cells and legend: a value's text, its colour or shade (render_heatmap_cells.cpp).
// Shared by render_heatmap.cpp and render_svg.cpp; not part of the library's interface.

#include <cstddef>
#include <string>
#include <string_view>

#include "attn/matrix.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/trace.hpp"

namespace attn::heatmap_detail {

inline constexpr std::string_view kReset = "\x1b[0m";

// Where a value falls on its step's ramp.
struct Scale {
  Ramp ramp = Ramp::kSequential;
  double lo = 0.0, hi = 0.0;  // sequential: the finite min and max; diverging: −max|v| and max|v|
  bool any_finite = false;
  bool all_finite = true;
  // t in [0, 1]: sequential (v − lo) / (hi − lo); diverging 0.5 + v / (2 max|v|); 0.5 when the
  // range is empty.
  double t(float v) const;
};

// The step's ramp (by its kind: step_info(kind).signed_values) and range.
Scale scale_of(const Step& step);

// A value in fixed notation at `precision` decimals: "0.1772", "-1.2", "nan", "-inf"; a value
// that rounds to zero has no minus sign.
std::string fixed_text(float v, int precision);

// A values-form cell: a space, then `text` right-aligned in `width` columns on the value's colour
// (with a space of colour either side), or followed by its shade (× for −inf and nan).
std::string value_cell(float v, const std::string& text, std::size_t width, const Scale& scale,
                       ColorMode mode);

// A blocks-form cell, `width` (1 or 2) columns: the colour as a background (the caller resets it
// at the row's end), or shading; × for −inf and nan.
std::string block_cell(float v, const Scale& scale, ColorMode mode, std::size_t width);

// "\n  legend: lo <swatches> hi" (0 marked in the middle for a diverging ramp) and its notes,
// within `width` columns. `block_width` is the blocks' width, 0 for the values form.
std::string legend_text(const Scale& scale, ColorMode mode, std::size_t block_width, int precision,
                        std::size_t width);

}  // namespace attn::heatmap_detail
