#include "attn/render_html.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/render_json.hpp"

namespace {

// The texts of a table's <td> cells, in order: the table whose id is t<index>.
std::vector<std::string> table_cells(const std::string& page, int index) {
  const std::size_t start = page.find("<tbody>", page.find(fmt::format("id=\"t{}\"", index)));
  REQUIRE(start != std::string::npos);
  const std::size_t end = page.find("</table>", start);
  std::vector<std::string> cells;
  for (std::size_t at = page.find("<td", start); at < end; at = page.find("<td", at + 1)) {
    const std::size_t open = page.find('>', at) + 1;
    cells.push_back(page.substr(open, page.find("</td>", open) - open));
  }
  return cells;
}

// A JSON trace's value at `precision` decimals, as a heatmap prints it: "-inf", no "-0.0000".
std::string at_precision(const nlohmann::json& v, int precision) {
  if (v.is_string()) return v.get<std::string>();
  std::string text = fmt::format("{:.{}f}", static_cast<float>(v.get<double>()), precision);
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

// The page's data: the JSON between <script type="application/json" id="attn-data"> and
// </script>.
nlohmann::json page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"attn-data\">";
  const std::size_t at = page.find(open);
  REQUIRE(at != std::string::npos);
  const std::size_t from = at + open.size();
  return nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from));
}

}  // namespace

TEST_CASE("the HTML page's table cells are the JSON trace's values at the precision shown") {
  for (const bool causal : {false, true}) {
    attn::TraceConfig c;
    c.causal = causal;
    c.heads = causal ? 2 : 1;
    if (causal) c.sentences = {"Life is short, eat dessert first", "eat dessert"};
    const attn::Trace trace = attn::run_trace(c);
    for (const int precision : {4, 2}) {
      const std::string page = attn::render_html(trace, {precision, {}});
      const nlohmann::json json = nlohmann::json::parse(attn::render_json(trace));
      REQUIRE(json["steps"].size() == trace.steps.size());
      for (std::size_t n = 0; n < trace.steps.size(); ++n) {
        CAPTURE(trace.steps[n].id);
        std::vector<std::string> want;
        for (const auto& row : json["steps"][n]["values"]) {
          for (const auto& v : row) want.push_back(at_precision(v, precision));
        }
        CHECK(table_cells(page, static_cast<int>(n)) == want);
      }
    }
  }
}

TEST_CASE("a large matrix's exact values are in the page's data, as the JSON trace has them") {
  attn::TraceConfig c;
  std::string sentence;
  for (int i = 0; i < 70; ++i) sentence += fmt::format("w{} ", i);
  c.sentences = {sentence};
  c.vocab_size = 100;
  const attn::Trace trace = attn::run_trace(c);
  const std::string page = attn::render_html(trace, {4, {"omega", "attention_weights"}});
  const nlohmann::json data = page_data(page);
  const nlohmann::json json = nlohmann::json::parse(attn::render_json(trace));
  REQUIRE(data["steps"].size() == 2);
  for (const auto& shown : data["steps"]) {
    const int mat = shown["mat"].get<int>();
    REQUIRE(mat >= 0);  // 70 × 70 cells: a canvas, not a table
    const auto& values = data["mats"][static_cast<std::size_t>(mat)]["v"];
    for (const auto& step : json["steps"]) {
      if (step["id"] != shown["id"]) continue;
      std::size_t k = 0;
      for (const auto& row : step["values"]) {
        for (const auto& v : row) CHECK(values[k++] == v);
      }
      CHECK(k == values.size());
    }
  }
  // The working's exponentials and sums are PyTorch's (work_out_cell): each row's sum is Σ e.
  const auto& work = data["works"][0];
  CHECK(work["max"].size() == 70);
  CHECK(work["sum"].size() == 70);
}

TEST_CASE("the walkthrough's page is self-contained and small") {
  const attn::Trace trace = attn::run_trace(attn::TraceConfig{});
  const std::string page = attn::render_html(trace, {4, {}});
  CHECK(page.size() < 200 * 1024);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("@STEPS@") == std::string::npos);
  CHECK(page.starts_with("<!DOCTYPE html>"));
  // Every step, its description and the working's panel of the weights.
  for (std::size_t n = 0; n < trace.steps.size(); ++n) {
    CHECK(page.find(fmt::format("<section class=\"step\" id=\"s{}\" data-id=\"{}\"", n,
                                trace.steps[n].id)) != std::string::npos);
  }
  CHECK(page.find("class=\"m w\" id=\"t") != std::string::npos);
  // Labels are escaped.
  attn::TraceConfig c;
  c.sentences = {"a <b> & \"c\" </script>"};
  const std::string hostile = attn::render_html(attn::run_trace(c), {4, {}});
  // In the markup as entities; in the data as \u003c, so that nothing ends its <script>.
  CHECK(hostile.substr(0, hostile.find("id=\"attn-data\"")).find("<b>") == std::string::npos);
  CHECK(hostile.find("</script>\"") == std::string::npos);
  CHECK(page_data(hostile).dump().find("<b>") != std::string::npos);
  // "<!--" then "<script" in a script's data would make the browser read past its </script>.
  c.sentences = {"<!--<script> x y"};
  const std::string comment = attn::render_html(attn::run_trace(c), {4, {}});
  const std::size_t data = comment.find("id=\"attn-data\">");
  const std::size_t end = comment.find("</script>", data);
  CHECK(comment.substr(data + 16, end - data - 16).find('<') == std::string::npos);
  CHECK(page_data(comment).dump().find("<!--<script>") != std::string::npos);
}

TEST_CASE("render_html refuses a precision outside 0..8 and an unknown step") {
  const attn::Trace trace = attn::run_trace(attn::TraceConfig{});
  CHECK_THROWS_WITH_AS(attn::render_html(trace, {9, {}}), "precision 9 is outside 0..8",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::render_html(trace, {4, {"omega", "nope"}}),
                       doctest::Contains("step 'nope' is not in this trace"), attn::Error);
}

TEST_CASE("the page's legends name the cells they leave uncoloured") {
  attn::TraceConfig c;
  c.causal = true;
  const std::string causal = attn::render_html(attn::run_trace(c), {4, {}});
  CHECK(causal.find("−inf cells (masked) are not coloured") != std::string::npos);
  CHECK(causal.find("nan cells") == std::string::npos);
  // A batch's <pad> rows: every key masked, so the weights' row is nan (the rule nan).
  c.causal = false;
  c.sentences = {"a b c", "x"};
  const std::string batch = attn::render_html(attn::run_trace(c), {4, {}});
  CHECK(batch.find("yellow high; nan cells are not coloured") != std::string::npos);
  CHECK(batch.find("yellow high; −inf") == std::string::npos);
}
