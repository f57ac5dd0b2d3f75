#include "attn/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <string>

#include "attn/error.hpp"
#include "lesson.hpp"
#include "modern.hpp"

namespace attn {

const Step& Trace::step(StepKind kind, std::optional<int> head, std::optional<int> batch) const {
  for (const Step& s : steps) {
    if (s.kind == kind && s.head == head && s.batch == batch) return s;
  }
  std::string where;
  if (head) where += fmt::format(" for head {}", head_number(config, *head));
  if (batch) where += fmt::format(" for sentence {}", *batch + 1);
  throw Error(fmt::format("the trace has no step '{}'{}", step_info(kind).id, where));
}

const Step& Trace::step(std::string_view id, std::optional<int> head,
                        std::optional<int> batch) const {
  for (const Step& s : steps) {
    if (s.id == id && s.head == head && s.batch == batch) return s;
  }
  std::string where;
  if (head) where += fmt::format(" for head {}", head_number(config, *head));
  if (batch) where += fmt::format(" for sentence {}", *batch + 1);
  throw Error(fmt::format("the trace has no step '{}'{}", id, where));
}

void select_steps(Trace& trace, const std::vector<std::string>& ids) {
  std::vector<std::string> known;
  for (const Step& s : trace.steps) {
    if (std::find(known.begin(), known.end(), s.id) == known.end()) known.push_back(s.id);
  }
  for (const std::string& id : ids) {
    if (std::none_of(trace.steps.begin(), trace.steps.end(), [&id](const Step& s) {
          return step_id_chosen({&id, 1}, s.id);
        })) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error(fmt::format("step '{}' is not in this trace: its steps are {}", id, list));
    }
  }
  std::erase_if(trace.steps, [&ids](const Step& s) { return !step_id_chosen(ids, s.id); });
}

std::pair<Matrix, Matrix> Trace::head_queries_keys(std::optional<int> head,
                                                   std::optional<int> batch) const {
  // With rotary embeddings, the rotated Q and K are the ones attended with.
  const StepKind q_kind = config.rope ? StepKind::kRotatedQueries : StepKind::kQueries;
  const StepKind k_kind = config.rope ? StepKind::kRotatedKeys : StepKind::kKeys;
  if (config.multihead == MultiheadForm::kWrapper) {
    return {step(q_kind, head, batch).values, step(k_kind, head, batch).values};
  }
  const Eigen::Index d_head = config.d_kq / config.heads;
  const Eigen::Index from = head.value_or(0) * d_head;
  // Grouped-query heads: this head's K/V head's columns.
  const std::int64_t kv_heads = config.kv_heads == 0 ? config.heads : config.kv_heads;
  const Eigen::Index k_from = kv_head_of(head.value_or(0), config.heads, kv_heads) * d_head;
  return {step(q_kind, std::nullopt, batch).values.middleCols(from, d_head),
          step(k_kind, std::nullopt, batch).values.middleCols(k_from, d_head)};
}

const TokenizedSentence& Trace::key_sentence(int batch) const {
  return cross ? *cross : inputs.at(static_cast<std::size_t>(batch));
}

Trace run_trace(const TraceConfig& config) {
  Trace trace;
  trace.config = resolve(config);
  lesson::Recorder rec(trace);
  const lesson::Inputs inputs = lesson::tokenize_and_embed(trace, rec);
  // A model's attention reads ln_1 of the stream entering its layer: each item's, before the
  // layer's weights.
  std::vector<const Matrix*> x = inputs.x;
  for (std::size_t b = 0; trace.config.model && b < x.size(); ++b) {
    x[b] = &lesson::enter_layer(rec, *inputs.x[b], static_cast<int>(b), trace.inputs[b].words);
  }
  lesson::Weights weights = lesson::draw_weights(rec);
  weights.rope = lesson::record_rope_tables(rec, inputs.x[0]->rows());
  for (std::size_t b = 0; b < inputs.x.size(); ++b) {
    const auto index = static_cast<int>(b);
    const TokenizedSentence& queries = trace.inputs[b];
    const TokenizedSentence& keys = trace.key_sentence(index);
    const lesson::Item item{index,
                            queries,
                            keys,
                            *x[b],
                            inputs.x_cross ? *inputs.x_cross : *x[b],
                            lesson::make_mask(trace, queries, keys)};
    lesson::combine_heads(rec, item, weights, lesson::attend_heads(rec, item, weights));
  }
  if (trace.config.backward) lesson::backward(trace, rec, inputs, weights);
  rec.flush();
  return trace;
}

}  // namespace attn
