// The memory a run may take, estimated from its plan (plan.cpp) before anything large is
// allocated: every step's values, its record and labels, the blocks of scores, the output.

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

namespace {

// released_unread's kinds of the forward pass (the others are the backward's).
bool released_unread_forward(StepKind kind) {
  switch (kind) {
    case StepKind::kOmega:
    case StepKind::kMaskedOmega:
    case StepKind::kScaledScores:
    case StepKind::kExponentials:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool released_unread(StepKind kind) {
  switch (kind) {
    case StepKind::kGradAttentionWeights:
    case StepKind::kGradScaledScores:
    case StepKind::kGradOmega:
    case StepKind::kGradZeroedWeights:
    case StepKind::kGradUnmaskedWeights:
    case StepKind::kGradOmegaOtherWay:
      return true;
    default:
      return released_unread_forward(kind);
  }
}

namespace {

// A step's record beyond its values (the Step, its id, title, equation, note and shape, a small
// matrix's allocation), as measured: a batch of 100,000 sentences of two words holds about
// 1.2 KB a step with its output. The steps share each sentence's list of labels (LabelList):
// a token's label is held in about three lists (the sentence's, a step's while it is made, the
// Recorder's recent ones), each a string of 48 bytes and its text, and the text is held about
// eight times in all (the settings' copies of the sentences, the tokens, the dictionary).
constexpr double kStepRecordBytes = 768.0;
constexpr double kLabelRecordBytes = 48.0;
constexpr double kLabelLists = 3.0;
constexpr double kTextCopies = 8.0;

// A step whose rows are the model's dimensions, not tokens: a weight, a bias, their gradients
// and their updates.
bool weight_like(StepKind kind) {
  switch (kind) {
    case StepKind::kWQuery:
    case StepKind::kWKey:
    case StepKind::kWValue:
    case StepKind::kWOut:
    case StepKind::kBOut:
    case StepKind::kBQuery:
    case StepKind::kBKey:
    case StepKind::kBValue:
    case StepKind::kGradWOut:
    case StepKind::kGradBOut:
    case StepKind::kGradWQuery:
    case StepKind::kGradWKey:
    case StepKind::kGradWValue:
    case StepKind::kStepWQuery:
    case StepKind::kStepWKey:
    case StepKind::kStepWValue:
    case StepKind::kStepWOut:
    case StepKind::kStepBOut:
      return true;
    default:
      return false;
  }
}

// A step whose columns are labelled: keys, the softmax's row statistics ("max", "sum", and the
// backward pass's row dot), a decoded token's cache, the online softmax's tiles, the loss.
bool labelled_columns(StepKind kind) {
  switch (kind) {
    case StepKind::kRowMax:
    case StepKind::kRowSums:
    case StepKind::kWeightSums:
    case StepKind::kGradRowDot:
    case StepKind::kDecodeScores:
    case StepKind::kDecodeWeights:
    case StepKind::kOnlineMax:
    case StepKind::kOnlineRescale:
    case StepKind::kOnlineSum:
    case StepKind::kLoss:
    case StepKind::kLossAfterStep:
      return true;
    default:
      return step_info(kind).scores;
  }
}

// About the bytes of a label's text: the sentences' (or the given X's labels') bytes per token,
// and 2 for GPT-2's "␣" where a space was.
double label_bytes(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k) {
  double text = 0.0, count = 0.0;
  if (c.x) {
    for (const std::string& l : c.x->row_labels) text += static_cast<double>(l.size());
    count = static_cast<double>(c.x->row_labels.size());
  } else {
    for (const std::string& s : c.sentences) text += static_cast<double>(s.size());
    count = static_cast<double>(c.sentences.size()) * static_cast<double>(t_q);
    if (c.cross) {
      text += static_cast<double>(c.cross->size());
      count += static_cast<double>(t_k);
    }
  }
  return text / std::max(count, 1.0) + 2.0;
}

// The floats of a 2 MiB page.
constexpr double kPageFloats = double{1 << 21} / 4.0;

// The plan's steps, counted by what holds them.
struct PlanTally {
  double values = 0.0, squares = 0.0, square_steps = 0.0;
  // With release_head_steps (lesson_heads.cpp), the steps only a head reads are freed when the
  // head is done, and an item's Q, K and V (the split form's) when its heads are: one head's and
  // one item's are held. Each head's Z is written into the heads side by side as it is done,
  // which becomes the step of the heads side by side; with one head it is a copy of its own.
  double per_head = 0.0, per_item = 0.0, contexts = 0.0, heads = 0.0;
  // Every step's record, and its labels: one for each row (but a weight's), and for each column
  // of a step whose columns are labelled.
  double steps = 0.0, labels = 0.0, labelled_values = 0.0;
  // With release_unread, the (T, T_k) steps it frees, of the forward and of the backward pass.
  double unread_forward = 0.0, unread_backward = 0.0;
  // The largest step (every slice of one kind; decode's per-token ids counted as one step), and
  // the largest slice.
  double largest_step = 0.0, largest_slice = 0.0;
};

PlanTally tally_plan(const TraceConfig& c, const std::vector<PlannedStep>& plan) {
  const bool split = c.multihead == MultiheadForm::kSplit;
  const bool unread = c.backward && c.release_unread;
  PlanTally t;
  std::unordered_map<StepKind, double> per_kind;
  for (const PlannedStep& s : plan) {
    const double n = static_cast<double>(s.rows) * static_cast<double>(s.cols);
    t.values += n;
    t.steps += 1.0;
    per_kind[s.kind] += n;
    t.largest_slice = std::max(t.largest_slice, n);
    const bool token_rows =
        !weight_like(s.kind) && s.kind != StepKind::kLoss && s.kind != StepKind::kLossAfterStep;
    const bool key_cols = labelled_columns(s.kind);
    t.labels += (token_rows ? static_cast<double>(s.rows) : 0.0) +
                (key_cols ? static_cast<double>(s.cols) : 0.0);
    t.labelled_values += (token_rows ? n : 0.0) + (key_cols ? n : 0.0);
    // The (T, T_k) steps, whose columns are keys: release_scores frees them head by head.
    if (step_info(s.kind).scores) {
      t.squares += n;
      t.square_steps += 1.0;
      if (unread && released_unread(s.kind)) {
        (released_unread_forward(s.kind) ? t.unread_forward : t.unread_backward) += n;
      }
      continue;
    }
    switch (s.kind) {
      case StepKind::kQueries:
      case StepKind::kKeys:
      case StepKind::kValues:
      case StepKind::kRotatedQueries:
      case StepKind::kRotatedKeys:
        (split ? t.per_item : t.per_head) += n;
        break;
      case StepKind::kContextVectors:
        t.contexts += n;
        t.heads += 1.0;
        t.per_head += n;
        break;
      case StepKind::kHeadQueries:
      case StepKind::kHeadKeys:
      case StepKind::kHeadValues:
      case StepKind::kRowMax:
      case StepKind::kRowSums:
      case StepKind::kWeightSums:
        t.per_head += n;
        break;
      default:
        break;
    }
  }
  for (const auto& [kind, n] : per_kind) t.largest_step = std::max(t.largest_step, n);
  return t;
}

// A step of the backward pass (StepKind lists them in recording order, from the loss).
bool backward_step(StepKind kind) {
  return kind >= StepKind::kLoss && kind <= StepKind::kLossAfterStep;
}

MemoryEstimate estimate_of(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k,
                           std::int64_t batch, bool padded, std::int64_t tokens) {
  // With --steps, the run ends once the steps chosen are recorded (Recorder::stop_if_done): the
  // plan's steps up to the last of them are computed and held, the rest are not.
  std::vector<PlannedStep> plan = plan_steps(c, t_q, t_k, batch, padded, tokens);
  plan.resize(planned_stop(plan, c.shown_steps));
  const PlanTally t = tally_plan(c, plan);
  // What the scores' and the backward pass's working memory is for, if the run gets that far.
  const bool attends = t.square_steps > 0.0;
  const bool backward = std::any_of(plan.begin(), plan.end(),
                                    [](const PlannedStep& s) { return backward_step(s.kind); });
  // The output writes the chosen steps only, the largest of them held as it is written (a whole
  // trace's cost per value counts that, as a share of many steps).
  double written = t.values, largest_written = 0.0;
  if (!c.shown_steps.empty()) {
    const std::vector<std::string> ids = each_planned_id(plan);
    written = largest_written = 0.0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (step_id_chosen(c.shown_steps, ids[i])) {
        const double n = static_cast<double>(plan[i].rows) * static_cast<double>(plan[i].cols);
        written += n;
        largest_written = std::max(largest_written, n);
      }
    }
  }
  double values = t.values;
  // Without the causal lesson and the softmax's steps, a head's (T, T_k) steps are computed in
  // one matrix, each in the memory of the one before (and a padded run has its mask).
  const bool in_place = !c.causal && !c.softmax_steps && c.online_softmax == 0;
  const double held_per_row = in_place ? (padded ? 2.0 : 1.0) * static_cast<double>(t_k)
                                       : t.squares / static_cast<double>(batch * c.heads * t_q);
  // Working memory beyond the steps, which no output writes: a masked item holds its whole
  // (T, T_k) mask while its heads record theirs (Mask::values; rows at a time, a block's rows).
  double held_aside = attends && (c.causal || padded) && !rows_at_a_time(c)
                          ? static_cast<double>(t_q) * static_cast<double>(t_k)
                          : 0.0;
  if (!attends) {
    // The run ends before the first head's scores.
  } else if (rows_at_a_time(c)) {
    // A block of rows of one head's (T, T_k) steps at a time, and its K and V packed once.
    const auto rows = static_cast<double>(std::min(score_block_rows(c, t_k), t_q));
    values += held_per_row * rows + static_cast<double>(t_k) * static_cast<double>(c.d_kq + c.d_v) -
              t.squares;
  } else if (c.release_scores) {
    // One head's (T, T_k) steps are held at a time (the KV cache and the online softmax read
    // them whole), and one more as it is computed; each in whole 2 MiB pages, which a large
    // matrix's ends share with no other (runs of 1,500 and 3,000 tokens with --decode, --window
    // or --online-softmax peaked at 1.08–1.11 times one head's steps).
    const double held =
        in_place ? 1.0 : t.square_steps / static_cast<double>(batch * c.heads) + 1.0;
    values += held_per_row * static_cast<double>(t_q) - t.squares;
    held_aside +=
        (in_place ? 0.0 : static_cast<double>(t_k) * static_cast<double>(t_q)) + held * kPageFloats;
  }
  if (c.release_scores && c.stream_scores && c.release_head_steps && t.heads > 0.0) {
    // Recorder::release_from: a head's own steps are freed when it is done.
    const auto items = static_cast<double>(std::max<std::int64_t>(batch, 1));
    values += t.per_head / t.heads - t.per_head + t.per_item / items - t.per_item +
              (c.heads > 1 ? 0.0 : t.contexts / items);
  } else if (backward && c.release_unread) {
    // One head's of each at a time: a head's forward ones are freed before the next head's are
    // made, and the last head's before the backward pass begins.
    const auto units = static_cast<double>(std::max<std::int64_t>(batch * c.heads, 1));
    values += std::max(t.unread_forward, t.unread_backward) / units - t.unread_forward -
              t.unread_backward;
  }
  // The backward pass's working copies beyond its steps, one head at a time: A and dL/dA with a
  // row that masks every key (the softmax's backward reads nan there), or the forward pass
  // again for the loss after --lr's step (one (T, T_k) matrix).
  double working =
      held_aside + (backward ? 2.0 * static_cast<double>(t_q) * static_cast<double>(t_k) : 0.0);
  if (backward && c.init == WeightInit::kRandTransposed && batch > 1) {
    // A batch's weight gradients with W.matmul(xᵀ): every item's product of the largest weight
    // at once, before ATen's sum over the items (items_transposed_product).
    const bool split = c.multihead == MultiheadForm::kSplit;
    const double widest_in = static_cast<double>(split ? std::max(c.d_in, c.d_kq) : c.d_in);
    working +=
        static_cast<double>(batch) * widest_in * static_cast<double>(std::max(c.d_kq, c.d_v));
  }
  return {.floats = values + working,
          .working = working,
          .steps = t.steps,
          .labels = t.labels,
          .labelled_values = t.labelled_values,
          .tokens = static_cast<double>(batch * t_q + (c.cross ? t_k : 0)),
          .written = written,
          .largest_written = largest_written,
          .largest_step = t.largest_step,
          .largest_slice = t.largest_slice};
}

}  // namespace

double MemoryEstimate::bytes(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k) const {
  const OutputCost& out = c.output_cost;
  const double label = label_bytes(c, t_q, t_k);
  // The values, each step's record and what the format writes for it, each label as written,
  // and the sentences' labels and text as held.
  const double figure = (out.figure_of_step ? largest_step : largest_slice) * out.per_figure_value;
  return matrix_bytes(c) + figure + steps * (kStepRecordBytes + out.per_step) +
         labels * label * out.label_copies + (out.labels_per_cell ? labelled_values * label : 0.0) +
         tokens * (kLabelLists * kLabelRecordBytes + kTextCopies * label);
}

double MemoryEstimate::matrix_bytes(const TraceConfig& c) const {
  // The working copies of the backward pass are not written out, nor the steps not chosen. The
  // largest step written is held as it is written: a few steps' output is mostly that.
  const OutputCost& out = c.output_cost;
  const double shown = std::min(floats - working, written);
  const double largest = std::min(largest_written, shown);
  const double alone = std::max(out.per_value, out.per_value_alone);
  return floats * 4.0 +
         std::max(shown * out.per_value, (shown - largest) * out.per_value + largest * alone);
}

MemoryEstimate estimate_memory(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k,
                               std::int64_t batch, bool padded, std::int64_t tokens) {
  // Each sentence of a batch adds the same steps: a long batch's estimate is extrapolated from
  // two and three sentences, without a plan of every sentence's steps (24 bytes a step).
  if (batch <= 3) return estimate_of(c, t_q, t_k, batch, padded, tokens);
  const MemoryEstimate two = estimate_of(c, t_q, t_k, 2, padded, tokens);
  const MemoryEstimate three = estimate_of(c, t_q, t_k, 3, padded, tokens);
  const auto more = static_cast<double>(batch - 2);
  return {
      .floats = two.floats + (three.floats - two.floats) * more,
      .working = two.working + (three.working - two.working) * more,
      .steps = two.steps + (three.steps - two.steps) * more,
      .labels = two.labels + (three.labels - two.labels) * more,
      .labelled_values = two.labelled_values + (three.labelled_values - two.labelled_values) * more,
      .tokens = two.tokens + (three.tokens - two.tokens) * more,
      .written = two.written + (three.written - two.written) * more,
      .largest_written = three.largest_written,
      .largest_step = two.largest_step + (three.largest_step - two.largest_step) * more,
      .largest_slice = three.largest_slice};
}

double estimate_bytes(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k, std::int64_t batch,
                      bool padded, std::int64_t tokens) {
  return estimate_memory(c, t_q, t_k, batch, padded, tokens).bytes(c, t_q, t_k);
}

}  // namespace attn
