// The backward pass, recorded: the loss (lesson_loss.cpp), then its gradient step by step back
// through the output projection, each head's attention, the projections and the embedding; then
// one step of gradient descent. Each gradient is computed as torch.autograd computes it
// (backward.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "attn/backward.hpp"
#include "attn/error.hpp"
#include "attn/grouping.hpp"
#include "attn/statistics.hpp"
#include "attn/weights.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }
std::string t_k(const TraceConfig& c) { return c.cross ? "T₂" : "T"; }

// The split form's output projection, backwards: dL/d out per item, dL/dW_o and dL/db_o summed
// over the items, and dL/dZ per item.
std::vector<Matrix> output_backward(Recorder& rec, const Trace& trace, const Weights& w,
                                    std::vector<Matrix> d_out) {
  const TraceConfig& c = rec.config();
  const auto batch = static_cast<std::int64_t>(d_out.size());
  std::vector<Matrix> zs;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto item = index_if(batch > 1, b);
    rec.add(StepKind::kGradOutput,
            c.loss == Loss::kSum ? "dL/d out = ones_like(out)" : "dL/d out = 2 (out − target) / N",
            {"T", "d_out"}, d_out[static_cast<std::size_t>(b)], static_cast<int>(b), std::nullopt,
            {.rows = trace.inputs[static_cast<std::size_t>(b)].words});
    // The heads' Z side by side, or the one head's Z.
    zs.push_back(trace
                     .step(c.heads > 1 ? StepKind::kContextConcat : StepKind::kContextVectors,
                           std::nullopt, item)
                     .values);
  }
  const Matrix z = stacked(zs), g = stacked(d_out);
  const bool rand = c.init == WeightInit::kRand;
  rec.add(
      StepKind::kGradWOut, rand ? "dL/dW_o = Zᵀ dL/d out" : "dL/dW_o = (dL/d out)ᵀ Z",
      {"d_out", "d_out"},
      rand ? transposed_product(z, g, c.threads, c.matmul)
           : items_transposed_product(g, z, transposed_batch(c, d_out.size()), c.threads, c.matmul),
      std::nullopt, std::nullopt);
  if (rand) {
    rec.mark_product(z.cols(), g.cols(), z.rows());
  } else {
    rec.mark_product(g.cols(), z.cols(), g.rows());
  }
  if (c.init == WeightInit::kLinear) {
    rec.add(StepKind::kGradBOut, "dL/db_o = dL/d out.sum(dim=0)", {"d_out"}, column_sums(g),
            std::nullopt, std::nullopt);
  }
  std::vector<Matrix> dz;
  for (const Matrix& d : d_out) {
    dz.push_back(rand ? matmul_transposed(d, w.w_o, c.threads, c.matmul)
                      : matmul(d, w.w_o, c.threads, c.matmul));
  }
  return dz;
}

// The item's mask, as its mask step holds it (every head's is the same), or null.
const Matrix* mask_of(const Trace& trace, std::int64_t b) {
  const auto batch = index_if(trace.inputs.size() > 1, b);
  const auto head = index_if(trace.config.heads > 1, 0);
  for (const Step& s : trace.steps) {
    if (s.kind == StepKind::kMask && s.head == head && s.batch == batch) return &s.values;
  }
  return nullptr;
}

// The largest |a − b| over the cells where both are finite.
float largest_difference(const Matrix& a, const Matrix& b) {
  float worst = 0.0f;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    const float d = std::fabs(a.data()[i] - b.data()[i]);
    if (std::isfinite(d)) worst = std::max(worst, d);
  }
  return worst;
}

// The names of the rotation and its transpose, for the equations.
std::string turn_name(const TraceConfig& c) {
  return c.rope_pairs == RopePairs::kHalf ? "rotate_half" : "rotate_every_two";
}
std::string rope_back_note(const TraceConfig& c) {
  return c.rope_pairs == RopePairs::kHalf
             ? "rotate_halfᵀ(y) = cat(y[d/2:], −y[:d/2]): the rotation's transpose turns each "
               "pair back by its angle"
             : "rotate_every_twoᵀ(y) = (y₁, −y₀, y₃, −y₂, …): the rotation's transpose turns "
               "each pair back by its angle";
}

// The causal lesson's other way, backwards: had Z read the renormalized weights, the same dL/dZ
// (so dL/dA, grad_attention_weights) would flow back through the division by the row sums, the
// zeroing and the unmasked softmax to ω, and give ω the same gradient up to rounding.
void other_way_backward(Recorder& rec, const Trace& trace, const Matrix& da, const Matrix& mask,
                        const Matrix& domega, std::int64_t d_k, std::int64_t b, std::int64_t h,
                        const Labels& square) {
  const TraceConfig& c = rec.config();
  const auto batch = index_if(trace.inputs.size() > 1, b);
  const auto head = index_if(c.heads > 1, h);
  const auto item = static_cast<int>(b), hh = static_cast<int>(h);
  const Matrix& unmasked = trace.step(StepKind::kUnmaskedWeights, head, batch).values;
  const Matrix& zeroed = trace.step(StepKind::kZeroedWeights, head, batch).values;
  const Matrix& renormalized = trace.step(StepKind::kRenormalizedWeights, head, batch).values;
  const std::string t = t_k(c);
  Labels sums = square;
  sums.note =
      "s_i = Σ_j A''_ij, the sum each row of zeroed_weights was divided by; dL/dA and A are "
      "grad_attention_weights and the renormalized weights (the same weights as "
      "attention_weights); autograd adds dL/dA / s and the sum's gradient "
      "−Σ_j dL/dA_ij (A''_ij / s_i) / s_i";
  const Matrix& dy = rec.add(
      StepKind::kGradZeroedWeights, std::string(step_info(StepKind::kGradZeroedWeights).equation),
      {"T", t}, renormalize_backward(zeroed, renormalized, da), item, hh, std::move(sums));
  Labels zeroing = square;
  zeroing.note = "the weights that were set to 0 pass no gradient back";
  const Matrix& du = rec.add(StepKind::kGradUnmaskedWeights,
                             std::string(step_info(StepKind::kGradUnmaskedWeights).equation),
                             {"T", t}, zeroing_backward(dy, mask), item, hh, std::move(zeroing));
  Matrix r;
  Matrix dw = scale_in_place(softmax_backward(unmasked, du, c.kernel, r), d_k);
  float r_largest = 0.0f;
  for (Eigen::Index i = 0; i < r.rows(); ++i) {
    if (std::isfinite(r(i, 0))) r_largest = std::max(r_largest, std::fabs(r(i, 0)));
  }
  // Rows that are nan here and not in grad_omega: the renormalized weights' rows of 0 / 0.
  std::vector<std::string> nan_rows;
  for (Eigen::Index i = 0; i < dw.rows(); ++i) {
    for (Eigen::Index j = 0; j < dw.cols(); ++j) {
      if (std::isnan(dw(i, j)) && !std::isnan(domega(i, j))) {
        nan_rows.push_back(std::to_string(i + 1));
        break;
      }
    }
  }
  Labels back = square;
  back.note = fmt::format(
      "r'_i = Σ_j dL/dA'_ij A'_ij is 0 up to rounding (at most {:.1e}), so the masked scores get "
      "almost nothing; the largest difference from grad_omega is {:.1e}, float32 rounding{}",
      r_largest, largest_difference(dw, domega),
      nan_rows.empty() ? std::string()
                       : fmt::format("; in {} it is nan, where grad_omega is not, as the "
                                     "renormalized weights are nan there (0 / 0)",
                                     rows_text(nan_rows)));
  rec.add(StepKind::kGradOmegaOtherWay, fmt::format("dL/dω' = A' ⊙ (dL/dA' − r') / √{}", d_k),
          {"T", t}, std::move(dw), item, hh, std::move(back));
}

// The last step is dL/dZ = dL/d out W_oᵀ (rand's (d_in, d_out) W_o), or dL/d out W_o.
void mark_output_product(Recorder& rec, const Weights& w, const Matrix& dz) {
  const bool rand = rec.config().init == WeightInit::kRand;
  rec.mark_product(dz.rows(), dz.cols(), rand ? w.w_o.cols() : w.w_o.rows());
}

// The softmax's backward of one head: r_i = Σ_j dA_ij A_ij, then dL/dS, recorded.
// torch.softmax's output is nan in a row whose every key is masked; the masked-rows rule zero
// replaces that row by 0 afterwards (torch.where), whose backward gives the softmax a zero row.
// Only then are A and dL/dA copied, to give the softmax's backward what autograd gives it.
const Matrix& record_softmax_backward(Recorder& rec, const Matrix& a, const Matrix& da,
                                      const Matrix* mask, int item, int hh, const Labels& square) {
  const TraceConfig& c = rec.config();
  std::vector<Eigen::Index> full;
  for (Eigen::Index i = 0; mask && a.cols() > 0 && i < a.rows(); ++i) {
    if (mask->row(i).minCoeff() == 1.0f) full.push_back(i);
  }
  Matrix row_dot;
  Matrix ds;
  if (full.empty()) {
    ds = softmax_backward(a, da, c.kernel, row_dot);
  } else {
    Matrix soft = a, da_soft = da;
    for (const Eigen::Index i : full) {
      soft.row(i).setConstant(std::bit_cast<float>(0xffc00000u));  // x86's nan, as the softmax
      if (c.masked_rows == MaskedRows::kZero) da_soft.row(i).setZero();
    }
    ds = softmax_backward(soft, da_soft, c.kernel, row_dot);
  }
  const std::string full_note =
      full.empty() ? std::string()
                   : "a row whose every key is masked is nan: torch.softmax's output there is nan";
  rec.add(StepKind::kGradRowDot, "r_i = Σ_j dA_ij A_ij", {"T", "1"}, std::move(row_dot), item, hh,
          {.rows = square.rows, .cols = {"r"}, .note = full_note});
  return rec.add(StepKind::kGradScaledScores, "dL/dS = A ⊙ (dA − r)", {"T", t_k(c)}, std::move(ds),
                 item, hh, {.rows = square.rows, .cols = square.cols, .note = full_note});
}

// One head's attention, backwards, from dL/dZ to the gradients of what it read: dL/dQ, dL/dK and
// dL/dV (of its K/V head's share, for a shared one; dL/dK' before the rotation back when that
// waits for the K/V head's sum).
struct HeadGrads {
  Matrix dq, dk, dv;
};
HeadGrads attend_backward(Recorder& rec, const Trace& trace, const Weights& w, const Matrix* mask,
                          const Matrix& dz, std::int64_t b, std::int64_t h) {
  const TraceConfig& c = rec.config();
  const bool split = split_form(c);
  const bool grouped = split && c.kv_heads != c.heads;
  const auto batch = index_if(trace.inputs.size() > 1, b);
  const auto head = index_if(c.heads > 1, h);
  const auto [q, k] = trace.head_queries_keys(head, batch);  // rotated, with rotary embeddings
  const Eigen::Index hd = split ? c.d_v / c.heads : c.d_v;
  const Eigen::Index g = split ? kv_head_of(h, c.heads, c.kv_heads) : h;  // its K/V head
  const Matrix v =
      split
          ? Matrix(trace.step(StepKind::kValues, std::nullopt, batch).values.middleCols(g * hd, hd))
          : trace.step(StepKind::kValues, head, batch).values;
  const Matrix& a = trace.step(StepKind::kAttentionWeights, head, batch).values;
  const std::vector<std::string>& rows = trace.inputs[static_cast<std::size_t>(b)].words;
  const std::vector<std::string>& cols = trace.key_sentence(static_cast<int>(b)).words;
  const Labels square{.rows = rows, .cols = cols};
  const auto item = static_cast<int>(b), hh = static_cast<int>(h);
  const std::string sub = split ? "ₕ" : "", d_name = split ? "d_head" : "d_v";
  const std::string share =
      grouped ? fmt::format("query head {}'s share of K/V head {}'s gradient", h + 1, g + 1)
              : std::string();
  rec.add(StepKind::kGradContext, fmt::format("dL/dZ{}", sub), {"T", d_name}, dz, item, hh,
          {.rows = rows});
  if (split && c.heads == 1) mark_output_product(rec, w, dz);  // dL/dZ came through W_o
  const Matrix& da =
      rec.add(StepKind::kGradAttentionWeights, fmt::format("dL/dA = dL/dZ{0} V{0}ᵀ", sub),
              {"T", t_k(c)}, matmul_transposed(dz, v, c.threads, c.matmul), item, hh, square);
  rec.mark_product(dz.rows(), v.rows(), dz.cols());
  HeadGrads grads;
  grads.dv = rec.add(StepKind::kGradValues, fmt::format("dL/dV{0} = Aᵀ dL/dZ{0}", sub),
                     {t_k(c), d_name}, transposed_product(a, dz, c.threads, c.matmul), item, hh,
                     {.rows = cols, .note = share});
  rec.mark_product(a.cols(), dz.cols(), a.rows());
  const Matrix& dsr = record_softmax_backward(rec, a, da, mask, item, hh, square);
  const std::int64_t d_k = split ? c.d_kq / c.heads : c.d_kq;
  const Matrix& dw =
      rec.add(StepKind::kGradOmega,
              mask ? fmt::format("dL/dω = (dL/dS / √{}).masked_fill(M, 0)", d_k)
                   : fmt::format("dL/dω = dL/dS / √{}", d_k),
              {"T", t_k(c)}, scores_backward(dsr, d_k, mask ? *mask : Matrix()), item, hh,
              {.rows = rows,
               .cols = cols,
               .note = mask ? "masked scores were replaced by −inf: their gradient is 0" : ""});
  if (c.causal && mask) other_way_backward(rec, trace, da, *mask, dw, d_k, b, h, square);
  // dL/dQ = dL/dω K and dL/dK = dL/dωᵀ Q; with rotary embeddings ω read the rotated Q' and K',
  // whose gradients these are, turned back below by the rotation's transpose (a shared K/V head's
  // after its query heads' shares are summed).
  const std::string kq_dim = split ? "d_head" : "d_kq", turned = c.rope ? "'" : "";
  const Matrix& dq = rec.add(c.rope ? StepKind::kGradRotatedQueries : StepKind::kGradQueries,
                             fmt::format("dL/dQ{1}{0} = dL/dω K{1}{0}", sub, turned), {"T", kq_dim},
                             matmul(dw, k, c.threads, c.matmul), item, hh, {.rows = rows});
  rec.mark_product(dw.rows(), k.cols(), dw.cols());
  const Matrix& dk = rec.add(c.rope ? StepKind::kGradRotatedKeys : StepKind::kGradKeys,
                             fmt::format("dL/dK{1}{0} = dL/dωᵀ Q{1}{0}", sub, turned),
                             {t_k(c), kq_dim}, transposed_product(dw, q, c.threads, c.matmul), item,
                             hh, {.rows = cols, .note = share});
  rec.mark_product(dw.cols(), q.cols(), dw.rows());
  if (!c.rope) {
    grads.dq = dq, grads.dk = dk;
    return grads;
  }
  const std::string turn = turn_name(c);
  grads.dq = rec.add(StepKind::kGradQueries,
                     fmt::format("dL/dQ{0} = dL/dQ'{0}·cos + {1}ᵀ(dL/dQ'{0}·sin)", sub, turn),
                     {"T", kq_dim}, rope_backward(dq, *w.rope, c.rope_pairs), item, hh,
                     {.rows = rows, .note = rope_back_note(c)});
  if (grouped) {
    grads.dk = dk;
  } else {
    grads.dk = rec.add(StepKind::kGradKeys,
                       fmt::format("dL/dK{0} = dL/dK'{0}·cos + {1}ᵀ(dL/dK'{0}·sin)", sub, turn),
                       {t_k(c), kq_dim}, rope_backward(dk, *w.rope, c.rope_pairs), item, hh,
                       {.rows = cols, .note = rope_back_note(c)});
  }
  return grads;
}

// The heads' gradients of one kind side by side: (T, H · d_head).
Matrix side_by_side(const std::vector<HeadGrads>& hs, Matrix HeadGrads::*member) {
  const Eigen::Index width = (hs[0].*member).cols();
  Matrix m((hs[0].*member).rows(), static_cast<Eigen::Index>(hs.size()) * width);
  for (std::size_t h = 0; h < hs.size(); ++h) {
    m.middleCols(static_cast<Eigen::Index>(h) * width, width) = hs[h].*member;
  }
  return m;
}

// Grouped-query heads: each K/V head's gradient, its query heads' shares added in order from 0,
// as repeat_interleave's backward (index_add_ into zeros) adds them. (T, kv_heads · d_head).
Matrix shared_sum(const TraceConfig& c, const std::vector<HeadGrads>& hs,
                  Matrix HeadGrads::*member) {
  const Eigen::Index width = (hs[0].*member).cols();
  Matrix m = Matrix::Zero((hs[0].*member).rows(), c.kv_heads * width);
  for (std::size_t h = 0; h < hs.size(); ++h) {
    const Eigen::Index g = kv_head_of(static_cast<std::int64_t>(h), c.heads, c.kv_heads);
    m.middleCols(g * width, width) += hs[h].*member;
  }
  return m;
}

// Every head of every item, backwards: dQ, dK, dV per item (per head, or side by side).
std::vector<ItemGrads> heads_backward(Recorder& rec, Trace& trace, const Weights& w,
                                      const std::vector<Matrix>& dz) {
  const TraceConfig& c = rec.config();
  std::vector<ItemGrads> items;
  for (std::size_t b = 0; b < dz.size(); ++b) {
    ItemGrads ig;
    ig.mask = mask_of(trace, static_cast<std::int64_t>(b));
    const std::vector<std::string>& rows = trace.inputs[b].words;
    if (c.heads > 1) {
      rec.add(StepKind::kGradContextConcat, "dL/dZ", {"T", split_form(c) ? "d_out" : "H·d_v"},
              dz[b], static_cast<int>(b), std::nullopt, {.rows = rows});
      if (split_form(c)) mark_output_product(rec, w, dz[b]);  // dL/dZ came through W_o
    }
    const Eigen::Index hd = dz[b].cols() / c.heads;
    std::vector<HeadGrads> hs;
    for (std::int64_t h = 0; h < c.heads; ++h) {
      hs.push_back(attend_backward(rec, trace, w, ig.mask, dz[b].middleCols(h * hd, hd),
                                   static_cast<std::int64_t>(b), h));
      rec.flush();  // the head's backward is done with (release_unread)
    }
    if (!split_form(c)) {
      for (HeadGrads& g : hs) {
        ig.dq.push_back(std::move(g.dq));
        ig.dk.push_back(std::move(g.dk));
        ig.dv.push_back(std::move(g.dv));
      }
    } else if (c.kv_heads == c.heads) {
      // The heads' columns side by side: view and transpose's backward move values only.
      ig.dq.push_back(side_by_side(hs, &HeadGrads::dq));
      ig.dk.push_back(side_by_side(hs, &HeadGrads::dk));
      ig.dv.push_back(side_by_side(hs, &HeadGrads::dv));
    } else {
      const std::vector<std::string>& keys = trace.key_sentence(static_cast<int>(b)).words;
      const std::string served = kv_sharing_text(c.heads, c.kv_heads);
      const auto item = static_cast<int>(b);
      ig.dq.push_back(side_by_side(hs, &HeadGrads::dq));
      const Matrix& dk = rec.add(
          StepKind::kGradSharedKeys,
          c.rope ? "dL/dK'_g = Σ_{h ∈ g} dL/dK'ₕ" : "dL/dK_g = Σ_{h ∈ g} dL/dKₕ", {t_k(c), "d_kv"},
          shared_sum(c, hs, &HeadGrads::dk), item, std::nullopt, {.rows = keys, .note = served});
      ig.dk.push_back(
          c.rope ? rec.add(StepKind::kGradKeys,
                           fmt::format("dL/dK = dL/dK'·cos + {}ᵀ(dL/dK'·sin) (each K/V head's "
                                       "columns)",
                                       turn_name(c)),
                           {t_k(c), "d_kv"}, rope_backward(dk, *w.rope, c.rope_pairs), item,
                           std::nullopt, {.rows = keys, .note = rope_back_note(c)})
                 : dk);
      ig.dv.push_back(rec.add(StepKind::kGradSharedValues, "dL/dV_g = Σ_{h ∈ g} dL/dVₕ",
                              {t_k(c), "d_kv"}, shared_sum(c, hs, &HeadGrads::dv), item,
                              std::nullopt, {.rows = keys, .note = served}));
    }
    items.push_back(std::move(ig));
  }
  return items;
}

}  // namespace

void backward(Trace& trace, Recorder& rec, const Inputs& inputs, const Weights& w) {
  const TraceConfig& c = rec.config();
  const auto batch = static_cast<std::int64_t>(trace.inputs.size());
  std::vector<Matrix> dz = record_loss(rec, trace, batch);
  if (split_form(c)) dz = output_backward(rec, trace, w, std::move(dz));
  std::vector<ItemGrads> items = heads_backward(rec, trace, w, dz);
  record_input_grads(rec, trace, inputs, w, items);
}

}  // namespace attn::lesson
