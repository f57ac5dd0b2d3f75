// The lesson's heads: attended in turn, then side by side, and the split form's output
// projection.

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "attn/attention.hpp"
#include "attn/parallel.hpp"
#include "attn/statistics.hpp"
#include "attn/weights.hpp"
#include "lesson.hpp"
#include "modern.hpp"

namespace attn::lesson {

namespace {

// One head's Z, computed as attend computes it, without recording a step.
Matrix untraced_head(const TraceConfig& c, const Item& item, const Matrix& q, const Matrix& k,
                     const Matrix& v, Eigen::Index d_k) {
  Matrix scores = omega_scores(q, k, c.threads, c.matmul);
  if (item.mask.masked) scores = apply_mask(scores, item.mask.rows(0, q.rows()));
  return context_vectors(
      softmax_rows(scale(scores, d_k, c.threads), c.kernel, c.masked_rows, c.threads), v, c.threads,
      c.matmul);
}

// Head h's Z into its columns of the heads side by side, (T, H·d_v), made at the first head: a
// row's values are contiguous in both, so each row is one copy; on `threads` threads from about
// 2¹⁷ values (the copy writes lines that are not in the cache).
void place_head(Matrix& z, std::int64_t heads, std::int64_t h, const Matrix& head_z, int threads) {
  const Eigen::Index n = head_z.cols();
  if (h == 0) z = uninitialized_matrix(head_z.rows(), static_cast<Eigen::Index>(heads) * n);
  if (n == 0) return;
  const Eigen::Index first = static_cast<Eigen::Index>(h) * n;
  constexpr double kPerValue = 8.0;
  parallel_for(head_z.rows(), threads, kPerValue * static_cast<double>(head_z.size()),
               [&](std::int64_t begin, std::int64_t end) {
                 for (auto i = static_cast<Eigen::Index>(begin); i < end; ++i) {
                   std::memcpy(&z(i, first), &head_z(i, 0),
                               static_cast<std::size_t>(n) * sizeof(float));
                 }
               });
}

}  // namespace

Matrix attend_heads(Recorder& rec, const Item& item, const Weights& w) {
  const TraceConfig& c = rec.config();
  Matrix z;
  if (c.multihead == MultiheadForm::kWrapper) {
    // The walkthrough's wrapper: each head projects with its own weights.
    for (std::int64_t h = 0; h < c.heads; ++h) {
      rec.stop_if_done();
      const auto head = static_cast<int>(h);
      const std::size_t first = rec.recorded();
      const Qkv p = rotate(
          rec, item, project(rec, item, w.heads[static_cast<std::size_t>(h)], head), w.rope, head);
      rec.stop_if_done();  // --steps queries: the scores are not computed
      place_head(z, c.heads, h, attend(rec, item, *p.q, *p.k, *p.v, c.d_kq, head), c.threads);
      rec.flush();              // this head's scores are done with
      rec.release_from(first);  // and its Q, K, V and Z (z holds its columns)
    }
    return z;
  }
  // The split form: one projection, d_out wide; head h attends over its own columns,
  // q.view(T, H, d_head).transpose(0, 1)[h], and over those of its K/V head g (g = h with one
  // K/V head per query head; k.repeat_interleave(H / N, dim=0)[h] with N shared ones).
  const std::size_t projected = rec.recorded();
  const Qkv p = c.model ? model_project(rec, item, w)
                        : rotate(rec, item, project(rec, item, w.heads[0], std::nullopt), w.rope,
                                 std::nullopt);
  const Eigen::Index hd = c.d_kq / c.heads;  // d_head = d_out / H
  for (std::int64_t h = 0; h < c.heads; ++h) {
    const Eigen::Index g = kv_head_of(h, c.heads, c.kv_heads);
    if (!head_traced(c, h)) {  // a model's head not chosen: computed for c_proj, not recorded
      place_head(z, c.heads, h,
                 untraced_head(c, item, p.q->middleCols(h * hd, hd), p.k->middleCols(g * hd, hd),
                               p.v->middleCols(g * hd, hd), hd),
                 c.threads);
      continue;
    }
    rec.stop_if_done();
    const std::size_t first = rec.recorded();
    if (c.model) {
      // A model's head: its Q, K and V split from c_attn's output, the head's own steps.
      const StepKind kinds[] = {StepKind::kHeadQueries, StepKind::kHeadKeys, StepKind::kHeadValues};
      const char* names[] = {"Q", "K", "V"};
      const Matrix* whole[] = {p.q, p.k, p.v};
      for (int part = 0; part < 3; ++part) {
        rec.add(kinds[part],
                fmt::format("{0}ₕ = {0}.view(T, {1}, {2}).transpose(0, 1)[{3}] = {0}[:, {4} : {5}]",
                            names[part], c.heads, hd, h, h * hd, (h + 1) * hd),
                {"T", "d_head"}, whole[part]->middleCols(h * hd, hd), item.index,
                static_cast<int>(h), {.rows = item.queries.words});
      }
    }
    place_head(z, c.heads, h,
               attend(rec, item, p.q->middleCols(h * hd, hd), p.k->middleCols(g * hd, hd),
                      p.v->middleCols(g * hd, hd), hd, static_cast<int>(h)),
               c.threads);
    rec.flush();
    rec.release_from(first);  // the head's own steps (z holds its columns)
  }
  rec.release_from(projected);  // Q, K and V of every head (and their rotations)
  return z;
}

void combine_heads(Recorder& rec, const Item& item, const Weights& w, Matrix z) {
  const TraceConfig& c = rec.config();
  const bool split = c.multihead == MultiheadForm::kSplit;
  // A model's dimension is d_model, and its heads are numbered from 0.
  const char* d_out = c.model ? "d_model" : "d_out";
  const Matrix* concat = &z;
  if (c.heads > 1) {
    concat =
        &rec.add(StepKind::kContextConcat,
                 c.model ? "Z = Z₀ | … | Z_{H−1} (merge_heads: transpose(1, 2).view(T, d_model))"
                 : split ? "Z = Z₁ | … | Z_H (transpose(1, 2).view(T, d_out))"
                         : std::string(step_info(StepKind::kContextConcat).equation),
                 {"T", split ? d_out : "H·d_v"}, std::move(z), item.index, std::nullopt,
                 {.rows = item.queries.words});
  }
  if (!split) return;
  // (T, d_out); a model's c_proj is a Conv1D, whose sums start from the bias.
  Matrix out = c.model ? addmm(w.b_o, *concat, w.w_o, c.threads, c.matmul)
                       : apply_weight(*concat, w.w_o, c.init, c.threads, c.matmul);
  std::string equation = projection_equation(c.init, "out", "Z", "W_o");
  if (c.model) {
    equation += " + b_o";
  } else if (c.init == WeightInit::kLinear) {
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
      for (Eigen::Index j = 0; j < out.cols(); ++j) out(i, j) = out(i, j) + w.b_o(0, j);
    }
    equation += " + b_o";
  }
  if (c.model) equation += fmt::format(" (h.{}.attn.c_proj)", c.layer);
  const Matrix& recorded = rec.add(StepKind::kOutput, equation, {"T", d_out}, std::move(out),
                                   item.index, std::nullopt, {.rows = item.queries.words});
  // A padded batch's nan rows (--masked-rows nan) stay nan, as in PyTorch; from finite heads, a
  // value that is not finite overflowed.
  if (all_finite(concat->data(), static_cast<std::size_t>(concat->size()))) {
    require_finite(recorded, "the output projection's values out");
  }
  rec.mark_product(concat->rows(), w.w_o.rows(), concat->cols());
}

}  // namespace attn::lesson
