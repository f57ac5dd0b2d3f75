#include "attn/render_svg.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "attn/error.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_json.hpp"
#include "support/hostile_labels.hpp"

namespace {

// Every match of `pattern`'s first group in `text`, in order.
std::vector<std::string> captures(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

attn::Trace one_step(std::string_view id, attn::TraceConfig c = {}) {
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {std::string(id)});
  return trace;
}

// The value as the figure should show it: fixed, no minus sign on a value that rounds to 0.
std::string fixed(float v, int precision) {
  std::string text = fmt::format("{:.{}f}", v, precision);
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

}  // namespace

TEST_CASE("render_svg: a standalone SVG 1.1 document") {
  const attn::Trace trace = one_step("attention_weights");
  const std::string svg = attn::render_svg(trace, {});
  CHECK(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK(svg.find("xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"") != std::string::npos);
  const auto width = captures(svg, "<svg [^>]*width=\"([0-9]+)\"");
  const auto height = captures(svg, "<svg [^>]*height=\"([0-9]+)\"");
  REQUIRE(width.size() == 1);
  REQUIRE(height.size() == 1);
  CHECK(svg.find(fmt::format("viewBox=\"0 0 {} {}\"", width[0], height[0])) != std::string::npos);
  // Nothing outside the file: no links, images, external fonts or stylesheets.
  for (std::string_view outside : {"href", "<image", "@import", "url(http", "@font-face"}) {
    CHECK(svg.find(outside) == std::string::npos);
  }
  CHECK(svg.find("font-family=\"monospace\"") != std::string::npos);
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  // 6 × 6 cells, each a rectangle and a value; the rows and columns labelled with the tokens.
  CHECK(count(svg, "class=\"cell\"") == 36);
  CHECK(count(svg, "class=\"value\"") == 36);
  CHECK(captures(svg, "class=\"row\">([^<]*)<") ==
        std::vector<std::string>{"Life", "is", "short", "eat", "dessert", "first"});
  CHECK(captures(svg, "class=\"col\">([^<]*)<") ==
        std::vector<std::string>{"Life", "is", "short", "eat", "dessert", "first"});
  // The title: the step, the sentence and the settings, as the text header has them.
  CHECK(svg.find("<title>[attention_weights] attention weights, each row sums to 1</title>") !=
        std::string::npos);
  CHECK(svg.find("sentence: &apos;Life is short, eat dessert first&apos;") != std::string::npos);
  CHECK(svg.find("settings: seed 123, vocab-size 50000") != std::string::npos);
  // Deterministic.
  CHECK(attn::render_svg(trace, {}) == svg);
}

TEST_CASE("render_svg: every cell's number is the JSON trace's at the precision shown") {
  for (const char* id : {"omega", "attention_weights", "context_vectors", "w_query"}) {
    for (int precision : {0, 2, 4, 8}) {
      CAPTURE(id);
      CAPTURE(precision);
      const attn::Trace trace = one_step(id);
      const std::string svg = attn::render_svg(trace, attn::SvgOptions{precision});
      const nlohmann::json doc = nlohmann::json::parse(attn::render_json(trace));
      std::vector<std::string> expected;
      for (const auto& row : doc["steps"][0]["values"]) {
        for (const auto& v : row) {
          // The JSON's shortest text, read back as a float32, then rounded as the figure does.
          expected.push_back(fixed(std::stof(v.dump()), precision));
        }
      }
      CHECK(captures(svg, "class=\"value\">([^<]*)<") == expected);
    }
  }
}

TEST_CASE("render_svg: the cells have the terminal's 24-bit colours, the text readable on them") {
  for (const char* id : {"attention_weights", "omega"}) {
    CAPTURE(id);
    const attn::Trace trace = one_step(id);
    const std::string svg = attn::render_svg(trace, {});
    const attn::Matrix& m = trace.steps[0].values;
    const bool diverging = std::string_view(id) == "omega";
    const float lo = m.minCoeff(), hi = m.maxCoeff();
    const double max_abs = std::max(std::abs(lo), std::abs(hi));
    std::vector<std::string> expected;
    for (Eigen::Index k = 0; k < m.size(); ++k) {
      const double v = m.data()[k];
      const double t = diverging ? 0.5 + v / (2.0 * max_abs) : (v - lo) / (hi - lo);
      const attn::Rgb c =
          attn::ramp_rgb(diverging ? attn::Ramp::kDiverging : attn::Ramp::kSequential, t);
      expected.push_back(fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b));
    }
    const std::vector<std::string> fills = captures(svg, "fill=\"(#[0-9a-f]{6})\" class=\"cell\"");
    CHECK(fills == expected);
    // The terminal's 24-bit heatmap of the same step paints the same colours.
    const std::string terminal = attn::render_heatmaps(
        trace,
        attn::HeatmapOptions{attn::ColorMode::kTrueColor, 4, attn::HeatmapForm::kValues, 200});
    for (const std::string& f : fills) {
      const std::string escape = fmt::format(
          "48;2;{};{};{}m", std::stoi(f.substr(1, 2), nullptr, 16),
          std::stoi(f.substr(3, 2), nullptr, 16), std::stoi(f.substr(5, 2), nullptr, 16));
      CHECK(terminal.find(escape) != std::string::npos);
    }
    // Black on light colours, white on dark ones (the viridis ramp's dark end, yellow end).
    const std::vector<std::string> text_fills =
        captures(svg, "fill=\"(#[0-9a-f]{6})\" class=\"value\"");
    REQUIRE(text_fills.size() == fills.size());
    for (std::size_t k = 0; k < fills.size(); ++k) {
      const int r = std::stoi(fills[k].substr(1, 2), nullptr, 16);
      const int g = std::stoi(fills[k].substr(3, 2), nullptr, 16);
      const int b = std::stoi(fills[k].substr(5, 2), nullptr, 16);
      // The text that contrasts more (WCAG), at least 4.5:1.
      const attn::Rgb cell{r, g, b};
      const bool light = attn::is_light(cell);
      CHECK(text_fills[k] == (light ? "#000000" : "#ffffff"));
      CHECK(attn::contrast_ratio(cell, light ? attn::Rgb{0, 0, 0} : attn::Rgb{255, 255, 255}) >=
            4.5);
    }
    // The legend: the ends, and 0 in the middle of the diverging ramp.
    const std::vector<std::string> ends = captures(svg, "class=\"legend-end\">([^<]*)<");
    REQUIRE(ends.size() == 2);
    CHECK(ends[0] == fixed(diverging ? static_cast<float>(-max_abs) : lo, 4));
    CHECK(ends[1] == fixed(diverging ? static_cast<float>(max_abs) : hi, 4));
    CHECK((svg.find("fill=\"url(#ramp-diverging)\"") != std::string::npos) == diverging);
    CHECK((svg.find("text-anchor=\"middle\">0</text>") != std::string::npos) == diverging);
  }
}

TEST_CASE("render_svg: hostile labels are escaped for the terminal, then for XML") {
  const attn::Trace hostile = attn::test::hostile_trace();
  attn::Trace x = hostile;
  attn::select_steps(x, {"embeddings"});
  const std::string svg = attn::render_svg(x, {});
  CHECK_FALSE(attn::test::has_raw_control(svg));
  for (const std::string& label : attn::test::hostile_labels_escaped()) {
    CHECK(svg.find(">" + label + "<") != std::string::npos);
  }
  // Markup in a label is text, never markup.
  attn::TraceConfig c;
  attn::Matrix m(3, 2);  // (T, d_in)
  m << 1.0f, -2.0f, 3.0f, 4.0f, -5.0f, 6.0f;
  c.x = attn::GivenMatrix{m, "x & <y>.json", {"<b>bold</b>", "a&b", "\"q'\x1b"}};
  c.d_kq = c.d_v = 2;
  attn::Trace markup = attn::run_trace(c);
  attn::select_steps(markup, {"embeddings"});
  const std::string figure = attn::render_svg(markup, {});
  CHECK(figure.find("<b>") == std::string::npos);
  CHECK(figure.find(">&lt;b&gt;bold&lt;/b&gt;<") != std::string::npos);
  CHECK(figure.find(">a&amp;b<") != std::string::npos);
  CHECK(figure.find(">&quot;q&apos;\\x1b<") != std::string::npos);
  CHECK(figure.find("x &amp; &lt;y&gt;.json") != std::string::npos);
  CHECK(figure.find("are not coloured") == std::string::npos);
}

TEST_CASE("render_svg: −inf cells are not coloured, and the legend says so") {
  attn::TraceConfig c;
  c.causal = true;
  const std::string svg = attn::render_svg(one_step("masked_omega", c), {});
  // The causal mask hides the 15 keys above the diagonal of 6 × 6.
  CHECK(count(svg, "fill=\"#ffffff\" stroke=\"#999999\" stroke-width=\"0.5\" class=\"cell\"") ==
        15);
  CHECK(count(svg, ">-inf</text>") == 15);
  CHECK(svg.find(">−inf cells (masked) are not coloured<") != std::string::npos);
  // A batch's <pad> rows mask every key: their weights are nan, and the note says nan.
  c.causal = false;
  c.sentences = {"a b c", "x"};
  const std::string pad = attn::render_svg(one_step("attention_weights", c), {});
  CHECK(pad.find(">nan cells are not coloured<") != std::string::npos);
  CHECK(pad.find("−inf") == std::string::npos);
}

TEST_CASE("render_svg: a token too wide for the grid is numbered, with a key below") {
  const std::string word(40, 'w');
  attn::TraceConfig c;
  c.sentences = {word + " is a " + word + " word"};
  const std::string svg = attn::render_svg(one_step("attention_weights", c), {});
  CHECK(count(svg, "class=\"value\"") == 25);
  CHECK(svg.find("tokens: 1 " + word + "  2 is") != std::string::npos);
  // The grid's labels are numbers: the word is only in the title's sentence and in the key.
  CHECK(count(svg, word) == 2 + 2);
  // A word of 24 columns still labels the grid.
  c.sentences = {std::string(24, 'v') + " is"};
  CHECK(attn::render_svg(one_step("attention_weights", c), {}).find("tokens: 1 vvv") ==
        std::string::npos);
}

TEST_CASE("render_svg: a large grid is drawn as numbered blocks with a key") {
  attn::TraceConfig c;
  std::string sentence;
  for (int i = 1; i <= 30; ++i) sentence += fmt::format("{}w{}", i > 1 ? " " : "", i);
  c.sentences = {sentence};
  const std::string svg = attn::render_svg(one_step("attention_weights", c), {});
  CHECK(count(svg, "class=\"cell\"") == 900);
  CHECK(count(svg, "class=\"value\"") == 0);
  CHECK(svg.find("class=\"key\" xml:space=\"preserve\">tokens: 1 w1  2 w2  3 w3") !=
        std::string::npos);
  CHECK(svg.find("30 w30") != std::string::npos);
}

TEST_CASE("render_svg: several slices are panels, each titled, and errors name what is wrong") {
  attn::TraceConfig c;
  c.heads = 2;
  c.sentences = {"a b c", "d e"};
  const std::string svg = attn::render_svg(one_step("omega", c), {});
  CHECK(count(svg, "class=\"panel\"") == 4);
  for (const char* where : {">head 1 of 2, sentence 1 of 2<", ">head 2 of 2, sentence 2 of 2<"}) {
    CHECK(svg.find(where) != std::string::npos);
  }
  attn::Trace two = attn::run_trace({});
  attn::select_steps(two, {"omega", "attention_weights"});
  CHECK_THROWS_WITH_AS(attn::render_svg(two, {}),
                       "an SVG figure draws one step, not omega and attention_weights",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::render_svg(one_step("omega"), attn::SvgOptions{9}),
                       "precision 9 is not in 0..8", attn::Error);
  const std::vector<std::size_t> none;
  CHECK_THROWS_AS(attn::render_svg(two, none, {}), attn::Error);
}
