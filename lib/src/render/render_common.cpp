// The pieces the text renderers share: the lesson's notation, Python's reprs, the preamble.

#include "render_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "attn/names.hpp"
#include "attn/tensor_format.hpp"
#include "attn/text_width.hpp"

namespace attn {

std::string dictionary_repr(const Vocabulary& vocabulary, std::optional<std::int64_t> pad_id) {
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < vocabulary.words().size(); ++i) {
    entries.push_back(render_detail::python_str_repr(vocabulary.words()[i]) + ": " +
                      std::to_string(vocabulary.ids()[i]));
  }
  if (pad_id) {
    entries.push_back(fmt::format("{}: {}", render_detail::python_str_repr(kPadToken), *pad_id));
  }
  return render_detail::wrap_items("{", entries, ", ", " ") + "}";
}

std::string token_table(const Vocabulary& vocabulary, const Tokenizer& tokenizer,
                        std::optional<std::int64_t> pad_id) {
  std::vector<std::string> ids, tokens, shown;
  for (std::size_t i = 0; i < vocabulary.words().size(); ++i) {
    ids.push_back(std::to_string(vocabulary.ids()[i]));
    tokens.push_back(render_detail::python_str_repr(vocabulary.words()[i]));
    shown.push_back(tokenizer.display(vocabulary.words()[i]));
  }
  if (pad_id) {
    ids.push_back(std::to_string(*pad_id));
    tokens.push_back(render_detail::python_str_repr(kPadToken));
    shown.push_back("(padding)");
  }
  std::size_t id_width = 0, token_width = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    id_width = std::max(id_width, ids[i].size());
    token_width = std::max(token_width, display_width(tokens[i]));
  }
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out += fmt::format("  {:>{}}  {}{}  {}\n", ids[i], id_width, tokens[i],
                       std::string(token_width - display_width(tokens[i]), ' '), shown[i]);
  }
  return out;
}

namespace render_detail {

std::string joined(const std::vector<std::string>& parts) {
  std::size_t size = 0;
  for (const std::string& p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (const std::string& p : parts) out += p;
  return out;
}

constexpr std::string_view kSuperscriptDigits[] = {"⁰", "¹", "²", "³", "⁴",
                                                   "⁵", "⁶", "⁷", "⁸", "⁹"};
constexpr std::string_view kSubscriptDigits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};

std::string digits_in(std::int64_t n, const std::string_view (&table)[10]) {
  std::string out;
  for (const char c : std::to_string(n)) out += table[c - '0'];
  return out;
}

// x⁽²⁾
std::string sup(std::string_view name, std::int64_t i) {
  return std::string(name) + "⁽" + digits_in(i, kSuperscriptDigits) + "⁾";
}
// ω₂,₅: a cell, never to be read as a row (ω₂₅ would be row 25)
std::string sub2(std::string_view name, std::int64_t i, std::int64_t j) {
  return std::string(name) + digits_in(i, kSubscriptDigits) + "," + digits_in(j, kSubscriptDigits);
}

LabelEscapes label_escapes(const TraceConfig& config) {
  if (config.tokenizer && config.tokenizer->display_escapes())
    return {EscapeStyle::kShown, EscapeStyle::kShown};
  return {};
}

std::vector<std::string> escaped(const std::vector<std::string>& labels, EscapeStyle style) {
  std::vector<std::string> out;
  for (const std::string& label : labels) out.push_back(escape_controls(label, style));
  return out;
}

// One row of a matrix as a 1-D tensor: tensor([...]).
std::string vector_text(const Matrix& m, Eigen::Index row, int precision) {
  const Matrix r = m.row(row);
  return format_tensor(r, precision, /*as_vector=*/true);
}

std::string python_str_repr(std::string_view s, EscapeStyle style) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  // Backslashes, control characters and every other character that is not printable escaped.
  for (const char c : escape_controls(s, style)) {
    if (c == quote) out += '\\';
    out += c;
  }
  out += quote;
  return out;
}

std::vector<std::string> padded_key_labels(const std::vector<std::string>& words,
                                           std::int64_t first, EscapeStyle style) {
  std::vector<std::string> labels;
  std::size_t width = 0;
  for (std::size_t t = 0; t < words.size(); ++t) {
    const std::string word = python_str_repr(words[t], style);
    labels.push_back(fmt::format("key {} {}", first + static_cast<std::int64_t>(t) + 1, word));
    width = std::max({width, display_width(word) + 8, display_width(labels.back())});
  }
  for (std::string& label : labels) label += std::string(width - display_width(label), ' ');
  return labels;
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
std::string number(float v, int precision, bool factor) {
  // nan and the infinities as the tensors print them (fmt writes a nan with its sign bit set,
  // as x86's arithmetic makes it, as "-nan").
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : (factor ? "(-inf)" : "-inf");
  const double size = std::fabs(static_cast<double>(v));
  const bool scientific = size >= 1e8 || (size > 0.0 && size < 0.5 * std::pow(10.0, -precision));
  std::string s = scientific ? fmt::format("{:.{}e}", static_cast<double>(v), precision)
                             : fmt::format("{:.{}f}", static_cast<double>(v), precision);
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return factor && s[0] == '-' ? "(" + s + ")" : s;
}

namespace {

void check_token_index(const char* what, std::int64_t i, std::int64_t t, const char* sentence) {
  if (i < 1 || i > t) {
    throw Error(fmt::format("{} {} is out of range: the {} has {}, allowed 1..{}", what, i,
                            sentence, render_detail::counted(static_cast<std::size_t>(t), "token"),
                            t));
  }
}

}  // namespace

void check_query_and_key(const Trace& trace, std::int64_t query, std::int64_t key) {
  attn::check_query_and_key(
      trace.config.cross.has_value(), static_cast<std::int64_t>(trace.inputs[0].words.size()),
      static_cast<std::int64_t>(trace.key_sentence(0).words.size()), query, key);
}

namespace {

// A sentence as the brief preamble shows it: whole up to 12 words; longer, its first 8 words,
// "…", its last 2, and its length; the words escaped in `quoted` (LabelEscapes::quoted).
std::string brief_sentence(const std::string& sentence, const TokenizedSentence& tokens,
                           EscapeStyle quoted) {
  constexpr std::size_t kWhole = 12, kHead = 8, kTail = 2;
  const std::size_t n = static_cast<std::size_t>(tokens.length);
  if (n <= kWhole) return python_str_repr(sentence);
  std::vector<std::string> shown(tokens.words.begin(), tokens.words.begin() + kHead);
  shown.push_back("…");
  shown.insert(shown.end(), tokens.words.begin() + static_cast<std::ptrdiff_t>(n - kTail),
               tokens.words.begin() + static_cast<std::ptrdiff_t>(n));
  return fmt::format("{} ({} words, shortened)",
                     python_str_repr(fmt::format("{}", fmt::join(shown, " ")), quoted), n);
}

}  // namespace

namespace {

// A model's settings: the checkpoint's, not the lesson's.
std::vector<std::string> model_settings(const TraceConfig& c) {
  const Gpt2Config& m = c.model->config();
  std::vector<std::string> settings = {
      fmt::format("model {}", escape_controls(c.model->path())),
      fmt::format("GPT-2 with {}, {}, n_embd {}, {}",
                  counted(static_cast<std::size_t>(m.n_layer), "layer"),
                  counted(static_cast<std::size_t>(m.n_head), "head"), m.n_embd, m.dtype),
      fmt::format("layer {}", c.layer),
      c.model_head ? fmt::format("head {}", *c.model_head)
                   : fmt::format("heads 0 … {}", m.n_head - 1),
      fmt::format("torch-kernel {}", kernel_name(c.kernel))};
  if (c.matmul != MatmulKernel::kAuto) {
    settings.push_back(fmt::format("matmul {}", matmul_name(c.matmul)));
  }
  return settings;
}

// The lesson's settings: the seed, the widths, the files given and every variant that is on.
std::vector<std::string> lesson_settings(const Trace& trace, bool words) {
  const TraceConfig& c = trace.config;
  std::vector<std::string> settings = {fmt::format("seed {}", c.seed)};
  if (!words) settings.push_back(fmt::format("tokenizer {}", c.tokenizer->name()));
  if (!c.x) settings.push_back(fmt::format("vocab-size {}", c.vocab_size));
  settings.push_back(fmt::format("d-in {}", c.d_in));
  settings.push_back(fmt::format("d-kq {}", c.d_kq));
  settings.push_back(fmt::format("d-v {}", c.d_v));
  settings.push_back(fmt::format("torch-kernel {}", kernel_name(c.kernel)));
  if (c.embedding) {
    settings.push_back(fmt::format("embedding {}", escape_controls(c.embedding->source)));
  }
  for (const auto& [name, m] : {std::pair{"w-query", &c.w_query},
                                {"w-key", &c.w_key},
                                {"w-value", &c.w_value},
                                {"w-out", &c.w_out},
                                {"b-out", &c.b_out}}) {
    if (*m) settings.push_back(fmt::format("{} {}", name, escape_controls((*m)->source)));
  }
  if (c.heads > 1 || c.multihead != MultiheadForm::kWrapper) {
    settings.push_back(fmt::format("heads {} ({})", c.heads, multihead_name(c.multihead)));
  }
  if (c.init != WeightInit::kRand) settings.push_back(fmt::format("init {}", init_name(c.init)));
  if (c.matmul != MatmulKernel::kAuto) {
    settings.push_back(fmt::format("matmul {}", matmul_name(c.matmul)));
  }
  if (c.kv_heads != 0 && c.kv_heads != c.heads) {
    settings.push_back(fmt::format("kv-heads {}", c.kv_heads));
  }
  if (c.rope) {
    settings.push_back(fmt::format("rope (θ {}, {})", c.rope_theta, name_of(c.rope_pairs)));
  }
  if (c.causal) settings.push_back("causal");
  if (c.window > 0 && !trace.inputs.empty() &&
      c.window < static_cast<std::int64_t>(trace.inputs[0].words.size())) {
    settings.push_back(fmt::format("window {}", c.window));
  }
  if (c.decode) settings.push_back("decode");
  if (c.online_softmax > 0) settings.push_back(fmt::format("online-softmax {}", c.online_softmax));
  // Where a row may mask every key (a padded batch's <pad> queries, a window past the other
  // sentence's end), or a rule other than PyTorch's was chosen.
  if (trace.pad_id || (c.cross && c.window > 0) || c.masked_rows != MaskedRows::kNan) {
    settings.push_back(fmt::format("masked-rows {}", masked_rows_name(c.masked_rows)));
  }
  return settings;
}

}  // namespace

void append_preamble(std::string& out, const Trace& trace, bool brief) {
  const TraceConfig& c = trace.config;
  const std::size_t batch_size = trace.inputs.size();
  const EscapeStyle quoted = label_escapes(trace.config).quoted;
  if (c.x) {
    out += fmt::format("input: X from {}, {} of width {}\n", escape_controls(c.x->source),
                       counted(static_cast<std::size_t>(c.x->values.rows()), "token"),
                       c.x->values.cols());
  } else if (brief) {
    std::vector<std::string> shown;
    for (std::size_t b = 0; b < batch_size; ++b) {
      shown.push_back(brief_sentence(c.sentences[b], trace.inputs[b], quoted));
    }
    out += batch_size > 1 ? wrap_items("sentences: [", shown, ", ", "  ") + "]\n"
                          : wrapped_line("sentence: " + shown[0]);
  } else if (batch_size > 1) {
    std::vector<std::string> reprs;
    for (const std::string& sentence : c.sentences) reprs.push_back(python_str_repr(sentence));
    out += wrap_items("sentences: [", reprs, ", ", "  ") + "]\n";
  } else {
    out += wrapped_line("sentence: " + python_str_repr(c.sentences[0]));
  }
  if (c.cross) {
    out += wrapped_line(fmt::format("cross: {} (keys and values)",
                                    brief && trace.cross
                                        ? brief_sentence(*c.cross, *trace.cross, quoted)
                                        : python_str_repr(*c.cross)));
  }
  const bool words = c.x || c.tokenizer->name() == "words";  // the walkthrough's dictionary
  out += wrap_items("settings: ", c.model ? model_settings(c) : lesson_settings(trace, words), ", ",
                    "  ") +
         "\n";

  if (c.x) return;  // no words, no dictionary
  if (brief) {
    out += fmt::format("tokens: {} of {}, {}\n", counted(trace.inputs.size(), "sentence"),
                       counted(trace.inputs[0].words.size(), "token"),
                       counted(static_cast<std::size_t>(trace.vocabulary.size()),
                               words ? "distinct word" : "distinct token"));
    return;
  }
  if (!words) {
    out += '\n';
    out += wrapped_line(fmt::format(
        "dictionary: the distinct {} tokens{}, by id; as its vocabulary writes them (Ġ is a space, "
        "Ċ a newline), and as they read{}",
        c.tokenizer->name(), c.cross || batch_size > 1 ? " of every sentence" : "",
        trace.pad_id ? "; then the padding token" : ""));
    out += token_table(trace.vocabulary, *c.tokenizer, trace.pad_id) + "\n";
  }
  std::string heading = "dictionary: distinct words in sorted order, numbered from 0";
  if (c.cross) heading += ", of both sentences";
  if (batch_size > 1) heading += ", of all sentences";
  if (trace.pad_id) heading += "; then the padding token";
  if (words) {
    out += '\n';
    out += wrapped_line(heading);
    out += fmt::format("{}\n\n", dictionary_repr(trace.vocabulary, trace.pad_id));
  }

  std::vector<std::vector<std::int64_t>> ids;
  for (const TokenizedSentence& s : trace.inputs) ids.push_back(s.ids);
  if (batch_size > 1) {
    out += trace.pad_id ? fmt::format("token ids: {} sentences, padded to {} with {} (id {})\n",
                                      batch_size, counted(ids[0].size(), "token"),
                                      python_str_repr(kPadToken), *trace.pad_id)
                        : fmt::format("token ids: {} sentences of {}\n", batch_size,
                                      counted(ids[0].size(), "token"));
    out += int_tensor_text(ids, false) + "\n";
  } else {
    out += fmt::format("token ids: {}{}, each by its dictionary id\n",
                       c.cross ? "the query sentence's " : "the sentence's ",
                       counted(ids[0].size(), words ? "word" : "token"));
    out += int_tensor_text(ids, true) + "\n";
  }
  if (trace.cross) {
    out += fmt::format("token ids: the key and value sentence's {}\n",
                       counted(trace.cross->ids.size(), words ? "word" : "token"));
    out += int_tensor_text({trace.cross->ids}, true) + "\n";
  }
}

std::string head_text(const TraceConfig& config, int head, bool brief) {
  if (config.model) {
    return brief ? fmt::format("L{}H{}", config.layer, head)
                 : fmt::format("layer {}, head {}", config.layer, head);
  }
  return brief ? fmt::format("head {}", head + 1)
               : fmt::format("head {} of {}", head + 1, config.heads);
}

std::string where_text(const Trace& trace, const std::optional<int>& head,
                       const std::optional<int>& batch) {
  std::vector<std::string> parts;
  if (head) parts.push_back(head_text(trace.config, *head));
  if (batch) parts.push_back(fmt::format("sentence {} of {}", *batch + 1, trace.inputs.size()));
  return parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", "));
}

std::string uncoloured_cells(const Matrix& m) {
  bool neg = false, pos = false, nan = false;
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    const float v = m.data()[k];
    if (std::isnan(v)) {
      nan = true;
    } else if (std::isinf(v)) {
      (v < 0 ? neg : pos) = true;
    }
  }
  if (neg && !pos && !nan) return "−inf cells (masked) are not coloured";
  std::vector<std::string> kinds;
  if (neg) kinds.emplace_back("−inf (masked)");
  if (pos) kinds.emplace_back("inf");
  if (nan) kinds.emplace_back("nan");
  return fmt::format("{} cells are not coloured", fmt::join(kinds, " and "));
}

std::string step_heading(const Trace& trace, std::size_t index, std::size_t width) {
  const Step& s = trace.steps[index];
  std::string out = wrap_words(
      fmt::format("step {}/{} [{}] {}", index + 1, trace.steps.size(), s.id, s.title), width, "  ");
  const std::string where = where_text(trace, s.head, s.batch);
  if (where.empty()) return out;
  const std::size_t last = out.rfind('\n') + 1;  // 0 when there is one line
  if (display_width(std::string_view(out).substr(last)) + display_width(where) <= width) {
    return out + where;
  }
  out += "\n  ";
  out += std::string_view(where).substr(1);
  return out;
}

std::vector<std::int64_t> torch_slice_index(const Step& s) {
  std::vector<std::int64_t> index;
  for (const std::string& name : s.shape_names) {  // the trace puts B and H first
    if (name == "B") {
      index.push_back(s.batch.value_or(0));
    } else if (name == "H") {
      index.push_back(s.head.value_or(0));
    } else {
      break;
    }
  }
  return index;
}

std::string torch_index(const Step& s, std::initializer_list<Eigen::Index> cell) {
  std::vector<std::int64_t> index = torch_slice_index(s);
  index.insert(index.end(), cell.begin(), cell.end());
  return fmt::format("[{}]", fmt::join(index, ", "));
}

std::string counted(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string wrap_items(std::string_view prefix, const std::vector<std::string>& items,
                       std::string_view sep, std::string_view indent) {
  // The separator's trailing spaces go where a line breaks.
  const std::string_view tight = sep.substr(0, sep.find_last_not_of(' ') + 1);
  std::string out(prefix);
  std::size_t column = display_width(prefix.substr(prefix.rfind('\n') + 1));
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t w = display_width(items[i]);
    // The item and the separator after it (or the closing character that follows the last).
    const std::size_t after = i + 1 < items.size() ? display_width(tight) : 1;
    if (i > 0) {
      if (column + display_width(sep) + w + after > kTextWidth) {
        out += fmt::format("{}\n{}", tight, indent);
        column = display_width(indent);
      } else {
        out += sep;
        column += display_width(sep);
      }
    }
    if (column + w + after > kTextWidth && items[i].find(' ') != std::string::npos) {
      // An item too long for the line: broken between its own words, as wrapped_line breaks,
      // with room for what follows it.
      const std::string wrapped =
          wrap_words(std::string(column, ' ') + items[i], kTextWidth - after, indent)
              .substr(column);
      out += wrapped;
      const std::size_t newline = wrapped.rfind('\n');
      column = newline == std::string::npos
                   ? column + w
                   : display_width(std::string_view(wrapped).substr(newline + 1));
      continue;
    }
    out += items[i];
    column += w;
  }
  return out;
}

std::string wrapped_line(std::string_view text, std::string_view indent) {
  return wrap_words(text, kTextWidth, indent) + "\n";
}

namespace {

// The last place in `line` where it may break before an "= " or a "+ " outside parentheses whose
// text before it fits `width` columns, after `from`; npos when there is none.
std::size_t arithmetic_break(std::string_view line, std::size_t from, std::size_t width) {
  std::size_t best = std::string_view::npos;
  int depth = 0;
  for (std::size_t i = 0; i + 2 < line.size(); ++i) {
    depth += line[i] == '(' ? 1 : line[i] == ')' ? -1 : 0;
    if (i > from && depth == 0 && line[i] == ' ' && (line[i + 1] == '=' || line[i + 1] == '+') &&
        line[i + 2] == ' ') {
      if (display_width(line.substr(0, i)) > width) break;
      best = i;
    }
  }
  return best;
}

// One line wider than kTextWidth: broken before its "= " and "+ " where they fit, else at its
// spaces; each later line indented 3 more than it.
std::string fit_line(std::string_view line) {
  const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
  const std::string indent(std::min<std::size_t>(lead + 3, 24), ' ');
  std::string out;
  std::string rest(line);
  while (display_width(rest) > kTextWidth) {
    const std::size_t at = arithmetic_break(rest, indent.size(), kTextWidth);
    if (at == std::string_view::npos) break;
    out += rest.substr(0, at) + "\n";
    rest = indent + rest.substr(at + 1);
  }
  return out + wrap_words(rest, kTextWidth, indent);
}

}  // namespace

std::string fit_to_width(std::string text) {
  std::string out;
  std::string_view rest = text;
  bool changed = false;
  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    if (display_width(line) > kTextWidth) {
      out += fit_line(line);
      changed = true;
    } else {
      out += line;
    }
    if (newline != std::string_view::npos) out += '\n';
  }
  return changed ? out : text;
}

bool is_walkthrough(const Trace& trace) {
  const TraceConfig& c = trace.config;
  return !c.x && !c.cross && c.heads == 1 && c.sentences.size() == 1 &&
         c.sentences[0] == kWalkthroughSentence;
}

std::string subscript(std::int64_t n) { return digits_in(n, kSubscriptDigits); }

}  // namespace render_detail

void check_query_and_key(bool cross, std::int64_t t_q, std::int64_t t_k, std::int64_t query,
                         std::int64_t key) {
  render_detail::check_token_index("query", query, t_q, cross ? "query sentence" : "sentence");
  render_detail::check_token_index("key", key, t_k, cross ? "key and value sentence" : "sentence");
}

}  // namespace attn
