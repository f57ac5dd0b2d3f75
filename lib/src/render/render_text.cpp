#include "attn/render_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "attn/describe.hpp"
#include "attn/error.hpp"
#include "attn/tensor_format.hpp"
#include "attn/text_width.hpp"
#include "render_common.hpp"

namespace attn {

namespace {

using namespace render_detail;

// The lines of a tensor, each row followed by "# label" in one aligned column when labels exist.
void append_labelled_tensor(std::string& out, const Matrix& m,
                            const std::vector<std::string>& row_labels, int precision,
                            bool as_vector) {
  const std::vector<std::string> rows = format_tensor_rows(m, precision, as_vector);
  std::size_t width = 0;
  for (const std::string& r : rows)
    width = std::max(width, display_width(r.substr(r.rfind('\n') + 1)));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += rows[i];
    if (i < row_labels.size()) {
      const std::string_view last = std::string_view(rows[i]).substr(rows[i].rfind('\n') + 1);
      out.append(width - display_width(last) + 3, ' ');
      out += "# " + escape_controls(row_labels[i]);
    }
    out += '\n';
  }
}

std::string shape_text(const Step& s) {
  std::vector<std::string> numbers;
  for (const std::int64_t n : s.shape) numbers.push_back(std::to_string(n));
  return fmt::format("[{}] = [{}]", fmt::join(s.shape_names, ", "), fmt::join(numbers, ", "));
}

}  // namespace

std::vector<std::string> render_text_blocks(const Trace& trace, const TextOptions& options) {
  std::vector<std::string> blocks(1);
  append_preamble(blocks[0], trace);
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    // The first step shares the preamble's block.
    std::string& out = i == 0 ? blocks[0] : blocks.emplace_back();
    out += fmt::format("\nstep {}/{} [{}] {}{}\n", i + 1, n, s.id, s.title,
                       where_text(trace, s.head, s.batch));
    if (options.describe && !describe_step(s.id).empty()) {
      out += fmt::format("  ({})\n", describe_step(s.id));
    }
    out += fmt::format("  {}    shape {}\n", s.equation, shape_text(s));
    if (s.columns_are_keys) {
      out += fmt::format("  rows: queries; columns: keys {}\n", join_labels(s.col_labels, ", "));
    } else if (!s.col_labels.empty()) {
      out += fmt::format("  columns: {}\n", join_labels(s.col_labels, ", "));
    }
    if (!s.note.empty()) out += "  " + s.note + "\n";
    append_labelled_tensor(out, s.values, s.row_labels, options.precision,
                           s.shape_names.size() == 1);
  }
  return blocks;
}

std::string render_text(const Trace& trace, const TextOptions& options) {
  std::string out;
  for (const std::string& block : render_text_blocks(trace, options)) out += block;
  return out;
}

std::int64_t default_path_key(const Trace& trace) {
  const auto t_k = static_cast<std::int64_t>(trace.key_sentence(0).words.size());
  return std::min<std::int64_t>(5, t_k);
}

std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options) {
  const TraceConfig& c = trace.config;
  check_query_and_key(trace, query, key);
  const int p = options.precision;
  const Eigen::Index qi = query - 1, ki = key - 1;
  const bool split = c.multihead == MultiheadForm::kSplit;
  const std::optional<int> no_head;

  std::string out;
  append_preamble(out, trace);
  auto item = [&](const std::string& label, const std::string& what, const Matrix& m,
                  Eigen::Index row) {
    out += fmt::format("\n{}: {}\n{}\n", label, what, vector_text(m, row, p));
  };
  const std::string x_q = sup("x", query), q_q = sup("q", query);
  const std::string w_sub = subscript(query);

  for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
    const std::optional<int> batch =
        trace.inputs.size() > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    const TokenizedSentence& qs = trace.inputs[b];
    const TokenizedSentence& ks = trace.key_sentence(static_cast<int>(b));
    const std::string keys_text = "columns: keys " + join_labels(ks.words, ", ");
    out += fmt::format(
        "\nthe path of token {}, {}{}\n", query, python_str_repr(qs.words[qi]),
        batch ? fmt::format(", in sentence {} of {}", b + 1, trace.inputs.size()) : std::string());
    item(x_q + " = X[" + std::to_string(query) + "]", "its embedding",
         trace.step(StepKind::kEmbeddings, no_head, batch).values, qi);
    // Its query, key and value; in cross-attention it has no key or value, and the key token's
    // key and value are shown instead.
    auto projections = [&](std::optional<int> head, const std::string& heads_text) {
      item(q_q + " = " + x_q + " W_q", "its query" + heads_text,
           trace.step(StepKind::kQueries, head, batch).values, qi);
      if (c.cross) {
        const std::string x_k = "X₂[" + std::to_string(key) + "]";
        const std::string whose = python_str_repr(ks.words[ki]) + heads_text;
        item(sup("k", key) + " = " + x_k + " W_k", "the key of " + whose,
             trace.step(StepKind::kKeys, head, batch).values, ki);
        item(sup("v", key) + " = " + x_k + " W_v", "the value of " + whose,
             trace.step(StepKind::kValues, head, batch).values, ki);
      } else {
        item(sup("k", query) + " = " + x_q + " W_k", "its key" + heads_text,
             trace.step(StepKind::kKeys, head, batch).values, qi);
        item(sup("v", query) + " = " + x_q + " W_v", "its value" + heads_text,
             trace.step(StepKind::kValues, head, batch).values, qi);
      }
    };
    if (split) projections(no_head, ", all heads");
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      if (head) out += fmt::format("\nhead {} of {}\n", h + 1, c.heads);
      const auto [q, k] = trace.head_queries_keys(head, batch);
      if (!split) projections(head, "");
      // One dot product written out, as the walkthrough does for ω₂₄.
      const Matrix& omega = trace.step(StepKind::kOmega, head, batch).values;
      std::vector<std::string> terms;
      constexpr Eigen::Index kMaxTerms = 8;
      for (Eigen::Index j = 0; j < std::min(q.cols(), kMaxTerms); ++j) {
        terms.push_back(number(q(qi, j), p) + " × " + number(k(ki, j), p));
      }
      if (q.cols() > kMaxTerms) {
        terms.push_back(fmt::format("⋯ ({} more terms)", q.cols() - kMaxTerms));
      }
      out += fmt::format("\n{} = {} · {}{}: the score of key {}, {}", sub2("ω", query, key), q_q,
                         sup("k", key), split ? " (this head's columns)" : "", key,
                         python_str_repr(ks.words[ki]));
      // The walkthrough counts tokens from 1 but indexes keys from 0: its omega_24 is
      // query_2.dot(keys[4]), the key of the 5th token.
      out += fmt::format(" (the walkthrough's omega_{}{} = query_{}.dot(keys[{}]))\n", query,
                         key - 1, query, key - 1);
      out += fmt::format("{} = {}\n", fmt::join(terms, " + "), number(omega(qi, ki), p, false));
      item("ω" + w_sub + " = " + q_q + " Kᵀ", "its score for every key; " + keys_text, omega, qi);
      if (c.causal || trace.pad_id) {
        item("ω" + w_sub + ".masked_fill(M" + w_sub + ", −inf)", "its scores after the mask",
             trace.step(StepKind::kMaskedOmega, head, batch).values, qi);
      }
      item("α" + w_sub + " = softmax(ω" + w_sub + " / √d_k)", "its attention weights; " + keys_text,
           trace.step(StepKind::kAttentionWeights, head, batch).values, qi);
      item(sup("z", query) + " = Σⱼ α" + w_sub + "ⱼ v⁽ʲ⁾", "its context vector",
           trace.step(StepKind::kContextVectors, head, batch).values, qi);
    }
    if (c.heads > 1) {
      item(sup("z", query) + " = " + sup("z", query) + "₁ | … | " + sup("z", query) + "_H",
           "the heads' context vectors side by side",
           trace.step(StepKind::kContextConcat, no_head, batch).values, qi);
    }
    if (split) {
      item(sup("out", query), "the output projection of its context vector",
           trace.step(StepKind::kOutput, no_head, batch).values, qi);
    }
  }
  return out;
}

}  // namespace attn
