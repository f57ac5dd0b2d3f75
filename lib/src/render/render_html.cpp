// The HTML lesson page: the template (lib/src/render/html/) filled with the trace's steps as
// markup and the data its script reads. Small matrices are written here as <table>s, each cell's
// value as text on the heatmap's colour, so the page reads (and prints) without its script; large
// ones are drawn by the script on a canvas.

#include "attn/render_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/describe.hpp"
#include "attn/error.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_json.hpp"
#include "attn/steps.hpp"
#include "attn/version.hpp"
#include "render_common.hpp"
#include "render_heatmap_cells.hpp"
#include "render_html_detail.hpp"

namespace attn {

using namespace html_detail;

namespace {

std::string hex(const Rgb& c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

// "head 2 of 4, sentence 1 of 3", or empty.
std::string where_of(const Trace& trace, const Step& s) {
  const std::string w = render_detail::where_text(trace, s.head, s.batch);
  return w.empty() ? w : w.substr(2, w.size() - 3);
}

std::vector<std::string> labels_or_numbers(const std::vector<std::string>& labels, Eigen::Index n) {
  if (!labels.empty()) return labels;
  std::vector<std::string> out;
  for (Eigen::Index i = 1; i <= n; ++i) out.push_back(std::to_string(i));
  return out;
}

std::string labels_json(const std::vector<std::string>& labels) {
  std::string out = "[";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += json_string(labels[i]);
  }
  return out + "]";
}

// A cell's exact value and its colour, [v, r, g, b] (the first finite cell from the middle on), so
// that the page's self-test can check that its script colours a value as ramp_rgb does.
std::string probe_json(const Step& s, const heatmap_detail::Scale& scale) {
  const Matrix& m = s.values;
  for (Eigen::Index k = m.size() / 2; k < m.size(); ++k) {
    const float v = m.data()[k];
    if (!std::isfinite(v)) continue;
    const Rgb c = ramp_rgb(scale.ramp, scale.t(v));
    return fmt::format("[{},{},{},{}]", float_text(v), c.r, c.g, c.b);
  }
  return "null";
}

// The step's matrix as a table: a header row of column labels, a header cell per row.
void append_table(std::string& out, const Step& s, int index, int working, int precision) {
  const heatmap_detail::Scale scale = heatmap_detail::scale_of(s);
  const Matrix& m = s.values;
  const auto rows = labels_or_numbers(s.row_labels, m.rows());
  const auto cols = labels_or_numbers(s.col_labels, m.cols());
  out += fmt::format("<div class=\"scroll\"><table class=\"m{}\" id=\"t{}\"{}>\n",
                     working >= 0 ? " w" : "", index,
                     working >= 0 ? fmt::format(" data-work=\"{}\"", working) : "");
  out += fmt::format(
      "<caption>{} ({} × {}): rows are {}, columns {}</caption>\n<thead><tr><td></td>",
      escape_html(s.id), m.rows(), m.cols(), s.row_labels.empty() ? "numbered" : "tokens",
      s.columns_are_keys ? "keys" : (s.col_labels.empty() ? "dimensions" : "labelled"));
  for (const std::string& c : cols) out += fmt::format("<th scope=\"col\">{}</th>", escape_html(c));
  out += "</tr></thead>\n<tbody>\n";
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    out += fmt::format("<tr><th scope=\"row\">{}</th>",
                       escape_html(rows[static_cast<std::size_t>(i)]));
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      const float v = m(i, j);
      const std::string text = heatmap_detail::fixed_text(v, precision);
      if (!std::isfinite(v)) {
        out += fmt::format("<td class=\"nf\">{}</td>", text);
        continue;
      }
      const Rgb c = ramp_rgb(scale.ramp, scale.t(v));
      out += fmt::format("<td class=\"{}\" style=\"background:{}\">{}</td>",
                         is_light(c) ? "k" : "l", hex(c), text);
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

// The legend: the ramp from lo to hi (0 in the middle of a diverging one), as the heatmap's.
void append_legend(std::string& out, const Step& s, int precision, bool canvas) {
  const heatmap_detail::Scale scale = heatmap_detail::scale_of(s);
  if (!scale.any_finite) return;
  std::string stops;
  for (int k = 0; k <= 10; ++k) {
    stops += fmt::format(",{} {}%", hex(ramp_rgb(scale.ramp, k / 10.0)), k * 10);
  }
  out += fmt::format(
      "<p class=\"legend\"><span>{}</span><span class=\"ramp\" style=\"background:linear-gradient("
      "to right{})\" aria-hidden=\"true\"></span><span>{}</span> <span "
      "class=\"lnote\">{}{}</span></p>\n",
      heatmap_detail::fixed_text(static_cast<float>(scale.lo), precision), stops,
      heatmap_detail::fixed_text(static_cast<float>(scale.hi), precision),
      scale.ramp == Ramp::kDiverging ? "blue below 0, grey at 0, red above; "
                                     : "dark low, yellow high; ",
      canvas             ? "hover, tap or the arrow keys give a cell's value"
      : scale.all_finite ? "the value is printed in each cell"
                         : render_detail::uncoloured_cells(s.values));
}

void append_step(std::string& out, const Trace& trace, const Step& s, int index, int working,
                 int pool_index, int precision) {
  const std::string where = where_of(trace, s);
  out += fmt::format(
      "<section class=\"step\" id=\"s{}\" data-id=\"{}\" aria-labelledby=\"h{}\">\n"
      "<h2 id=\"h{}\"><span class=\"num\">{}.</span> <code>{}</code> {}{}</h2>\n",
      index, escape_html(s.id), index, index, index + 1, escape_html(s.id), escape_html(s.title),
      where.empty() ? "" : fmt::format(" <span class=\"where\">{}</span>", escape_html(where)));
  out += fmt::format("<p class=\"eq\">{}</p>\n", escape_html(s.equation));
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    dims.push_back(fmt::format("{}={}", s.shape_names[d], s.shape[d]));
  }
  out += fmt::format(
      "<p class=\"shape\">shape [{}] = [{}]; this matrix: {} × {}. In PyTorch: "
      "<code>{}{}</code></p>\n",
      fmt::join(s.shape_names, ", "), fmt::join(s.shape, ", "), s.values.rows(), s.values.cols(),
      escape_html(s.id), s.head || s.batch ? "[…]" : "");
  out += fmt::format("<p class=\"desc\">{}</p>\n", escape_html(describe_step(s.kind)));
  if (!s.note.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", escape_html(s.note));
  if (pool_index >= 0) {
    out += fmt::format(
        "<div class=\"big\" data-step=\"{}\"><canvas id=\"c{}\" tabindex=\"0\" role=\"img\" "
        "aria-label=\"{}: {} × {} heatmap; arrow keys move a cursor, its value is read out\" "
        "aria-describedby=\"w{}\"></canvas></div>\n",
        index, index, escape_html(s.id), s.values.rows(), s.values.cols(), index);
  } else {
    append_table(out, s, index, working, precision);
  }
  append_legend(out, s, precision, pool_index >= 0);
  if (working >= 0 || pool_index >= 0) {
    out += fmt::format(
        "<div class=\"working\" id=\"w{}\" aria-live=\"polite\"><p class=\"hint\">{}</p></div>\n",
        index,
        working >= 0 ? "Hover, focus (Tab, then the arrow keys) or tap a cell: its weight worked "
                       "out as <code>--explain</code> shows it."
                     : "Hover, focus or tap the heatmap for a cell's value.");
  }
  out += "</section>\n";
}

// Replaces the first `@name@` after `from` in `page` with `text`; returns where the text ends.
std::size_t fill(std::string& page, std::string_view name, std::string_view text,
                 std::size_t from) {
  const std::string marker = fmt::format("@{}@", name);
  const std::size_t at = page.find(marker, from);
  if (at == std::string::npos) throw Error(fmt::format("the HTML template has no {}", marker));
  page.replace(at, marker.size(), text);
  return at + text.size();
}

}  // namespace

std::string render_html(const Trace& trace, const HtmlOptions& options) {
  const int p = options.precision;
  if (p < 0 || p > 8) throw Error(fmt::format("precision {} is outside 0..8", p));
  require_step_ids(options.steps, step_ids(trace.steps));
  MatrixPool pool;
  const Workings workings = workings_json(trace, pool);

  std::string body, toc, steps_json;
  int index = 0;
  for (const Step& s : trace.steps) {
    if (!options.steps.empty() && !step_id_chosen(options.steps, s.id)) continue;
    int working = -1;
    if (has_working(s.kind) && s.columns_are_keys) {
      const auto it = workings.index.find({s.head.value_or(-1), s.batch.value_or(-1)});
      if (it != workings.index.end()) working = it->second;
    }
    const bool big = s.values.size() > kHtmlTableCells;
    const int pool_index = big ? pool.add(s) : -1;
    const heatmap_detail::Scale scale = heatmap_detail::scale_of(s);
    append_step(body, trace, s, index, working, pool_index, p);
    const std::string where = where_of(trace, s);
    toc += fmt::format("<li><a href=\"#s{}\">{}{}</a></li>", index, escape_html(s.id),
                       where.empty() ? std::string() : fmt::format(" · {}", escape_html(where)));
    steps_json += fmt::format(
        "{}{{\"id\":{},\"work\":{},\"mat\":{},\"ramp\":{},\"lo\":{},\"hi\":{},\"keys\":{},"
        "\"rows\":{},\"cols\":{},\"probe\":{}}}",
        index > 0 ? ",\n" : "", json_string(s.id), working, pool_index,
        scale.ramp == Ramp::kDiverging ? 1 : 0, fmt::format("{}", scale.lo),
        fmt::format("{}", scale.hi), s.columns_are_keys ? "true" : "false",
        big ? labels_json(labels_or_numbers(s.row_labels, s.values.rows())) : "null",
        big ? labels_json(labels_or_numbers(s.col_labels, s.values.cols())) : "null",
        probe_json(s, scale));
    ++index;
  }

  std::string ramps = "[";
  for (const Ramp r : {Ramp::kSequential, Ramp::kDiverging}) {
    ramps += r == Ramp::kSequential ? "[" : ",[";
    for (int k = 0; k <= 10; ++k) {
      const Rgb c = ramp_rgb(r, k / 10.0);
      ramps += fmt::format("{}[{},{},{}]", k > 0 ? "," : "", c.r, c.g, c.b);
    }
    ramps += "]";
  }
  ramps += "]";
  const std::string data = fmt::format(
      "{{\"tool\":\"attn-trace\",\"version\":{},\"precision\":{},\"masked_rows\":{},"
      "\"ramps\":{},\n\"steps\":[{}],\n\"works\":{},\n\"mats\":{}}}",
      json_string(kVersion), p, json_string(masked_rows_name(trace.config.masked_rows)), ramps,
      steps_json, workings.json, pool.json());

  std::string preamble;
  render_detail::append_preamble(preamble, trace, trace.inputs.front().words.size() > 64);
  std::string page(lesson_html());
  std::size_t at = fill(page, "CSS", lesson_css(), 0);
  at = fill(page, "PREAMBLE", escape_html(preamble), at);
  at = fill(page, "TOC", toc, at);
  at = fill(page, "STEPS", body, at);
  at = fill(page, "DATA", data, at);
  fill(page, "JS", lesson_js(), at);
  return page;
}

}  // namespace attn
