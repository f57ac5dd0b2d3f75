#include "attn/render_overview.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "attn/error.hpp"
#include "attn/grouping.hpp"
#include "attn/memory.hpp"
#include "attn/output.hpp"
#include "attn/text_width.hpp"
#include "render_common.hpp"
#include "render_overview_looks.hpp"

namespace attn {

namespace {

using overview::Look;
using overview::look;
using overview::Place;

// "[6×3]"; a vector stored as a column, "[6×1]", keeps its 1 as the trace's shape does.
// A dimension that grows with the token being decoded (kGrows) shows as `grows`: t, or min(t, W)
// for a cache that a window caps.
constexpr std::int64_t kGrows = -1;
std::string shape_text(std::int64_t rows, std::int64_t cols, std::string_view grows = "t") {
  auto dim = [grows](std::int64_t n) {
    return n == kGrows ? std::string(grows) : fmt::format("{}", n);
  };
  return fmt::format("[{}×{}]", dim(rows), dim(cols));
}

// Each kind of step the plan holds once, in the order it first comes, with its shape and how
// many times the plan holds it (per sentence, per head).
struct Kind {
  StepKind kind;
  std::int64_t rows, cols, count;
};

std::vector<Kind> kinds_of(const std::vector<PlannedStep>& plan) {
  std::vector<Kind> kinds;
  for (const PlannedStep& s : plan) {
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.kind == s.kind; });
    if (it == kinds.end()) {
      kinds.push_back({s.kind, s.rows, s.cols, 1});
    } else {
      ++it->count;  // every copy has the first's shape (the sentences are padded to one T),
      // except the KV cache's, which grow with the token t being decoded
      if (it->rows != s.rows) it->rows = kGrows;
      if (it->cols != s.cols) it->cols = kGrows;
    }
  }
  return kinds;
}

// One line of the drawing: the matrices on the left, their step ids on the right.
struct Line {
  std::string left, right;
};

// One stage being drawn: its matrices and ids, and the lines under it.
struct Stage {
  bool per_head = false;
  std::vector<std::string> matrices, ids;
  std::vector<std::string> with, with_ids;  // the weights (or the mask) it uses
  std::vector<Line> asides;
  StepKind kind = StepKind::kEmbeddings;
};

// The longest prefix of `line` at most `width` - 1 columns wide, and "…": for a word wider than
// a line, which wrap_words keeps whole. Cut between code points, found by bisection.
std::string cut(const std::string& line, std::size_t width) {
  std::vector<std::size_t> ends;  // byte offsets where a code point ends
  for (std::size_t i = 1; i <= line.size(); ++i) {
    if (i == line.size() || (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ends.push_back(i);
  }
  std::size_t lo = 0, hi = ends.size();  // the answer is in [lo, hi): ends[lo - 1] fits
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    if (display_width(std::string_view(line).substr(0, ends[mid - 1])) + 1 <= width) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return line.substr(0, lo == 0 ? 0 : ends[lo - 1]) + "…";
}

// `text` (lines) wrapped to `width` with `indent` after the first line, a word still too wide
// cut: every line at most `width` columns. A line that fits is kept as it is (wrap_words would
// close up the spaces that align a column).
std::string fit(std::string_view text, std::size_t width, std::string_view indent) {
  if (text.find('\n') == std::string_view::npos && display_width(text) <= width) {
    return std::string(text) + "\n";
  }
  const std::string wrapped = wrap_words(text, width, indent);
  std::string out;
  std::size_t start = 0;
  while (start < wrapped.size()) {
    std::size_t end = wrapped.find('\n', start);
    if (end == std::string::npos) end = wrapped.size();
    const std::string line = wrapped.substr(start, end - start);
    out += display_width(line) <= width ? line : cut(line, width);
    out += '\n';
    start = end + 1;
  }
  return out;
}

// The lines, with the right sides in one column: after the widest left side that fits beside
// its right side, and no further right than the widest right side allows. A right side that
// does not fit beside its left goes under it, in that column (or at the width's end).
std::string lay_out(const std::vector<Line>& lines, std::size_t width) {
  std::size_t right = 0;
  for (const Line& l : lines) right = std::max(right, display_width(l.right));
  std::size_t column = 0;
  for (const Line& l : lines) {
    const std::size_t lw = display_width(l.left), rw = display_width(l.right);
    if (rw > 0 && lw + 2 + rw <= width) column = std::max(column, lw + 2);
  }
  column = std::min(column, width > right ? width - right : 0);
  std::string out;
  for (const Line& l : lines) {
    const std::size_t lw = display_width(l.left), rw = display_width(l.right);
    const std::string_view indent = l.left.starts_with("  │") ? "  │     " : "      ";
    if (l.right.empty()) {
      out += fit(l.left, width, indent);
    } else if (lw + 2 <= column) {
      out += fit(l.left + std::string(column - lw, ' ') + l.right, width, indent);
    } else {
      out += fit(l.left, width, indent);
      // Under its line, in the column; inside a head's block, the block's bar goes on.
      const std::size_t at =
          std::max<std::size_t>(column + rw <= width ? column : (width > rw ? width - rw : 0), 4);
      const bool in_block = l.left.starts_with("  │");
      out += fit((in_block ? "  │" + std::string(at - 3, ' ') : std::string(at, ' ')) + l.right,
                 width, "    ");
    }
  }
  return out;
}

// 902035456 -> "902,035,456".
std::string grouped(double n) {
  std::string digits = fmt::format("{:.0f}", n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The pipeline's lines: the ids, then each stage, the per-head ones under a head line.
std::vector<Line> pipeline_lines(const Trace& trace, const std::vector<Kind>& kinds,
                                 std::int64_t batch) {
  const TraceConfig& c = trace.config;
  const std::int64_t heads = c.heads;
  // A stage per head is planned once per sentence and head (a per-head weight, once per head,
  // is drawn under the per-head stage it feeds).
  auto per_head = [&](const Kind& k) { return heads > 1 && k.count == batch * heads; };
  const auto t_q = static_cast<std::int64_t>(trace.inputs[0].words.size());
  const std::string grows =
      c.window > 0 && c.window < t_q ? fmt::format("min(t, {})", c.window) : std::string("t");
  std::vector<Stage> stages;
  if (!c.x) {
    Stage ids;
    ids.matrices.push_back(
        fmt::format("ids {}", fmt::format("[{}]", trace.inputs[0].words.size())));
    if (trace.cross) ids.matrices.push_back(fmt::format("ids₂ [{}]", trace.cross->words.size()));
    stages.push_back(std::move(ids));
  }
  std::vector<const Kind*> withs;  // waiting for the stage they feed
  for (const Kind& k : kinds) {
    Look lk = look(k.kind);
    // The split form's heads (a model's too) scale by their own width, d_head.
    if (k.kind == StepKind::kScaledScores && c.multihead == MultiheadForm::kSplit) {
      lk.symbol = "ω/√d_head";
    }
    const std::string matrix = fmt::format("{} {}", lk.symbol, shape_text(k.rows, k.cols, grows));
    const std::string id(step_info(k.kind).id);
    switch (lk.place) {
      case Place::kWith:
        withs.push_back(&k);
        break;
      case Place::kStage: {
        Stage s;
        s.kind = k.kind;
        s.per_head = per_head(k);
        s.matrices.push_back(matrix);
        s.ids.push_back(id);
        std::erase_if(withs, [&](const Kind* w) {
          if (look(w->kind).feeds != k.kind) return false;
          s.with.push_back(
              fmt::format("{} {}", look(w->kind).symbol, shape_text(w->rows, w->cols)));
          s.with_ids.emplace_back(step_info(w->kind).id);
          return true;
        });
        stages.push_back(std::move(s));
        break;
      }
      case Place::kBeside:
        stages.back().matrices.push_back(matrix);
        stages.back().ids.push_back(id);
        break;
      case Place::kAside:
        stages.back().asides.push_back({fmt::format("{}{}", lk.lead, matrix), id});
        break;
    }
  }
  if (!withs.empty()) throw std::logic_error("render_overview: a weight that feeds no stage");

  std::vector<Line> lines;
  bool in_heads = false, first = true;
  for (const Stage& s : stages) {
    if (s.per_head && !in_heads) {
      std::string head_line = fmt::format("  {} heads, each:", heads);
      if (s.kind != StepKind::kQueries && c.kv_heads != 0 && c.kv_heads != c.heads) {
        head_line = fmt::format(
            "  {} heads, each on its {} of the {} columns of Q and its K/V head's {} of the {} "
            "columns of K and V:",
            heads, c.d_kq / heads, c.d_kq, c.d_kq / heads, c.kv_heads * (c.d_kq / heads));
      } else if (s.kind != StepKind::kQueries) {
        // The split form: one projection, each head on its columns of it.
        head_line =
            c.d_kq == c.d_v
                ? fmt::format("  {} heads, each on its {} of the {} columns of Q, K and V:", heads,
                              c.d_kq / heads, c.d_kq)
                : fmt::format(
                      "  {} heads, each on its columns of Q and K ({} of {}) and "
                      "of V ({} of {}):",
                      heads, c.d_kq / heads, c.d_kq, c.d_v / heads, c.d_v);
      }
      lines.push_back({head_line, ""});
    }
    in_heads = s.per_head;
    const std::string bar = in_heads ? "  │ " : "  ";
    lines.push_back({fmt::format("{}{}{}", bar, first ? "" : "→ ", fmt::join(s.matrices, ", ")),
                     fmt::format("{}", fmt::join(s.ids, ", "))});
    const std::string under = bar + (first ? "" : "  ");
    if (!s.with.empty()) {
      lines.push_back({fmt::format("{}with {}", under, fmt::join(s.with, ", ")),
                       fmt::format("{}", fmt::join(s.with_ids, ", "))});
    }
    for (const Line& a : s.asides) lines.push_back({under + a.left, a.right});
    first = false;
  }
  return lines;
}

// Today's variants: which query heads share which K/V head, and the sliding window's band
// (■ a key the query sees, · a masked one), drawn when it fits the width.
std::string variant_lines(const Trace& trace, std::int64_t t_q, std::int64_t t_k,
                          std::size_t width) {
  const TraceConfig& c = trace.config;
  std::string out;
  if (c.kv_heads != 0 && c.kv_heads != c.heads) {
    out += fit(fmt::format("\ngrouped-query heads: {} K/V heads for {} query heads; {}", c.kv_heads,
                           c.heads, kv_sharing_text(c.heads, c.kv_heads)),
               width, "  ");
  }
  if (c.window <= 0 || c.window >= t_q) return out;
  out += fit(fmt::format("\nthe window: query i sees keys max(1, i − {}) … i, the {} {} up to "
                         "itself; the others are masked:",
                         c.window - 1, c.window, c.window == 1 ? "key" : "keys"),
             width, "  ");
  // Two columns a key, or one when two do not fit, as the heatmap's blocks narrow.
  const std::size_t label = fmt::format("query {}", t_q).size();
  const auto keys = static_cast<std::size_t>(t_k);
  const bool wide = label + 2 + 2 * keys <= width;
  if (!wide && label + 3 + keys > width) {
    return out + fit(fmt::format("  ({} keys are too many to draw in {} columns: --format heatmap "
                                 "--steps mask draws the band in bands of keys)",
                                 t_k, width),
                     width, "  ");
  }
  for (std::int64_t i = 0; i < t_q; ++i) {
    std::string line =
        fmt::format("  {:<{}}{}", fmt::format("query {}", i + 1), label, wide ? "" : " ");
    for (std::int64_t j = 0; j < t_k; ++j) {
      line += key_visible(i, j, c.window) ? (wide ? " ■" : "■") : (wide ? " ·" : "·");
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string render_overview(const Trace& trace, std::size_t width) {
  if (width < 40) {
    throw Error(fmt::format(
        "the overview needs a width of at least 40 columns, not {}: widen the terminal or set "
        "COLUMNS",
        width));
  }
  const TraceConfig& c = trace.config;
  const auto batch = static_cast<std::int64_t>(trace.inputs.size());
  const auto t_q = static_cast<std::int64_t>(trace.inputs.at(0).words.size());
  const std::int64_t t_k = trace.cross ? static_cast<std::int64_t>(trace.cross->words.size()) : t_q;
  const bool padded = trace.pad_id.has_value();
  std::set<std::int64_t> ids;  // the embedding table's gradient rows
  if (!c.x) {
    for (const TokenizedSentence& s : trace.inputs) ids.insert(s.ids.begin(), s.ids.end());
    if (trace.cross) ids.insert(trace.cross->ids.begin(), trace.cross->ids.end());
  }
  const std::vector<PlannedStep> plan =
      plan_steps(c, t_q, t_k, batch, padded, static_cast<std::int64_t>(ids.size()));

  std::string head;
  render_detail::append_preamble(head, trace, /*brief=*/true);
  std::string out = fit(head, width, "  ");

  std::string title = "\npipeline";
  if (batch > 1) {
    title += fmt::format(" of each sentence ({}, {} {} tokens)", batch, padded ? "padded to" : "of",
                         t_q);
  }
  title += c.x ? ", from the input X to the output" : ", from the token ids to the output";
  out += fit(title + "; step ids on the right:", width, "  ");
  out += lay_out(pipeline_lines(trace, kinds_of(plan), batch), width);
  out += variant_lines(trace, t_q, t_k, width);

  double values = 0.0;
  for (const PlannedStep& s : plan) {
    values += static_cast<double>(s.rows) * static_cast<double>(s.cols);
  }
  // A size's number and unit stay on one line: joined by a no-break space while the line is
  // wrapped, a space after.
  const std::string_view glue = "\u00a0";
  auto replaced = [](std::string_view text, std::string_view from, std::string_view to) {
    std::string result;
    for (std::size_t at = text.find(from); at != std::string_view::npos; at = text.find(from)) {
      result.append(text.substr(0, at)).append(to);
      text.remove_prefix(at + from.size());
    }
    return result.append(text);
  };
  auto glued = [&](const std::string& text) { return replaced(text, " ", glue); };
  auto size = [&](double bytes) {
    return glued(size_text(bytes < 1.8e19 ? static_cast<std::uint64_t>(bytes) : ~std::uint64_t{0}));
  };
  // The limit is checked against what a run holds, as the run checks it: the values, the steps'
  // records, their labels, the tokens and, for the text trace, its text.
  TraceConfig text = c;
  text.output_cost = output_cost(OutputFormat::kText);
  const double need =
      estimate_bytes(text, t_q, t_k, batch, padded, static_cast<std::int64_t>(ids.size()));
  const std::string last = fit(
      fmt::format("\nnothing computed; the whole trace: {} steps, {} values ({} of float32){}\n",
                  plan.size(), grouped(values), size(4.0 * values),
                  need > static_cast<double>(c.max_memory)
                      ? fmt::format("; the text trace would need about {}, more than the "
                                    "memory limit of {}",
                                    size(need), glued(size_text(c.max_memory)))
                      : ""),
      width, "  ");
  return out + replaced(last, glue, " ");
}

}  // namespace attn
