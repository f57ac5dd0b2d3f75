#include "attn/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <string>

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/error.hpp"

namespace attn {

const Step& Trace::step(std::string_view id, std::optional<int> head,
                        std::optional<int> batch) const {
  for (const Step& s : steps) {
    if (s.id == id && s.head == head && s.batch == batch) return s;
  }
  std::string where;
  if (head) where += fmt::format(" for head {}", *head + 1);
  if (batch) where += fmt::format(" for sentence {}", *batch + 1);
  throw Error(fmt::format("the trace has no step '{}'{}", id, where));
}

void select_steps(Trace& trace, const std::vector<std::string>& ids) {
  std::vector<std::string> known;
  for (const Step& s : trace.steps) {
    if (std::find(known.begin(), known.end(), s.id) == known.end()) known.push_back(s.id);
  }
  for (const std::string& id : ids) {
    if (std::find(known.begin(), known.end(), id) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error(fmt::format("step '{}' is not in this trace: its steps are {}", id, list));
    }
  }
  std::erase_if(trace.steps, [&ids](const Step& s) {
    return std::find(ids.begin(), ids.end(), s.id) == ids.end();
  });
}

const TokenizedSentence& Trace::key_sentence(int batch) const {
  return cross ? *cross : inputs.at(static_cast<std::size_t>(batch));
}

namespace {

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? std::string(sep) : "") + items[i];
  return out;
}

// Records steps, adding the batch and head dimensions to their shapes where they apply.
// The note of a step that is a matrix product, (m, k) @ (k, n): empty for the reference order;
// for the blocked kernel, what it changes.
std::string product_note(MatmulKernel kernel, Eigen::Index m, Eigen::Index n, Eigen::Index k) {
  if (matmul_kernel_for(kernel, m, n, k) != MatmulKernel::kBlocked) return {};
  return fmt::format(
      "computed by the blocked kernel ({} x {} by {} x {}{}): float32 sums in another order "
      "than PyTorch's, so the last digits can differ (--matmul reference gives its order)",
      m, k, k, n, kernel == MatmulKernel::kAuto ? ", a large product" : "");
}

class Recorder {
 public:
  Recorder(Trace& trace, std::int64_t batch_size)
      : trace_(trace),
        batch_size_(batch_size),
        split_heads_(trace.config.multihead == MultiheadForm::kSplit) {}

  // `batch` and `head` are set for per-item and per-head steps; they are dropped when there is
  // a single item or a single head.
  const Matrix& add(std::string id, std::string title, std::string equation,
                    std::vector<std::string> dims, Matrix values, std::optional<int> batch,
                    std::optional<int> head, std::vector<std::string> rows = {},
                    std::vector<std::string> cols = {}, std::string note = {}) {
    Step s;
    s.id = std::move(id);
    s.title = std::move(title);
    s.equation = std::move(equation);
    if (batch_size_ > 1 && batch) {
      s.batch = batch;
      s.shape_names.push_back("B");
      s.shape.push_back(batch_size_);
    }
    if (trace_.config.heads > 1 && head) {
      s.head = head;
      if (split_heads_) {
        s.shape_names.push_back("H");
        s.shape.push_back(trace_.config.heads);
      }
    }
    s.shape_names.insert(s.shape_names.end(), dims.begin(), dims.end());
    s.shape.push_back(values.rows());
    s.shape.push_back(values.cols());
    if (dims.size() == 1) s.shape.erase(s.shape.end() - 2);  // a vector, stored as one row
    s.row_labels = std::move(rows);
    s.columns_are_keys = !cols.empty() && cols.size() == static_cast<std::size_t>(values.cols()) &&
                         dims.size() == 2 && dims[1].starts_with("T");
    s.col_labels = std::move(cols);
    s.note = std::move(note);
    s.values = std::move(values);
    const auto now = std::chrono::steady_clock::now();
    s.seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    trace_.steps.push_back(std::move(s));
    if (trace_.config.on_record) trace_.config.on_record(trace_.steps.back());
    return trace_.steps.back().values;
  }

  // The last step is the product (m, k) @ (k, n): its size, for --timings, and its note when
  // the blocked kernel computed it.
  void mark_product(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
    Step& s = trace_.steps.back();
    s.multiply_adds = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    s.note = product_note(trace_.config.matmul, m, n, k);
  }

  // Hands every step recorded since the last flush to config.on_step, in order; with
  // config.release_scores, then frees the values of those whose columns are keys (the (T, T)
  // steps). Call it only where no later step reads those.
  void flush() { hand_on(false); }

  // flush(), with config.release_scores, except that the last step's values (a (T, T) step) are
  // handed back instead of freed: the next step can be computed in their memory.
  Matrix flush_take() { return hand_on(true); }

 private:
  Trace& trace_;
  std::int64_t batch_size_;
  bool split_heads_;
  Matrix hand_on(bool take_last) {
    const TraceConfig& c = trace_.config;
    Matrix taken;
    for (; flushed_ < trace_.steps.size(); ++flushed_) {
      Step& s = trace_.steps[flushed_];
      if (c.on_step) c.on_step(s);
      if (take_last && flushed_ + 1 == trace_.steps.size()) {
        taken = std::move(s.values);
        s.values = Matrix();
      } else if (c.release_scores && s.columns_are_keys) {
        s.values = Matrix();
      }
    }
    last_ = std::chrono::steady_clock::now();  // the callbacks' time is no step's
    return taken;
  }

  std::size_t flushed_ = 0;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Given numbers can be so large that a product overflows float32: refuse them here, where the
// overflow happens, rather than let inf turn into nan in the softmax.
const Matrix& require_finite(const Matrix& m, const char* what) {
  // A value is finite unless its exponent bits are all ones, and then (and only then) adding 1
  // to the exponent carries into the sign bit: integer and, add and or, which the compiler
  // vectorises.
  std::uint32_t carried = 0;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    carried |= (std::bit_cast<std::uint32_t>(m.data()[i]) & 0x7f800000u) + 0x00800000u;
  }
  if ((carried & 0x80000000u) == 0) return m;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (!std::isfinite(m(i, j))) {
        throw Error(
            fmt::format("{} overflow float32 at row {}, column {} ({}): the given numbers "
                        "are too large; scale them down",
                        what, i + 1, j + 1, m(i, j)));
      }
    }
  }
  return m;
}

// The weights of one head: W_q, W_k, W_v as drawn.
struct HeadWeights {
  Matrix w_q, w_k, w_v;
};

// The words of the tokenized sentences, checked.
std::vector<std::string> words_of(const std::string& sentence, const std::string& which) {
  std::vector<std::string> words = tokenize(sentence);
  if (words.empty()) {
    throw Error(which +
                " has no words: give at least one word (commas and white space do not "
                "count)");
  }
  return words;
}

// "4.0 GiB"
std::string bytes_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) bytes /= 1024.0, ++u;
  return u == 0 ? fmt::format("{:.0f} bytes", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

// Refuses a run that would need more memory than config.max_memory, before it allocates.
void check_memory(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k, std::int64_t batch) {
  const double need = estimate_bytes(c, t_q, t_k, batch);
  if (need > static_cast<double>(c.max_memory)) {
    throw Error(fmt::format(
        "this run would need about {} (T = {} tokens{}, {} head{}), more than "
        "the memory limit of {}: trace fewer tokens, or raise the limit with "
        "--max-memory",
        bytes_text(need), t_q, batch > 1 ? fmt::format(" x {} sentences", batch) : "", c.heads,
        c.heads > 1 ? "s" : "", bytes_text(static_cast<double>(c.max_memory))));
  }
  if (c.on_memory_estimate) c.on_memory_estimate(need);
}

// The words of every sentence, one dictionary for all of them, and the padded ids.
void tokenize_inputs(Trace& trace) {
  const TraceConfig& c = trace.config;
  const auto batch_size = static_cast<std::int64_t>(c.sentences.size());
  std::vector<std::vector<std::string>> words;
  std::vector<std::string> all_words;
  for (std::size_t b = 0; b < c.sentences.size(); ++b) {
    words.push_back(words_of(c.sentences[b],
                             batch_size > 1 ? fmt::format("sentence {} of {}", b + 1, batch_size)
                                            : std::string("the sentence")));
    all_words.insert(all_words.end(), words.back().begin(), words.back().end());
  }
  std::vector<std::string> cross_words;
  if (c.cross) {
    cross_words = words_of(*c.cross, "the --cross sentence");
    all_words.insert(all_words.end(), cross_words.begin(), cross_words.end());
  }
  trace.vocabulary = build_vocabulary(all_words);
  std::size_t t = 0;
  for (const auto& w : words) t = std::max(t, w.size());
  const bool padded =
      std::any_of(words.begin(), words.end(), [t](const auto& w) { return w.size() < t; });
  // Before anything large: T is known now.
  check_memory(
      c, static_cast<std::int64_t>(t),
      c.cross ? static_cast<std::int64_t>(cross_words.size()) : static_cast<std::int64_t>(t),
      batch_size);
  if (padded) trace.pad_id = trace.vocabulary.size();
  const std::int64_t needed = trace.vocabulary.size() + (padded ? 1 : 0);
  if (needed > c.vocab_size) {
    const char* whose = batch_size > 1 ? "the batch's"
                        : c.cross      ? "the two sentences'"
                                       : "the sentence's";
    const std::string what = c.embedding
                                 ? fmt::format(
                                       "the embedding table in {} has {} rows, "
                                       "fewer than",
                                       c.embedding->source, c.vocab_size)
                                 : fmt::format("vocabulary size {} is smaller than", c.vocab_size);
    throw Error(fmt::format("{} {} {} distinct words{}: it must be at least {}", what, whose,
                            trace.vocabulary.size(), padded ? " and the padding token" : "",
                            needed));
  }
  for (auto& w : words) {
    TokenizedSentence s;
    s.length = static_cast<std::int64_t>(w.size());
    s.ids = encode(trace.vocabulary, w);
    s.words = std::move(w);
    s.words.resize(t, std::string(kPadToken));
    s.ids.resize(t, trace.pad_id.value_or(0));
    trace.inputs.push_back(std::move(s));
  }
  if (c.cross) {
    TokenizedSentence s;
    s.length = static_cast<std::int64_t>(cross_words.size());
    s.ids = encode(trace.vocabulary, cross_words);
    s.words = std::move(cross_words);
    trace.cross = std::move(s);
  }
}

// The rows of the ids: from the given table, or nn.Embedding's as PyTorch draws them.
Matrix embed_ids(const TraceConfig& c, const std::vector<std::int64_t>& ids) {
  if (!c.embedding) return embed(c.seed, c.vocab_size, c.d_in, ids, c.kernel);
  Matrix x(static_cast<Eigen::Index>(ids.size()), c.d_in);  // (ΣT, d_in)
  for (std::size_t r = 0; r < ids.size(); ++r) {
    x.row(static_cast<Eigen::Index>(r)) = c.embedding->values.row(ids[r]);
  }
  return x;
}

}  // namespace

Trace run_trace(const TraceConfig& config) {
  Trace trace;
  trace.config = resolve(config);
  const TraceConfig& c = trace.config;
  const auto batch_size = static_cast<std::int64_t>(c.x ? 1 : c.sentences.size());
  Recorder rec(trace, batch_size);
  const std::optional<int> no_head;
  std::vector<const Matrix*> xs;  // the embeddings steps' values (the deque keeps them in place)
  const Matrix* x_cross = nullptr;

  if (c.x) {
    check_memory(c, c.x->values.rows(), c.x->values.rows(), 1);
    // X as given: its labels are the tokens, or the row numbers.
    TokenizedSentence s;
    s.length = c.x->values.rows();
    s.words = c.x->row_labels;
    for (Eigen::Index i = static_cast<Eigen::Index>(s.words.size()); i < s.length; ++i) {
      s.words.push_back(std::to_string(i + 1));
    }
    trace.inputs.push_back(s);
    xs.push_back(&rec.add("embeddings", "the input matrix, one row per token",
                          fmt::format("X = {}", c.x->source), {"T", "d_in"}, c.x->values,
                          std::nullopt, no_head, s.words));
  } else {
    tokenize_inputs(trace);
    // torch.manual_seed(seed); X = nn.Embedding(V, d_in[, padding_idx])(ids): one call for every
    // sentence, so that the generator runs once.
    std::vector<std::int64_t> all_ids;
    for (const auto& s : trace.inputs) all_ids.insert(all_ids.end(), s.ids.begin(), s.ids.end());
    if (trace.cross) {
      all_ids.insert(all_ids.end(), trace.cross->ids.begin(), trace.cross->ids.end());
    }
    Matrix embedded = embed_ids(c, all_ids);  // (ΣT, d_in)
    for (std::size_t r = 0; r < all_ids.size(); ++r) {
      if (trace.pad_id && all_ids[r] == *trace.pad_id) {
        embedded.row(static_cast<Eigen::Index>(r)).setZero();
      }
    }
    // X = Embedding(V, d_in[, padding_idx=p])(ids), or E(ids) for a given table E.
    std::string embed_eq = c.embedding ? "X = E(ids)" : "X = Embedding(V, d_in)(ids)";
    if (trace.pad_id) {
      embed_eq = c.embedding
                     ? fmt::format("X = E(ids), padding_idx={}", *trace.pad_id)
                     : fmt::format("X = Embedding(V, d_in, padding_idx={})(ids)", *trace.pad_id);
    }
    const std::string pad_note =
        trace.pad_id ? fmt::format(
                           "'{}' rows are zero: padding_idx={} zeroes that row of the "
                           "table",
                           kPadToken, *trace.pad_id)
        : c.embedding ? fmt::format("the rows of the embedding table E in {}", c.embedding->source)
                      : std::string();
    const auto t = static_cast<Eigen::Index>(trace.inputs[0].words.size());
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const auto& s = trace.inputs[static_cast<std::size_t>(b)];
      xs.push_back(&rec.add("embeddings",
                            c.cross ? "the embedded query sentence, one row per token"
                                    : "the embedded sentence, one row per token",
                            embed_eq, {"T", "d_in"},
                            batch_size == 1 && !trace.cross
                                ? std::move(embedded)  // the whole matrix: no copy
                                : Matrix(embedded.middleRows(b * t, t)),
                            static_cast<int>(b), no_head, s.words, {}, pad_note));
    }
    if (trace.cross) {
      x_cross =
          &rec.add("embeddings_2", "the embedded key and value sentence, one row per token",
                   c.embedding ? "X₂ = E(ids₂)" : "X₂ = Embedding(V, d_in)(ids₂)", {"T₂", "d_in"},
                   embedded.bottomRows(static_cast<Eigen::Index>(trace.cross->ids.size())),
                   std::nullopt, no_head, trace.cross->words);
    }
  }

  // torch.manual_seed(seed); the weights in creation order. A given weight replaces the drawn
  // one, which is still drawn so that every later weight is PyTorch's.
  TorchGenerator gen(c.seed);
  const bool split = c.multihead == MultiheadForm::kSplit;
  auto weight = [&](const char* id, const char* title, const std::string& equation,
                    std::vector<std::string> dims, Matrix drawn,
                    const std::optional<GivenMatrix>& given, std::optional<int> head) {
    if (!given)
      return rec.add(id, title, equation, std::move(dims), std::move(drawn), std::nullopt, head);
    const std::string symbol = equation.substr(0, equation.find(' '));
    return rec.add(id, title, fmt::format("{} = {}", symbol, given->source), std::move(dims),
                   given->values, std::nullopt, head);
  };
  const std::int64_t n_weight_sets = split ? 1 : c.heads;
  std::vector<HeadWeights> weights;
  for (std::int64_t h = 0; h < n_weight_sets; ++h) {
    const std::optional<int> head = split ? std::nullopt : std::optional<int>(static_cast<int>(h));
    const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
    HeadWeights w;
    w.w_q = weight("w_query", "query weights", weight_equation(c.init, "W_q", "d_in", kq),
                   weight_dims(c.init, "d_in", kq),
                   draw_weight(gen, c.init, c.d_in, c.d_kq, c.kernel), c.w_query, head);
    w.w_k = weight("w_key", "key weights", weight_equation(c.init, "W_k", "d_in", kq),
                   weight_dims(c.init, "d_in", kq),
                   draw_weight(gen, c.init, c.d_in, c.d_kq, c.kernel), c.w_key, head);
    w.w_v = weight("w_value", "value weights", weight_equation(c.init, "W_v", "d_in", dv),
                   weight_dims(c.init, "d_in", dv),
                   draw_weight(gen, c.init, c.d_in, c.d_v, c.kernel), c.w_value, head);
    weights.push_back(std::move(w));
  }
  Matrix w_o, b_o;
  if (split) {
    const bool linear = c.init == WeightInit::kLinear;
    w_o = weight(
        "w_out", "output weights",
        linear ? "W_o = nn.Linear(d_out, d_out).weight"
               : weight_equation(c.init, "W_o", "d_out", "d_out"),
        {"d_out", "d_out"},
        linear ? linear_weight(gen, c.d_kq, c.d_kq, c.kernel) : torch_rand(gen, c.d_kq, c.d_kq),
        c.w_out, no_head);
    if (linear) {
      b_o = weight("b_out", "output bias", "b_o = nn.Linear(d_out, d_out).bias", {"d_out"},
                   linear_bias(gen, c.d_kq, c.d_kq, c.kernel), c.b_out, no_head);
    }
  }

  const std::string t_k = c.cross ? "T₂" : "T";
  for (std::int64_t b = 0; b < batch_size; ++b) {
    const auto item = static_cast<int>(b);
    const TokenizedSentence& qs = trace.inputs[static_cast<std::size_t>(b)];
    const TokenizedSentence& ks = trace.key_sentence(item);
    const Matrix& x = *xs[static_cast<std::size_t>(b)];
    const Matrix& x_kv = c.cross ? *x_cross : x;
    const std::string x_kv_name = c.cross ? "X₂" : "X";

    // The mask: causal (key later than query) and padding (a pad token on either side).
    const auto t_q = static_cast<Eigen::Index>(qs.words.size());
    const auto t_kv = static_cast<Eigen::Index>(ks.words.size());
    const bool pad_mask = qs.length < t_q;
    const bool masked = c.causal || trace.pad_id.has_value();
    // Only a masked run needs the (T, T) mask.
    Matrix mask = c.causal ? causal_mask(t_q, t_kv)
                  : masked ? Matrix::Zero(t_q, t_kv)
                           : Matrix(0, 0);
    if (trace.pad_id) {
      for (Eigen::Index i = 0; i < t_q; ++i) {
        for (Eigen::Index j = 0; j < t_kv; ++j) {
          if (i >= qs.length || j >= ks.length) mask(i, j) = 1.0f;
        }
      }
    }
    std::string mask_eq, mask_note;
    if (c.causal && masked && trace.pad_id) {
      mask_eq = "M = triu(ones(T, T), diagonal=1) | padding";
      mask_note = "1 = masked: a key after the query, or a '<pad>' query or key";
    } else if (c.causal) {
      mask_eq = fmt::format("M = triu(ones({}, {}), diagonal=1)", "T", t_k);
      mask_note = "1 = masked: key j comes after query i, so a token does not see later tokens";
    } else {
      mask_eq = "M = 1 where the query or the key is '<pad>'";
      mask_note = pad_mask ? "1 = masked: every pair with a '<pad>' query or key"
                           : "nothing is masked: this sentence has no padding";
    }
    std::vector<std::string> fully_masked;  // 1-based row numbers
    for (Eigen::Index i = 0; masked && i < t_q; ++i) {
      if (t_kv > 0 && mask.row(i).minCoeff() == 1.0f) fully_masked.push_back(std::to_string(i + 1));
    }

    // One head's attention: ω, the mask, the scaling, the softmax, the context vectors.
    auto attend = [&](const Matrix& q, const Matrix& k, const Matrix& v, std::int64_t d_k,
                      std::optional<int> head, const std::string& sub) {
      const std::string q_name = "Q" + sub, k_name = "K" + sub, v_name = "V" + sub;
      const std::string dk = split ? "d_head" : "d_k";
      // The steps live in a deque, so these references stay valid as later steps are added.
      const Matrix& omega = require_finite(
          rec.add("omega", "unnormalized attention scores",
                  fmt::format("ω = {} {}ᵀ", q_name, k_name), {"T", t_k},
                  omega_scores(q, k, c.threads, c.matmul), item, head, qs.words, ks.words),
          "the scores ω");
      rec.mark_product(q.rows(), k.rows(), q.cols());
      const Matrix* scores = &omega;
      if (masked) {
        rec.add("mask", "the mask", mask_eq, {"T", t_k}, mask, item, head, qs.words, ks.words,
                mask_note);
        scores = &rec.add("masked_omega", "scores with the masked keys set to −inf",
                          "ω.masked_fill(M, −inf)", {"T", t_k}, apply_mask(omega, mask), item, head,
                          qs.words, ks.words);
      }
      // With release_scores and no causal lesson (which reads ω again), each step of the head's
      // scores is handed on as soon as the next one is computed, in its memory: one (T, T)
      // matrix per head instead of three.
      const bool in_place = c.release_scores && !c.causal;
      const Matrix& scaled = rec.add(
          "scaled_scores", "scaled attention scores",
          fmt::format("{0} / √{1} = {0} / √{2}", masked ? "masked ω" : "ω", dk, d_k), {"T", t_k},
          in_place ? scale_in_place(rec.flush_take(), d_k, c.threads)
                   : scale(*scores, d_k, c.threads),
          item, head, qs.words, ks.words);
      std::string weights_note;
      if (!fully_masked.empty()) {
        weights_note =
            c.masked_rows == MaskedRows::kNan
                ? fmt::format(
                      "rows {} mask every key: the softmax of a row of −inf is nan, as "
                      "torch.softmax gives it (--masked-rows zero gives 0 instead)",
                      join(fully_masked, ", "))
                : fmt::format(
                      "rows {} mask every key: their weights are 0, as "
                      "scaled_dot_product_attention gives them (torch.softmax gives nan)",
                      join(fully_masked, ", "));
      }
      SoftmaxParts parts =
          in_place && !c.softmax_steps
              ? softmax_in_place(rec.flush_take(), c.kernel, c.masked_rows, c.threads)
              : softmax_parts(scaled, c.kernel, c.masked_rows, c.threads, c.softmax_steps);
      if (c.softmax_steps) {
        // The softmax's own steps: the row max, the exponentials, their sums.
        rec.add("row_max", "the largest scaled score of each row", "m_i = max_j s_ij", {"T", "1"},
                parts.row_max, item, head, qs.words, {"max"},
                "subtracted before exp: exp(s − m) <= 1 never overflows, and the weights are the "
                "same");
        rec.add("exponentials", "the exponentials of the scores minus the row max",
                "e_ij = exp(s_ij − m_i)", {"T", t_k}, std::move(parts.exponentials), item, head,
                qs.words, ks.words);
        rec.add("row_sums", "the sum of each row of exponentials", "Σ_i = Σ_j e_ij", {"T", "1"},
                parts.row_sum, item, head, qs.words, {"sum"});
      }
      const Matrix& a = rec.add(
          "attention_weights", "attention weights, each row sums to 1",
          c.softmax_steps ? std::string("A_ij = e_ij · (1 / Σ_i)")
                          : fmt::format("A = softmax({} / √{})", masked ? "masked ω" : "ω", dk),
          {"T", t_k}, std::move(parts.weights), item, head, qs.words, ks.words, weights_note);
      if (c.softmax_steps) {
        // The check: every row of A sums to 1, up to float32 rounding.
        const Matrix sums = row_sums(a);
        Matrix check(sums.rows(), 2);  // (T, 2): the sum and its residual
        float worst = 0.0f;
        for (Eigen::Index i = 0; i < sums.rows(); ++i) {
          check(i, 0) = sums(i, 0);
          check(i, 1) = sums(i, 0) - 1.0f;
          if (std::isfinite(check(i, 1))) worst = std::max(worst, std::fabs(check(i, 1)));
        }
        rec.add("weight_sums", "the check: each row of the weights sums to 1", "Σ_j A_ij",
                {"T", "2"}, check, item, head, qs.words, {"sum", "sum − 1"},
                fmt::format("the largest |sum − 1| is {:.1e}: float32 rounding", worst));
      }
      if (c.causal) {
        // The walkthrough's other way: softmax without the mask, zero the masked weights, and
        // divide each row by its new sum.
        const Matrix& plain =
            rec.add("unmasked_weights", "the other way: softmax without the mask",
                    fmt::format("A' = softmax(ω / √{})", dk), {"T", t_k},
                    softmax_rows(scale(omega, d_k), c.kernel), item, head, qs.words, ks.words);
        Matrix zeroed = plain;
        for (Eigen::Index i = 0; i < zeroed.size(); ++i) {
          if (mask.data()[i] != 0.0f) zeroed.data()[i] = 0.0f;
        }
        rec.add("zeroed_weights", "... then the masked weights set to 0", "A'' = A' ⊙ (1 − M)",
                {"T", t_k}, zeroed, item, head, qs.words, ks.words);
        const Matrix renormalized = renormalize_rows(zeroed);
        float worst = 0.0f;
        for (Eigen::Index i = 0; i < a.size(); ++i) {
          const float d = std::fabs(renormalized.data()[i] - a.data()[i]);
          if (std::isfinite(d)) worst = std::max(worst, d);
        }
        rec.add(
            "renormalized_weights", "... and each row divided by its sum",
            "A'' / A''.sum(dim=-1, keepdim=True)", {"T", t_k}, renormalized, item, head, qs.words,
            ks.words,
            fmt::format("the same weights as attention_weights: the largest difference is "
                        "{:.1e}, float32 rounding{}",
                        worst,
                        fully_masked.empty()
                            ? std::string()
                            : fmt::format("; rows {} are all 0 after the mask, and 0 / 0 is nan",
                                          join(fully_masked, ", "))));
      }
      const Matrix& z =
          rec.add("context_vectors", "context vectors, one row per token",
                  fmt::format("Z{} = A {}", sub, v_name), {"T", split ? "d_head" : "d_v"},
                  context_vectors(a, v, c.threads, c.matmul), item, head, qs.words);
      rec.mark_product(a.rows(), v.cols(), a.cols());
      return z;
    };

    // Q = X W_q, K = X₍₂₎ W_k, V = X₍₂₎ W_v: per head (wrapper) or once, d_out wide (split).
    struct Qkv {  // the steps' values (the deque keeps them in place)
      const Matrix *q, *k, *v;
    };
    auto project_qkv = [&](const HeadWeights& w, std::optional<int> head) {
      const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
      Qkv p;
      // One projection step: in W (or in Wᵀ for the (d_out, d_in) layouts).
      auto project_step = [&](const char* id, const char* title, const char* out, const Matrix& in,
                              const std::string& in_name, const Matrix& w_, const char* w_name,
                              std::vector<std::string> dims, const std::vector<std::string>& words,
                              const char* what) {
        const Matrix& m = require_finite(
            rec.add(id, title, projection_equation(c.init, out, in_name, w_name), std::move(dims),
                    apply_weight(in, w_, c.init, c.threads, c.matmul), item, head, words),
            what);
        rec.mark_product(in.rows(), c.init == WeightInit::kRand ? w_.cols() : w_.rows(), in.cols());
        return &m;
      };
      p.q = project_step("queries", "queries, one row per token", "Q", x, "X", w.w_q, "W_q",
                         {"T", kq}, qs.words, "the queries Q");
      p.k = project_step("keys", "keys, one row per token", "K", x_kv, x_kv_name, w.w_k, "W_k",
                         {t_k, kq}, ks.words, "the keys K");
      p.v = project_step("values", "values, one row per token", "V", x_kv, x_kv_name, w.w_v, "W_v",
                         {t_k, dv}, ks.words, "the values V");
      return p;
    };
    std::vector<Matrix> zs;
    if (!split) {
      for (std::int64_t h = 0; h < c.heads; ++h) {
        const Qkv p = project_qkv(weights[static_cast<std::size_t>(h)], static_cast<int>(h));
        zs.push_back(attend(*p.q, *p.k, *p.v, c.d_kq, static_cast<int>(h), ""));
        rec.flush();  // this head's scores are done with
      }
    } else {
      const Qkv p = project_qkv(weights[0], no_head);
      const Eigen::Index hd = c.d_kq / c.heads;  // d_head = d_out / H
      for (std::int64_t h = 0; h < c.heads; ++h) {
        // Head h's columns: q.view(T, H, d_head).transpose(0, 1)[h]
        zs.push_back(attend(p.q->middleCols(h * hd, hd), p.k->middleCols(h * hd, hd),
                            p.v->middleCols(h * hd, hd), hd, static_cast<int>(h), "ₕ"));
        rec.flush();
      }
    }
    // The heads side by side; for the split form, the output projection after them.
    Matrix z(zs[0].rows(), static_cast<Eigen::Index>(zs.size()) * zs[0].cols());  // (T, H·d_v)
    for (std::size_t h = 0; h < zs.size(); ++h) {
      z.middleCols(static_cast<Eigen::Index>(h) * zs[0].cols(), zs[0].cols()) = zs[h];
    }
    if (c.heads > 1) {
      rec.add("context_concat", "the heads' context vectors side by side",
              split ? "Z = Z₁ | … | Z_H (transpose(1, 2).view(T, d_out))"
                    : "Z = torch.cat([Z₁, …, Z_H], dim=-1)",
              {"T", split ? "d_out" : "H·d_v"}, z, item, no_head, qs.words);
    }
    if (split) {
      Matrix out = apply_weight(z, w_o, c.init, c.threads, c.matmul);  // (T, d_out)
      std::string eq = projection_equation(c.init, "out", "Z", "W_o");
      if (c.init == WeightInit::kLinear) {
        for (Eigen::Index i = 0; i < out.rows(); ++i) {
          for (Eigen::Index j = 0; j < out.cols(); ++j) out(i, j) = out(i, j) + b_o(0, j);
        }
        eq += " + b_o";
      }
      rec.add("output", "the output projection", eq, {"T", "d_out"}, out, item, no_head, qs.words);
      rec.mark_product(z.rows(), w_o.rows(), z.cols());
    }
  }
  rec.flush();
  return trace;
}

}  // namespace attn
