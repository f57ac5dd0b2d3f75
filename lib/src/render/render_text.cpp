#include "attn/render_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "attn/describe.hpp"
#include "attn/error.hpp"
#include "attn/grouping.hpp"
#include "attn/tensor_format.hpp"
#include "attn/text_width.hpp"
#include "render_common.hpp"
#include "render_query_decode.hpp"

namespace attn {

void render_detail::append_labelled_tensor(std::string& out, const Matrix& m,
                                           const std::vector<std::string>& row_labels,
                                           int precision, bool as_vector) {
  const std::vector<std::string> rows = format_tensor_rows(m, precision, as_vector);
  std::size_t width = 0, label_width = 0;
  for (const std::string& r : rows)
    width = std::max(width, display_width(r.substr(r.rfind('\n') + 1)));
  for (const std::string& label : row_labels) {
    label_width = std::max(label_width, display_width(escape_controls(label)));
  }
  const bool above = width + 5 + label_width > kTextWidth;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool labelled = i < row_labels.size();
    if (labelled && above) {
      // Indented as the row's first value: after "tensor([[" or the "        [" of a later row.
      const std::size_t indent = std::min(rows[i].find_first_not_of(" [tensor("), rows[i].size());
      out += fmt::format("{}# {}\n", std::string(indent, ' '), escape_controls(row_labels[i]));
    }
    out += rows[i];
    if (labelled && !above) {
      const std::string_view last = std::string_view(rows[i]).substr(rows[i].rfind('\n') + 1);
      out.append(width - display_width(last) + 3, ' ');
      out += "# " + escape_controls(row_labels[i]);
    }
    out += '\n';
  }
}

namespace {

using namespace render_detail;

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
    if (options.describe && !describe_step(s.kind).empty()) {
      out += wrapped_line(fmt::format("  ({})", describe_step(s.kind)), "   ");
    }
    out += wrapped_line(fmt::format("  {}    shape {}", s.equation, shape_text(s)), "    ");
    if (s.columns_are_keys) {
      out +=
          wrap_items("  rows: queries; columns: keys ", escaped(s.col_labels), ", ", "    ") + "\n";
    } else if (!s.col_labels.empty()) {
      out += wrap_items("  columns: ", escaped(s.col_labels), ", ", "    ") + "\n";
    }
    if (!s.note.empty()) out += wrapped_line("  " + s.note, "  ");
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

namespace {

// q_i · k_j written out, "0.5667 × 0.1920 + 1.8269 × 0.6467", the first 8 products and a count
// of the rest, broken between products at 80 columns.
std::string dot_product_terms(const Matrix& q, const Matrix& k, Eigen::Index qi, Eigen::Index ki,
                              int precision) {
  std::vector<std::string> terms;
  constexpr Eigen::Index kMaxTerms = 8;
  for (Eigen::Index j = 0; j < std::min(q.cols(), kMaxTerms); ++j) {
    terms.push_back(number(q(qi, j), precision) + " × " + number(k(ki, j), precision));
  }
  if (q.cols() > kMaxTerms) {
    terms.push_back(fmt::format("⋯ ({} more terms)", q.cols() - kMaxTerms));
  }
  return wrap_items("", terms, " + ", "  ");
}

}  // namespace

std::int64_t default_path_key(std::int64_t t_k) { return std::min<std::int64_t>(5, t_k); }

std::int64_t default_path_key(const Trace& trace) {
  return default_path_key(static_cast<std::int64_t>(trace.key_sentence(0).words.size()));
}

std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options) {
  const TraceConfig& c = trace.config;
  check_query_and_key(trace, query, key);
  const int p = options.precision;
  const Eigen::Index qi = query - 1, ki = key - 1;
  const bool split = c.multihead == MultiheadForm::kSplit;
  const std::optional<int> no_head;
  // The walkthrough follows the second token with variables of its own; they are named only when
  // this run is the walkthrough's and follows that token.
  const bool walkthrough = is_walkthrough(trace) && query == 2;
  auto named = [walkthrough](std::string_view name) {
    return walkthrough ? fmt::format(" (the walkthrough's {})", name) : std::string();
  };
  // Its scores and what follows them: the walkthrough's too, unless rotary embeddings turn Q and
  // K first.
  auto named_after_scores = [&](std::string_view name) {
    return c.rope ? std::string() : named(name);
  };

  std::string out;
  append_preamble(out, trace);
  // A quantity of the path: its name and what it is, the step's description with --describe,
  // then its row of the step's values.
  auto item = [&](const std::string& heading, StepKind kind, const Matrix& m, Eigen::Index row) {
    out += '\n';
    out += wrapped_line(heading);
    if (options.describe) {
      out += wrapped_line(fmt::format("  ({})", describe_step(kind)), "   ");
    }
    out += vector_text(m, row, p) + "\n";
  };
  const std::string x_q = sup("x", query), q_q = sup("q", query);
  const std::string w_sub = subscript(query);

  for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
    const std::optional<int> batch =
        trace.inputs.size() > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    const TokenizedSentence& qs = trace.inputs[b];
    const TokenizedSentence& ks = trace.key_sentence(static_cast<int>(b));
    const std::vector<std::string> key_words = escaped(ks.words);
    auto with_keys = [&](const std::string& text) {
      return fmt::format("{}; columns: keys {}", text, fmt::join(key_words, ", "));
    };
    out += '\n';
    // PyTorch's index of the query's row, and of the key's: [1], or [0][1] in a batch (which
    // stays one word where a line breaks).
    const std::string q_index = batch ? fmt::format("{}][{}", b, qi) : std::to_string(qi);
    const std::string k_index = batch ? fmt::format("{}][{}", b, ki) : std::to_string(ki);
    // The key's word as Python prints it.
    const std::string key_repr = python_str_repr(ks.words[static_cast<std::size_t>(ki)]);
    out += wrapped_line(fmt::format(
        "the path of token {}, {}{} ({} in PyTorch, which counts from 0)", query,
        python_str_repr(qs.words[static_cast<std::size_t>(qi)]),
        batch ? fmt::format(" of sentence {} of {}", b + 1, trace.inputs.size()) : std::string(),
        batch ? fmt::format("index [{}]", q_index) : fmt::format("row {}", qi)));
    item(fmt::format("{} = X[{}]: its embedding{}", x_q, q_index,
                     named(fmt::format("x_2 = embedded_sentence[{}]", qi))),
         StepKind::kEmbeddings, trace.step(StepKind::kEmbeddings, no_head, batch).values, qi);
    // Its query, key and value; in cross-attention it has no key or value, and the key token's
    // key and value are shown instead.
    auto projections = [&](std::optional<int> head, const std::string& heads_text) {
      item(fmt::format("{} = {} W_q: its query{}{}", q_q, x_q, heads_text, named("query_2")),
           StepKind::kQueries, trace.step(StepKind::kQueries, head, batch).values, qi);
      if (c.cross) {
        const std::string x_k = fmt::format("X₂[{}]", k_index);
        const std::string whose = key_repr + heads_text;
        item(fmt::format("{} = {} W_k: the key of {}, token {} of the key sentence", sup("k", key),
                         x_k, whose, key),
             StepKind::kKeys, trace.step(StepKind::kKeys, head, batch).values, ki);
        item(fmt::format("{} = {} W_v: the value of {}", sup("v", key), x_k, whose),
             StepKind::kValues, trace.step(StepKind::kValues, head, batch).values, ki);
      } else {
        item(fmt::format("{} = {} W_k: its key{}{}", sup("k", query), x_q, heads_text,
                         named("key_2")),
             StepKind::kKeys, trace.step(StepKind::kKeys, head, batch).values, qi);
        item(fmt::format("{} = {} W_v: its value{}{}", sup("v", query), x_q, heads_text,
                         named("value_2")),
             StepKind::kValues, trace.step(StepKind::kValues, head, batch).values, qi);
      }
      if (c.rope) {
        item(fmt::format("{}' = its query turned by its position {}{}", q_q, qi, heads_text),
             StepKind::kRotatedQueries, trace.step(StepKind::kRotatedQueries, head, batch).values,
             qi);
        item(fmt::format("{}' = its key turned by its position {}{}", sup("k", query), qi,
                         heads_text),
             StepKind::kRotatedKeys, trace.step(StepKind::kRotatedKeys, head, batch).values, qi);
      }
    };
    if (split) projections(no_head, ", all heads");
    for (std::int64_t h = 0; h < c.heads; ++h) {
      if (!head_traced(c, h)) continue;  // a model's head not chosen
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      const bool grouped = c.kv_heads != 0 && c.kv_heads != c.heads;
      if (head) {
        out += fmt::format("\nhead {} of {}{}\n", h + 1, c.heads,
                           grouped ? fmt::format(", with K/V head {} of {}",
                                                 kv_head_of(h, c.heads, c.kv_heads) + 1, c.kv_heads)
                                   : std::string());
      }
      const auto [q, k] = trace.head_queries_keys(head, batch);
      if (!split) projections(head, "");
      // One dot product written out, as the walkthrough does for its omega_24.
      const Matrix& omega = trace.step(StepKind::kOmega, head, batch).values;
      // The walkthrough counts tokens from 1 but indexes keys from 0: its omega_24 is
      // query_2.dot(keys[4]), the key of the 5th token. With rotary embeddings the score is the
      // turned query's and key's.
      const std::string turned = c.rope ? "'" : "";
      const std::string queries = c.rope ? "rotated_queries" : "queries";
      const std::string keys = c.rope ? "rotated_keys" : "keys";
      // In the split form Q and K hold every head: this head's columns of them (its K/V head's
      // for the key, with grouped-query heads), as Trace::head_queries_keys takes them.
      std::string q_cols, k_cols;
      if (split) {
        const std::int64_t d_head = c.d_kq / c.heads;
        const std::int64_t kv_from =
            kv_head_of(h, c.heads, c.kv_heads == 0 ? c.heads : c.kv_heads) * d_head;
        q_cols = fmt::format("[{}:{}]", h * d_head, (h + 1) * d_head);
        k_cols = fmt::format("[{}:{}]", kv_from, kv_from + d_head);
      }
      out += '\n';
      out += wrapped_line(fmt::format(
          "{} = {}{} · {}{}{}: the score of key {}, {}; in PyTorch {}[{}]{}.dot({}[{}]{})"
          "{}",
          sub2("ω", query, key), q_q, turned, sup("k", key), turned,
          split ? " (this head's columns)" : "", key, key_repr, queries, q_index, q_cols, keys,
          k_index, k_cols,
          walkthrough && !c.rope && key == 5
              ? " (the walkthrough's omega_24 = query_2.dot(keys[4]))"
              : ""));
      out += dot_product_terms(q, k, qi, ki, p) +
             fmt::format(" = {}\n", number(omega(qi, ki), p, false));
      item(with_keys(fmt::format("ω{} = {}{} K{}ᵀ: its score for every key{}", w_sub, q_q, turned,
                                 turned, named_after_scores("omega_2"))),
           StepKind::kOmega, omega, qi);
      if (c.causal || trace.pad_id) {
        item(fmt::format("ω{}.masked_fill(M{}, −inf): its scores after the mask", w_sub, w_sub),
             StepKind::kMaskedOmega, trace.step(StepKind::kMaskedOmega, head, batch).values, qi);
      }
      item(with_keys(fmt::format("A{} = softmax(ω{} / √d_k): its attention weights{}", w_sub, w_sub,
                                 named_after_scores("attention_weights_2"))),
           StepKind::kAttentionWeights, trace.step(StepKind::kAttentionWeights, head, batch).values,
           qi);
      item(fmt::format("{} = Σⱼ A{},ⱼ v⁽ʲ⁾: its context vector{}", sup("z", query), w_sub,
                       named_after_scores("context_vector_2")),
           StepKind::kContextVectors, trace.step(StepKind::kContextVectors, head, batch).values,
           qi);
      if (c.decode) append_decoded_path(out, trace, head, batch, qi, options);
      if (c.online_softmax > 0) append_online_path(out, trace, head, batch, qi, options);
    }
    if (c.heads > 1) {
      item(fmt::format("{} = {}₁ | … | {}_H: the heads' context vectors side by side",
                       sup("z", query), sup("z", query), sup("z", query)),
           StepKind::kContextConcat, trace.step(StepKind::kContextConcat, no_head, batch).values,
           qi);
    }
    if (split) {
      item(fmt::format("{}: the output projection of its context vector", sup("out", query)),
           StepKind::kOutput, trace.step(StepKind::kOutput, no_head, batch).values, qi);
    }
  }
  return out;
}

}  // namespace attn
