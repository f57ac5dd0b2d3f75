#include "attn/explain_grad.hpp"

#include <cmath>
#include <limits>

#include "attn/backward.hpp"
#include "attn/grouping.hpp"

namespace attn {

GradCellWorking work_out_grad_cell(const Trace& trace, std::optional<int> head,
                                   std::optional<int> batch, Eigen::Index qi, Eigen::Index kj) {
  const TraceConfig& c = trace.config;
  const bool split = c.multihead == MultiheadForm::kSplit;
  const Matrix& dz = trace.step(StepKind::kGradContext, head, batch).values;
  const Eigen::Index hd = dz.cols();
  const Matrix& values = trace.step(StepKind::kValues, split ? std::nullopt : head, batch).values;
  // A shared K/V head's values, for grouped-query heads.
  const Eigen::Index g = split ? kv_head_of(head.value_or(0), c.heads, c.kv_heads) : 0;
  const Matrix v = split ? Matrix(values.middleCols(g * hd, hd)) : values;
  GradCellWorking w;
  w.i = qi;
  w.j = kj;
  w.dz = dz.row(qi);
  w.v = v.row(kj);
  w.products = w.dz.cwiseProduct(w.v);
  for (Eigen::Index t = 0; t < hd; ++t) w.da = w.da + w.products(0, t);
  // The softmax's output (nan in a row whose every key is masked) and dL/dA as its backward
  // reads them.
  w.a_row = trace.step(StepKind::kAttentionWeights, head, batch).values.row(qi);
  w.da_row = trace.step(StepKind::kGradAttentionWeights, head, batch).values.row(qi);
  const Matrix& omega_grad = trace.step(StepKind::kGradOmega, head, batch).values;
  w.row_dot = trace.step(StepKind::kGradRowDot, head, batch).values(qi, 0);
  if (std::isnan(w.row_dot)) {
    w.a_row.setConstant(std::numeric_limits<float>::quiet_NaN());
    if (c.masked_rows == MaskedRows::kZero) w.da_row.setZero();
  }
  w.terms = w.da_row.cwiseProduct(w.a_row);
  w.a = w.a_row(0, kj);
  w.ds = (w.da_row(0, kj) - w.row_dot) * w.a;
  w.root = static_cast<float>(std::sqrt(static_cast<double>(split ? c.d_kq / c.heads : c.d_kq)));
  const StepKind mask_kind = StepKind::kMask;
  for (const Step& s : trace.steps) {
    if (s.kind == mask_kind && s.head == head && s.batch == batch) w.masked = s.values(qi, kj) != 0;
  }
  w.domega = w.masked ? 0.0f : w.ds / w.root;
  w.trace_domega = omega_grad(qi, kj);
  return w;
}

}  // namespace attn
