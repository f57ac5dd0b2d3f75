#include "attn/render_heatmap.hpp"

#include <doctest/doctest.h>

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

}  // namespace

TEST_CASE("a heatmap per score-like step, tokens on both axes, a shade per value, a legend") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"attention_weights", "context_vectors"});
  const std::string out = attn::render_heatmaps(trace, {attn::ColorMode::kShade, 4});
  // context_vectors has no column tokens: only the weights are drawn.
  CHECK(out.find("[context_vectors]") == std::string::npos);
  CHECK(out.find("step 1/2 [attention_weights]") != std::string::npos);
  CHECK(out.find("\nis       0.0386·  0.6870█  0.0204·  0.0840·  0.1470·  0.0229·\n") !=
        std::string::npos);
  CHECK(out.find("legend: 0.0204 ··░▒▒▓██ 0.6870") != std::string::npos);
  CHECK(out.find("\x1b[") == std::string::npos);  // no terminal codes without colour
}

TEST_CASE("tokens of any script line up: every row has the header's display width") {
  attn::TraceConfig c;
  c.sentences = {"我 爱 你 and you"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"omega"});
  const std::vector<std::string> lines = lines_of(attn::render_heatmaps(trace, {}));
  // lines: header, equation, blank, column labels, 5 rows. A row is as wide as the labels' line
  // plus the shading character after each of its 5 values.
  REQUIRE(lines.size() >= 9);
  const std::size_t width = attn::display_width(lines[3]);
  for (std::size_t r = 4; r < 9; ++r) CHECK(attn::display_width(lines[r]) == width + 5);
  CHECK(lines[3].find("我") != std::string::npos);
}

TEST_CASE("colour modes: 24-bit and 256-colour escapes; −inf cells uncoloured") {
  attn::TraceConfig c;
  c.causal = true;
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"masked_omega"});
  const std::string truecolor = attn::render_heatmaps(trace, {attn::ColorMode::kTrueColor, 4});
  CHECK(truecolor.find("\x1b[97;48;2;") != std::string::npos);
  CHECK(truecolor.find("(−inf and nan cells are not coloured)") != std::string::npos);
  const std::string xterm = attn::render_heatmaps(trace, {attn::ColorMode::k256, 4});
  CHECK(xterm.find(";48;5;") != std::string::npos);
  CHECK(xterm.find("48;2;") == std::string::npos);
  CHECK(attn::color_mode_name(attn::ColorMode::k256) == "256");
}

TEST_CASE("labels from a file are shown escaped, and the rows line up with them") {
  attn::Trace trace = attn::test::hostile_trace();
  attn::select_steps(trace, {"attention_weights"});
  const std::vector<std::string> shown = attn::test::hostile_labels_escaped();
  const std::string out = attn::render_heatmaps(trace, {attn::ColorMode::kShade, 4});
  CHECK_FALSE(attn::test::has_raw_control(out));
  const std::vector<std::string> lines = lines_of(out);
  // lines: header, equation, blank, column labels, 3 rows.
  REQUIRE(lines.size() >= 7);
  const std::size_t width = attn::display_width(lines[3]);
  for (std::size_t r = 4; r < 7; ++r) {
    CHECK(lines[r].rfind(shown[r - 4], 0) == 0);
    CHECK(attn::display_width(lines[r]) == width + 3);
  }
  CHECK(lines[3].ends_with(" " + shown[2]));
}
