// The Recorder, which every lesson step records through, and the checks the steps share.

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <stdexcept>

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

// The note of a step that is a matrix product, (m, k) @ (k, n): empty for the reference order;
// for the blocked kernel, what it changes.
std::string product_note(MatmulKernel kernel, Eigen::Index m, Eigen::Index n, Eigen::Index k) {
  if (matmul_kernel_for(kernel, m, n, k) != MatmulKernel::kBlocked) return {};
  return fmt::format(
      "computed by the blocked kernel ({} x {} by {} x {}{}): float32 sums in another order "
      "than PyTorch's, so the last digits can differ (the reference kernel keeps its order)",
      m, k, k, n, kernel == MatmulKernel::kAuto ? ", a large product" : "");
}

}  // namespace

Recorder::Recorder(Trace& trace)
    : trace_(trace),
      batch_size_(trace.config.x ? 1 : static_cast<std::int64_t>(trace.config.sentences.size())) {}

const Matrix& Recorder::add(StepKind kind, std::string equation, std::vector<std::string> dims,
                            Matrix values, std::optional<int> batch, std::optional<int> head,
                            Labels labels) {
  const StepInfo& info = step_info(kind);
  if (recorded_ >= plan_.size() || plan_[recorded_].kind != kind ||
      plan_[recorded_].rows != values.rows() || plan_[recorded_].cols != values.cols()) {
    throw std::logic_error(
        fmt::format("step {} ({}, {} x {}) is not the one planned: the plan and the trace disagree",
                    recorded_ + 1, info.id, values.rows(), values.cols()));
  }
  ++recorded_;
  Step s;
  s.kind = kind;
  s.id = std::string(info.id);
  s.title = labels.title.empty() ? std::string(info.title) : std::move(labels.title);
  s.equation = std::move(equation);
  if (batch_size_ > 1 && batch) {
    s.batch = batch;
    s.shape_names.push_back("B");
    s.shape.push_back(batch_size_);
  }
  if (trace_.config.heads > 1 && head) {
    s.head = head;
    if (trace_.config.multihead == MultiheadForm::kSplit) {
      s.shape_names.push_back("H");
      s.shape.push_back(trace_.config.heads);
    }
  }
  s.shape_names.insert(s.shape_names.end(), dims.begin(), dims.end());
  s.shape.push_back(values.rows());
  s.shape.push_back(values.cols());
  if (dims.size() == 1) s.shape.erase(s.shape.end() - 2);  // a vector, stored as one row
  s.columns_are_keys = !labels.cols.empty() &&
                       labels.cols.size() == static_cast<std::size_t>(values.cols()) &&
                       dims.size() == 2 && dims[1].starts_with("T");
  s.row_labels = std::move(labels.rows);
  s.col_labels = std::move(labels.cols);
  s.note = std::move(labels.note);
  s.values = std::move(values);
  const auto now = std::chrono::steady_clock::now();
  s.seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  trace_.steps.push_back(std::move(s));
  if (trace_.config.on_record) trace_.config.on_record(trace_.steps.back());
  return trace_.steps.back().values;
}

void Recorder::mark_product(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
  Step& s = trace_.steps.back();
  s.multiply_adds = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // The product's note, after any note the step has (the keys' K/V sharing).
  const std::string product = product_note(trace_.config.matmul, m, n, k);
  if (!product.empty()) s.note = s.note.empty() ? product : s.note + "; " + product;
}

Matrix Recorder::hand_on(bool take_last) {
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

}  // namespace attn::lesson
