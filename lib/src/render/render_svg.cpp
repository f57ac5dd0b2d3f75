// The SVG figure's layout. Every size is a whole number of pixels estimated from the text's
// display width in a 12 px monospace font (0.6 em a column, a CJK character two), so the figure
// needs no font metrics and the same trace gives the same bytes. The cells' colours, their text
// and the scale come from the terminal heatmap's code (render_heatmap_cells.hpp,
// render_heatmap_palette.cpp), so the figure and the terminal agree.

#include "attn/render_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/text_width.hpp"
#include "attn/tokenizer.hpp"
#include "render_common.hpp"
#include "render_heatmap_cells.hpp"

namespace attn {

using heatmap_detail::fixed_text;
using heatmap_detail::Scale;
using heatmap_detail::scale_of;

namespace {

constexpr int kMargin = 16;
constexpr int kLine = 17;        // a line of 12 px text
constexpr int kTitleLine = 20;   // a line of the 14 px title
constexpr int kCellHeight = 22;  // a values-form cell
constexpr int kPanelGap = 28;    // between panels
constexpr int kLegendWidth = 240;
constexpr int kKeyColumns = 96;               // the key's lines wrap at this many columns
constexpr std::size_t kMaxLabelColumns = 24;  // a wider token is numbered, with a key below

// Pixels of `columns` columns of 12 px monospace text (0.6 em each, rounded up).
int text_px(std::size_t columns) { return static_cast<int>((columns * 72 + 9) / 10); }
int text_px(std::string_view text) { return text_px(display_width(text)); }

std::string hex(const Rgb& c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

std::string text_element(int x, int y, std::string_view text, std::string_view attributes = "") {
  // Chromium keeps a run of spaces only with xml:space on the text element itself.
  const bool spaces = text.find("  ") != std::string_view::npos;
  return fmt::format("<text x=\"{}\" y=\"{}\"{}{}{}>{}</text>\n", x, y,
                     attributes.empty() ? "" : " ", attributes,
                     spaces ? " xml:space=\"preserve\"" : "", xml_escape(text));
}

// 1, 2, 5, 10, 20, 50, ...: the step between numbered rows or columns, so that numbers `gap`
// pixels apart are at least `room` apart.
int number_step(int gap, int room) {
  for (int step = 1;; step *= 10) {
    for (int m : {1, 2, 5}) {
      if (gap * step * m >= room) return step * m;
    }
  }
}

// Whether row or column i (from 0) is numbered when every `step`-th is: 1 too, unless 2 would
// crowd it.
bool numbered(Eigen::Index i, int step) { return (i + 1) % step == 0 || (i == 0 && step != 2); }

// "tokens: 1 Life  2 is  3 short …", wrapped between entries at kKeyColumns columns.
std::vector<std::string> key_lines(std::string_view title, const std::vector<std::string>& labels,
                                   EscapeStyle bare) {
  std::vector<std::string> lines{fmt::format("{}:", title)};
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string entry = fmt::format("{} {}", i + 1, escape_controls(labels[i], bare));
    if (i > 0 && display_width(lines.back()) + 2 + display_width(entry) > kKeyColumns) {
      lines.push_back("  " + entry);
    } else {
      lines.back() += (i == 0 ? " " : "  ") + entry;
    }
  }
  return lines;
}

// The key under a grid whose rows and/or columns are numbered: "tokens: …" once where both are
// and they are the same tokens, else "queries: …" or "tokens: …" for the rows, "keys: …" for the
// columns. Labels are escaped in `bare` (LabelEscapes::bare).
std::vector<std::string> label_key(const Step& s, bool rows, bool cols, EscapeStyle bare) {
  if (rows && cols && s.row_labels == s.col_labels) return key_lines("tokens", s.row_labels, bare);
  std::vector<std::string> key;
  if (rows) key = key_lines(s.columns_are_keys ? "queries" : "tokens", s.row_labels, bare);
  if (cols) {
    std::vector<std::string> keys = key_lines("keys", s.col_labels, bare);
    key.insert(key.end(), keys.begin(), keys.end());
  }
  return key;
}

// One slice's heatmap: its sizes, then its elements drawn at (0, 0).
struct Panel {
  const Step* step = nullptr;
  Scale scale;
  bool blocks = false;                  // too large for values: cells without text, numbered
  std::string heading;                  // "head 1 of 2, sentence 1 of 3", or empty
  std::vector<std::string> rows, cols;  // the labels shown (escaped for the terminal)
  bool vertical = false;                // column labels written upwards (too wide for their cells)
  int label_width = 0;                  // the row labels' column
  int header_height = 0;                // the column labels' band
  int cell_width = 0, cell_height = 0;
  std::vector<std::string> key;  // number → token, under a blocks grid or numbered labels
  std::string non_finite;        // what the uncoloured cells are, or empty
  int width = 0, height = 0;

  int grid_top() const { return (heading.empty() ? 0 : kLine) + header_height; }
};

Panel panel_of(const Trace& trace, const Step& s, int precision) {
  Panel p;
  p.step = &s;
  p.scale = scale_of(s);
  const Eigen::Index rows = s.values.rows(), cols = s.values.cols();
  p.blocks = rows > kSvgMaxValueCells || cols > kSvgMaxValueCells;
  const EscapeStyle bare = render_detail::label_escapes(trace.config).bare;
  const std::string where = render_detail::where_text(trace, s.head, s.batch);
  if (!where.empty()) p.heading = where.substr(2, where.size() - 3);  // " (…)" without brackets
  if (p.blocks) {
    p.cell_width = p.cell_height = std::clamp(640 / static_cast<int>(std::max(rows, cols)), 3, 14);
    // Few rows of tokens (the columns made it large): each row's number and token.
    const bool row_tokens = rows <= kSvgMaxValueCells && !s.row_labels.empty();
    const int row_step = row_tokens ? 1 : number_step(p.cell_height, 14);
    for (Eigen::Index r = 0; r < rows; ++r) {
      const std::string number = numbered(r, row_step) ? std::to_string(r + 1) : "";
      p.rows.push_back(
          row_tokens ? fmt::format("{} {}", number,
                                   escape_controls(s.row_labels[static_cast<std::size_t>(r)], bare))
                     : number);
    }
    const int col_step = number_step(p.cell_width, text_px(std::to_string(cols).size()) + 6);
    for (Eigen::Index c = 0; c < cols; ++c)
      p.cols.push_back(numbered(c, col_step) ? std::to_string(c + 1) : "");
    p.key = label_key(s, !s.row_labels.empty() && !row_tokens, !s.col_labels.empty(), bare);
  } else {
    // Labels of more than kMaxLabelColumns are numbered instead, with a key below, so that a long
    // word does not push the grid into a corner of the figure.
    const auto too_wide = [](const std::vector<std::string>& labels) {
      return std::any_of(labels.begin(), labels.end(),
                         [](const std::string& l) { return display_width(l) > kMaxLabelColumns; });
    };
    std::vector<std::string> row_labels = render_detail::escaped(s.row_labels, bare),
                             col_labels = render_detail::escaped(s.col_labels, bare);
    const bool number_rows = too_wide(row_labels), number_cols = too_wide(col_labels);
    if (!number_rows) p.rows = std::move(row_labels);
    for (Eigen::Index r = static_cast<Eigen::Index>(p.rows.size()); r < rows; ++r)
      p.rows.push_back(std::to_string(r + 1));
    if (!number_cols) p.cols = std::move(col_labels);
    for (Eigen::Index c = static_cast<Eigen::Index>(p.cols.size()); c < cols; ++c)
      p.cols.push_back(std::to_string(c + 1));
    p.key = label_key(s, number_rows, number_cols, bare);
    std::size_t value_width = 0;
    for (Eigen::Index k = 0; k < s.values.size(); ++k) {
      value_width = std::max(value_width, display_width(fixed_text(s.values.data()[k], precision)));
    }
    p.cell_width = std::max(text_px(value_width) + 14, 36);
    p.cell_height = kCellHeight;
  }
  std::size_t widest_row = 0, widest_col = 0;
  for (const std::string& r : p.rows) widest_row = std::max(widest_row, display_width(r));
  for (const std::string& c : p.cols) widest_col = std::max(widest_col, display_width(c));
  p.label_width = text_px(widest_row) + 8;
  p.vertical = text_px(widest_col) + 6 > p.cell_width;
  p.header_height = p.vertical ? text_px(widest_col) + 10 : kLine + 2;
  const int grid_width = p.label_width + p.cell_width * static_cast<int>(cols);
  int key_width = 0;
  for (const std::string& line : p.key) key_width = std::max(key_width, text_px(line));
  if (!p.scale.all_finite) {
    p.non_finite = render_detail::uncoloured_cells(s.values) + (p.blocks ? ", × marks them" : "");
    key_width = std::max(key_width, p.label_width + text_px(p.non_finite));
  }
  p.width = std::max({grid_width, kLegendWidth + p.label_width, key_width});
  p.height = p.grid_top() + p.cell_height * static_cast<int>(rows) + 10 + 12 + kLine +
             (p.scale.all_finite ? 0 : kLine) + static_cast<int>(p.key.size()) * kLine;
  return p;
}

// Appends the panel to the writer's parts, cut after each cell.
void draw_panel(const Panel& p, int precision, render_detail::PartWriter& w) {
  std::string& out = w.text();
  const Matrix& m = p.step->values;  // (rows, cols): one slice of the step
  int y = 0;
  if (!p.heading.empty()) {
    out += text_element(0, y + 12, p.heading, "font-weight=\"bold\"");
    y += kLine;
  }
  // Column labels: each centred over its column, or written upwards ending just above it.
  for (std::size_t c = 0; c < p.cols.size(); ++c) {
    if (p.cols[c].empty()) continue;
    const int x = p.label_width + p.cell_width * static_cast<int>(c) + p.cell_width / 2;
    if (p.vertical) {
      const int bottom = y + p.header_height - 6;
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" class=\"col\">{}</text>\n",
          x + 4, bottom, x + 4, bottom, xml_escape(p.cols[c]));
    } else {
      out += text_element(x, y + p.header_height - 6, p.cols[c],
                          "text-anchor=\"middle\" class=\"col\"");
    }
  }
  y += p.header_height;
  // Row labels, right-aligned against the grid.
  for (std::size_t r = 0; r < p.rows.size(); ++r) {
    if (p.rows[r].empty()) continue;
    const int cy = y + p.cell_height * static_cast<int>(r) + p.cell_height / 2 + 4;
    out += text_element(p.label_width - 6, cy, p.rows[r], "text-anchor=\"end\" class=\"row\"");
  }
  // The cells: colour, then the value (values form) in black or white by the colour's luminance.
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      const float v = m(r, c);
      const int x = p.label_width + p.cell_width * static_cast<int>(c);
      const int cy = y + p.cell_height * static_cast<int>(r);
      const bool finite = std::isfinite(v);
      const Rgb colour = finite ? ramp_rgb(p.scale.ramp, p.scale.t(v)) : Rgb{255, 255, 255};
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{} class=\"cell\"/>\n", x,
          cy, p.cell_width, p.cell_height, hex(colour),
          finite ? "" : " stroke=\"#999999\" stroke-width=\"0.5\"");
      const int tx = x + p.cell_width / 2, ty = cy + p.cell_height / 2 + 4;
      if (!p.blocks) {
        const char* fill = !finite ? "#666666" : is_light(colour) ? "#000000" : "#ffffff";
        out +=
            text_element(tx, ty, fixed_text(v, precision),
                         fmt::format("text-anchor=\"middle\" fill=\"{}\" class=\"value\"", fill));
      } else if (!finite && p.cell_height >= 8) {
        out += text_element(tx, ty, "×", "text-anchor=\"middle\" fill=\"#666666\"");
      }
      w.cut_if_long();
    }
  }
  y += p.cell_height * static_cast<int>(m.rows()) + 10;
  // The legend: the ramp from end to end, its ends (and 0 in the middle of a diverging one).
  const std::string ramp_id =
      p.scale.ramp == Ramp::kDiverging ? "ramp-diverging" : "ramp-sequential";
  if (p.scale.any_finite) {
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" fill=\"url(#{})\" "
        "stroke=\"#999999\" stroke-width=\"0.5\" class=\"legend\"/>\n",
        p.label_width, y, kLegendWidth, ramp_id);
    const int ty = y + 12 + 13;
    out += text_element(p.label_width, ty, fixed_text(static_cast<float>(p.scale.lo), precision),
                        "class=\"legend-end\"");
    out += text_element(p.label_width + kLegendWidth, ty,
                        fixed_text(static_cast<float>(p.scale.hi), precision),
                        "text-anchor=\"end\" class=\"legend-end\"");
    if (p.scale.ramp == Ramp::kDiverging) {
      out += text_element(p.label_width + kLegendWidth / 2, ty, "0", "text-anchor=\"middle\"");
    }
  } else {
    out += text_element(p.label_width, y + 12, "(no finite values to colour)");
  }
  y += 12 + kLine;
  if (!p.scale.all_finite) {
    out += text_element(p.label_width, y + 12, p.non_finite);
    y += kLine;
  }
  for (const std::string& line : p.key) {
    out += text_element(0, y + 12, line, "class=\"key\"");
    y += kLine;
  }
}

std::string gradient(std::string_view id, Ramp ramp) {
  std::string out =
      fmt::format("<linearGradient id=\"{}\" x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\">\n", id);
  constexpr int kStops = 16;
  for (int i = 0; i <= kStops; ++i) {
    const double t = static_cast<double>(i) / kStops;
    out += fmt::format("<stop offset=\"{:.4f}\" stop-color=\"{}\"/>\n", t, hex(ramp_rgb(ramp, t)));
  }
  return out + "</linearGradient>\n";
}

// "rows: queries, columns: keys", or the dimensions' names.
std::string meaning_of(const Step& s) {
  if (s.columns_are_keys) return "rows: queries, columns: keys";
  const auto& names = s.shape_names;
  const std::string columns = names.empty() ? "columns" : "columns: " + names.back();
  if (s.values.rows() == 1 && names.size() < 2) return "one row, " + columns;
  const std::string rows = !s.row_labels.empty() ? "tokens"
                           : names.size() >= 2   ? names[names.size() - 2]
                                                 : "rows";
  return fmt::format("rows: {}, {}", rows, columns);
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<std::string> render_svg_parts(const Trace& trace, std::span<const std::size_t> steps,
                                          const SvgOptions& options) {
  if (options.precision < 0 || options.precision > 8) {
    throw Error(fmt::format("precision {} is not in 0..8", options.precision));
  }
  if (steps.empty()) throw Error("an SVG figure needs a step to draw");
  for (std::size_t i : steps) {
    if (i >= trace.steps.size()) {
      throw Error(
          fmt::format("step {} is not in the trace, which has {}", i + 1, trace.steps.size()));
    }
    const Step& s = trace.steps[i];
    if (s.id != trace.steps[steps[0]].id) {
      throw Error(fmt::format("an SVG figure draws one step, not {} and {}",
                              trace.steps[steps[0]].id, s.id));
    }
    if (s.values.size() == 0) throw Error(fmt::format("step {} has no values to draw", s.id));
  }
  const Step& first = trace.steps[steps[0]];
  std::vector<Panel> panels;
  for (std::size_t i : steps) panels.push_back(panel_of(trace, trace.steps[i], options.precision));
  int panel_width = 0, panel_height = 0;
  for (const Panel& p : panels) {
    panel_width = std::max(panel_width, p.width);
    panel_height = std::max(panel_height, p.height);
  }
  const std::size_t n = panels.size();
  const std::size_t across = n == 1 ? 1 : (n == 2 || n == 4) ? 2 : 3;
  const std::size_t down = (n + across - 1) / across;

  // The title: the step, then the brief header of the text view (sentence, settings, tokens).
  // "step I/N" where the figure is one step of several (an export's), else the step alone.
  const std::string place = steps.size() == trace.steps.size()
                                ? std::string()
                                : fmt::format("step {}/{} ", steps[0] + 1, trace.steps.size());
  std::vector<std::string> lines{fmt::format("{}[{}] {}", place, first.id, first.title),
                                 fmt::format("{}    {}", first.equation, meaning_of(first))};
  std::string preamble;
  render_detail::append_preamble(preamble, trace, true);
  for (std::size_t start = 0; start < preamble.size();) {
    std::size_t end = preamble.find('\n', start);
    if (end == std::string::npos) end = preamble.size();
    lines.push_back(preamble.substr(start, end - start));
    start = end + 1;
  }
  int title_width = text_px(lines[0]) * 14 / 12 + 8;
  for (const std::string& line : lines) title_width = std::max(title_width, text_px(line));
  const int title_height = kTitleLine + kLine * static_cast<int>(lines.size() - 1) + 12;

  const int grid_width =
      static_cast<int>(across) * panel_width + static_cast<int>(across - 1) * kPanelGap;
  const int width = 2 * kMargin + std::max(title_width, grid_width);
  const int height = 2 * kMargin + title_height + static_cast<int>(down) * panel_height +
                     static_cast<int>(down - 1) * kPanelGap;

  render_detail::PartWriter w;
  std::string& out = w.text();
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"monospace\" font-size=\"12\" fill=\"#000000\">\n",
      width, height);
  out += fmt::format("<title>{}</title>\n", xml_escape(lines[0]));
  out += "<defs>\n" + gradient("ramp-sequential", Ramp::kSequential) +
         gradient("ramp-diverging", Ramp::kDiverging) + "</defs>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width,
                     height);
  out += fmt::format("<g transform=\"translate({} {})\">\n", kMargin, kMargin);
  out += text_element(0, 14, lines[0],
                      "font-family=\"sans-serif\" font-size=\"14\" font-weight=\"bold\"");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    out += text_element(0, kTitleLine + kLine * static_cast<int>(i - 1) + 12, lines[i],
                        i == 1 ? "" : "fill=\"#444444\"");
  }
  out += "</g>\n";
  for (std::size_t k = 0; k < n; ++k) {
    const int x = kMargin + static_cast<int>(k % across) * (panel_width + kPanelGap);
    const int y =
        kMargin + title_height + static_cast<int>(k / across) * (panel_height + kPanelGap);
    out += fmt::format("<g transform=\"translate({} {})\" class=\"panel\">\n", x, y);
    draw_panel(panels[k], options.precision, w);
    out += "</g>\n";
  }
  out += "</svg>\n";
  return std::move(w).finish();
}

std::vector<std::string> render_svg_parts(const Trace& trace, const SvgOptions& options) {
  if (trace.steps.empty()) throw Error("an SVG figure needs a step to draw");
  std::vector<std::size_t> steps;
  for (std::size_t i = 0; i < trace.steps.size(); ++i) steps.push_back(i);
  return render_svg_parts(trace, steps, options);
}

std::string render_svg(const Trace& trace, std::span<const std::size_t> steps,
                       const SvgOptions& options) {
  return render_detail::joined(render_svg_parts(trace, steps, options));
}

std::string render_svg(const Trace& trace, const SvgOptions& options) {
  return render_detail::joined(render_svg_parts(trace, options));
}

}  // namespace attn
