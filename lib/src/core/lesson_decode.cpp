// The KV cache and FlashAttention's online softmax, each traced after a head's attention and
// checked against its context vectors.

#include <fmt/format.h>

#include <string>
#include <vector>

#include "attn/decode.hpp"
#include "attn/grouping.hpp"
#include "attn/online_softmax.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }

// The words of the tokens from..to−1.
std::vector<std::string> words_of(const Item& item, Eigen::Index from, Eigen::Index to) {
  return {item.queries.words.begin() + from, item.queries.words.begin() + to};
}

// "0: the same operations in the same order", or the difference and why it is not 0.
std::string difference_text(float worst, std::string_view why) {
  if (worst == 0.0f) return "0: the same bits";
  return fmt::format("{:.1e}: float32 rounding, {}", worst, why);
}

// The cache's equation: with a window of W, it keeps its last W rows.
std::string cache_equation(StepKind kind, std::int64_t window) {
  const std::string base(step_info(kind).equation);
  return window > 0 ? fmt::format("{}[-{}:]", base, window) : base;
}

// What a cache step adds: which query heads share this K/V head's cache, and which tokens the
// window has dropped. Empty when neither applies.
std::string cache_note(const TraceConfig& c, std::optional<int> head, Eigen::Index first) {
  std::vector<std::string> parts;
  if (head && c.kv_heads > 0 && c.kv_heads < c.heads) {
    const std::int64_t g = kv_head_of(*head, c.heads, c.kv_heads);
    const HeadRange served = query_heads_of(g, c.heads, c.kv_heads);
    parts.push_back(
        fmt::format("the cache of K/V head {}, shared by query heads {}–{} (one cache "
                    "for {} heads)",
                    g + 1, served.first + 1, served.first + served.count, served.count));
  }
  if (first > 0) {
    parts.push_back(fmt::format(
        "the window of {} keeps the last {} tokens; {} dropped", c.window, c.window,
        first == 1 ? std::string("token 1 was") : fmt::format("tokens 1–{} were", first)));
  }
  std::string note;
  for (const std::string& p : parts) note += (note.empty() ? "" : "; ") + p;
  return note;
}

}  // namespace

void decode_lesson(Recorder& rec, const Item& item, const Matrix& q, const Matrix& k,
                   const Matrix& v, std::int64_t d_k, const Matrix& z, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const std::string dk = split_form(c) ? "d_head" : "d_k", dv = split_form(c) ? "d_head" : "d_v";
  // With a window shorter than the sentence, the cache holds min(t, W) rows (a longer one drops
  // nothing, and the trace is the causal one's); with rotary embeddings, q_t and k_t are turned
  // by the new token's position, t − 1 (positions count from 0, t from 1).
  const std::int64_t window = c.window > 0 && c.window < q.rows() ? c.window : 0;
  const std::string cache_rows = window > 0 ? fmt::format("min(t, {})", window) : "t";
  auto projection = [&](StepKind kind) {
    const std::string base(step_info(kind).equation);
    if (!c.rope || kind == StepKind::kDecodeValue) return base;
    const std::size_t eq = base.find(" = ");
    return fmt::format("{} = rotate({}, p = t − 1)", base.substr(0, eq), base.substr(eq + 3));
  };
  KvCache cache;
  Matrix decoded(q.rows(), v.cols());
  for (Eigen::Index t = 0; t < q.rows(); ++t) {
    const std::string suffix = fmt::format("_t{}", t + 1);
    auto labels = [&](StepKind kind, std::vector<std::string> rows,
                      std::vector<std::string> cols = {}) {
      return Labels{.rows = std::move(rows),
                    .cols = std::move(cols),
                    .title = fmt::format("{} (t = {})", step_info(kind).title, t + 1),
                    .id_suffix = suffix};
    };
    auto equation = [](StepKind kind) { return std::string(step_info(kind).equation); };
    const std::vector<std::string> word = words_of(item, t, t + 1);
    const Matrix q_t = q.row(t), k_t = k.row(t), v_t = v.row(t);
    rec.add(StepKind::kDecodeQuery, projection(StepKind::kDecodeQuery), {"1", dk}, q_t, item.index,
            head, labels(StepKind::kDecodeQuery, word));
    rec.add(StepKind::kDecodeKey, projection(StepKind::kDecodeKey), {"1", dk}, k_t, item.index,
            head, labels(StepKind::kDecodeKey, word));
    rec.add(StepKind::kDecodeValue, projection(StepKind::kDecodeValue), {"1", dv}, v_t, item.index,
            head, labels(StepKind::kDecodeValue, word));
    cache_append(cache, k_t, v_t, cache_start(t, window));
    const std::vector<std::string> cached = words_of(item, cache.first, t + 1);
    const Eigen::Index n = cache.keys.rows();
    Labels cache_labels = labels(StepKind::kKeyCache, cached);
    cache_labels.note = cache_note(c, head, cache.first);
    rec.add(StepKind::kKeyCache, cache_equation(StepKind::kKeyCache, window), {cache_rows, dk},
            cache.keys, item.index, head, cache_labels);
    cache_labels.title = labels(StepKind::kValueCache, {}).title;
    rec.add(StepKind::kValueCache, cache_equation(StepKind::kValueCache, window), {cache_rows, dv},
            cache.values, item.index, head, std::move(cache_labels));
    // The cache holds no later key; a padding key in it is still masked.
    const Matrix mask_row =
        item.mask.masked ? Matrix(item.mask.values.block(t, cache.first, 1, n)) : Matrix();
    CachedRow r = attend_cached(q_t, cache, mask_row, d_k, c.kernel, c.masked_rows, c.matmul);
    rec.add(StepKind::kDecodeScores, fmt::format("s_t = q_t K_cacheᵀ / √{}", d_k),
            {"1", cache_rows}, std::move(r.scores), item.index, head,
            labels(StepKind::kDecodeScores, word, cached));
    rec.add(StepKind::kDecodeWeights, equation(StepKind::kDecodeWeights), {"1", cache_rows},
            std::move(r.weights), item.index, head, labels(StepKind::kDecodeWeights, word, cached));
    decoded.row(t) = r.z;
    rec.add(StepKind::kDecodeContext, equation(StepKind::kDecodeContext), {"1", dv}, std::move(r.z),
            item.index, head, labels(StepKind::kDecodeContext, word));
  }
  const std::string why =
      "since a blocked product or a softmax's sum over a shorter row groups its terms "
      "differently";
  rec.add(
      StepKind::kDecodeCheck, std::string(step_info(StepKind::kDecodeCheck).equation), {"T", dv},
      decoded, item.index, head,
      {.rows = item.queries.words,
       .note = fmt::format("the rows of context_vectors, decoded one token at a time: the largest "
                           "difference is {}",
                           difference_text(largest_difference(decoded, z), why))});
}

void online_lesson(Recorder& rec, const Item& item, const Matrix& scaled, const Matrix& v,
                   const Matrix& z, std::optional<int> head) {
  const TraceConfig& c = rec.config();
  const std::string dv = split_form(c) ? "d_head" : "d_v";
  OnlineSoftmax o = online_softmax(scaled, v, c.online_softmax, c.kernel, c.masked_rows);
  std::vector<std::string> tiles;
  const Eigen::Index t_k = scaled.cols(), b = std::min<Eigen::Index>(c.online_softmax, t_k);
  for (Eigen::Index from = 0; from < t_k; from += b) {
    const Eigen::Index to = std::min(t_k, from + b);
    tiles.push_back(to - from == 1 ? fmt::format("key {}", to)
                                   : fmt::format("keys {}–{}", from + 1, to));
  }
  const std::string skipped =
      o.skipped == 0
          ? std::string()
          : fmt::format(
                "{} wholly masked for {} row {} skipped, as FlashAttention skips {}: m and ℓ "
                "carry over, and c shows 1",
                o.skipped == 1 ? std::string("1 tile") : fmt::format("{} tiles", o.skipped),
                o.skipped == 1 ? "its" : "their", o.skipped == 1 ? "was" : "were",
                o.skipped == 1 ? "it" : "them");
  // Rows that skipped every tile end with ℓ = 0: O / ℓ is 0 / 0.
  std::vector<std::string> empty_rows;
  std::size_t empties = 0;
  for (Eigen::Index i = 0; i < o.l.rows(); ++i) {
    if (o.l(i, o.l.cols() - 1) != 0.0f) continue;
    if (++empties <= 5) empty_rows.push_back(std::to_string(i + 1));
  }
  if (empties > 5) empty_rows.back() += fmt::format(" and {} more", empties - 5);
  const std::string empty =
      empties == 0
          ? std::string()
          : fmt::format(
                "; row{} {} masked every key, so ℓ = 0 and Z is {}", empties == 1 ? "" : "s",
                fmt::join(empty_rows, ", "),
                c.masked_rows == MaskedRows::kZero
                    ? "0 there (--masked-rows zero; FlashAttention's kernels divide by 1 where "
                      "ℓ is 0)"
                    : "nan there (0 / 0, as torch.softmax's row is nan)");
  const Labels per_tile{.rows = item.queries.words, .cols = tiles, .note = skipped};
  auto equation = [](StepKind kind) { return std::string(step_info(kind).equation); };
  rec.add(StepKind::kOnlineMax, equation(StepKind::kOnlineMax), {"T", "tiles"}, std::move(o.m),
          item.index, head, per_tile);
  rec.add(StepKind::kOnlineRescale, equation(StepKind::kOnlineRescale), {"T", "tiles"},
          std::move(o.rescale), item.index, head, per_tile);
  rec.add(StepKind::kOnlineSum, equation(StepKind::kOnlineSum), {"T", "tiles"}, std::move(o.l),
          item.index, head, per_tile);
  rec.add(StepKind::kOnlineOutput, equation(StepKind::kOnlineOutput), {"T", dv}, std::move(o.o),
          item.index, head, {.rows = item.queries.words});
  const float worst = largest_difference(o.z, z);
  rec.add(StepKind::kOnlineContext, equation(StepKind::kOnlineContext), {"T", dv}, std::move(o.z),
          item.index, head,
          {.rows = item.queries.words,
           .note = fmt::format(
               "{}; the largest difference from context_vectors is {}{}",
               b == t_k && c.online_softmax >= t_k
                   ? std::string("one tile of every key")
                   : fmt::format("tiles of {} key{}", b, b == 1 ? "" : "s"),
               difference_text(worst, b >= t_k ? "the terms added in another order than the "
                                                 "softmax's"
                                               : "since the sum and the product are added tile "
                                                 "by tile and rescaled, in another order than "
                                                 "the softmax's"),
               empty)});
}

}  // namespace attn::lesson
