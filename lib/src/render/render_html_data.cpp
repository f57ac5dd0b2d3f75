// The HTML page's data: the matrices its script reads and every head's working, each number the
// float32 itself (the shortest decimal that reads back as it), so that the script shows
// --explain's numbers: the exponentials and sums come from work_out_cell, PyTorch's kernel, never
// from JavaScript's Math.exp.

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "attn/explain.hpp"
#include "attn/render_json.hpp"
#include "attn/render_svg.hpp"
#include "render_common.hpp"
#include "render_html_detail.hpp"

namespace attn::html_detail {

std::string escape_html(std::string_view s) { return xml_escape(s); }

std::string json_string(std::string_view s) {
  const std::string quoted =
      nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(quoted.size());
  for (const char c : quoted) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// A float32 for the data: a JSON number, or "nan", "inf", "-inf" as a string.
std::string number_json(float v) {
  return float_text(v);  // nan, inf and -inf already quoted
}

std::string strings_json(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += json_string(items[i]);
  }
  return out + "]";
}

std::string column_json(const Matrix& m) {  // an (n, 1) matrix as [v, ...]
  std::string out = "[";
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    if (i > 0) out += ',';
    out += number_json(m(i, 0));
  }
  return out + "]";
}

// A sentence's words and their Python reprs, as --explain names them (`quoted`:
// LabelEscapes::quoted).
std::string sentence_json(const TokenizedSentence& s, EscapeStyle quoted) {
  std::vector<std::string> reprs;
  for (const std::string& w : s.words) reprs.push_back(render_detail::python_str_repr(w, quoted));
  return fmt::format("{{\"words\":{},\"reprs\":{}}}", strings_json(s.words), strings_json(reprs));
}

}  // namespace

int MatrixPool::add(const Step& step) {
  const auto [it, added] = by_step_.emplace(&step, static_cast<int>(all_.size()));
  if (added) all_.push_back(&step.values);
  return it->second;
}

int MatrixPool::add(Matrix values) {
  store_.push_back(std::move(values));
  all_.push_back(&store_.back());
  return static_cast<int>(all_.size()) - 1;
}

std::string MatrixPool::json() const {
  std::string out = "[";
  for (std::size_t n = 0; n < all_.size(); ++n) {
    const Matrix& m = *all_[n];
    out += fmt::format("{}{{\"r\":{},\"c\":{},\"v\":[", n > 0 ? ",\n" : "", m.rows(), m.cols());
    for (Eigen::Index k = 0; k < m.size(); ++k) {
      if (k > 0) out += ',';
      out += number_json(m.data()[k]);
    }
    out += "]}";
  }
  return out + "]";
}

bool has_working(StepKind kind) {
  return kind == StepKind::kOmega || kind == StepKind::kMaskedOmega ||
         kind == StepKind::kScaledScores || kind == StepKind::kExponentials ||
         kind == StepKind::kAttentionWeights;
}

Workings workings_json(const Trace& trace, MatrixPool& pool) {
  Workings w;
  const TraceConfig& c = trace.config;
  const EscapeStyle quoted = render_detail::label_escapes(c).quoted;
  std::vector<std::string> items;
  const std::size_t batches = trace.inputs.size();
  for (std::size_t b = 0; b < batches; ++b) {
    const std::optional<int> batch =
        batches > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    for (std::int64_t h = 0; h < c.heads; ++h) {
      if (!head_traced(c, h)) continue;  // a model's head not chosen
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      const Step& weights = trace.step(StepKind::kAttentionWeights, head, batch);
      const Eigen::Index t_q = weights.values.rows(), t_k = weights.values.cols();
      // Each row's max, exponentials and sum by --explain's own code (PyTorch's kernel).
      Matrix row_max(t_q, 1), row_sum(t_q, 1), exponentials(t_q, t_k);
      float root = 0;
      for (Eigen::Index i = 0; i < t_q; ++i) {
        const CellWorking cell = work_out_cell(trace, head, batch, i, 0);
        row_max(i, 0) = cell.row_max;
        row_sum(i, 0) = cell.sum;
        exponentials.row(i) = cell.exponentials;
        root = cell.root;
      }
      auto [q, k] = trace.head_queries_keys(head, batch);
      const int qm = pool.add(std::move(q)), km = pool.add(std::move(k));
      const int omega = pool.add(trace.step(StepKind::kOmega, head, batch));
      const int scaled = pool.add(trace.step(StepKind::kScaledScores, head, batch));
      const int weights_m = pool.add(weights);
      const int exps = pool.add(std::move(exponentials));
      w.index[{head.value_or(-1), batch.value_or(-1)}] = static_cast<int>(items.size());
      std::string label;
      if (head) label += render_detail::head_text(trace.config, *head, /*brief=*/true);
      if (batch) label += fmt::format("{}sentence {}", head ? ", " : "", *batch + 1);
      items.push_back(fmt::format(
          "{{\"head\":{},\"batch\":{},\"label\":{},\"where\":{},\"lead\":[{}],\"q\":{},"
          "\"k\":{},\"omega\":{},\"scaled\":{},\"weights\":{},\"exps\":{},\"max\":{},"
          "\"sum\":{},\"root\":{},\"queries\":{},\"keys\":{}}}",
          head ? std::to_string(*head) : "null", batch ? std::to_string(*batch) : "null",
          json_string(label.empty() ? "the one head" : label),
          json_string(render_detail::where_text(trace, head, batch)),
          fmt::join(render_detail::torch_slice_index(weights), ","), qm, km, omega, scaled,
          weights_m, exps, column_json(row_max), column_json(row_sum), number_json(root),
          sentence_json(trace.inputs[b], quoted),
          sentence_json(trace.key_sentence(static_cast<int>(b)), quoted)));
    }
  }
  w.json = fmt::format("[{}]", fmt::join(items, ",\n"));
  return w;
}

}  // namespace attn::html_detail
