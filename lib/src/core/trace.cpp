#include "attn/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "attn/error.hpp"
#include "lesson.hpp"
#include "modern.hpp"

namespace attn {

LabelList::LabelList(std::vector<std::string> labels) {
  if (!labels.empty()) list_ = std::make_shared<std::vector<std::string>>(std::move(labels));
}

const std::vector<std::string>& LabelList::empty_list() {
  static const std::vector<std::string> none;
  return none;
}

void LabelList::append(const std::vector<std::string>& more) {
  if (more.empty()) return;
  if (!list_) {
    list_ = std::make_shared<std::vector<std::string>>(more);
    return;
  }
  if (list_.use_count() > 1) list_ = std::make_shared<std::vector<std::string>>(*list_);
  list_->insert(list_->end(), more.begin(), more.end());
}

bool LabelList::share_if_same(const LabelList& other) {
  if (list_ == other.list_) return true;
  if (!list_ || !other.list_ || *list_ != *other.list_) return false;
  list_ = other.list_;
  return true;
}

// The first step of each (kind, head, batch) and of each (id, head, batch), by its place.
struct Trace::StepIndex {
  struct Key {
    std::string id;  // empty for a kind's key
    int kind, head, batch;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = std::hash<std::string>{}(k.id);
      for (const int v : {k.kind, k.head, k.batch}) {
        h ^= std::hash<int>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return h;
    }
  };
  std::size_t size = 0;
  const Step* front = nullptr;
  std::unordered_map<Key, std::size_t, Hash> first;
};

namespace {

using StepKey = Trace::StepIndex::Key;

StepKey kind_key(StepKind kind, std::optional<int> head, std::optional<int> batch) {
  return {{}, static_cast<int>(kind), head.value_or(-1), batch.value_or(-1)};
}

StepKey id_key(std::string_view id, std::optional<int> head, std::optional<int> batch) {
  return {std::string(id), -1, head.value_or(-1), batch.value_or(-1)};
}

// The index of `steps`, built anew when it is missing or `steps` has another size or front.
const Trace::StepIndex& step_index(const Trace& t, bool rebuild) {
  const Step* front = t.steps.empty() ? nullptr : &t.steps.front();
  if (rebuild || !t.step_index || t.step_index->size != t.steps.size() ||
      t.step_index->front != front) {
    auto index = std::make_shared<Trace::StepIndex>();
    index->size = t.steps.size();
    index->front = front;
    index->first.reserve(2 * t.steps.size());
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      const Step& s = t.steps[i];
      index->first.try_emplace(kind_key(s.kind, s.head, s.batch), i);
      index->first.try_emplace(id_key(s.id, s.head, s.batch), i);
    }
    t.step_index = std::move(index);
  }
  return *t.step_index;
}

// The first step that `matches`, by the index; a step not found, or found but no longer
// matching (`steps` changed in place), is looked up once more in an index built anew.
template <typename Matches>
const Step* find_step(const Trace& t, const StepKey& key, Matches matches) {
  for (const bool rebuild : {false, true}) {
    const Trace::StepIndex& index = step_index(t, rebuild);
    const auto it = index.first.find(key);
    if (it != index.first.end() && matches(t.steps[it->second])) return &t.steps[it->second];
  }
  return nullptr;
}

std::string step_place(const TraceConfig& config, std::optional<int> head,
                       std::optional<int> batch) {
  std::string where;
  if (head) where += fmt::format(" for head {}", head_number(config, *head));
  if (batch) where += fmt::format(" for sentence {}", *batch + 1);
  return where;
}

}  // namespace

const Step& Trace::step(StepKind kind, std::optional<int> head, std::optional<int> batch) const {
  const Step* s = find_step(*this, kind_key(kind, head, batch), [&](const Step& x) {
    return x.kind == kind && x.head == head && x.batch == batch;
  });
  if (s) return *s;
  throw Error(fmt::format("the trace has no step '{}'{}", step_info(kind).id,
                          step_place(config, head, batch)));
}

const Step& Trace::step(std::string_view id, std::optional<int> head,
                        std::optional<int> batch) const {
  const Step* s = find_step(*this, id_key(id, head, batch), [&](const Step& x) {
    return x.id == id && x.head == head && x.batch == batch;
  });
  if (s) return *s;
  throw Error(fmt::format("the trace has no step '{}'{}", id, step_place(config, head, batch)));
}

std::vector<std::string> step_ids(const std::deque<Step>& steps) {
  std::vector<std::string> ids;
  std::unordered_set<std::string_view> seen;
  for (const Step& s : steps) {
    if (seen.insert(s.id).second) ids.push_back(s.id);
  }
  return ids;
}

namespace {

// The ids as a message lists them: a decode step's per-token ids (decode_query_t1, …_t6) as one
// entry at the first one's place, "decode_query_t1 to _t6"; and an example of such a step, whose
// id without _t<t> picks it for every token.
std::pair<std::vector<std::string>, std::string> listed_ids(const std::vector<std::string>& ids) {
  std::vector<std::string> listed;
  std::unordered_map<std::string, std::pair<std::size_t, std::string>> per_token;  // entry, last t
  std::string example;
  for (const std::string& id : ids) {
    const std::size_t at = id.rfind("_t");
    const std::string base = at == std::string::npos ? id : id.substr(0, at);
    const bool decode = at != std::string::npos && step_id_chosen({&base, 1}, id);
    if (!decode) {
      listed.push_back(id);
      continue;
    }
    if (example.empty()) example = base;
    const auto [it, first] = per_token.try_emplace(base, listed.size(), id.substr(at + 1));
    if (first) listed.push_back(id);
    it->second.second = id.substr(at + 1);
  }
  for (const auto& [base, entry] : per_token) {
    if (listed[entry.first] != base + "_" + entry.second)
      listed[entry.first] += " to _" + entry.second;
  }
  return {listed, example};
}

}  // namespace

void require_step_ids(std::span<const std::string> chosen, const std::vector<std::string>& ids) {
  for (const std::string& id : chosen) {
    if (std::none_of(ids.begin(), ids.end(), [&id](const std::string& known) {
          return step_id_chosen({&id, 1}, known);
        })) {
      const auto [listed, example] = listed_ids(ids);
      throw Error(fmt::format(
          "step '{}' is not in this trace: its steps are {}{}", id, fmt::join(listed, ", "),
          example.empty() ? std::string()
                          : fmt::format("; a decoding step's id without _t<t>, such as {}, "
                                        "gives it for every token",
                                        example)));
    }
  }
}

void select_steps(Trace& trace, const std::vector<std::string>& ids) {
  require_step_ids(ids, step_ids(trace.steps));
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

namespace {

// Every step of the run, in the plan's order: the inputs, the weights, each item's heads and
// their combination, then the backward pass. Between them, the run ends once the steps that
// config.shown_steps names are recorded (Recorder::stop_if_done).
void record_run(Trace& trace, lesson::Recorder& rec) {
  // Each step that is not a block of rows is handed on (config.on_step: the summary's statistics
  // and checksum) as soon as it is final, while its values are still in the cache: X here, each
  // weight as it is drawn, each projection as it is computed (docs/design.md, Performance).
  const lesson::Inputs inputs = lesson::tokenize_and_embed(trace, rec);
  rec.flush();
  // A model's attention reads ln_1 of the stream entering its layer: each item's, before the
  // layer's weights.
  const std::vector<const Matrix*> x =
      trace.config.model ? lesson::enter_layer(rec, inputs.x, trace.inputs) : inputs.x;
  rec.stop_if_done();
  lesson::Weights weights = lesson::draw_weights(rec);
  weights.rope = lesson::record_rope_tables(rec, inputs.x[0]->rows());
  for (std::size_t b = 0; b < inputs.x.size(); ++b) {
    rec.stop_if_done();
    const auto index = static_cast<int>(b);
    const TokenizedSentence& queries = trace.inputs[b];
    const TokenizedSentence& keys = trace.key_sentence(index);
    const lesson::Item item{index,
                            queries,
                            keys,
                            *x[b],
                            inputs.x_cross ? *inputs.x_cross : *x[b],
                            lesson::make_mask(trace, queries, keys)};
    Matrix z = lesson::attend_heads(rec, item, weights);
    rec.stop_if_done();
    lesson::combine_heads(rec, item, weights, std::move(z));
  }
  rec.stop_if_done();
  if (trace.config.backward) lesson::backward(trace, rec, inputs, weights);
}

}  // namespace

Trace run_trace(const TraceConfig& config) {
  Trace trace;
  trace.config = resolve(config);
  lesson::Recorder rec(trace);
  try {
    record_run(trace, rec);
  } catch (const lesson::RunDone&) {
    // Every step that config.shown_steps names is recorded; the rest is not computed.
  }
  rec.flush();
  return trace;
}

}  // namespace attn
