#include "attn/render_heatmap.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "attn/error.hpp"
#include "attn/text_width.hpp"
#include "support/hostile_labels.hpp"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

// The text without its terminal escapes (ESC [ ... m).
std::string strip_escapes(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      i = text.find('m', i);
      continue;
    }
    out += text[i];
  }
  return out;
}

// The display columns at which each run of non-space text ends, after the first `skip` columns
// (the row labels). Measured on the line's prefix, so that a grapheme of several code points
// (❤️, a flag) counts as the terminal draws it.
std::vector<std::size_t> word_ends(const std::string& line, std::size_t skip) {
  std::vector<std::size_t> ends;
  for (std::size_t i = 1; i <= line.size(); ++i) {
    if (line[i - 1] == ' ' || (i < line.size() && line[i] != ' ')) continue;
    const std::size_t column = attn::display_width(line.substr(0, i));
    if (column > skip) ends.push_back(column);
  }
  return ends;
}

// Checks that each label of the header line ends in the column where every row's value (its
// text, before the shading character) ends. `header` is the index of the header line, `rows` the
// count of rows after it, `label_width` the row labels' columns.
void check_aligned(const std::string& out, std::size_t header, std::size_t rows,
                   std::size_t label_width, bool shaded) {
  const std::vector<std::string> lines = lines_of(strip_escapes(out));
  REQUIRE(lines.size() >= header + 1 + rows);
  const std::vector<std::size_t> label_ends = word_ends(lines[header], label_width);
  REQUIRE(!label_ends.empty());
  for (std::size_t r = header + 1; r <= header + rows; ++r) {
    std::vector<std::size_t> ends = word_ends(lines[r], label_width);
    // A shading character follows each value directly: the value ends one column earlier.
    if (shaded) {
      for (std::size_t& e : ends) --e;
    }
    CHECK_MESSAGE(ends == label_ends, lines[header] << "\n" << lines[r]);
  }
}

std::size_t widest_line(const std::string& out) {
  std::size_t w = 0;
  for (const std::string& line : lines_of(strip_escapes(out))) {
    w = std::max(w, attn::display_width(line));
  }
  return w;
}

attn::HeatmapOptions options(attn::ColorMode color, int precision = 4,
                             attn::HeatmapForm form = attn::HeatmapForm::kAuto,
                             std::size_t width = 80) {
  return {color, precision, form, width, false};
}

}  // namespace

TEST_CASE("a heatmap per step, tokens on both axes, a shade per value, a legend") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"attention_weights"});
  const std::string out = attn::render_heatmaps(trace, options(attn::ColorMode::kShade));
  CHECK(out.find("step 1/1 [attention_weights]") != std::string::npos);
  CHECK(out.find("\nis       0.0386·  0.6870█  0.0204·  0.0840·  0.1470·  0.0229·\n") !=
        std::string::npos);
  CHECK(out.find("legend: 0.0204 ·░▒▓█ 0.6870") != std::string::npos);
  CHECK(out.find("\x1b[") == std::string::npos);  // no terminal codes without colour
}

TEST_CASE("every label sits over its column: any precision, colour mode and script") {
  for (const char* sentence : {"Life is short, eat dessert first", "我 爱 你 and you",
                               "I ❤️ 🇫🇷 🏳️‍🌈 a-very-long-word x"}) {
    attn::TraceConfig c;
    c.sentences = {sentence};
    attn::Trace trace = attn::run_trace(c);
    attn::select_steps(trace, {"omega"});
    const auto t = static_cast<std::size_t>(trace.steps[0].values.rows());
    std::size_t label_width = 0;
    for (const std::string& r : trace.steps[0].row_labels) {
      label_width = std::max(label_width, attn::display_width(r));
    }
    for (int precision : {0, 2, 4, 8}) {
      for (attn::ColorMode mode :
           {attn::ColorMode::kShade, attn::ColorMode::k256, attn::ColorMode::kTrueColor}) {
        CAPTURE(sentence);
        CAPTURE(precision);
        CAPTURE(attn::color_mode_name(mode));
        const std::string out = attn::render_heatmaps(
            trace, options(mode, precision, attn::HeatmapForm::kValues, 1000));
        // lines: header, equation, blank, column labels, the rows.
        check_aligned(out, 3, t, label_width, mode == attn::ColorMode::kShade);
      }
    }
  }
}

TEST_CASE("the issue's drift: labels end at the columns where the numbers end") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"attention_weights"});
  const std::vector<std::string> lines =
      lines_of(attn::render_heatmaps(trace, options(attn::ColorMode::kShade)));
  // The numbers of the first row end at columns 15, 24, 33, ...; so do the labels.
  CHECK(lines[3] == "           Life       is    short      eat  dessert    first");
  CHECK(lines[4].starts_with("Life     0.1772░  0.1326·"));
}

TEST_CASE("a 64-token sentence fits 80 columns in blocks, with a key, and values when forced") {
  std::string sentence;
  for (int i = 0; i < 64; ++i) sentence += (i ? " w" : "w") + std::to_string(i);
  attn::TraceConfig c;
  c.sentences = {sentence};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"attention_weights", "omega"});
  for (attn::ColorMode mode :
       {attn::ColorMode::kShade, attn::ColorMode::k256, attn::ColorMode::kTrueColor}) {
    const std::string out = attn::render_heatmaps(trace, options(mode));
    CHECK(widest_line(out) <= 80);
    CHECK(out.find("  tokens: 1 w0  2 w1  3 w2") != std::string::npos);
    for (const std::string& line : lines_of(strip_escapes(out))) {
      if (line.starts_with(" 1 w0 ")) CHECK(line.find('.') == std::string::npos);  // no values
    }
    const std::string values =
        attn::render_heatmaps(trace, options(mode, 4, attn::HeatmapForm::kValues));
    CHECK(widest_line(values) <= 80);
    CHECK(values.find("keys 1 to ") != std::string::npos);  // bands of columns
    CHECK(values.find("e-0") == std::string::npos);         // never scientific
  }
  // Column numbers written downwards, each digit over its one-column block.
  const std::vector<std::string> lines =
      lines_of(attn::render_heatmaps(trace, options(attn::ColorMode::kShade)));
  CHECK(lines[3] == "                1111111111222222222233333333334444444444555555555566666");
  CHECK(lines[4] == "       1234567890123456789012345678901234567890123456789012345678901234");
  CHECK(lines[5].starts_with(" 1 w0  "));
  CHECK(attn::display_width(lines[5]) == 7 + 64);
}

TEST_CASE("a short sentence of long words: numbered columns before blocks") {
  attn::TraceConfig c;
  c.sentences = {"internationalization counterrevolutionaries uncharacteristically"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"attention_weights"});
  const std::string out = attn::render_heatmaps(
      trace, options(attn::ColorMode::kShade, 4, attn::HeatmapForm::kAuto, 60));
  CHECK(widest_line(out) <= 60);
  CHECK(out.find("0.") != std::string::npos);  // still the values
  CHECK(out.find("tokens: 1 internationalization") != std::string::npos);
}

TEST_CASE("any step draws a grid: context vectors by dimension, weights, a bias as one row") {
  attn::TraceConfig c;
  c.init = attn::WeightInit::kLinear;
  c.multihead = attn::MultiheadForm::kSplit;
  c.heads = 2;
  c.d_kq = c.d_v = 4;
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"context_vectors", "w_query", "b_out"});
  const std::vector<std::string> blocks =
      attn::render_heatmap_blocks(trace, options(attn::ColorMode::kShade));
  REQUIRE(blocks.size() == trace.steps.size());
  for (const std::string& b : blocks) CHECK(lines_of(b).size() >= 6);
  std::string joined;
  for (const std::string& b : blocks) joined += (joined.empty() ? "" : "\n") + b;
  const std::string all = attn::render_heatmaps(trace, options(attn::ColorMode::kShade));
  CHECK(all == joined);
  CHECK(all.find("rows: tokens, columns: the d_head = 2 dimensions") != std::string::npos);
  CHECK(all.find("[b_out]") != std::string::npos);
  CHECK(all.find("[context_vectors]") != std::string::npos);
}

TEST_CASE("signed steps: a diverging ramp centred on 0, and weights the sequential one") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"omega", "attention_weights"});
  const std::string out = attn::render_heatmaps(trace, options(attn::ColorMode::k256));
  // ω's legend: −max|v| to +max|v| with a neutral 0 in the middle.
  CHECK(out.find("legend: -3.4707 ") != std::string::npos);
  CHECK(out.find("\x1b[30;48;5;255m 0 ") != std::string::npos);
  CHECK(out.find(" 3.4707\n") != std::string::npos);
  CHECK(out.find("48;5;60m") == std::string::npos);
  const std::string shaded = attn::render_heatmaps(trace, options(attn::ColorMode::kShade));
  CHECK(shaded.find("legend: -3.4707 █▓▒░· 0 ·░▒▓█ 3.4707") != std::string::npos);
  CHECK(shaded.find("the sign is the number's") != std::string::npos);
}

TEST_CASE("the 256-colour ramps: explicit levels, distinct, the sequential one growing lighter") {
  for (attn::Ramp ramp : {attn::Ramp::kSequential, attn::Ramp::kDiverging}) {
    std::set<int> seen;
    for (int k = 0; k <= 100; ++k) {
      seen.insert(attn::ramp_xterm_levels(ramp)[attn::ramp_level(ramp, k / 100.0)]);
    }
    CHECK(seen.size() >= 8);
  }
  // Relative luminance, rising from each level to the next.
  auto luminance = [](attn::Rgb c) {
    auto lin = [](int v) {
      const double x = v / 255.0;
      return x <= 0.04045 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  };
  const std::span<const int> seq = attn::ramp_xterm_levels(attn::Ramp::kSequential);
  for (std::size_t k = 1; k < seq.size(); ++k) {
    CHECK(luminance(attn::xterm_rgb(seq[k])) > luminance(attn::xterm_rgb(seq[k - 1])));
  }
  const std::span<const int> div = attn::ramp_xterm_levels(attn::Ramp::kDiverging);
  REQUIRE(div.size() % 2 == 1);
  CHECK(attn::ramp_level(attn::Ramp::kDiverging, 0.5) == div.size() / 2);
  const attn::Rgb mid = attn::ramp_rgb(attn::Ramp::kDiverging, 0.5);
  CHECK((mid.r == mid.g && mid.g == mid.b));  // a neutral grey at 0
  CHECK(attn::xterm_rgb(231).r == 255);
  CHECK(attn::xterm_rgb(232).r == 8);
  CHECK_THROWS_AS(attn::xterm_rgb(15), attn::Error);
}

TEST_CASE("--describe: each step's description under its header, wrapped to the width") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"scaled_scores"});
  attn::HeatmapOptions o = options(attn::ColorMode::kShade, 4, attn::HeatmapForm::kAuto, 60);
  o.describe = true;
  const std::string out = attn::render_heatmaps(trace, o);
  CHECK(out.find("\n  A dot product of d_k terms grows with d_k;") != std::string::npos);
  CHECK(widest_line(out) <= 60);
}

TEST_CASE("colour modes: 24-bit and 256-colour escapes, and −inf cells uncoloured") {
  attn::TraceConfig c;
  c.causal = true;
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"masked_omega"});
  const std::string truecolor = attn::render_heatmaps(trace, options(attn::ColorMode::kTrueColor));
  CHECK(truecolor.find(";48;2;") != std::string::npos);
  CHECK(truecolor.find("(−inf and nan cells are not coloured)") != std::string::npos);
  const std::string xterm = attn::render_heatmaps(trace, options(attn::ColorMode::k256));
  CHECK(xterm.find(";48;5;") != std::string::npos);
  CHECK(xterm.find("48;2;") == std::string::npos);
  CHECK(attn::color_mode_name(attn::ColorMode::k256) == "256");
}

TEST_CASE("labels from a file are shown escaped, and the rows line up with them") {
  attn::Trace trace = attn::test::hostile_trace();
  attn::select_steps(trace, {"attention_weights"});
  const std::vector<std::string> shown = attn::test::hostile_labels_escaped();
  const std::string out = attn::render_heatmaps(
      trace, options(attn::ColorMode::kShade, 4, attn::HeatmapForm::kValues, 1000));
  CHECK_FALSE(attn::test::has_raw_control(out));
  const std::vector<std::string> lines = lines_of(out);
  // lines: header, equation, blank, column labels, 3 rows.
  REQUIRE(lines.size() >= 7);
  for (std::size_t r = 4; r < 7; ++r) CHECK(lines[r].rfind(shown[r - 4], 0) == 0);
  CHECK(lines[3].ends_with(" " + shown[2]));
}

TEST_CASE("preconditions: a width under 20 and a precision outside 0..8 are refused") {
  attn::Trace trace = attn::run_trace({});
  CHECK_THROWS_WITH_AS(attn::render_heatmaps(trace, options(attn::ColorMode::kShade, 4,
                                                            attn::HeatmapForm::kAuto, 10)),
                       "a heatmap needs a width of at least 20 columns, not 10", attn::Error);
  CHECK_THROWS_AS(attn::render_heatmaps(trace, options(attn::ColorMode::kShade, 9)), attn::Error);
}

TEST_CASE("a narrow screen: every line within the width, the legend's ends on lines of their own") {
  attn::TraceConfig c;
  c.sentences = {"a b c d e f g h i j k l m n o p q r s t u v w x y z"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"omega", "attention_weights"});
  for (const std::size_t width : std::initializer_list<std::size_t>{20, 24, 30, 40}) {
    for (const attn::ColorMode mode :
         {attn::ColorMode::kShade, attn::ColorMode::k256, attn::ColorMode::kTrueColor}) {
      attn::HeatmapOptions o = options(mode);
      o.width = width;
      const std::string out = attn::render_heatmaps(trace, o);
      CHECK_MESSAGE(widest_line(out) <= width, width);
    }
  }
  attn::HeatmapOptions o = options(attn::ColorMode::kShade);
  o.width = 20;
  CHECK(attn::render_heatmaps(trace, o).find("  legend:\n  █▓▒░· 0 ·░▒▓█\n  from -") !=
        std::string::npos);
}

TEST_CASE("text on any cell colour contrasts at least 4.5:1 (WCAG AA), in both ramps") {
  const attn::Rgb black{0, 0, 0}, white{255, 255, 255};
  CHECK(attn::contrast_ratio(black, white) == doctest::Approx(21.0));
  for (const attn::Ramp ramp : {attn::Ramp::kSequential, attn::Ramp::kDiverging}) {
    for (int k = 0; k <= 1000; ++k) {
      const attn::Rgb c = attn::ramp_rgb(ramp, k / 1000.0);
      const double ratio = attn::contrast_ratio(c, attn::is_light(c) ? black : white);
      CHECK_MESSAGE(ratio >= 4.5, k);
    }
    for (const int index : attn::ramp_xterm_levels(ramp)) {
      const attn::Rgb c = attn::xterm_rgb(index);
      CHECK(attn::contrast_ratio(c, attn::is_light(c) ? black : white) >= 4.5);
    }
  }
}
