// A heatmap cell's text and colour, and the legend that reads them back. A diverging ramp is
// symmetric (±max|v|) so that 0 is always its neutral middle, whatever the data's range; the
// shading without colour shows the size, and a signed step's sign is shown another way (the
// number itself, or a '-' in a two-column block).

#include "render_heatmap_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "attn/steps.hpp"
#include "attn/text_width.hpp"

namespace attn::heatmap_detail {

namespace {

constexpr std::array<std::string_view, 5> kShades = {"·", "░", "▒", "▓", "█"};

std::string spaces(std::size_t n) { return std::string(n, ' '); }

// The shade of t: of t itself on a sequential ramp, of the size |v| / max|v| on a diverging one.
std::string_view shade(const Scale& scale, double t) {
  const double x = scale.ramp == Ramp::kDiverging ? std::abs(t - 0.5) * 2.0 : t;
  const double level = std::clamp(x, 0.0, 1.0) * static_cast<double>(kShades.size());
  return kShades[std::min(kShades.size() - 1, static_cast<std::size_t>(level))];
}

// The escape that sets t's background, and with `text` a foreground that reads on it.
std::string colour(const Scale& scale, double t, ColorMode mode, bool text) {
  Rgb c;
  std::string background;
  if (mode == ColorMode::kTrueColor) {
    c = ramp_rgb(scale.ramp, t);
    background = fmt::format("48;2;{};{};{}", c.r, c.g, c.b);
  } else {
    const int index = ramp_xterm_levels(scale.ramp)[ramp_level(scale.ramp, t)];
    c = xterm_rgb(index);
    background = fmt::format("48;5;{}", index);
  }
  if (!text) return fmt::format("\x1b[{}m", background);
  return fmt::format("\x1b[{};{}m", is_light(c) ? "30" : "97", background);
}

}  // namespace

double Scale::t(float v) const {
  if (ramp == Ramp::kDiverging) return hi > 0.0 ? 0.5 + v / (2.0 * hi) : 0.5;
  return hi > lo ? (v - lo) / (hi - lo) : 0.5;
}

Scale scale_of(const Step& step) {
  Scale s;
  s.ramp = step_info(step.kind).signed_values ? Ramp::kDiverging : Ramp::kSequential;
  double lo = INFINITY, hi = -INFINITY;
  const Matrix& m = step.values;
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    const float v = m.data()[k];
    if (!std::isfinite(v)) {
      s.all_finite = false;
      continue;
    }
    lo = std::min(lo, double{v});
    hi = std::max(hi, double{v});
  }
  s.any_finite = std::isfinite(lo);
  if (!s.any_finite) return s;
  if (s.ramp == Ramp::kDiverging) {
    const double m_abs = std::max(std::abs(lo), std::abs(hi));  // ±max|v|: 0 in the middle
    lo = -m_abs;
    hi = m_abs;
  }
  s.lo = lo;
  s.hi = hi;
  return s;
}

std::string fixed_text(float v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string text = fmt::format("{:.{}f}", v, precision);
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

std::string value_cell(float v, const std::string& text, std::size_t width, const Scale& scale,
                       ColorMode mode) {
  const std::string padded = spaces(width - std::min(width, display_width(text))) + text;
  const bool finite = std::isfinite(v);
  if (mode == ColorMode::kShade) {
    return fmt::format(" {}{}", padded, finite ? shade(scale, scale.t(v)) : "×");
  }
  if (!finite) return fmt::format("  {} ", padded);
  return fmt::format(" {} {} {}", colour(scale, scale.t(v), mode, true), padded, kReset);
}

std::string block_cell(float v, const Scale& scale, ColorMode mode, std::size_t width) {
  if (!std::isfinite(v)) {
    return fmt::format("{}{}×", mode == ColorMode::kShade ? "" : kReset, spaces(width - 1));
  }
  const double t = scale.t(v);
  if (mode != ColorMode::kShade) return colour(scale, t, mode, false) + spaces(width);
  const std::string mark(shade(scale, t));
  if (width == 1) return mark;
  return (scale.ramp == Ramp::kDiverging && v < 0 ? "-" : mark) + mark;
}

std::string legend_text(const Scale& scale, ColorMode mode, std::size_t block_width, int precision,
                        std::size_t width) {
  if (!scale.any_finite) return "\n  (no finite values to colour)\n";
  const bool diverging = scale.ramp == Ramp::kDiverging;
  auto swatches = [&](std::size_t w) {
    std::string out;
    std::size_t columns = 0;
    if (mode == ColorMode::kShade) {
      std::string up;
      for (std::string_view s : kShades) up += s;
      std::string down;
      for (auto s = kShades.rbegin(); s != kShades.rend(); ++s) down += *s;
      return diverging ? std::pair{down + " 0 " + up, std::size_t{13}}
                       : std::pair{up, std::size_t{5}};
    }
    const std::size_t n = ramp_xterm_levels(scale.ramp).size();
    for (std::size_t k = 0; k < n; ++k) {
      if (diverging && k == n / 2) {
        out += colour(scale, 0.5, mode, true) + " 0 ";
        columns += 3;
        continue;
      }
      const double t = (static_cast<double>(k) + 0.5) / static_cast<double>(n);
      out += colour(scale, t, mode, false) + spaces(w);
      columns += w;
    }
    return std::pair{out + std::string(kReset), columns};
  };
  const std::string lo = fixed_text(static_cast<float>(scale.lo), precision);
  const std::string hi = fixed_text(static_cast<float>(scale.hi), precision);
  auto [sw, sw_width] = swatches(2);
  const std::size_t fixed_width =
      display_width("  legend: ") + display_width(lo) + display_width(hi) + 2;
  if (fixed_width + sw_width > width) std::tie(sw, sw_width) = swatches(1);
  std::string line = fmt::format("  legend: {} {} {}", lo, sw, hi);
  std::size_t line_width = fixed_width + sw_width;
  if (line_width > width) {
    // A narrow screen: the swatches and each end on lines of their own (a number is never cut).
    line = fmt::format("  legend:\n  {}\n  from {}\n  to {}", sw, lo, hi);
    line_width = width + 1;  // the notes, if any, go on lines of their own
  }

  std::vector<std::string> notes;
  if (!scale.all_finite) {
    notes.emplace_back(mode == ColorMode::kShade ? "× marks −inf and nan cells"
                                                 : "−inf and nan cells are not coloured");
  }
  if (diverging && mode == ColorMode::kShade) {
    notes.emplace_back(block_width == 0   ? "shaded by size, the sign is the number's"
                       : block_width == 2 ? "shaded by size, - marks a negative cell"
                                          : "shaded by size, the sign needs colour");
  }
  if (notes.empty()) return "\n" + line + "\n";
  const std::string note = fmt::format("({})", fmt::join(notes, "; "));
  if (line_width + 3 + display_width(note) <= width) return fmt::format("\n{}   {}\n", line, note);
  return fmt::format("\n{}\n{}\n", line, wrap_words("  " + note, width, "  "));
}

}  // namespace attn::heatmap_detail
