#pragma once

// Heatmaps of the score-like steps (ω, the scaled scores, the weights), as a teacher would draw
// them on the board: tokens on both axes, each cell's value, colour by value, and a legend.

#include <string>

#include "attn/trace.hpp"

namespace attn {

// How cells are coloured.
enum class ColorMode {
  kShade,  // no colour: a shading character after each value, ' ' ░ ▒ ▓ █ from low to high
  k256,    // the xterm 256-colour palette
  kTrueColor,  // 24-bit colour
};

std::string_view color_mode_name(ColorMode mode);  // "never", "256", "24bit"

struct HeatmapOptions {
  ColorMode color = ColorMode::kShade;
  int precision = 4;  // decimals in each cell
};

// One heatmap for each step whose columns are the keys (rows and columns are tokens), in order,
// with the step's header, the row tokens down the left, the column tokens across the top (aligned
// by display width, so any script lines up), and a legend from the smallest to the largest finite
// value. −inf and nan cells are shown as text without colour (with × instead of a shade).
std::string render_heatmaps(const Trace& trace, const HeatmapOptions& options);

}  // namespace attn
