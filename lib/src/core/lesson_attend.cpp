// The lesson's attention for one batch item: the projections, then for each head ω, the mask,
// the scaling, the softmax and the context vectors.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/attention.hpp"
#include "attn/weights.hpp"
#include "lesson.hpp"
#include "modern.hpp"

namespace attn::lesson {

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }

// The keys' length: T, or T₂ for cross-attention.
std::string t_k(const TraceConfig& c) { return c.cross ? "T₂" : "T"; }

// Symbols of one head: Qₕ, Kₕ, Vₕ and d_head in the split form; Q, K, V and d_k otherwise.
struct Symbols {
  std::string q, k, v, z, d_k;
};
Symbols symbols(const TraceConfig& c) {
  const std::string sub = split_form(c) ? "ₕ" : "";
  return {"Q" + sub, "K" + sub, "V" + sub, "Z" + sub, split_form(c) ? "d_head" : "d_k"};
}

// ω, and the scores to scale: ω itself, or ω with the masked keys at −inf.
struct Scores {
  const Matrix& omega;
  const Matrix& scores;
};

// A head's inputs: Q, K, V, and which rows of Q this call attends. Rows at a time, the products
// with K and V are prepared once for every block.
struct HeadRows {
  const Matrix &q, &k, &v;
  Eigen::Index first, count;
  const RowBlockProduct* omega = nullptr;    // Q_rows Kᵀ
  const RowBlockProduct* context = nullptr;  // A_rows V
};

// The keys' words, the column labels of the (T, T_k) steps. Rows at a time, a step takes its
// labels from its first block (add() reads no column labels for a later one), so a later block
// copies none of them.
const std::vector<std::string>& key_labels(const Item& item, const HeadRows& h) {
  static const std::vector<std::string> none;
  return h.first == 0 ? item.keys.words : none;
}

// ω = Q Kᵀ; then, when there is a mask, the mask and the masked scores.
Scores score(Recorder& rec, const Item& item, const HeadRows& h, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const Symbols s = symbols(c);
  const std::vector<std::string>& rows = item.queries.words;
  const std::vector<std::string>& cols = key_labels(item, h);
  const Matrix& omega = rec.require_finite(
      rec.add(StepKind::kOmega, fmt::format("ω = {} {}ᵀ", s.q, s.k), {"T", t_k(c)},
              h.omega ? h.omega->rows(h.q, h.first, h.count, c.threads)
                      : omega_scores(h.q, h.k, c.threads, c.matmul),
              item.index, head, {.rows = rows, .cols = cols}),
      "the scores ω", h.first);
  rec.mark_product(h.count, h.k.rows(), h.q.cols());
  if (!item.mask.masked) return {omega, omega};
  rec.add(StepKind::kMask, item.mask.equation, {"T", t_k(c)}, item.mask.values, item.index, head,
          {.rows = rows, .cols = cols, .note = item.mask.note});
  return {omega,
          rec.add(StepKind::kMaskedOmega, std::string(step_info(StepKind::kMaskedOmega).equation),
                  {"T", t_k(c)}, apply_mask(omega, item.mask.values), item.index, head,
                  {.rows = rows, .cols = cols})};
}

// The note on the weights of rows that mask every key.
std::string fully_masked_note(const TraceConfig& c, const Mask& mask) {
  if (mask.fully_masked.empty()) return {};
  const bool one = mask.fully_masked.size() == 1;
  const std::string rows = rows_text(mask.fully_masked, "masks", "mask");
  return c.masked_rows == MaskedRows::kNan
             ? fmt::format(
                   "{} every key: the softmax of a row of −inf is nan, as torch.softmax gives it "
                   "(the masked-rows rule zero gives 0 instead)",
                   rows)
             : fmt::format(
                   "{} every key: {} 0, as scaled_dot_product_attention gives {} "
                   "(torch.softmax gives nan)",
                   rows, one ? "its weights are" : "their weights are", "them");
}

// The softmax's own steps: the row max, the exponentials, their sums.
void record_softmax_parts(Recorder& rec, const Item& item, SoftmaxParts& parts,
                          std::optional<int> head) {
  const std::vector<std::string>& rows = item.queries.words;
  rec.add(StepKind::kRowMax, std::string(step_info(StepKind::kRowMax).equation), {"T", "1"},
          parts.row_max, item.index, head,
          {.rows = rows,
           .cols = {"max"},
           .note = "subtracted before exp: exp(s − m) <= 1 never overflows, and the weights are "
                   "the same"});
  rec.add(StepKind::kExponentials, std::string(step_info(StepKind::kExponentials).equation),
          {"T", t_k(rec.config())}, std::move(parts.exponentials), item.index, head,
          {.rows = rows, .cols = item.keys.words});
  rec.add(StepKind::kRowSums, std::string(step_info(StepKind::kRowSums).equation), {"T", "1"},
          parts.row_sum, item.index, head,
          {.rows = rows,
           .cols = {"sum"},
           .note = "added as torch.softmax adds them inside its kernel, in its vector lanes' "
                   "order: the last bit can differ from exponentials.sum(dim=-1)'s"});
}

// The check: every row of A sums to 1, up to float32 rounding.
void record_weight_sums(Recorder& rec, const Item& item, const Matrix& a, std::optional<int> head) {
  const Matrix sums = row_sums(a);
  Matrix check(sums.rows(), 2);  // (T, 2): the sum and its residual
  float worst = 0.0f;
  for (Eigen::Index i = 0; i < sums.rows(); ++i) {
    check(i, 0) = sums(i, 0);
    check(i, 1) = sums(i, 0) - 1.0f;
    if (softmax_row(sums(i, 0))) {
      worst = std::max(worst, std::fabs(check(i, 1)));
    }
  }
  rec.add(StepKind::kWeightSums, std::string(step_info(StepKind::kWeightSums).equation), {"T", "2"},
          check, item.index, head,
          {.rows = item.queries.words,
           .cols = {"sum", "sum − 1"},
           .note = "the largest |sum − 1| is {0:.1e}: float32 rounding",
           .largest = worst});
}

// The walkthrough's other way to mask: softmax without the mask, zero the masked weights, and
// divide each row by its new sum. It gives the same weights as `a`.
void causal_lesson(Recorder& rec, const Item& item, const Matrix& omega, const Matrix& a,
                   std::int64_t d_k, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const Labels labels{.rows = item.queries.words, .cols = item.keys.words};
  const Matrix& plain =
      rec.add(StepKind::kUnmaskedWeights, fmt::format("A' = softmax(ω / √{})", symbols(c).d_k),
              {"T", t_k(c)}, softmax_in_place(scale(omega, d_k), c.kernel).weights, item.index,
              head, labels);
  Matrix zeroed = plain;
  for (Eigen::Index i = 0; i < zeroed.size(); ++i) {
    if (item.mask.values.data()[i] != 0.0f) zeroed.data()[i] = 0.0f;
  }
  Matrix renormalized = renormalize_rows(zeroed);
  rec.add(StepKind::kZeroedWeights, std::string(step_info(StepKind::kZeroedWeights).equation),
          {"T", t_k(c)}, std::move(zeroed), item.index, head, labels);
  // A row that keeps a key can still be all 0 after the mask: the softmax over every key gave
  // each kept key 0 (exp underflows in float32 when a masked score is far larger).
  float worst = 0.0f;
  std::vector<Eigen::Index> underflowed;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    bool nan_row = false, keeps_a_key = false;
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      const float d = std::fabs(renormalized(i, j) - a(i, j));
      if (std::isfinite(d)) worst = std::max(worst, d);
      nan_row = nan_row || std::isnan(renormalized(i, j));
      keeps_a_key = keeps_a_key || item.mask.values(i, j) == 0.0f;
    }
    if (nan_row && keeps_a_key) underflowed.push_back(i);
  }
  Labels note = labels;
  note.largest = worst;
  note.flagged_rows = std::move(underflowed);
  note.note_of = [fully_masked = item.mask.fully_masked](float largest,
                                                         const std::vector<Eigen::Index>& rows) {
    std::vector<std::string> numbers;
    for (const Eigen::Index r : rows) numbers.push_back(std::to_string(r + 1));
    std::string text = fmt::format(
        "the same weights as attention_weights{}: the largest difference is {:.1e}, float32 "
        "rounding",
        numbers.empty() ? std::string() : " but in " + rows_text(numbers), largest);
    if (!numbers.empty()) {
      text += fmt::format(
          "; in {} the softmax over every key left 0 for each key the mask keeps (exp underflows "
          "in float32 beside a far larger masked score), so 0 / 0 is nan, where "
          "attention_weights masks before its softmax",
          rows_text(numbers));
    }
    if (!fully_masked.empty()) {
      text += fmt::format("; {} all 0 after the mask, and 0 / 0 is nan",
                          rows_text(fully_masked, "is", "are"));
    }
    return text;
  };
  rec.add(StepKind::kRenormalizedWeights,
          std::string(step_info(StepKind::kRenormalizedWeights).equation), {"T", t_k(c)},
          std::move(renormalized), item.index, head, std::move(note));
}

}  // namespace

Matrix Mask::rows(Eigen::Index first, Eigen::Index count) const {
  Matrix m(count, t_k);  // rows of (T, T_k)
  for (Eigen::Index r = 0; r < count; ++r) {
    const Eigen::Index i = first + r;
    for (Eigen::Index j = 0; j < t_k; ++j) {
      m(r, j) = (causal && j > i) || (window > 0 && j <= i - window) || i >= query_length ||
                        j >= key_length
                    ? 1.0f
                    : 0.0f;
    }
  }
  return m;
}

Mask make_mask(const Trace& trace, const TokenizedSentence& queries,
               const TokenizedSentence& keys) {
  const TraceConfig& c = trace.config;
  const auto t_q = static_cast<Eigen::Index>(queries.words.size());
  const auto t_kv = static_cast<Eigen::Index>(keys.words.size());
  Mask m;
  m.masked = c.causal || trace.pad_id.has_value();
  if (!m.masked) return m;
  m.causal = c.causal;
  m.t_q = t_q, m.t_k = t_kv;
  // Padding: every pair whose query or key is the padding token.
  m.query_length = trace.pad_id ? queries.length : t_q;
  m.key_length = trace.pad_id ? keys.length : t_kv;
  // A window shorter than the queries masks the keys W or more tokens back too; a longer one
  // masks nothing more, and the mask is the causal one, equation and all.
  const bool window = c.window > 0 && c.window < t_q;
  m.window = window ? c.window : 0;
  if (!rows_at_a_time(c)) m.values = m.rows(0, t_q);
  if (window) {
    m.equation = fmt::format(
        "M = triu(ones(T, {0}), diagonal=1) | tril(ones(T, {0}), "
        "diagonal=−{1}){2}",
        t_k(c), c.window, trace.pad_id ? " | padding" : "");
    m.note = fmt::format(
        "1 = masked: key j comes after query i, or {} or more tokens before it (a window of {} "
        "keys: i−{}…i){}",
        c.window, c.window, c.window - 1, trace.pad_id ? ", or a '<pad>' query or key" : "");
  } else if (c.causal && trace.pad_id) {
    m.equation = "M = triu(ones(T, T), diagonal=1) | padding";
    m.note = "1 = masked: a key after the query, or a '<pad>' query or key";
  } else if (c.causal) {
    m.equation = fmt::format("M = triu(ones(T, {}), diagonal=1)", t_k(c));
    m.note = "1 = masked: key j comes after query i, so a token does not see later tokens";
  } else {
    m.equation = "M = 1 where the query or the key is '<pad>'";
    m.note = queries.length < t_q ? "1 = masked: every pair with a '<pad>' query or key"
                                  : "nothing is masked: this sentence has no padding";
  }
  // A row masks every key when no key is both before it (causal) and a word (padding).
  for (Eigen::Index i = 0; i < t_q; ++i) {
    const Eigen::Index before = m.causal ? std::min(i + 1, t_kv) : t_kv;
    const Eigen::Index from = m.window > 0 ? std::max<Eigen::Index>(0, i - m.window + 1) : 0;
    const Eigen::Index to = std::min(before, m.key_length);
    const Eigen::Index visible = i < m.query_length ? std::max<Eigen::Index>(0, to - from) : 0;
    if (t_kv > 0 && visible == 0) m.fully_masked.push_back(std::to_string(i + 1));
  }
  return m;
}

Qkv project(Recorder& rec, const Item& item, const HeadWeights& w, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const bool split = split_form(c);
  const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
  const std::string x_kv = c.cross ? "X₂" : "X";
  // Grouped-query heads: K and V are kv_heads · d_head wide, and say which heads share them.
  const bool grouped = split && c.kv_heads != c.heads;
  const std::string kk = grouped ? "d_kv" : kq, vv = grouped ? "d_kv" : dv;
  const std::string shared = sharing_note(c);
  // One projection step: in W (or in Wᵀ for the (d_out, d_in) layouts).
  auto one = [&](StepKind kind, const char* out, const Matrix& in, const std::string& in_name,
                 const Matrix& weight, const char* w_name, std::vector<std::string> dims,
                 const std::vector<std::string>& words, const char* what) {
    const Matrix& m = require_finite(
        rec.add(kind, projection_equation(c.init, out, in_name, w_name), std::move(dims),
                apply_weight(in, weight, c.init, c.threads, c.matmul), item.index, head,
                {.rows = words, .note = kind == StepKind::kQueries ? std::string() : shared}),
        what);
    rec.mark_product(in.rows(), c.init == WeightInit::kRand ? weight.cols() : weight.rows(),
                     in.cols());
    rec.flush();  // handed on while the product's values are in the cache
    return &m;
  };
  return {one(StepKind::kQueries, "Q", item.x, "X", w.w_q, "W_q", {"T", kq}, item.queries.words,
              "the queries Q"),
          one(StepKind::kKeys, "K", item.x_kv, x_kv, w.w_k, "W_k", {t_k(c), kk}, item.keys.words,
              "the keys K"),
          one(StepKind::kValues, "V", item.x_kv, x_kv, w.w_v, "W_v", {t_k(c), vv}, item.keys.words,
              "the values V")};
}

namespace {

// One head's attention over rows [h.first, h.first + h.count) of Q (item's queries are those
// rows): ω, the mask, the scaling, the softmax (and its steps), the causal lesson's other way,
// and the context vectors, whose values it returns.
const Matrix& attend_rows(Recorder& rec, const Item& item, const HeadRows& h, std::int64_t d_k,
                          std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const Symbols s = symbols(c);
  const Labels labels{.rows = item.queries.words, .cols = key_labels(item, h)};
  const std::string scores_name = item.mask.masked ? "masked ω" : "ω";
  // The steps live in a deque, so these references stay valid as later steps are added.
  const Scores scores = score(rec, item, h, head);
  // With release_scores and no causal lesson (which reads ω again) or online softmax (which
  // reads the scaled scores again), each step of the head's
  // scores is handed on as soon as the next one is computed, in its memory: one (T, T) matrix
  // per head instead of three.
  const bool in_place = c.release_scores && !(c.causal && !c.model) && c.online_softmax == 0;
  // In place and without the softmax's steps, the scaling also takes each row's max, so that the
  // softmax does not read the rows once more for it (the max is not a step there).
  const bool fused_max = in_place && !c.softmax_steps;
  Matrix row_max;
  const Matrix& scaled = rec.add(
      StepKind::kScaledScores, fmt::format("{0} / √{1} = {0} / √{2}", scores_name, s.d_k, d_k),
      {"T", t_k(c)},
      in_place ? scale_in_place(rec.flush_take(), d_k, c.threads, fused_max ? &row_max : nullptr)
               : scale(scores.scores, d_k, c.threads),
      item.index, head, labels);
  SoftmaxParts parts =
      fused_max ? softmax_in_place(rec.flush_take(), c.kernel, c.masked_rows, c.threads, &row_max)
                : softmax_parts(scaled, c.kernel, c.masked_rows, c.threads, c.softmax_steps);
  if (c.softmax_steps) record_softmax_parts(rec, item, parts, head);
  Labels weight_labels = labels;
  weight_labels.note = fully_masked_note(c, item.mask);
  const Matrix& a =
      rec.add(StepKind::kAttentionWeights,
              c.softmax_steps ? std::string("A_ij = e_ij · (1 / Σ_i)")
                              : fmt::format("A = softmax({} / √{})", scores_name, s.d_k),
              {"T", t_k(c)}, std::move(parts.weights), item.index, head, std::move(weight_labels));
  if (c.softmax_steps) record_weight_sums(rec, item, a, head);
  if (c.causal && !c.model) causal_lesson(rec, item, scores.omega, a, d_k, head);
  const Matrix& z = rec.add(StepKind::kContextVectors, fmt::format("{} = A {}", s.z, s.v),
                            {"T", split_form(c) ? "d_head" : "d_v"},
                            h.context ? h.context->rows(a, 0, a.rows(), c.threads)
                                      : context_vectors(a, h.v, c.threads, c.matmul),
                            item.index, head, {.rows = item.queries.words});
  rec.mark_product(a.rows(), h.v.cols(), a.cols());
  if (c.decode) decode_lesson(rec, item, h.q, h.k, h.v, d_k, z, head);
  if (c.online_softmax > 0) online_lesson(rec, item, scaled, h.v, z, head);
  return z;
}

// Words [first, first + count) of a sentence, and how many of them are words, not padding.
TokenizedSentence sentence_rows(const TokenizedSentence& s, Eigen::Index first,
                                Eigen::Index count) {
  TokenizedSentence part;
  part.words.assign(s.words.begin() + first, s.words.begin() + first + count);
  if (s.ids.size() == s.words.size()) {  // a given X has labels and no ids
    part.ids.assign(s.ids.begin() + first, s.ids.begin() + first + count);
  }
  part.length = std::clamp<std::int64_t>(s.length - first, 0, count);
  return part;
}

}  // namespace

const Matrix& attend(Recorder& rec, const Item& item, const Matrix& q, const Matrix& k,
                     const Matrix& v, std::int64_t d_k, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const Eigen::Index t = q.rows();
  if (!rows_at_a_time(c)) {
    return attend_rows(rec, item, HeadRows{q, k, v, 0, t}, d_k, head);
  }
  // Rows at a time: K and V packed once (each by its first block's product), then each block
  // of queries attends every key.
  const RowBlockProduct omega(k, /*transposed=*/true, t, c.matmul);
  const RowBlockProduct context(v, /*transposed=*/false, t, c.matmul);
  const Eigen::Index rows = score_block_rows(c, k.rows());
  for (Eigen::Index first = 0; first < t; first += rows) {
    const Eigen::Index count = std::min(rows, t - first);
    const TokenizedSentence queries = sentence_rows(item.queries, first, count);
    Mask mask = item.mask;
    if (mask.masked) mask.values = mask.rows(first, count);
    const Item block{item.index, queries, item.keys, item.x, item.x_kv, std::move(mask)};
    rec.begin_rows(first, count, t);
    attend_rows(rec, block, HeadRows{q, k, v, first, count, &omega, &context}, d_k, head);
    rec.end_rows();
  }
  return rec.last().values;
}

}  // namespace attn::lesson
