#include "attn/render_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/describe.hpp"
#include "attn/error.hpp"
#include "attn/render_json.hpp"
#include "attn/tensor_format.hpp"
#include "attn/tokenizer.hpp"
#include "render_common.hpp"

namespace attn {

namespace {

// A CSV field: quoted, with its quotes doubled, when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string index_or_empty(const std::optional<int>& i) {
  return i ? std::to_string(*i + 1) : std::string();
}

std::string label_or_index(const std::vector<std::string>& labels, Eigen::Index i) {
  return i < static_cast<Eigen::Index>(labels.size()) ? labels[static_cast<std::size_t>(i)]
                                                      : std::to_string(i + 1);
}

// Markdown table cells: a '|' would end the cell, so it is escaped.
// Text as Markdown shows it as written: each character that Markdown would read as markup (a
// table's '|', emphasis, code, an HTML tag such as <pad>, an entity, a link, math) after a
// backslash, which CommonMark allows before any ASCII punctuation. `backslash`: whether a
// backslash is escaped too (not in a label, where escape_controls already wrote it as "\\").
std::string md_text(std::string_view s, bool backslash = true) {
  constexpr std::string_view kMarkup = "`*_<>[]~&|$";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (kMarkup.find(c) != std::string_view::npos || (backslash && c == '\\')) out += '\\';
    out += c;
  }
  return out;
}

// A label in a Markdown cell: control characters escaped (escape_controls; its "\\" for a
// backslash is also Markdown's), then Markdown's markup. A label shown escaped already (kShown:
// GPT-2's \xf0) keeps its backslashes, each escaped for Markdown, so that it reads as in a text
// view.
std::string md_label(const std::string& s, EscapeStyle style) {
  return md_text(escape_controls(s, style), style == EscapeStyle::kShown);
}

}  // namespace

std::vector<std::string> render_csv_parts(const Trace& trace) {
  // A model's trace names its layer, and numbers heads from 0 as h.L.attn does (head_number);
  // every other trace numbers heads from 1.
  const bool model = trace.config.model != nullptr;
  render_detail::PartWriter parts;
  std::string& out = parts.text();
  out = model ? "step,layer,head,batch,row,col,row_label,col_label,value\n"
              : "step,head,batch,row,col,row_label,col_label,value\n";
  for (const Step& s : trace.steps) {
    const std::string head = s.head ? std::to_string(head_number(trace.config, *s.head)) : "";
    // The layer of the steps that are h.L's: ln_1 on (not the embeddings or the stream before).
    const bool before_layer =
        s.kind == StepKind::kTokenEmbeddings || s.kind == StepKind::kPositionEmbeddings ||
        s.kind == StepKind::kEmbeddings || s.kind == StepKind::kResidualStream;
    const std::string layer = before_layer ? "" : std::to_string(trace.config.layer);
    const std::string prefix =
        model ? fmt::format("{},{},{},{},", csv_field(s.id), layer, head, index_or_empty(s.batch))
              : fmt::format("{},{},{},", csv_field(s.id), head, index_or_empty(s.batch));
    for (Eigen::Index r = 0; r < s.values.rows(); ++r) {
      for (Eigen::Index c = 0; c < s.values.cols(); ++c) {
        const float v = s.values(r, c);
        std::string value = float_text(v);
        if (!std::isfinite(v)) value = value.substr(1, value.size() - 2);  // no JSON quotes
        out += fmt::format("{}{},{},{},{},{}\n", prefix, r + 1, c + 1,
                           csv_field(r < static_cast<Eigen::Index>(s.row_labels.size())
                                         ? s.row_labels[static_cast<std::size_t>(r)]
                                         : std::string()),
                           csv_field(c < static_cast<Eigen::Index>(s.col_labels.size())
                                         ? s.col_labels[static_cast<std::size_t>(c)]
                                         : std::string()),
                           value);
        parts.cut_if_long();
      }
    }
  }
  return std::move(parts).finish();
}

std::string render_csv(const Trace& trace) {
  return render_detail::joined(render_csv_parts(trace));
}

std::vector<std::string> render_markdown_parts(const Trace& trace, const TextOptions& options) {
  const int precision = options.precision;
  std::string preamble;
  render_detail::append_preamble(preamble, trace);
  const EscapeStyle bare = render_detail::label_escapes(trace.config).bare;
  // A fence of tildes (so that the Markdown can itself sit in a ``` block), longer than any run
  // of tildes in the header (a token may hold some).
  std::size_t run = 0, longest = 0;
  for (const char c : preamble) {
    run = c == '~' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '~');
  render_detail::PartWriter parts;
  std::string& out = parts.text();
  out = fmt::format("## Self-attention, step by step\n\n{}text\n{}{}\n\n", fence, preamble, fence);
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    std::string where;
    if (s.head) where += fmt::format(", {}", render_detail::head_text(trace.config, *s.head));
    if (s.batch) where += fmt::format(", sentence {} of {}", *s.batch + 1, trace.inputs.size());
    std::vector<std::string> sizes;
    for (const std::int64_t d : s.shape) sizes.push_back(std::to_string(d));
    out += fmt::format("{}### Step {} of {}: `{}`, {}{}\n\n", i ? "\n" : "", i + 1, n, s.id,
                       s.title, where);
    out += fmt::format("`{}`, shape [{}] = [{}]\n\n", s.equation, fmt::join(s.shape_names, ", "),
                       fmt::join(sizes, ", "));
    if (options.describe && !describe_step(s.kind).empty()) {
      // A paragraph, wrapped as prose is in the text views.
      const std::string paragraph = fmt::format("*{}*", md_text(describe_step(s.kind)));
      out += render_detail::wrapped_line(paragraph, "");
      out += '\n';
    }
    if (!s.note.empty()) out += md_text(s.note) + "\n\n";
    const TensorFormatter f(s.values.data(), s.values.size(), precision);
    out += "| |";
    for (Eigen::Index c = 0; c < s.values.cols(); ++c) {
      out += fmt::format(" {} |", md_label(label_or_index(s.col_labels, c), bare));
    }
    out += "\n|---|";
    for (Eigen::Index c = 0; c < s.values.cols(); ++c) out += "---:|";
    out += "\n";
    for (Eigen::Index r = 0; r < s.values.rows(); ++r) {
      out += fmt::format("| **{}** |", md_label(label_or_index(s.row_labels, r), bare));
      for (Eigen::Index c = 0; c < s.values.cols(); ++c) {
        std::string v = f.format(s.values(r, c));
        v.erase(0, v.find_first_not_of(' '));
        out += fmt::format(" {} |", v);
        parts.cut_if_long();
      }
      out += "\n";
    }
  }
  return std::move(parts).finish();
}

std::string render_markdown(const Trace& trace, const TextOptions& options) {
  return render_detail::joined(render_markdown_parts(trace, options));
}

}  // namespace attn
