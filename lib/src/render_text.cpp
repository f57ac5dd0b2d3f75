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

std::string shape_text(const Matrix& m) { return fmt::format("[{}, {}]", m.rows(), m.cols()); }

// Display width of UTF-8 text in terminal columns, counting each code point as one column.
std::size_t columns(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The lines of a tensor, each row followed by "# label" in one aligned column when labels exist.
void append_labelled_tensor(std::string& out, const Matrix& m,
                            const std::vector<std::string>& row_labels, int precision) {
  const std::vector<std::string> rows = format_tensor_rows(m, precision);
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

std::string int_vector_text(const std::vector<std::int64_t>& v) {
  // PyTorch's integer tensor: every element right-aligned to the widest, wrapped at 80 columns.
  std::size_t width = 1;
  for (const std::int64_t x : v) width = std::max(width, std::to_string(x).size());
  const std::size_t per_line = std::max<std::size_t>(1, (80 - 7) / (width + 2));
  std::string out = "tensor([";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += (i % per_line == 0) ? ",\n        " : ", ";
    out += fmt::format("{:>{}}", v[i], width);
  }
  return out + "])";
}

std::string number(float v, int precision) {
  std::string s = fmt::format("{:.{}f}", static_cast<double>(v), precision);
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return s[0] == '-' ? "(" + s + ")" : s;
}

void check_token_index(const char* what, std::int64_t i, std::int64_t t) {
  if (i < 1 || i > t) {
    throw Error(fmt::format("{} {} is out of range: the sentence has {} tokens, allowed 1..{}",
                            what, i, t, t));
  }
}

}  // namespace

std::string dictionary_repr(const Vocabulary& vocabulary) {
  std::string out = "{";
  for (std::size_t i = 0; i < vocabulary.words().size(); ++i) {
    if (i > 0) out += ", ";
    out += python_str_repr(vocabulary.words()[i]) + ": " + std::to_string(i);
  }
  return out + "}";
}

namespace {

void append_preamble(std::string& out, const Trace& trace) {
  const TraceConfig& c = trace.config;
  out += fmt::format("sentence: {}\n", python_str_repr(c.sentence));
  out +=
      fmt::format("settings: seed {}, vocab-size {}, d-in {}, d-kq {}, d-v {}, torch-kernel {}\n\n",
                  c.seed, c.vocab_size, c.d_in, c.d_kq, c.d_v, kernel_name(c.kernel));
  out += "dictionary: distinct words in sorted order, numbered from 0\n";
  out += dictionary_repr(trace.vocabulary) + "\n\n";
  out += fmt::format("token ids: the sentence's {} words, each by its dictionary id\n",
                     trace.words.size());
  out += int_vector_text(trace.ids) + "\n";
}

}  // namespace

std::string render_text(const Trace& trace, const TextOptions& options) {
  std::string out;
  append_preamble(out, trace);
  const std::size_t n = trace.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = trace.steps[i];
    out += fmt::format("\nstep {}/{} [{}] {}\n", i + 1, n, s.id, s.title);
    out += fmt::format("  {}    shape {}\n", s.equation, shape_text(s.values));
    if (!s.col_labels.empty()) {
      out += fmt::format("  rows: queries; columns: keys {}\n", join(s.col_labels, ", "));
    }
    append_labelled_tensor(out, s.values, s.row_labels, options.precision);
  }
  return out;
}

std::int64_t default_path_key(const Trace& trace) {
  return std::min<std::int64_t>(5, static_cast<std::int64_t>(trace.words.size()));
}

std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options) {
  const auto t = static_cast<std::int64_t>(trace.words.size());
  check_token_index("query", query, t);
  check_token_index("key", key, t);
  const int p = options.precision;
  const Eigen::Index qi = query - 1, ki = key - 1;
  const Matrix& q = trace.step("queries").values;
  const Matrix& k = trace.step("keys").values;

  std::string out;
  append_preamble(out, trace);
  out += fmt::format("\nthe path of token {}, {}\n", query, python_str_repr(trace.words[qi]));

  auto item = [&](const std::string& label, const std::string& what, const std::string& tensor) {
    out += fmt::format("\n{}: {}\n{}\n", label, what, tensor);
  };
  const std::string x_q = sup("x", query), q_q = sup("q", query);
  item(x_q + " = X[" + std::to_string(query) + "]", "its embedding",
       vector_text(trace.step("embeddings").values, qi, p));
  item(q_q + " = " + x_q + " W_q", "its query", vector_text(q, qi, p));
  item(sup("k", query) + " = " + x_q + " W_k", "its key", vector_text(k, qi, p));
  item(sup("v", query) + " = " + x_q + " W_v", "its value",
       vector_text(trace.step("values").values, qi, p));

  // One dot product written out, as the walkthrough does for ω₂₄.
  const Matrix& omega = trace.step("omega").values;
  const std::string k_k = sup("k", key);
  std::vector<std::string> terms;
  constexpr Eigen::Index kMaxTerms = 8;
  for (Eigen::Index j = 0; j < std::min(q.cols(), kMaxTerms); ++j) {
    terms.push_back(number(q(qi, j), p) + " × " + number(k(ki, j), p));
  }
  if (q.cols() > kMaxTerms) terms.push_back(fmt::format("⋯ ({} more terms)", q.cols() - kMaxTerms));
  out += fmt::format("\n{} = {} · {}: the score of key {}, {}", sub2("ω", query, key), q_q, k_k,
                     key, python_str_repr(trace.words[ki]));
  // The walkthrough counts tokens from 1 but indexes keys from 0: its omega_24 is
  // query_2.dot(keys[4]), the key of the 5th token.
  out += fmt::format(" (the walkthrough's omega_{}{} = query_{}.dot(keys[{}]))\n", query, key - 1,
                     query, key - 1);
  out += fmt::format("{} = {}\n", join(terms, " + "), number(omega(qi, ki), p));

  const std::string keys = "columns: keys " + join(trace.words, ", ");
  const std::string w_sub = digits_in(query, kSubscripts);
  item("ω" + w_sub + " = " + q_q + " Kᵀ", "its score for every key; " + keys,
       vector_text(omega, qi, p));
  item("α" + w_sub + " = softmax(ω" + w_sub + " / √d_k)", "its attention weights; " + keys,
       vector_text(trace.step("attention_weights").values, qi, p));
  item(sup("z", query) + " = Σⱼ α" + w_sub + "ⱼ v⁽ʲ⁾", "its context vector",
       vector_text(trace.step("context_vectors").values, qi, p));
  return out;
}

}  // namespace attn
