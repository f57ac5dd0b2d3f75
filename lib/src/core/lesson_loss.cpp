// The loss of a backward pass, recorded: the final output of every item, the target it is
// checked against, L, and its gradient at each item's output.

#include <fmt/format.h>

#include <cmath>

#include "attn/backward.hpp"
#include "attn/error.hpp"
#include "attn/statistics.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

bool split_form(const TraceConfig& c) { return c.multihead == MultiheadForm::kSplit; }

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

void check_target(const Trace& trace, Eigen::Index cols) {
  const TraceConfig& c = trace.config;
  if (!c.target) return;
  const Matrix& target = c.target->values;
  const auto batch = static_cast<Eigen::Index>(trace.inputs.size());
  Eigen::Index rows = 0;
  for (const TokenizedSentence& s : trace.inputs) rows += static_cast<Eigen::Index>(s.words.size());
  if (target.rows() != rows || target.cols() != cols) {
    throw Error(fmt::format(
        "the target in {} has shape {}, but the output is [{}, {}]{}: give one value per "
        "output value",
        c.target->source, c.target->shape(), rows, cols,
        batch > 1 ? fmt::format(" (the {} sentences' rows one after another)", batch) : ""));
  }
  // Its row labels, when it has them, are the output's tokens in order (an exported output's
  // are). A given X without labels numbers its rows: there is nothing to check them against.
  const std::vector<std::string>& labels = c.target->row_labels;
  if (labels.empty() || (c.x && c.x->row_labels.empty())) return;
  std::size_t r = 0;
  for (const TokenizedSentence& s : trace.inputs) {
    for (std::size_t i = 0; i < s.words.size(); ++i, ++r) {
      if (s.named(i, labels[r])) continue;
      throw Error(fmt::format(
          "the target in {} labels row {} '{}', but the output's row {} is the token '{}': its "
          "rows follow the output's tokens{}; put them in that order, or give the target without "
          "labels",
          c.target->source, r + 1, labels[r], r + 1, s.words[i],
          batch > 1 ? " (the sentences' rows one after another)" : ""));
    }
  }
}

float lesson_loss(const TraceConfig& c, const Matrix& outs, const Matrix& target,
                  std::int64_t items) {
  const bool transposed = split_form(c) && !c.model && c.init == WeightInit::kRandTransposed;
  return loss_value(outs, c.loss, target, transposed ? items : 0);
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

}  // namespace

std::vector<Matrix> record_loss(Recorder& rec, const Trace& trace, std::int64_t batch) {
  const TraceConfig& c = rec.config();
  std::vector<Matrix> outs;
  for (std::int64_t b = 0; b < batch; ++b)
    outs.push_back(final_output(trace, index_if(batch > 1, b)));
  const Matrix out = stacked(outs);
  Matrix target;
  if (c.loss == Loss::kMse) {
    check_target(trace, out.cols());
    target = c.target->values;
  }
  const std::string y = split_form(c) ? "out" : "Z";
  const std::string equation = c.loss == Loss::kSum ? fmt::format("L = {}.sum()", y)
                                                    : fmt::format("L = (({} − target)²).mean()", y);
  Matrix l(1, 1);
  l(0, 0) = lesson_loss(c, out, target, batch);
  // An output with nan rows (a padded batch's, --masked-rows nan) has a nan loss, as PyTorch's;
  // a loss that is not finite from finite outputs overflowed.
  if (!std::isfinite(l(0, 0)) && all_finite(out.data(), static_cast<std::size_t>(out.size()))) {
    throw Error(
        fmt::format("the loss L overflows float32 ({}): the {} numbers are too large; "
                    "scale them down",
                    std::isnan(l(0, 0)) ? "nan" : "inf",
                    c.loss == Loss::kMse ? "output's and the target's" : "output's"));
  }
  rec.add(StepKind::kLoss, equation, {"1"}, l, std::nullopt, std::nullopt,
          {.cols = {"L"}, .note = loss_note(c, l(0, 0))});
  const Matrix grad = loss_gradient(out, c.loss, target);
  std::vector<Matrix> grads;
  for (std::int64_t b = 0; b < batch; ++b) {
    grads.push_back(grad.middleRows(b * outs[0].rows(), outs[0].rows()));
  }
  return grads;
}

}  // namespace attn::lesson
