// The backward pass, recorded: the loss, then its gradient step by step back through the output
// projection, each head's attention, the projections and the embedding; then one step of
// gradient descent. Each gradient is computed as torch.autograd computes it (backward.hpp).

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <map>

#include "attn/backward.hpp"
#include "attn/error.hpp"
#include "attn/weights.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }
std::string t_k(const TraceConfig& c) { return c.cross ? "T₂" : "T"; }

// The attention's final output of one item: Z, the heads' Z side by side, or the projection.
}  // namespace

std::optional<int> index_if(bool several, std::int64_t i) {
  return several ? std::optional<int>(static_cast<int>(i)) : std::nullopt;
}

Matrix stacked(const std::vector<Matrix>& parts) {
  Eigen::Index rows = 0;
  for (const Matrix& m : parts) rows += m.rows();
  Matrix out(rows, parts.at(0).cols());
  Eigen::Index at = 0;
  for (const Matrix& m : parts) {
    out.middleRows(at, m.rows()) = m;
    at += m.rows();
  }
  return out;
}

const Matrix& final_output(const Trace& trace, std::optional<int> batch) {
  const TraceConfig& c = trace.config;
  if (split_form(c)) return trace.step(StepKind::kOutput, std::nullopt, batch).values;
  if (c.heads > 1) return trace.step(StepKind::kContextConcat, std::nullopt, batch).values;
  return trace.step(StepKind::kContextVectors, std::nullopt, batch).values;
}

namespace {

// What the loss step says: the mse loss's target; why a loss is nan.
std::string loss_note(const TraceConfig& c, float loss) {
  std::string note;
  if (c.loss == Loss::kMse) note = fmt::format("the target is {}", c.target->source);
  if (std::isnan(loss)) {
    note += fmt::format(
        "{}nan: a row whose every key is masked has nan weights (torch.softmax's), and every "
        "gradient that reads them is nan too; the masked-rows rule zero gives 0 there",
        note.empty() ? "" : "; ");
  }
  return note;
}

// The loss of every item's output, and its gradient at each item's output.
std::vector<Matrix> record_loss(Recorder& rec, const Trace& trace, std::int64_t batch) {
  const TraceConfig& c = rec.config();
  std::vector<Matrix> outs;
  for (std::int64_t b = 0; b < batch; ++b)
    outs.push_back(final_output(trace, index_if(batch > 1, b)));
  const Matrix out = stacked(outs);
  Matrix target;
  if (c.loss == Loss::kMse) {
    target = c.target->values;
    if (target.rows() != out.rows() || target.cols() != out.cols()) {
      throw Error(fmt::format(
          "the target in {} has shape [{}, {}], but the output is [{}, {}]{}: give one value per "
          "output value",
          c.target->source, target.rows(), target.cols(), out.rows(), out.cols(),
          batch > 1 ? fmt::format(" (the {} sentences' rows one after another)", batch) : ""));
    }
  }
  const std::string y = split_form(c) ? "out" : "Z";
  const std::string equation = c.loss == Loss::kSum ? fmt::format("L = {}.sum()", y)
                                                    : fmt::format("L = (({} − target)²).mean()", y);
  Matrix l(1, 1);
  l(0, 0) = loss_value(out, c.loss, target);
  rec.add(StepKind::kLoss, equation, {"1"}, l, std::nullopt, std::nullopt,
          {.cols = {"L"}, .note = loss_note(c, l(0, 0))});
  const Matrix grad = loss_gradient(out, c.loss, target);
  std::vector<Matrix> grads;
  for (std::int64_t b = 0; b < batch; ++b) {
    grads.push_back(grad.middleRows(b * outs[0].rows(), outs[0].rows()));
  }
  return grads;
}

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
    zs.push_back(trace.step(StepKind::kContextConcat, std::nullopt, item).values);
  }
  if (c.heads == 1) {
    for (std::int64_t b = 0; b < batch; ++b) {
      zs[static_cast<std::size_t>(b)] =
          trace.step(StepKind::kContextVectors, std::nullopt, index_if(batch > 1, b)).values;
    }
  }
  const Matrix z = stacked(zs), g = stacked(d_out);
  const bool rand = c.init == WeightInit::kRand;
  rec.add(StepKind::kGradWOut, rand ? "dL/dW_o = Zᵀ dL/d out" : "dL/dW_o = (dL/d out)ᵀ Z",
          {"d_out", "d_out"},
          rand ? transposed_product(z, g, c.threads, c.matmul)
               : transposed_product(g, z, c.threads, c.matmul),
          std::nullopt, std::nullopt);
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

// One head's attention, backwards, from dL/dZ to dL/dQ, dL/dK and dL/dV.
struct HeadGrads {
  Matrix dq, dk, dv;
};
HeadGrads attend_backward(Recorder& rec, const Trace& trace, const Mask& mask, const Matrix& dz,
                          std::int64_t b, std::int64_t h) {
  const TraceConfig& c = rec.config();
  const bool split = split_form(c);
  const auto batch = index_if(trace.inputs.size() > 1, b);
  const auto head = index_if(c.heads > 1, h);
  const auto [q, k] = trace.head_queries_keys(head, batch);
  const Eigen::Index hd = split ? c.d_v / c.heads : c.d_v;
  const Matrix v =
      split
          ? Matrix(trace.step(StepKind::kValues, std::nullopt, batch).values.middleCols(h * hd, hd))
          : trace.step(StepKind::kValues, head, batch).values;
  const Matrix& a = trace.step(StepKind::kAttentionWeights, head, batch).values;
  const std::vector<std::string>& rows = trace.inputs[static_cast<std::size_t>(b)].words;
  const std::vector<std::string>& cols = trace.key_sentence(static_cast<int>(b)).words;
  const Labels square{.rows = rows, .cols = cols};
  const auto item = static_cast<int>(b), hh = static_cast<int>(h);
  const std::string sub = split ? "ₕ" : "", d_name = split ? "d_head" : "d_v";
  rec.add(StepKind::kGradContext, fmt::format("dL/dZ{}", sub), {"T", d_name}, dz, item, hh,
          {.rows = rows});
  Matrix da = matmul_transposed(dz, v, c.threads, c.matmul);
  rec.add(StepKind::kGradAttentionWeights, fmt::format("dL/dA = dL/dZ{0} V{0}ᵀ", sub),
          {"T", t_k(c)}, da, item, hh, square);
  HeadGrads g;
  g.dv =
      rec.add(StepKind::kGradValues, fmt::format("dL/dV{0} = Aᵀ dL/dZ{0}", sub), {t_k(c), d_name},
              transposed_product(a, dz, c.threads, c.matmul), item, hh, {.rows = cols});
  // torch.softmax's output is nan in a row whose every key is masked; the masked-rows rule zero
  // replaces that row by 0 afterwards (torch.where), whose backward gives the softmax a zero row.
  Matrix soft = a;
  bool any_full = false;
  for (Eigen::Index i = 0; mask.masked && i < a.rows(); ++i) {
    if (a.cols() > 0 && mask.values.row(i).minCoeff() == 1.0f) {
      soft.row(i).setConstant(
          std::bit_cast<float>(0xffc00000u));  // x86's nan, as the softmax makes it
      if (c.masked_rows == MaskedRows::kZero) da.row(i).setZero();
      any_full = true;
    }
  }
  Matrix row_dot;
  Matrix ds = softmax_backward(soft, da, c.kernel, row_dot);
  const std::string full_note =
      any_full ? "a row whose every key is masked is nan: torch.softmax's output there is nan"
               : std::string();
  rec.add(StepKind::kGradRowDot, "r_i = Σ_j dA_ij A_ij", {"T", "1"}, row_dot, item, hh,
          {.rows = rows, .cols = {"r"}, .note = full_note});
  rec.add(StepKind::kGradScaledScores, "dL/dS = A ⊙ (dA − r)", {"T", t_k(c)}, ds, item, hh,
          {.rows = rows, .cols = cols, .note = full_note});
  const std::int64_t d_k = split ? c.d_kq / c.heads : c.d_kq;
  const Matrix& dw = rec.add(
      StepKind::kGradOmega,
      mask.masked ? fmt::format("dL/dω = (dL/dS / √{}).masked_fill(M, 0)", d_k)
                  : fmt::format("dL/dω = dL/dS / √{}", d_k),
      {"T", t_k(c)}, scores_backward(ds, d_k, mask.masked ? mask.values : Matrix()), item, hh,
      {.rows = rows,
       .cols = cols,
       .note = mask.masked ? "masked scores were replaced by −inf: their gradient is 0" : ""});
  g.dq = matmul(dw, k, c.threads, c.matmul);
  rec.add(StepKind::kGradQueries, fmt::format("dL/dQ{0} = dL/dω K{0}", sub),
          {"T", split ? "d_head" : "d_kq"}, g.dq, item, hh, {.rows = rows});
  g.dk = transposed_product(dw, q, c.threads, c.matmul);
  rec.add(StepKind::kGradKeys, fmt::format("dL/dK{0} = dL/dωᵀ Q{0}", sub),
          {t_k(c), split ? "d_head" : "d_kq"}, g.dk, item, hh, {.rows = cols});
  return g;
}

// Every head of every item, backwards: dQ, dK, dV per item (per head, or side by side).
std::vector<ItemGrads> heads_backward(Recorder& rec, Trace& trace, const std::vector<Matrix>& dz) {
  const TraceConfig& c = rec.config();
  std::vector<ItemGrads> items;
  for (std::size_t b = 0; b < dz.size(); ++b) {
    ItemGrads ig;
    ig.mask = make_mask(trace, trace.inputs[b], trace.key_sentence(static_cast<int>(b)));
    if (c.heads > 1) {
      rec.add(StepKind::kGradContextConcat, "dL/dZ", {"T", split_form(c) ? "d_out" : "H·d_v"},
              dz[b], static_cast<int>(b), std::nullopt, {.rows = trace.inputs[b].words});
    }
    const Eigen::Index hd = dz[b].cols() / c.heads;
    std::vector<HeadGrads> hs;
    for (std::int64_t h = 0; h < c.heads; ++h) {
      hs.push_back(attend_backward(rec, trace, ig.mask, dz[b].middleCols(h * hd, hd),
                                   static_cast<std::int64_t>(b), h));
    }
    if (!split_form(c)) {
      for (HeadGrads& g : hs) {
        ig.dq.push_back(std::move(g.dq));
        ig.dk.push_back(std::move(g.dk));
        ig.dv.push_back(std::move(g.dv));
      }
    } else {
      // The heads' columns side by side: view and transpose's backward move values only.
      auto side_by_side = [&](auto member) {
        Matrix m((hs[0].*member).rows(), c.d_kq);
        for (std::size_t h = 0; h < hs.size(); ++h) {
          m.middleCols(static_cast<Eigen::Index>(h) * (hs[0].*member).cols(),
                       (hs[0].*member).cols()) = hs[h].*member;
        }
        return m;
      };
      ig.dq.push_back(side_by_side(&HeadGrads::dq));
      ig.dk.push_back(side_by_side(&HeadGrads::dk));
      ig.dv.push_back(side_by_side(&HeadGrads::dv));
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
  std::vector<ItemGrads> items = heads_backward(rec, trace, dz);
  record_input_grads(rec, trace, inputs, w, items);
}

}  // namespace attn::lesson
