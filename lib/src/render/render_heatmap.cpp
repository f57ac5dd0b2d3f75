#include "attn/render_heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "attn/tensor_format.hpp"
#include "attn/text_width.hpp"
#include "render_common.hpp"

namespace attn {

using render_detail::where_text;

namespace {

struct Rgb {
  int r, g, b;
};

// A sequential palette from dark (low) to bright (high): viridis's five anchors, interpolated.
Rgb palette(double t) {
  constexpr std::array<Rgb, 5> kAnchors = {Rgb{68, 1, 84}, Rgb{59, 82, 139}, Rgb{33, 145, 140},
                                           Rgb{94, 201, 98}, Rgb{253, 231, 37}};
  const double x = std::clamp(t, 0.0, 1.0) * (kAnchors.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(x), kAnchors.size() - 2);
  const double f = x - static_cast<double>(i);
  auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return {mix(kAnchors[i].r, kAnchors[i + 1].r), mix(kAnchors[i].g, kAnchors[i + 1].g),
          mix(kAnchors[i].b, kAnchors[i + 1].b)};
}

// The nearest colour of the xterm 6 × 6 × 6 cube.
int xterm_index(const Rgb& c) {
  auto level = [](int v) { return static_cast<int>(std::lround(v / 255.0 * 5.0)); };
  return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

bool is_light(const Rgb& c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 140.0; }

constexpr std::array<std::string_view, 5> kShades = {"·", "░", "▒", "▓", "█"};

std::string shade(double t) {
  const auto level =
      std::min<std::size_t>(kShades.size() - 1, static_cast<std::size_t>(t * kShades.size()));
  return std::string(kShades[level]);
}

// `text` on the colour of t, padded to `width` columns (the padding is coloured too).
std::string cell(const std::string& text, std::size_t width, double t, bool finite,
                 ColorMode mode) {
  const std::string padded =
      fmt::format("{}{}", std::string(width - display_width(text), ' '), text);
  if (mode == ColorMode::kShade) return fmt::format("{}{}", padded, finite ? shade(t) : "×");
  if (!finite) return fmt::format(" {} ", padded);
  const Rgb c = palette(t);
  const std::string fg = is_light(c) ? "30" : "97";
  if (mode == ColorMode::kTrueColor) {
    return fmt::format("\x1b[{};48;2;{};{};{}m {} \x1b[0m", fg, c.r, c.g, c.b, padded);
  }
  return fmt::format("\x1b[{};48;5;{}m {} \x1b[0m", fg, xterm_index(c), padded);
}

std::string pad_right(const std::string& text, std::size_t width) {
  return fmt::format("{}{}", text, std::string(width - std::min(width, display_width(text)), ' '));
}

}  // namespace

std::string_view color_mode_name(ColorMode mode) {
  switch (mode) {
    case ColorMode::kShade:
      return "never";
    case ColorMode::k256:
      return "256";
    case ColorMode::kTrueColor:
      return "24bit";
  }
  return "?";
}

std::string render_heatmaps(const Trace& trace, const HeatmapOptions& options) {
  std::string out;
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    if (!s.columns_are_keys) continue;
    const Matrix& m = s.values;
    double lo = INFINITY, hi = -INFINITY;
    for (Eigen::Index k = 0; k < m.size(); ++k) {
      if (std::isfinite(m.data()[k]))
        lo = std::min(lo, double{m.data()[k]}), hi = std::max(hi, double{m.data()[k]});
    }
    auto t_of = [lo, hi](float v) { return hi > lo ? (v - lo) / (hi - lo) : 0.5; };

    const TensorFormatter f(m.data(), m.size(), options.precision);
    auto text_of = [&f](float v) {
      std::string t = f.format(v);
      return t.erase(0, t.find_first_not_of(' '));
    };
    // Labels as escape_controls shows them; the widths are those of the escaped text.
    std::vector<std::string> col_labels, row_labels;
    for (const std::string& c : s.col_labels) col_labels.push_back(escape_controls(c));
    for (const std::string& r : s.row_labels) row_labels.push_back(escape_controls(r));
    std::size_t width = 0, label_width = 0;
    for (Eigen::Index k = 0; k < m.size(); ++k)
      width = std::max(width, display_width(text_of(m.data()[k])));
    for (const std::string& c : col_labels) width = std::max(width, display_width(c));
    for (const std::string& r : row_labels) label_width = std::max(label_width, display_width(r));
    // A coloured cell has a space of colour on each side; a shaded one a shading character after.

    out += fmt::format("{}step {}/{} [{}] {}{}\n", out.empty() ? "" : "\n", i + 1, n, s.id, s.title,
                       where_text(trace, s.head, s.batch));
    out += fmt::format("  {}    rows: queries, columns: keys\n\n", s.equation);
    out += std::string(label_width, ' ');
    // Each label right-aligned over its values (a coloured cell has a space of colour first).
    const std::string lead = options.color == ColorMode::kShade ? " " : "  ";
    for (const std::string& c : col_labels) {
      out += fmt::format("{}{}{}", lead, std::string(width - display_width(c), ' '), c);
    }
    out += "\n";
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      out += pad_right(r < static_cast<Eigen::Index>(row_labels.size())
                           ? row_labels[static_cast<std::size_t>(r)]
                           : std::to_string(r + 1),
                       label_width);
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        const float v = m(r, c);
        out +=
            fmt::format(" {}", cell(text_of(v), width, t_of(v), std::isfinite(v), options.color));
      }
      out += "\n";
    }
    // The legend: eight swatches from the smallest to the largest finite value.
    std::string swatches;
    for (int k = 0; k < 8; ++k) {
      const double t = (k + 0.5) / 8.0;
      if (options.color == ColorMode::kShade) {
        swatches += shade(t);
      } else {
        const Rgb c = palette(t);
        swatches += options.color == ColorMode::kTrueColor
                        ? fmt::format("\x1b[48;2;{};{};{}m  \x1b[0m", c.r, c.g, c.b)
                        : fmt::format("\x1b[48;5;{}m  \x1b[0m", xterm_index(c));
      }
    }
    if (std::isfinite(lo)) {
      out += fmt::format("\n  legend: {} {} {}{}\n", text_of(static_cast<float>(lo)), swatches,
                         text_of(static_cast<float>(hi)),
                         m.allFinite() ? ""
                         : options.color == ColorMode::kShade
                             ? "   (× marks −inf and nan cells)"
                             : "   (−inf and nan cells are not coloured)");
    }
  }
  return out;
}

}  // namespace attn
