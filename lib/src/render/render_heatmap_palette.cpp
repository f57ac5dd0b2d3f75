// The heatmaps' colours. Why explicit xterm indices: rounding viridis to the 6 × 6 × 6 cube gave
// two nearly identical blues (60 and 67) for most of the walkthrough's weights. The indices below
// were picked from CIELAB lightness: the sequential ones grow lighter step by step (L* 21 to 97)
// and change hue as viridis does; the diverging ones darken symmetrically away from a light grey.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "attn/error.hpp"
#include "attn/render_heatmap.hpp"

namespace attn {

namespace {

// matplotlib's viridis at 0, 0.1, ..., 1.
constexpr std::array<Rgb, 11> kViridis = {{{68, 1, 84},
                                           {72, 36, 117},
                                           {65, 68, 135},
                                           {53, 95, 141},
                                           {42, 120, 142},
                                           {33, 145, 140},
                                           {34, 168, 132},
                                           {68, 191, 112},
                                           {122, 209, 81},
                                           {189, 223, 38},
                                           {253, 231, 37}}};

// ColorBrewer's RdBu (11 classes), reversed: blue for negative, light grey at 0, red for positive.
constexpr std::array<Rgb, 11> kRdBu = {{{5, 48, 97},
                                        {33, 102, 172},
                                        {67, 147, 195},
                                        {146, 197, 222},
                                        {209, 229, 240},
                                        {247, 247, 247},
                                        {253, 219, 199},
                                        {244, 165, 130},
                                        {214, 96, 77},
                                        {178, 24, 43},
                                        {103, 0, 31}}};

// purple 53, violet 55, blue 25, sky 31, teal 36, green 77, lime 148, olive 184, yellow 226:
// L* 21, 28, 40, 52, 64, 77, 81, 84, 97.
constexpr std::array<int, 9> kSequential256 = {53, 55, 25, 31, 36, 77, 148, 184, 226};
// navy 18, blue 25, 32, 74, pale blue 153 | grey 255 | pale red 224, 210, 167, 124, dark red 52.
constexpr std::array<int, 11> kDiverging256 = {18, 25, 32, 74, 153, 255, 224, 210, 167, 124, 52};

}  // namespace

Rgb ramp_rgb(Ramp ramp, double t) {
  const std::array<Rgb, 11>& anchors = ramp == Ramp::kSequential ? kViridis : kRdBu;
  const double x =
      std::clamp(std::isnan(t) ? 0.5 : t, 0.0, 1.0) * static_cast<double>(anchors.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(x), anchors.size() - 2);
  const double f = x - static_cast<double>(i);
  auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return {mix(anchors[i].r, anchors[i + 1].r), mix(anchors[i].g, anchors[i + 1].g),
          mix(anchors[i].b, anchors[i + 1].b)};
}

std::span<const int> ramp_xterm_levels(Ramp ramp) {
  if (ramp == Ramp::kSequential) return kSequential256;
  return kDiverging256;
}

std::size_t ramp_level(Ramp ramp, double t) {
  const std::size_t n = ramp_xterm_levels(ramp).size();
  const double x = std::clamp(std::isnan(t) ? 0.5 : t, 0.0, 1.0) * static_cast<double>(n);
  return std::min(n - 1, static_cast<std::size_t>(x));
}

Rgb xterm_rgb(int index) {
  if (index < 16 || index > 255) {
    throw Error(fmt::format("xterm colour {} is not in 16..255", index));
  }
  if (index >= 232) {
    const int v = 8 + 10 * (index - 232);
    return {v, v, v};
  }
  constexpr std::array<int, 6> kLevels = {0, 95, 135, 175, 215, 255};
  const int i = index - 16;
  return {kLevels[static_cast<std::size_t>(i / 36)], kLevels[static_cast<std::size_t>(i / 6 % 6)],
          kLevels[static_cast<std::size_t>(i % 6)]};
}

namespace {

// WCAG's relative luminance of an sRGB colour.
double luminance(const Rgb& c) {
  auto linear = [](int v) {
    const double s = v / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
}

}  // namespace

double contrast_ratio(const Rgb& a, const Rgb& b) {
  const double x = luminance(a), y = luminance(b);
  return (std::max(x, y) + 0.05) / (std::min(x, y) + 0.05);
}

bool is_light(const Rgb& c) {
  return contrast_ratio(c, Rgb{0, 0, 0}) >= contrast_ratio(c, Rgb{255, 255, 255});
}

}  // namespace attn
