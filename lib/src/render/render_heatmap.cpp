// The heatmap's layout. Each column is drawn as a fixed number of terminal columns, and its label
// is right-aligned to end where its values end, so every header and row is built from the same
// cell widths (display widths: a CJK token takes two columns). Which form and how many columns a
// band holds are decided here from the width; the colours come from render_heatmap_palette.cpp,
// the cells' text and colour from render_heatmap_cells.cpp.

#include "attn/render_heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "attn/steps.hpp"
#include "attn/text_width.hpp"
#include "attn/tokenizer.hpp"
#include "render_common.hpp"
#include "render_heatmap_cells.hpp"

namespace attn {

using render_detail::step_heading;
using namespace heatmap_detail;

namespace {

std::string spaces(std::size_t n) { return std::string(n, ' '); }

std::string pad_right(const std::string& text, std::size_t width) {
  return text + spaces(width - std::min(width, display_width(text)));
}

void rstrip(std::string& line) { line.erase(line.find_last_not_of(' ') + 1); }

std::size_t digits(std::size_t n) { return std::to_string(n).size(); }

// The step's grid: labels as escape_controls shows them (in the trace's LabelEscapes::bare), and
// how each form would be laid out.
struct Grid {
  const Step& step;
  Scale scale;
  std::vector<std::string> rows, cols;  // escaped labels; either may be empty (numbered)
  std::vector<std::string> texts;       // each cell's value at the precision, row-major
  std::size_t value_width = 0;          // the widest value
  bool same_labels = false;             // rows and columns are the same tokens (self-attention)
};

Grid grid_of(const Step& s, int precision, EscapeStyle bare) {
  Grid g{s, scale_of(s), {}, {}, {}, 0, false};
  g.rows = render_detail::escaped(s.row_labels, bare);
  g.cols = render_detail::escaped(s.col_labels, bare);
  const Matrix& m = s.values;
  g.texts.reserve(static_cast<std::size_t>(m.size()));
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    g.texts.push_back(fixed_text(m.data()[k], precision));
    g.value_width = std::max(g.value_width, display_width(g.texts.back()));
  }
  g.same_labels = !g.cols.empty() && g.rows == g.cols;
  return g;
}

std::size_t widest(const std::vector<std::string>& labels) {
  std::size_t w = 0;
  for (const std::string& l : labels) w = std::max(w, display_width(l));
  return w;
}

// One form's layout: the row labels, each column's width and its label's trailing columns.
struct Layout {
  bool blocks = false;
  bool numbered = false;    // the columns are numbered (a key below names them)
  bool row_tokens = false;  // the row labels show the tokens (else numbers: a key names them)
  std::vector<std::string> labels;  // the row labels, each padded to label_width
  std::size_t label_width = 0;      // the row labels' column, with the space after it in blocks
  std::size_t cell = 0;             // terminal columns per grid column
  std::size_t inner = 0;            // the value's width (values) or the block's (blocks)
  std::size_t per_band = 1;         // grid columns per band
};

std::vector<std::string> row_labels(const Grid& g, bool with_numbers, bool with_tokens) {
  std::vector<std::string> out;
  const auto n = static_cast<std::size_t>(g.step.values.rows());
  for (std::size_t r = 0; r < n; ++r) {
    const bool token = with_tokens && r < g.rows.size();
    if (token && with_numbers) {
      out.push_back(fmt::format("{:>{}} {}", r + 1, digits(n), g.rows[r]));
    } else {
      out.push_back(token ? g.rows[r] : fmt::format("{:>{}}", r + 1, digits(n)));
    }
  }
  return out;
}

Layout values_layout(const Grid& g, ColorMode mode, bool numbered) {
  Layout l;
  l.numbered = numbered;
  l.row_tokens = !g.rows.empty();
  l.labels = row_labels(g, numbered && g.same_labels, true);
  l.label_width = widest(l.labels);
  const auto n = static_cast<std::size_t>(g.step.values.cols());
  l.inner = std::max(g.value_width, numbered || g.cols.empty() ? digits(n) : widest(g.cols));
  // A coloured cell: a space, then the value with a space of colour either side; a shaded cell:
  // a space, the value, its shading character.
  l.cell = l.inner + (mode == ColorMode::kShade ? 2 : 3);
  return l;
}

Layout blocks_layout(const Grid& g, std::size_t width) {
  Layout l;
  l.blocks = true;
  l.numbered = !g.cols.empty();
  const auto n = static_cast<std::size_t>(g.step.values.cols());
  l.labels = row_labels(g, !g.rows.empty(), false);
  l.label_width = widest(l.labels) + 1;
  l.inner = l.label_width + 2 * n <= width ? 2 : 1;
  l.cell = l.inner;
  // The tokens after the row numbers, when they fit too.
  std::vector<std::string> with_tokens = row_labels(g, true, true);
  if (!g.rows.empty() && widest(with_tokens) + 1 + l.cell * n <= width) {
    l.labels = std::move(with_tokens);
    l.row_tokens = true;
    l.label_width = widest(l.labels) + 1;
  }
  return l;
}

bool fits(const Layout& l, std::size_t n, std::size_t width) {
  return l.label_width + l.cell * n <= width;
}

Layout choose_layout(const Grid& g, const HeatmapOptions& o) {
  const auto n = static_cast<std::size_t>(g.step.values.cols());
  Layout l;
  if (o.form == HeatmapForm::kBlocks) {
    l = blocks_layout(g, o.width);
  } else {
    l = values_layout(g, o.color, false);
    if (!fits(l, n, o.width) && !g.cols.empty()) {
      Layout numbered = values_layout(g, o.color, true);
      if (fits(numbered, n, o.width)) l = std::move(numbered);
    }
    if (o.form == HeatmapForm::kAuto && !fits(l, n, o.width)) l = blocks_layout(g, o.width);
  }
  for (std::string& label : l.labels) label = pad_right(label, l.label_width);
  const std::size_t room = o.width > l.label_width ? o.width - l.label_width : 0;
  l.per_band = std::max<std::size_t>(1, room / l.cell);
  return l;
}

// Header lines over columns [first, last): each label right-aligned to end where its column's
// values end (`trailing` columns before the cell's end).
std::string header_line(const std::vector<std::string>& labels, const Layout& l) {
  const std::size_t trailing = l.blocks ? 0 : 1;
  std::string line = spaces(l.label_width);
  for (const std::string& label : labels) {
    line += spaces(l.cell - trailing - std::min(l.cell - trailing, display_width(label)));
    line += label + spaces(trailing);
  }
  rstrip(line);
  return line + "\n";
}

std::string headers(const Grid& g, const Layout& l, std::size_t first, std::size_t last) {
  std::vector<std::string> labels;
  if (!l.numbered && !g.cols.empty()) {
    labels.assign(g.cols.begin() + static_cast<std::ptrdiff_t>(first),
                  g.cols.begin() + static_cast<std::ptrdiff_t>(last));
    return header_line(labels, l);
  }
  const std::size_t d = digits(last);
  if (d + (l.blocks ? 1 : 0) <= l.inner) {  // numbers across, a space between neighbours
    for (std::size_t c = first; c < last; ++c) labels.push_back(std::to_string(c + 1));
    return header_line(labels, l);
  }
  // Numbers written downwards, one digit per line, the last digit on the last line.
  std::string out;
  for (std::size_t line = 0; line < d; ++line) {
    labels.clear();
    for (std::size_t c = first; c < last; ++c) {
      const std::string number = std::to_string(c + 1);
      const std::size_t skip = d - number.size();
      labels.push_back(line < skip ? "" : number.substr(line - skip, 1));
    }
    out += header_line(labels, l);
  }
  return out;
}

std::string grid_rows(const Grid& g, const Layout& l, const HeatmapOptions& o, std::size_t first,
                      std::size_t last) {
  std::string out;
  const Matrix& m = g.step.values;
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    std::string line = l.labels[static_cast<std::size_t>(r)];
    for (std::size_t c = first; c < last; ++c) {
      const auto k = static_cast<std::size_t>(r * m.cols()) + c;
      const float v = m(r, static_cast<Eigen::Index>(c));
      line += l.blocks ? block_cell(v, g.scale, o.color, l.inner)
                       : value_cell(v, g.texts[k], l.inner, g.scale, o.color);
    }
    if (l.blocks && o.color != ColorMode::kShade) line += kReset;
    out += line + "\n";
  }
  return out;
}

// "  tokens: 1 Life  2 is  3 short …", wrapped to the width between entries.
std::string key_text(std::string_view title, const std::vector<std::string>& labels,
                     std::size_t width) {
  std::string out = fmt::format("  {}:", title);
  std::size_t column = display_width(out);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string entry = fmt::format("{} {}", i + 1, labels[i]);
    const std::size_t w = display_width(entry);
    const std::size_t gap = i == 0 ? 1 : 2;
    if (i > 0 && column + gap + w > width) {
      out += "\n    ";
      column = 4;
    } else {
      out += spaces(gap);
      column += gap;
    }
    out += entry;
    column += w;
  }
  return out + "\n";
}

// The grid's keys: number → token for numbered columns, and rows shown by number only.
std::string keys(const Grid& g, const Layout& l, std::size_t width) {
  const bool rows_numbered = !g.rows.empty() && !l.row_tokens;
  if (!l.numbered && !rows_numbered) return {};
  std::string out = "\n";
  if (g.same_labels && (l.numbered || rows_numbered))
    return out + key_text("tokens", g.cols, width);
  if (rows_numbered) out += key_text("queries", g.rows, width);
  if (l.numbered) out += key_text("keys", g.cols, width);
  return out;
}

// "  A = softmax(ω / √d_k)    rows: queries, columns: keys", on two lines when it is too wide.
std::string equation_text(const Step& s, std::size_t width) {
  const auto& names = s.shape_names;
  // What a dimension counts: the tiles of the online softmax, the keys a decoded token's cache
  // holds (t, or min(t, W) with a window), or numbers (d_k).
  auto dimension = [&s](std::size_t i, Eigen::Index n) {
    if (i >= s.shape_names.size()) return fmt::format("{}", n);
    const std::string& name = s.shape_names[i];
    if (name == "tiles") return fmt::format("the {} tiles", n);
    if (name == "t" || name.starts_with("min(t,")) {
      return fmt::format("the {} {} in the cache", n, n == 1 ? "key" : "keys");
    }
    // A name that is its own count ("1", "2": the loss, the weight sums' two columns).
    if (name == std::to_string(n)) return fmt::format("{} {}", n, n == 1 ? "value" : "values");
    return fmt::format("the {} = {} dimensions", name, n);
  };
  std::string meaning;
  if (s.columns_are_keys) {
    meaning = "rows: queries, columns: keys";
  } else {
    const std::string columns = dimension(names.size() - 1, s.values.cols());
    if (s.values.rows() == 1 && names.size() < 2) {
      meaning = fmt::format("one row, columns: {}", columns);
    } else {
      const std::string rows =
          !s.row_labels.empty() ? "tokens" : dimension(names.size() - 2, s.values.rows());
      meaning = fmt::format("rows: {}, columns: {}", rows, columns);
    }
  }
  const std::string one_line = fmt::format("  {}    {}", s.equation, meaning);
  if (display_width(one_line) <= width) return one_line + "\n";
  return wrap_words("  " + s.equation, width, "  ") + "\n" +
         wrap_words("  " + meaning, width, "  ") + "\n";
}

std::string heatmap_block(const Trace& trace, std::size_t index, const HeatmapOptions& o) {
  const Step& s = trace.steps[index];
  const Grid g = grid_of(s, o.precision, render_detail::label_escapes(trace.config).bare);
  const Layout l = choose_layout(g, o);
  std::string out = step_heading(trace, index, o.width) + "\n";
  out += equation_text(s, o.width);
  if (o.describe)
    out += wrap_words("  " + std::string(step_info(s.kind).description), o.width, "  ") + "\n";
  out += "\n";
  const auto n = static_cast<std::size_t>(s.values.cols());
  for (std::size_t first = 0; first < n; first += l.per_band) {
    const std::size_t last = std::min(n, first + l.per_band);
    if (l.per_band < n) {
      out += first == 0 ? "" : "\n";
      out += wrap_words(fmt::format("  {} {} to {} of {}", s.columns_are_keys ? "keys" : "columns",
                                    first + 1, last, n),
                        o.width, "  ") +
             "\n";
    }
    out += headers(g, l, first, last);
    out += grid_rows(g, l, o, first, last);
  }
  out += keys(g, l, o.width);
  out += legend_text(g.scale, o.color, l.blocks ? l.inner : 0, o.precision, o.width);
  return out;
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

std::vector<std::string> render_heatmap_blocks(const Trace& trace, const HeatmapOptions& options) {
  if (options.width < 20) {
    throw Error(
        fmt::format("a heatmap needs a width of at least 20 columns, not {}", options.width));
  }
  if (options.precision < 0 || options.precision > 8) {
    throw Error(fmt::format("precision {} is not in 0..8", options.precision));
  }
  std::vector<std::string> blocks;
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    if (trace.steps[i].values.size() == 0) continue;
    blocks.push_back(heatmap_block(trace, i, options));
  }
  return blocks;
}

std::string render_heatmaps(const Trace& trace, const HeatmapOptions& options) {
  std::string out;
  for (const std::string& block : render_heatmap_blocks(trace, options)) {
    out += (out.empty() ? "" : "\n") + block;
  }
  return out;
}

}  // namespace attn
