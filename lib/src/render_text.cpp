#include "attn/render_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "attn/error.hpp"
#include "attn/tensor_format.hpp"

namespace attn {

namespace {

constexpr std::string_view kSuperscripts[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
constexpr std::string_view kSubscripts[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};

std::string digits_in(std::int64_t n, const std::string_view (&table)[10]) {
  std::string out;
  for (const char c : std::to_string(n)) out += table[c - '0'];
  return out;
}

// x⁽²⁾
std::string sup(std::string_view name, std::int64_t i) {
  return std::string(name) + "⁽" + digits_in(i, kSuperscripts) + "⁾";
}
// ω₂₄, or ω₁₂,₃ when an index has more than one digit
std::string sub2(std::string_view name, std::int64_t i, std::int64_t j) {
  const std::string sep = (i > 9 || j > 9) ? "," : "";
  return std::string(name) + digits_in(i, kSubscripts) + sep + digits_in(j, kSubscripts);
}

// Display width of UTF-8 text in terminal columns, counting each code point as one column.
std::size_t columns(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The lines of a tensor, each row followed by "# label" in one aligned column when labels exist.
void append_labelled_tensor(std::string& out, const Matrix& m,
                            const std::vector<std::string>& row_labels, int precision,
                            bool as_vector) {
  const std::vector<std::string> rows = format_tensor_rows(m, precision, as_vector);
  std::size_t width = 0;
  for (const std::string& r : rows) width = std::max(width, columns(r.substr(r.rfind('\n') + 1)));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += rows[i];
    if (i < row_labels.size()) {
      const std::string_view last = std::string_view(rows[i]).substr(rows[i].rfind('\n') + 1);
      out.append(width - columns(last) + 3, ' ');
      out += "# " + row_labels[i];
    }
    out += '\n';
  }
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// One row of a matrix as a 1-D tensor: tensor([...]).
std::string vector_text(const Matrix& m, Eigen::Index row, int precision) {
  const Matrix r = m.row(row);
  return format_tensor(r, precision, /*as_vector=*/true);
}

std::string python_str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  out += quote;
  return out;
}

// PyTorch's integer tensor, 1-D (one row, as_vector) or 2-D: every element right-aligned to
// the widest, rows wrapped at 80 columns.
std::string int_tensor_text(const std::vector<std::vector<std::int64_t>>& rows, bool as_vector) {
  std::size_t width = 1;
  for (const auto& r : rows) {
    for (const std::int64_t x : r) width = std::max(width, std::to_string(x).size());
  }
  const std::size_t indent = as_vector ? 7 : 8;
  const std::size_t per_line = std::max<std::size_t>(1, (80 - indent) / (width + 2));
  std::string out = as_vector ? "tensor(" : "tensor([";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (r > 0) out += ",\n" + std::string(indent, ' ');
    out += "[";
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      if (i > 0) out += (i % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += fmt::format("{:>{}}", rows[r][i], width);
    }
    out += "]";
  }
  return out + (as_vector ? ")" : "])");
}

// A number in a written-out sum; a negative factor is put in parentheses.
std::string number(float v, int precision, bool factor = true) {
  std::string s = fmt::format("{:.{}f}", static_cast<double>(v), precision);
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return factor && s[0] == '-' ? "(" + s + ")" : s;
}

void check_token_index(const char* what, std::int64_t i, std::int64_t t, const char* sentence) {
  if (i < 1 || i > t) {
    throw Error(fmt::format("{} {} is out of range: the {} has {} tokens, allowed 1..{}", what, i,
                            sentence, t, t));
  }
}

}  // namespace

std::string dictionary_repr(const Vocabulary& vocabulary, std::optional<std::int64_t> pad_id) {
  std::string out = "{";
  for (std::size_t i = 0; i < vocabulary.words().size(); ++i) {
    if (i > 0) out += ", ";
    out += python_str_repr(vocabulary.words()[i]) + ": " + std::to_string(i);
  }
  if (pad_id) out += fmt::format(", {}: {}", python_str_repr(kPadToken), *pad_id);
  return out + "}";
}

namespace {

std::string python_list_repr(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& s : items) quoted.push_back(python_str_repr(s));
  return fmt::format("[{}]", join(quoted, ", "));
}

void append_preamble(std::string& out, const Trace& trace) {
  const TraceConfig& c = trace.config;
  const std::size_t batch_size = trace.inputs.size();
  if (c.x) {
    out += fmt::format("input: X from {}, {} tokens of width {}\n", c.x->source, c.x->values.rows(),
                       c.x->values.cols());
  } else if (batch_size > 1) {
    out += fmt::format("sentences: {}\n", python_list_repr(c.sentences));
  } else {
    out += fmt::format("sentence: {}\n", python_str_repr(c.sentences[0]));
  }
  if (c.cross) out += fmt::format("cross: {} (keys and values)\n", python_str_repr(*c.cross));
  std::string settings =
      c.x ? fmt::format("seed {}, d-in {}, d-kq {}, d-v {}, torch-kernel {}", c.seed, c.d_in,
                        c.d_kq, c.d_v, kernel_name(c.kernel))
          : fmt::format("seed {}, vocab-size {}, d-in {}, d-kq {}, d-v {}, torch-kernel {}", c.seed,
                        c.vocab_size, c.d_in, c.d_kq, c.d_v, kernel_name(c.kernel));
  if (c.embedding) settings += fmt::format(", embedding {}", c.embedding->source);
  for (const auto& [name, m] : {std::pair{"w-query", &c.w_query},
                                {"w-key", &c.w_key},
                                {"w-value", &c.w_value},
                                {"w-out", &c.w_out},
                                {"b-out", &c.b_out}}) {
    if (*m) settings += fmt::format(", {} {}", name, (*m)->source);
  }
  if (c.heads > 1 || c.multihead != MultiheadForm::kWrapper) {
    settings += fmt::format(", heads {} ({})", c.heads, multihead_name(c.multihead));
  }
  if (c.init != WeightInit::kRand) settings += fmt::format(", init {}", init_name(c.init));
  if (c.causal) settings += ", causal";
  if (c.causal || trace.pad_id) {
    settings += fmt::format(", masked-rows {}", masked_rows_name(c.masked_rows));
  }
  out += fmt::format("settings: {}\n", settings);

  if (c.x) return;  // no words, no dictionary
  out += "\ndictionary: distinct words in sorted order, numbered from 0";
  if (c.cross) out += ", of both sentences";
  if (batch_size > 1) out += ", of all sentences";
  if (trace.pad_id) out += "; then the padding token";
  out += fmt::format("\n{}\n\n", dictionary_repr(trace.vocabulary, trace.pad_id));

  std::vector<std::vector<std::int64_t>> ids;
  for (const TokenizedSentence& s : trace.inputs) ids.push_back(s.ids);
  if (batch_size > 1) {
    out += trace.pad_id
               ? fmt::format("token ids: {} sentences, padded to {} tokens with {} (id {})\n",
                             batch_size, ids[0].size(), python_str_repr(kPadToken), *trace.pad_id)
               : fmt::format("token ids: {} sentences of {} tokens\n", batch_size, ids[0].size());
    out += int_tensor_text(ids, false) + "\n";
  } else {
    out += fmt::format("token ids: {}{} words, each by its dictionary id\n",
                       c.cross ? "the query sentence's " : "the sentence's ", ids[0].size());
    out += int_tensor_text(ids, true) + "\n";
  }
  if (trace.cross) {
    out +=
        fmt::format("token ids: the key and value sentence's {} words\n", trace.cross->ids.size());
    out += int_tensor_text({trace.cross->ids}, true) + "\n";
  }
}

std::string shape_text(const Step& s) {
  std::vector<std::string> numbers;
  for (const std::int64_t n : s.shape) numbers.push_back(std::to_string(n));
  return fmt::format("[{}] = [{}]", join(s.shape_names, ", "), join(numbers, ", "));
}

std::string where_text(const Trace& trace, const std::optional<int>& head,
                       const std::optional<int>& batch) {
  std::vector<std::string> parts;
  if (head) parts.push_back(fmt::format("head {} of {}", *head + 1, trace.config.heads));
  if (batch) parts.push_back(fmt::format("sentence {} of {}", *batch + 1, trace.inputs.size()));
  return parts.empty() ? "" : " (" + join(parts, ", ") + ")";
}

}  // namespace

std::string render_text(const Trace& trace, const TextOptions& options) {
  std::string out;
  append_preamble(out, trace);
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    out += fmt::format("\nstep {}/{} [{}] {}{}\n", i + 1, n, s.id, s.title,
                       where_text(trace, s.head, s.batch));
    out += fmt::format("  {}    shape {}\n", s.equation, shape_text(s));
    if (!s.col_labels.empty()) {
      out += fmt::format("  rows: queries; columns: keys {}\n", join(s.col_labels, ", "));
    }
    if (!s.note.empty()) out += "  " + s.note + "\n";
    append_labelled_tensor(out, s.values, s.row_labels, options.precision,
                           s.shape_names.size() == 1);
  }
  return out;
}

std::int64_t default_path_key(const Trace& trace) {
  const auto t_k = static_cast<std::int64_t>(trace.key_sentence(0).words.size());
  return std::min<std::int64_t>(5, t_k);
}

std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options) {
  const TraceConfig& c = trace.config;
  check_token_index("query", query, static_cast<std::int64_t>(trace.inputs[0].words.size()),
                    c.cross ? "query sentence" : "sentence");
  check_token_index("key", key, static_cast<std::int64_t>(trace.key_sentence(0).words.size()),
                    c.cross ? "key and value sentence" : "sentence");
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
  const std::string w_sub = digits_in(query, kSubscripts);

  for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
    const std::optional<int> batch =
        trace.inputs.size() > 1 ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
    const TokenizedSentence& qs = trace.inputs[b];
    const TokenizedSentence& ks = trace.key_sentence(static_cast<int>(b));
    const std::string keys_text = "columns: keys " + join(ks.words, ", ");
    out += fmt::format(
        "\nthe path of token {}, {}{}\n", query, python_str_repr(qs.words[qi]),
        batch ? fmt::format(", in sentence {} of {}", b + 1, trace.inputs.size()) : std::string());
    item(x_q + " = X[" + std::to_string(query) + "]", "its embedding",
         trace.step("embeddings", no_head, batch).values, qi);
    // Its query, key and value; in cross-attention it has no key or value, and the key token's
    // key and value are shown instead.
    auto projections = [&](std::optional<int> head, const std::string& heads_text) {
      item(q_q + " = " + x_q + " W_q", "its query" + heads_text,
           trace.step("queries", head, batch).values, qi);
      if (c.cross) {
        const std::string x_k = "X₂[" + std::to_string(key) + "]";
        const std::string whose = python_str_repr(ks.words[ki]) + heads_text;
        item(sup("k", key) + " = " + x_k + " W_k", "the key of " + whose,
             trace.step("keys", head, batch).values, ki);
        item(sup("v", key) + " = " + x_k + " W_v", "the value of " + whose,
             trace.step("values", head, batch).values, ki);
      } else {
        item(sup("k", query) + " = " + x_q + " W_k", "its key" + heads_text,
             trace.step("keys", head, batch).values, qi);
        item(sup("v", query) + " = " + x_q + " W_v", "its value" + heads_text,
             trace.step("values", head, batch).values, qi);
      }
    };
    if (split) projections(no_head, ", all heads");
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::optional<int> head =
          c.heads > 1 ? std::optional<int>(static_cast<int>(h)) : std::nullopt;
      if (head) out += fmt::format("\nhead {} of {}\n", h + 1, c.heads);
      Matrix q, k;
      if (split) {
        const Eigen::Index hd = c.d_kq / c.heads;
        q = trace.step("queries", no_head, batch).values.middleCols(h * hd, hd);
        k = trace.step("keys", no_head, batch).values.middleCols(h * hd, hd);
      } else {
        q = trace.step("queries", head, batch).values;
        k = trace.step("keys", head, batch).values;
        projections(head, "");
      }
      // One dot product written out, as the walkthrough does for ω₂₄.
      const Matrix& omega = trace.step("omega", head, batch).values;
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
      out += fmt::format("{} = {}\n", join(terms, " + "), number(omega(qi, ki), p, false));
      item("ω" + w_sub + " = " + q_q + " Kᵀ", "its score for every key; " + keys_text, omega, qi);
      if (c.causal || trace.pad_id) {
        item("ω" + w_sub + ".masked_fill(M" + w_sub + ", −inf)", "its scores after the mask",
             trace.step("masked_omega", head, batch).values, qi);
      }
      item("α" + w_sub + " = softmax(ω" + w_sub + " / √d_k)", "its attention weights; " + keys_text,
           trace.step("attention_weights", head, batch).values, qi);
      item(sup("z", query) + " = Σⱼ α" + w_sub + "ⱼ v⁽ʲ⁾", "its context vector",
           trace.step("context_vectors", head, batch).values, qi);
    }
    if (c.heads > 1) {
      item(sup("z", query) + " = " + sup("z", query) + "₁ | … | " + sup("z", query) + "_H",
           "the heads' context vectors side by side",
           trace.step("context_concat", no_head, batch).values, qi);
    }
    if (split) {
      item(sup("out", query), "the output projection of its context vector",
           trace.step("output", no_head, batch).values, qi);
    }
  }
  return out;
}

}  // namespace attn
