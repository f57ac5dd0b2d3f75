// The backward pass's last steps: the gradients of the weights, of X and of the embedding table,
// then one step of gradient descent and the loss after it.

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "attn/backward.hpp"
#include "attn/error.hpp"
#include "attn/grouping.hpp"
#include "attn/weights.hpp"
#include "lesson.hpp"

namespace attn::lesson {

// The forward pass's output for given weights, computed again without recording: the loss after
// the step of gradient descent. Each head's scores are masked, scaled and softmaxed in one
// (T, T_k) matrix.
Matrix forward_output(const TraceConfig& c, const Matrix& x, const Matrix& x_kv, const Matrix* mask,
                      const Weights& w, std::vector<Recorder::ProductShape>& products) {
  auto attend_one = [&](const Matrix& q, const Matrix& k, const Matrix& v, Eigen::Index d_k) {
    products.push_back({q.rows(), k.rows(), q.cols()});
    products.push_back({q.rows(), v.cols(), k.rows()});
    Matrix s = omega_scores(q, k, c.threads, c.matmul);  // (T, T_k)
    for (Eigen::Index i = 0; mask && i < s.size(); ++i) {
      if (mask->data()[i] != 0.0f) s.data()[i] = -std::numeric_limits<float>::infinity();
    }
    const Matrix a = softmax_in_place(scale_in_place(std::move(s), d_k, c.threads), c.kernel,
                                      c.masked_rows, c.threads)
                         .weights;
    return context_vectors(a, v, c.threads, c.matmul);
  };
  auto proj = [&](const Matrix& in, const Matrix& weight) {
    Matrix out = apply_weight(in, weight, c.init, c.threads, c.matmul);
    products.push_back({in.rows(), out.cols(), in.cols()});
    return out;
  };
  // Rotary embeddings turn Q and K (each head's columns) before the scores.
  auto turned = [&](Matrix m) { return w.rope ? rope_rotate(m, *w.rope, c.rope_pairs) : m; };
  std::vector<Matrix> zs;
  if (!(c.multihead == MultiheadForm::kSplit)) {
    for (const HeadWeights& h : w.heads) {
      zs.push_back(
          attend_one(turned(proj(x, h.w_q)), turned(proj(x_kv, h.w_k)), proj(x_kv, h.w_v), c.d_kq));
    }
  } else {
    const Matrix q = turned(proj(x, w.heads[0].w_q)), k = turned(proj(x_kv, w.heads[0].w_k)),
                 v = proj(x_kv, w.heads[0].w_v);
    const Eigen::Index hd = c.d_kq / c.heads;
    for (Eigen::Index h = 0; h < c.heads; ++h) {
      const Eigen::Index g = kv_head_of(h, c.heads, c.kv_heads);  // its K/V head
      zs.push_back(attend_one(q.middleCols(h * hd, hd), k.middleCols(g * hd, hd),
                              v.middleCols(g * hd, hd), hd));
    }
  }
  Matrix z(zs[0].rows(), static_cast<Eigen::Index>(zs.size()) * zs[0].cols());
  for (std::size_t h = 0; h < zs.size(); ++h) {
    z.middleCols(static_cast<Eigen::Index>(h) * zs[0].cols(), zs[0].cols()) = zs[h];
  }
  if (!(c.multihead == MultiheadForm::kSplit)) return z;
  Matrix out = proj(z, w.w_o);
  if (c.init == WeightInit::kLinear) {
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
      for (Eigen::Index j = 0; j < out.cols(); ++j) out(i, j) = out(i, j) + w.b_o(0, j);
    }
  }
  return out;
}

std::int64_t transposed_batch(const TraceConfig& c, std::size_t items) {
  return c.init == WeightInit::kRandTransposed ? static_cast<std::int64_t>(items) : 1;
}

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }

// A loss in a note: fmt's shortest float, with nan and the infinities as tensors print them
// ("nan", not fmt's "-nan" for the sign bit that x86's nan has); `sign`: + before a positive one.
std::string loss_text(float v, bool sign = false) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? (sign ? "+inf" : "inf") : "-inf";
  return sign ? fmt::format("{:+}", v) : fmt::format("{}", v);
}

// One gradient of every head, each the items' rows one after another.
Matrix all_items(const std::vector<ItemGrads>& items, std::vector<Matrix> ItemGrads::*member,
                 std::size_t head) {
  std::vector<Matrix> parts;
  for (const ItemGrads& ig : items) parts.push_back((ig.*member)[head]);
  return stacked(parts);
}

// dL/dW_q, dL/dW_k, dL/dW_v per head (wrapper) or once (split), in each weight's layout:
// Xᵀ dL/dQ for rand's (d_in, d_out), (dL/dQ)ᵀ X for (d_out, d_in).
std::vector<HeadWeights> weight_grads(Recorder& rec, const Matrix& x, const Matrix& x_kv,
                                      const std::vector<ItemGrads>& items) {
  const TraceConfig& c = rec.config();
  const bool rand = c.init == WeightInit::kRand, split = split_form(c);
  const bool grouped = split && c.kv_heads != c.heads;
  const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
  const std::string kk = grouped ? "d_kv" : kq, vv = grouped ? "d_kv" : dv;
  const std::string x2 = c.cross ? "X₂" : "X";
  std::string note;
  if (items.size() > 1) note = fmt::format("summed over the {} sentences' tokens", items.size());
  if (split) note = "dL/dQ, dL/dK, dL/dV: the heads' gradients side by side";
  auto one = [&](StepKind kind, const char* w, const char* d, const std::string& in_name,
                 const Matrix& in, const Matrix& grad, const std::string& out_dim,
                 std::optional<int> head) -> const Matrix& {
    const std::string equation = rand ? fmt::format("dL/d{} = {}ᵀ dL/d{}", w, in_name, d)
                                      : fmt::format("dL/d{} = (dL/d{})ᵀ {}", w, d, in_name);
    const Matrix g = rand ? transposed_product(in, grad, c.threads, c.matmul)
                          : items_transposed_product(grad, in, transposed_batch(c, items.size()),
                                                     c.threads, c.matmul);
    const Matrix& recorded = rec.add(kind, equation, weight_dims(c.init, "d_in", out_dim), g,
                                     std::nullopt, head, {.note = note});
    if (rand) {
      rec.mark_product(in.cols(), grad.cols(), in.rows());
    } else {
      rec.mark_product(grad.cols(), in.cols(), grad.rows());
    }
    return recorded;
  };
  std::vector<HeadWeights> grads;
  for (std::size_t h = 0; h < items[0].dq.size(); ++h) {
    const auto head = index_if(items[0].dq.size() > 1, static_cast<std::int64_t>(h));
    HeadWeights g;
    g.w_q = one(StepKind::kGradWQuery, "W_q", "Q", "X", x, all_items(items, &ItemGrads::dq, h), kq,
                head);
    g.w_k = one(StepKind::kGradWKey, "W_k", "K", x2, x_kv, all_items(items, &ItemGrads::dk, h), kk,
                head);
    g.w_v = one(StepKind::kGradWValue, "W_v", "V", x2, x_kv, all_items(items, &ItemGrads::dv, h),
                vv, head);
    grads.push_back(std::move(g));
  }
  return grads;
}

// One path back to X: dL/dP Wᵀ for rand's (d_in, d_out), dL/dP W otherwise.
Matrix path_back(const TraceConfig& c, const Matrix& d, const Matrix& w) {
  return c.init == WeightInit::kRand ? matmul_transposed(d, w, c.threads, c.matmul)
                                     : matmul(d, w, c.threads, c.matmul);
}

// X's gradient (and X₂'s) per item: the paths back through the projections, added as autograd
// adds them: the last head first, and in each head V's path, then K's, then Q's.
std::vector<Matrix> input_grads(Recorder& rec, const Trace& trace, const Weights& w,
                                const std::vector<ItemGrads>& items) {
  const TraceConfig& c = rec.config();
  const bool rand = c.init == WeightInit::kRand;
  const char* t = rand ? "ᵀ" : "";
  const std::size_t heads = items[0].dq.size();
  const std::string sum = heads > 1 ? "Σ_h " : "";
  std::vector<Matrix> dxs;
  std::optional<Matrix> dx2;
  // Each path's product, (T, d_out) @ (d_out, d_in), for --timings and the steps' notes.
  std::vector<Recorder::ProductShape> dx2_products;
  for (std::size_t b = 0; b < items.size(); ++b) {
    std::optional<Matrix> dx;
    std::vector<Recorder::ProductShape> dx_products;
    auto add = [&c](std::optional<Matrix>& acc, std::vector<Recorder::ProductShape>& products,
                    const Matrix& d, const Matrix& weight) {
      Matrix m = path_back(c, d, weight);
      products.push_back({d.rows(), m.cols(), d.cols()});
      if (acc) {
        *acc = *acc + m;
      } else {
        acc = std::move(m);
      }
    };
    for (std::size_t h = heads; h-- > 0;) {
      const HeadWeights& hw = w.heads[h];
      std::optional<Matrix>& kv = c.cross ? dx2 : dx;
      std::vector<Recorder::ProductShape>& kv_products = c.cross ? dx2_products : dx_products;
      add(kv, kv_products, items[b].dv[h], hw.w_v);
      add(kv, kv_products, items[b].dk[h], hw.w_k);
      add(dx, dx_products, items[b].dq[h], hw.w_q);
    }
    const std::string equation =
        c.cross ? fmt::format("dL/dX = {}dL/dQ W_q{}", sum, t)
                : fmt::format("dL/dX = {0}(dL/dQ W_q{1} + dL/dK W_k{1} + dL/dV W_v{1})", sum, t);
    dxs.push_back(rec.add(StepKind::kGradEmbeddings, equation, {"T", "d_in"}, *dx,
                          static_cast<int>(b), std::nullopt, {.rows = trace.inputs[b].words}));
    rec.mark_products(dx_products);
  }
  if (c.cross) {
    dxs.push_back(rec.add(StepKind::kGradEmbeddings2,
                          fmt::format("dL/dX₂ = {0}(dL/dK W_k{1} + dL/dV W_v{1})", sum, t),
                          {"T₂", "d_in"}, *dx2, std::nullopt, std::nullopt,
                          {.rows = trace.cross->words}));
    rec.mark_products(dx2_products);
  }
  return dxs;
}

// nn.Embedding's backward: each token id's row is the sum of its positions' rows of dL/dX, added
// in the order of the positions (index_add_ from zeros); padding_idx's row stays 0.
void table_grad(Recorder& rec, const Trace& trace, const std::vector<Matrix>& dxs) {
  const TraceConfig& c = rec.config();
  std::vector<const TokenizedSentence*> sentences;
  for (const TokenizedSentence& s : trace.inputs) sentences.push_back(&s);
  if (trace.cross) sentences.push_back(&*trace.cross);
  std::map<std::int64_t, std::string> words;
  for (const TokenizedSentence* s : sentences) {
    for (std::size_t t = 0; t < s->ids.size(); ++t) words.emplace(s->ids[t], s->words[t]);
  }
  std::map<std::int64_t, Eigen::Index> row_of;
  std::vector<std::string> labels;
  for (const auto& [id, word] : words) {
    row_of.emplace(id, static_cast<Eigen::Index>(labels.size()));
    labels.push_back(word);
  }
  Matrix g = Matrix::Zero(static_cast<Eigen::Index>(labels.size()), c.d_in);
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    for (std::size_t t = 0; t < sentences[s]->ids.size(); ++t) {
      const std::int64_t id = sentences[s]->ids[t];
      if (trace.pad_id && id == *trace.pad_id) continue;
      g.row(row_of.at(id)) += dxs[s].row(static_cast<Eigen::Index>(t));
    }
  }
  std::string ids;
  for (const auto& [id, word] : words) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  rec.add(StepKind::kGradEmbeddingTable, "dL/dE[id] = Σ_{t: ids_t = id} dL/dX_t", {"ids", "d_in"},
          g, std::nullopt, std::nullopt,
          {.rows = labels,
           .note = fmt::format(
               "the rows of ids {} of the {} x {} table; every other row's gradient is 0{}", ids,
               c.vocab_size, c.d_in,
               trace.pad_id ? fmt::format(", and so is the row of '{}' (padding_idx)", kPadToken)
                            : "")});
}

// W − η dL/dW for every weight, and the loss of the forward pass with them.
void sgd(Recorder& rec, const Trace& trace, const Inputs& inputs, const Weights& w,
         const std::vector<HeadWeights>& grads, const std::vector<ItemGrads>& items) {
  const TraceConfig& c = rec.config();
  const double lr = *c.learning_rate;
  const bool split = split_form(c);
  const bool grouped = split && c.kv_heads != c.heads;
  const std::string kq = split ? "d_out" : "d_kq", dv = split ? "d_out" : "d_v";
  const std::string kk = grouped ? "d_kv" : kq, vv = grouped ? "d_kv" : dv;
  auto step = [&](StepKind kind, const char* name, std::vector<std::string> dims, const Matrix& v,
                  const Matrix& g, std::optional<int> head) -> const Matrix& {
    const Matrix& stepped = rec.add(kind, fmt::format("{0} − {1} dL/d{0}", name, lr),
                                    std::move(dims), sgd_step(v, g, lr), std::nullopt, head);
    // A nan gradient (of a padded batch's nan rows) steps to nan, as in PyTorch; a value that is
    // not finite from a finite weight and gradient overflowed.
    bool overflowed = false;
    for (Eigen::Index i = 0; i < stepped.size() && !overflowed; ++i) {
      overflowed = !std::isfinite(stepped.data()[i]) && std::isfinite(v.data()[i]) &&
                   std::isfinite(g.data()[i]);
    }
    if (overflowed) {
      throw Error(
          fmt::format("{} − {} dL/d{} overflows float32: --lr {} is too large a step for "
                      "these gradients; give a smaller one",
                      name, lr, name, lr));
    }
    return stepped;
  };
  Weights stepped;
  stepped.rope = w.rope;  // the rotation's tables are buffers, not weights
  for (std::size_t h = 0; h < w.heads.size(); ++h) {
    const auto head = index_if(w.heads.size() > 1, static_cast<std::int64_t>(h));
    HeadWeights s;
    s.w_q = step(StepKind::kStepWQuery, "W_q", weight_dims(c.init, "d_in", kq), w.heads[h].w_q,
                 grads[h].w_q, head);
    s.w_k = step(StepKind::kStepWKey, "W_k", weight_dims(c.init, "d_in", kk), w.heads[h].w_k,
                 grads[h].w_k, head);
    s.w_v = step(StepKind::kStepWValue, "W_v", weight_dims(c.init, "d_in", vv), w.heads[h].w_v,
                 grads[h].w_v, head);
    stepped.heads.push_back(std::move(s));
  }
  if (split) {
    stepped.w_o = step(StepKind::kStepWOut, "W_o", {"d_out", "d_out"}, w.w_o,
                       trace.step(StepKind::kGradWOut).values, std::nullopt);
    if (c.init == WeightInit::kLinear) {
      stepped.b_o = step(StepKind::kStepBOut, "b_o", {"d_out"}, w.b_o,
                         trace.step(StepKind::kGradBOut).values, std::nullopt);
    }
  }
  std::vector<Matrix> outs;
  std::vector<Recorder::ProductShape> products;
  for (std::size_t b = 0; b < items.size(); ++b) {
    outs.push_back(forward_output(c, *inputs.x[b], inputs.x_cross ? *inputs.x_cross : *inputs.x[b],
                                  items[b].mask, stepped, products));
  }
  Matrix l(1, 1);
  l(0, 0) = lesson_loss(c, stacked(outs), c.target ? c.target->values : Matrix(),
                        static_cast<std::int64_t>(outs.size()));
  const float before = trace.step(StepKind::kLoss).values(0, 0);
  if (!std::isfinite(l(0, 0)) && std::isfinite(before)) {
    throw Error(
        fmt::format("the loss after the step overflows float32 ({}): --lr {} is too large "
                    "a step for these numbers; give a smaller one",
                    std::isnan(l(0, 0)) ? "nan" : "inf", lr));
  }
  rec.add(StepKind::kLossAfterStep, "L with W − η dL/dW", {"1"}, l, std::nullopt, std::nullopt,
          {.cols = {"L"},
           .note = fmt::format("η = {}: the loss went from {} to {} ({})", lr, loss_text(before),
                               loss_text(l(0, 0)), loss_text(l(0, 0) - before, true))});
  rec.mark_products(products);  // the forward pass again
}

}  // namespace

void record_input_grads(Recorder& rec, const Trace& trace, const Inputs& inputs, const Weights& w,
                        const std::vector<ItemGrads>& items) {
  const TraceConfig& c = rec.config();
  std::vector<Matrix> xs, kvs;
  for (std::size_t b = 0; b < items.size(); ++b) {
    xs.push_back(*inputs.x[b]);
    kvs.push_back(inputs.x_cross ? *inputs.x_cross : *inputs.x[b]);
  }
  const std::vector<HeadWeights> grads = weight_grads(rec, stacked(xs), stacked(kvs), items);
  const std::vector<Matrix> dxs = input_grads(rec, trace, w, items);
  if (!c.x) table_grad(rec, trace, dxs);
  if (c.learning_rate) sgd(rec, trace, inputs, w, grads, items);
}

}  // namespace attn::lesson
