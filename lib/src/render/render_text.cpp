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
                                           int precision, bool as_vector, EscapeStyle style) {
  const std::vector<std::string> rows = format_tensor_rows(m, precision, as_vector);
  std::size_t width = 0, label_width = 0;
  for (const std::string& r : rows)
    width = std::max(width, display_width(r.substr(r.rfind('\n') + 1)));
  for (const std::string& label : row_labels) {
    label_width = std::max(label_width, display_width(escape_controls(label, style)));
  }
  const bool above = width + 5 + label_width > kTextWidth;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool labelled = i < row_labels.size();
    if (labelled && above) {
      // Indented as the row's first value: after "tensor([[" or the "        [" of a later row
      // (not after the space that a value's sign leaves, nor into a "nan").
      const std::string_view row = rows[i];
      std::size_t indent = std::min(row.find_first_not_of(' '), row.size());
      if (row.substr(indent).starts_with("tensor(")) indent += 7;
      while (indent < row.size() && row[indent] == '[') ++indent;
      // A label too long for the line goes on several, each a comment, broken between words.
      const std::string label = escape_controls(row_labels[i], style);
      const std::size_t room = kTextWidth > indent + 2 ? kTextWidth - indent - 2 : 1;
      const std::string lines = display_width(label) > room ? wrap_words(label, room, "") : label;
      for (std::size_t from = 0; from <= lines.size();) {
        const std::size_t to = std::min(lines.find('\n', from), lines.size());
        out += fmt::format("{}# {}\n", std::string(indent, ' '), lines.substr(from, to - from));
        from = to + 1;
      }
    }
    out += rows[i];
    if (labelled && !above) {
      const std::string_view last = std::string_view(rows[i]).substr(rows[i].rfind('\n') + 1);
      out.append(width - display_width(last) + 3, ' ');
      out += "# " + escape_controls(row_labels[i], style);
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
  const EscapeStyle bare = label_escapes(trace.config).bare;
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    // The first step shares the preamble's block.
    std::string& out = i == 0 ? blocks[0] : blocks.emplace_back();
    out += '\n';
    out += step_heading(trace, i, kTextWidth);
    out += '\n';
    if (options.describe && !describe_step(s.kind).empty()) {
      out += wrapped_line(fmt::format("  ({})", describe_step(s.kind)), "   ");
    }
    out += wrapped_line(fmt::format("  {}    shape {}", s.equation, shape_text(s)), "    ");
    if (s.columns_are_keys) {
      out +=
          wrap_items("  rows: queries; columns: keys ", escaped(s.col_labels, bare), ", ", "    ") +
          "\n";
    } else if (!s.col_labels.empty()) {
      out += wrap_items("  columns: ", escaped(s.col_labels, bare), ", ", "    ") + "\n";
    }
    if (!s.note.empty()) out += wrapped_line("  " + s.note, "  ");
    append_labelled_tensor(out, s.values, s.row_labels, options.precision,
                           s.shape_names.size() == 1, bare);
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

namespace {

// One query's path through a trace, written sentence by sentence and head by head
// (render_query_path).
class QueryPath {
 public:
  QueryPath(const Trace& trace, std::int64_t query, std::int64_t key, const TextOptions& options)
      : trace_(trace),
        c_(trace.config),
        escapes_(label_escapes(trace.config)),
        options_(options),
        query_(query),
        key_(key) {}

  std::string write() {
    append_preamble(out_, trace_);
    for (std::size_t b = 0; b < trace_.inputs.size(); ++b) write_sentence(b);
    return std::move(out_);
  }

 private:
  // What one sentence's lines name: its batch index, PyTorch's index of the query's row and of
  // the key's ([1], or [0][1] in a batch, which stays one word where a line breaks), the key's
  // word as Python prints it, and the keys' words for the columns.
  struct Sentence {
    std::optional<int> batch;
    std::string q_index, k_index, key_repr;
    std::vector<std::string> key_words;
  };

  bool split() const { return c_.multihead == MultiheadForm::kSplit; }
  // The walkthrough follows the second token with variables of its own; they are named only when
  // this run is the walkthrough's and follows that token.
  bool walkthrough() const { return is_walkthrough(trace_) && query_ == 2; }
  std::string named(std::string_view name) const {
    return walkthrough() ? fmt::format(" (the walkthrough's {})", name) : std::string();
  }
  // Its scores and what follows them: the walkthrough's too, unless rotary embeddings turn Q and
  // K first.
  std::string named_after_scores(std::string_view name) const {
    return c_.rope ? std::string() : named(name);
  }
  const Matrix& values(StepKind kind, std::optional<int> head, const Sentence& s) const {
    return trace_.step(kind, head, s.batch).values;
  }

  // A quantity of the path: its name and what it is, the step's description with --describe,
  // then its row of the step's values.
  void item(const std::string& heading, StepKind kind, const Matrix& m, Eigen::Index row) {
    out_ += '\n';
    out_ += wrapped_line(heading);
    if (options_.describe) {
      out_ += wrapped_line(fmt::format("  ({})", describe_step(kind)), "   ");
    }
    out_ += vector_text(m, row, options_.precision) + "\n";
  }

  void write_sentence(std::size_t b) {
    const Eigen::Index qi = query_ - 1, ki = key_ - 1;
    Sentence s;
    s.batch = trace_.inputs.size() > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    const TokenizedSentence& qs = trace_.inputs[b];
    const TokenizedSentence& ks = trace_.key_sentence(static_cast<int>(b));
    s.key_words = escaped(ks.words, escapes_.bare);
    s.q_index = s.batch ? fmt::format("{}][{}", b, qi) : std::to_string(qi);
    s.k_index = s.batch ? fmt::format("{}][{}", b, ki) : std::to_string(ki);
    s.key_repr = python_str_repr(ks.words[static_cast<std::size_t>(ki)], escapes_.quoted);
    out_ += '\n';
    out_ += wrapped_line(fmt::format(
        "the path of token {}, {}{} ({} in PyTorch, which counts from 0)", query_,
        python_str_repr(qs.words[static_cast<std::size_t>(qi)], escapes_.quoted),
        s.batch ? fmt::format(" of sentence {} of {}", b + 1, trace_.inputs.size()) : std::string(),
        s.batch ? fmt::format("index [{}]", s.q_index) : fmt::format("row {}", qi)));
    item(fmt::format("{} = X[{}]: its embedding{}", sup("x", query_), s.q_index,
                     named(fmt::format("x_2 = embedded_sentence[{}]", qi))),
         StepKind::kEmbeddings, values(StepKind::kEmbeddings, std::nullopt, s), qi);
    if (split()) write_projections(s, std::nullopt, ", all heads");
    for (std::int64_t h = 0; h < c_.heads; ++h) {
      if (head_traced(c_, h)) write_head(s, h);  // else a model's head not chosen
    }
    if (c_.heads > 1) {
      const std::string z = sup("z", query_);
      item(fmt::format("{} = {}₁ | … | {}_H: the heads' context vectors side by side", z, z, z),
           StepKind::kContextConcat, values(StepKind::kContextConcat, std::nullopt, s), qi);
    }
    if (split()) {
      item(fmt::format("{}: the output projection of its context vector", sup("out", query_)),
           StepKind::kOutput, values(StepKind::kOutput, std::nullopt, s), qi);
    }
  }

  // Its query, key and value; in cross-attention it has no key or value, and the key token's
  // key and value are shown instead.
  void write_projections(const Sentence& s, std::optional<int> head,
                         const std::string& heads_text) {
    const Eigen::Index qi = query_ - 1, ki = key_ - 1;
    const std::string x_q = sup("x", query_), q_q = sup("q", query_);
    item(fmt::format("{} = {} W_q: its query{}{}", q_q, x_q, heads_text, named("query_2")),
         StepKind::kQueries, values(StepKind::kQueries, head, s), qi);
    if (c_.cross) {
      const std::string x_k = fmt::format("X₂[{}]", s.k_index);
      const std::string whose = s.key_repr + heads_text;
      item(fmt::format("{} = {} W_k: the key of {}, token {} of the key sentence", sup("k", key_),
                       x_k, whose, key_),
           StepKind::kKeys, values(StepKind::kKeys, head, s), ki);
      item(fmt::format("{} = {} W_v: the value of {}", sup("v", key_), x_k, whose),
           StepKind::kValues, values(StepKind::kValues, head, s), ki);
    } else {
      item(fmt::format("{} = {} W_k: its key{}{}", sup("k", query_), x_q, heads_text,
                       named("key_2")),
           StepKind::kKeys, values(StepKind::kKeys, head, s), qi);
      item(fmt::format("{} = {} W_v: its value{}{}", sup("v", query_), x_q, heads_text,
                       named("value_2")),
           StepKind::kValues, values(StepKind::kValues, head, s), qi);
    }
    if (c_.rope) {
      item(fmt::format("{}' = its query turned by its position {}{}", q_q, qi, heads_text),
           StepKind::kRotatedQueries, values(StepKind::kRotatedQueries, head, s), qi);
      item(fmt::format("{}' = its key turned by its position {}{}", sup("k", query_), qi,
                       heads_text),
           StepKind::kRotatedKeys, values(StepKind::kRotatedKeys, head, s), qi);
    }
  }

  // One dot product written out, as the walkthrough does for its omega_24. The walkthrough
  // counts tokens from 1 but indexes keys from 0: its omega_24 is query_2.dot(keys[4]), the key
  // of the 5th token. With rotary embeddings the score is the turned query's and key's. In the
  // split form Q and K hold every head: this head's columns of them (its K/V head's for the key,
  // with grouped-query heads), as Trace::head_queries_keys takes them.
  void write_score(const Sentence& s, std::int64_t h, const Matrix& q, const Matrix& k,
                   const Matrix& omega) {
    const std::string turned = c_.rope ? "'" : "";
    std::string q_cols, k_cols;
    if (split()) {
      const std::int64_t d_head = c_.d_kq / c_.heads;
      const std::int64_t kv_from =
          kv_head_of(h, c_.heads, c_.kv_heads == 0 ? c_.heads : c_.kv_heads) * d_head;
      q_cols = fmt::format("[{}:{}]", h * d_head, (h + 1) * d_head);
      k_cols = fmt::format("[{}:{}]", kv_from, kv_from + d_head);
    }
    out_ += '\n';
    out_ += wrapped_line(fmt::format(
        "{} = {}{} · {}{}{}: the score of key {}, {}; in PyTorch {}[{}]{}.dot({}[{}]{}){}",
        sub2("ω", query_, key_), sup("q", query_), turned, sup("k", key_), turned,
        split() ? " (this head's columns)" : "", key_, s.key_repr,
        c_.rope ? "rotated_queries" : "queries", s.q_index, q_cols,
        c_.rope ? "rotated_keys" : "keys", s.k_index, k_cols,
        walkthrough() && !c_.rope && key_ == 5
            ? " (the walkthrough's omega_24 = query_2.dot(keys[4]))"
            : ""));
    const int p = options_.precision;
    out_ += dot_product_terms(q, k, query_ - 1, key_ - 1, p) +
            fmt::format(" = {}\n", number(omega(query_ - 1, key_ - 1), p, false));
  }

  void write_head(const Sentence& s, std::int64_t h) {
    const Eigen::Index qi = query_ - 1;
    const std::optional<int> head =
        c_.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
    const bool grouped = c_.kv_heads != 0 && c_.kv_heads != c_.heads;
    if (head) {
      out_ +=
          fmt::format("\nhead {} of {}{}\n", h + 1, c_.heads,
                      grouped ? fmt::format(", with K/V head {} of {}",
                                            kv_head_of(h, c_.heads, c_.kv_heads) + 1, c_.kv_heads)
                              : std::string());
    }
    const auto [q, k] = trace_.head_queries_keys(head, s.batch);
    if (!split()) write_projections(s, head, "");
    const Matrix& omega = values(StepKind::kOmega, head, s);
    write_score(s, h, q, k, omega);
    auto with_keys = [&](const std::string& text) {
      return fmt::format("{}; columns: keys {}", text, fmt::join(s.key_words, ", "));
    };
    const std::string w_sub = subscript(query_), turned = c_.rope ? "'" : "";
    item(with_keys(fmt::format("ω{} = {}{} K{}ᵀ: its score for every key{}", w_sub,
                               sup("q", query_), turned, turned, named_after_scores("omega_2"))),
         StepKind::kOmega, omega, qi);
    if (c_.causal || trace_.pad_id) {
      item(fmt::format("ω{}.masked_fill(M{}, −inf): its scores after the mask", w_sub, w_sub),
           StepKind::kMaskedOmega, values(StepKind::kMaskedOmega, head, s), qi);
    }
    item(with_keys(fmt::format("A{} = softmax(ω{} / √d_k): its attention weights{}", w_sub, w_sub,
                               named_after_scores("attention_weights_2"))),
         StepKind::kAttentionWeights, values(StepKind::kAttentionWeights, head, s), qi);
    item(fmt::format("{} = Σⱼ A{},ⱼ v⁽ʲ⁾: its context vector{}", sup("z", query_), w_sub,
                     named_after_scores("context_vector_2")),
         StepKind::kContextVectors, values(StepKind::kContextVectors, head, s), qi);
    if (c_.decode) append_decoded_path(out_, trace_, head, s.batch, qi, options_);
    if (c_.online_softmax > 0) append_online_path(out_, trace_, head, s.batch, qi, options_);
  }

  const Trace& trace_;
  const TraceConfig& c_;
  const LabelEscapes escapes_;
  const TextOptions& options_;
  std::int64_t query_, key_;
  std::string out_;
};

}  // namespace

std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options) {
  check_query_and_key(trace, query, key);
  return fit_to_width(QueryPath(trace, query, key, options).write());
}

}  // namespace attn
