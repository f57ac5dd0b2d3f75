// The Recorder, which every lesson step records through, and the checks the steps share.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/statistics.hpp"
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

// A product's note, after any note the step has (the keys' K/V sharing).
std::string with_product(const std::string& note, const std::string& product) {
  return product.empty() ? note : note.empty() ? product : note + "; " + product;
}

}  // namespace

Recorder::Recorder(Trace& trace)
    : trace_(trace),
      batch_size_(trace.config.x ? 1 : static_cast<std::int64_t>(trace.config.sentences.size())) {}

const Matrix& Recorder::add(StepKind kind, std::string equation, std::vector<std::string> dims,
                            Matrix values, std::optional<int> batch, std::optional<int> head,
                            Labels labels) {
  const StepInfo& info = step_info(kind);
  known_finite_ = nullptr;
  if (block_ && block_->first > 0) {
    // A later block: the step its first block created.
    if (block_->next >= block_->steps.size() ||
        trace_.steps[block_->steps[block_->next]].kind != kind) {
      throw std::logic_error(
          fmt::format("step {} of a block of rows is not its first block's", info.id));
    }
    return add_rows(trace_.steps[block_->steps[block_->next]], std::move(values), labels);
  }
  const Eigen::Index rows = block_ ? block_->total : values.rows();
  if (recorded_ >= plan_.size() || plan_[recorded_].kind != kind || plan_[recorded_].rows != rows ||
      plan_[recorded_].cols != values.cols()) {
    throw std::logic_error(
        fmt::format("step {} ({}, {} x {}) is not the one planned: the plan and the trace disagree",
                    recorded_ + 1, info.id, rows, values.cols()));
  }
  const double work = planned_work(plan_[recorded_]);
  ++recorded_;
  Step s;
  s.kind = kind;
  s.id = std::string(info.id) + labels.id_suffix;
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
  s.shape.push_back(rows);
  s.shape.push_back(values.cols());
  if (dims.size() == 1) s.shape.erase(s.shape.end() - 2);  // a vector, stored as one row
  s.columns_are_keys = !labels.cols.empty() &&
                       labels.cols.size() == static_cast<std::size_t>(values.cols()) &&
                       dims.size() == 2 && dims[1].starts_with("T");
  s.col_labels = std::move(labels.cols);
  if (block_) {
    trace_.steps.push_back(std::move(s));
    RecorderBlock& b = *block_;
    b.steps.push_back(trace_.steps.size() - 1);
    b.digesters.emplace_back(kind == StepKind::kAttentionWeights
                                 ? std::optional<std::int64_t>(kSummaryQueries)
                                 : std::nullopt);
    b.notes.push_back(std::move(labels.note));
    b.largest.emplace_back();
    b.flagged_rows.emplace_back();
    b.note_of.push_back(std::move(labels.note_of));
    b.work.push_back(work);
    return add_rows(trace_.steps.back(), std::move(values), labels);
  }
  s.row_labels = std::move(labels.rows);
  s.note = labels.note_of   ? labels.note_of(labels.largest.value_or(0.0f), labels.flagged_rows)
           : labels.largest ? fmt::format(fmt::runtime(labels.note), *labels.largest)
                            : std::move(labels.note);
  share_labels(s);
  s.rows_done = rows;
  s.values = std::move(values);
  const auto now = std::chrono::steady_clock::now();
  s.seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  trace_.steps.push_back(std::move(s));
  work_done_ += work;
  if (trace_.config.on_record) trace_.config.on_record(trace_.steps.back(), done());
  return trace_.steps.back().values;
}

const Matrix& Recorder::add_rows(Step& s, Matrix values, const Labels& labels) {
  RecorderBlock& b = *block_;
  const std::size_t i = b.next++;
  if (values.rows() != b.count) {
    throw std::logic_error(
        fmt::format("step {} has {} rows in a block of {}", s.id, values.rows(), b.count));
  }
  s.row_labels.append(labels.rows);
  if (labels.largest) {
    b.largest[i] = b.largest[i] ? std::max(*b.largest[i], *labels.largest) : *labels.largest;
  }
  for (const Eigen::Index r : labels.flagged_rows) b.flagged_rows[i].push_back(b.first + r);
  s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count();
  bool finite = false;
  if (s.columns_are_keys) {
    finite = b.digesters[i].add(values, trace_.config.threads);
  } else {
    if (b.first == 0) s.values = uninitialized_matrix(b.total, values.cols());
    s.values.middleRows(b.first, b.count) = values;
  }
  s.rows_done = b.first + b.count;
  work_done_ += b.work[i] * static_cast<double>(b.count) / static_cast<double>(b.total);
  if (trace_.config.on_record) trace_.config.on_record(s, done());
  // The digest is the summary's work, as on_step's is: no step's time.
  last_ = std::chrono::steady_clock::now();
  b.values.push_back(std::move(values));
  if (finite) known_finite_ = &b.values.back();
  return b.values.back();
}

void Recorder::share_labels(Step& s) {
  // A few lists: the queries', the keys', and the short ones of the softmax's statistics.
  constexpr std::size_t kRecent = 6;
  for (LabelList* labels : {&s.row_labels, &s.col_labels}) {
    if (labels->empty()) continue;
    const auto same =
        std::find_if(recent_labels_.begin(), recent_labels_.end(),
                     [labels](const LabelList& l) { return labels->share_if_same(l); });
    if (same != recent_labels_.end()) {
      std::rotate(recent_labels_.begin(), same, same + 1);
    } else {
      recent_labels_.insert(recent_labels_.begin(), *labels);
      if (recent_labels_.size() > kRecent) recent_labels_.pop_back();
    }
  }
}

void Recorder::follow(std::vector<PlannedStep> plan) {
  plan_ = std::move(plan);
  stop_ = planned_stop(plan_, trace_.config.shown_steps);
  planned_work_ = 0.0;
  for (std::size_t i = 0; i < stop_; ++i) planned_work_ += planned_work(plan_[i]);
}

void Recorder::stop_if_done() const {
  if (!block_ && stop_ < plan_.size() && recorded_ >= stop_) throw RunDone{};
}

double Recorder::done() const {
  return planned_work_ > 0.0 ? std::min(1.0, work_done_ / planned_work_) : 1.0;
}

void Recorder::begin_rows(Eigen::Index first, Eigen::Index count, Eigen::Index total) {
  if (!block_) {
    if (first != 0) throw std::logic_error("the first block of rows must start at row 0");
    block_.emplace();
  } else if (first != block_->first + block_->count) {
    throw std::logic_error("blocks of rows must follow each other");
  }
  block_->first = first, block_->count = count, block_->total = total;
  block_->next = 0;
  block_->values.clear();
}

void Recorder::end_rows() {
  RecorderBlock& b = *block_;
  if (b.next != b.steps.size()) {
    throw std::logic_error("a block of rows recorded other steps than the first block");
  }
  b.values.clear();
  if (b.first + b.count < b.total) return;
  for (std::size_t i = 0; i < b.steps.size(); ++i) {
    Step& s = trace_.steps[b.steps[i]];
    share_labels(s);
    if (s.columns_are_keys) s.digest = std::make_shared<StepDigest>(b.digesters[i].finish());
    s.note = b.note_of[i]   ? b.note_of[i](b.largest[i].value_or(0.0f), b.flagged_rows[i])
             : b.largest[i] ? fmt::format(fmt::runtime(b.notes[i]), *b.largest[i])
                            : std::move(b.notes[i]);
  }
  block_.reset();
}

void Recorder::mark_products(const std::vector<ProductShape>& products) {
  if (block_) throw std::logic_error("a sum of products is not recorded rows at a time");
  Step& s = trace_.steps.back();
  double work = 0.0, largest = 0.0;
  std::string note;
  for (const ProductShape& p : products) {
    const double w = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    work += w;
    std::string blocked = product_note(trace_.config.matmul, p.m, p.n, p.k);
    if (!blocked.empty() && w > largest) largest = w, note = std::move(blocked);
  }
  s.multiply_adds = work;
  s.note = with_product(s.note, note.empty() ? note : "its products " + note);
}

void Recorder::mark_product(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
  Step& s = block_ ? trace_.steps[block_->steps.at(block_->next - 1)] : trace_.steps.back();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (!block_) {
    s.multiply_adds = work;
    s.note = with_product(s.note, product_note(trace_.config.matmul, m, n, k));
    return;
  }
  s.multiply_adds = block_->first == 0 ? work : s.multiply_adds + work;
  if (block_->first == 0) {
    std::string& note = block_->notes.at(block_->next - 1);
    note = with_product(note, product_note(trace_.config.matmul, block_->total, n, k));
  }
}

Matrix Recorder::hand_on(bool take_last) {
  if (block_) {
    // The block's steps are not complete: nothing is handed on; the last step's block of values
    // may be taken for the next one's.
    Matrix taken;
    if (take_last) taken = std::move(block_->values.back());
    return taken;
  }
  const TraceConfig& c = trace_.config;
  Matrix taken;
  for (; flushed_ < trace_.steps.size(); ++flushed_) {
    Step& s = trace_.steps[flushed_];
    if (c.on_step) c.on_step(s);
    if (take_last && flushed_ + 1 == trace_.steps.size()) {
      taken = std::move(s.values);
      s.values = Matrix();
    } else if ((c.release_scores && s.columns_are_keys) ||
               (c.release_unread && released_unread(s.kind))) {
      s.values = Matrix();
    }
  }
  last_ = std::chrono::steady_clock::now();  // the callbacks' time is no step's
  return taken;
}

void Recorder::release_from(std::size_t first) {
  const TraceConfig& c = trace_.config;
  if (!c.release_scores || !c.stream_scores || !c.release_head_steps || block_) return;
  // Only steps already handed on: the others' values are still to be reduced.
  for (std::size_t i = first; i < flushed_; ++i) trace_.steps[i].values = Matrix();
}

const Matrix& Recorder::require_finite(const Matrix& m, const char* what,
                                       Eigen::Index first_row) const {
  return &m == known_finite_ ? m : lesson::require_finite(m, what, first_row);
}

std::string rows_text(const std::vector<std::string>& rows, std::string_view one_verb,
                      std::string_view many_verb) {
  constexpr std::size_t kNamed = 10;  // a long list names the first ten and counts the rest
  const bool one = rows.size() == 1;
  const std::string_view verb = one ? one_verb : many_verb;
  const std::size_t named = std::min(rows.size(), kNamed);
  const std::string more =
      rows.size() > named ? fmt::format(" and {} more", rows.size() - named) : std::string();
  return fmt::format(
      "{} {}{}{}{}", one ? "row" : "rows",
      fmt::join(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(named), ", "), more,
      verb.empty() ? "" : " ", verb);
}

const Matrix& require_finite(const Matrix& m, const char* what, Eigen::Index first_row) {
  if (all_finite(m.data(), static_cast<std::size_t>(m.size()))) return m;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (!std::isfinite(m(i, j))) {
        throw Error(
            fmt::format("{} overflow float32 at row {}, column {} ({}): the given numbers "
                        "are too large; scale them down",
                        what, first_row + i + 1, j + 1,
                        std::isnan(m(i, j)) ? "nan" : (m(i, j) < 0.0f ? "-inf" : "inf")));
      }
    }
  }
  return m;
}

}  // namespace attn::lesson
