// The lesson's first steps: the sentences tokenized into one dictionary, and embedded.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/memory.hpp"
#include "lesson.hpp"

namespace attn::lesson {

namespace {

// Below this estimate a run is not checked against the machine's memory (machine_memory reads
// three to six small files of /proc and /sys).
constexpr double kMachineCheckBytes = 64.0 * (1 << 20);

// The estimate of such a run, refused when it is more than config.max_memory, or more than the
// machine has for it (machine_memory): a run that the kernel would end for want of memory, with
// no output and no message, is refused before it starts.
MemoryEstimate check_memory(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k,
                            std::int64_t batch, bool padded, std::int64_t tokens) {
  const MemoryEstimate e = estimate_memory(c, t_q, t_k, batch, padded, tokens);
  const double need = e.bytes(c, t_q, t_k);
  const std::uint64_t need_bytes =
      need < 1.8e19 ? static_cast<std::uint64_t>(need) : ~std::uint64_t{0};
  // Decimals enough that the need and the limit read as different sizes (1.04 GiB, not 1.0).
  int decimals = 1;
  while (decimals < 3 && size_text(need_bytes, decimals) == size_text(c.max_memory, decimals)) {
    ++decimals;
  }
  const auto run = [&] {
    return fmt::format("this run would need about {} (T = {} token{}{}, {} head{})",
                       size_text(need_bytes, decimals), t_q, t_q == 1 ? "" : "s",
                       batch > 1 ? fmt::format(" x {} sentences", batch) : "", c.heads,
                       c.heads > 1 ? "s" : "");
  };
  if (need > static_cast<double>(c.max_memory)) {
    throw Error(fmt::format("{}, more than the memory limit of {}: trace fewer tokens, or raise "
                            "the limit",
                            run(), size_text(c.max_memory, decimals)),
                Setting::kMaxMemory);
  }
  if (need < kMachineCheckBytes) return e;
  // Read once a process: a run is checked before it stores its tokens and again for its plan.
  static const std::optional<MachineMemory> machine = machine_memory();
  if (machine && need > static_cast<double>(machine->bytes)) {
    throw Error(machine->cgroup
                    ? fmt::format("{}, more than the {} that this process's cgroup allows (its "
                                  "memory limit): trace fewer tokens",
                                  run(), size_text(machine->bytes))
                    : fmt::format("{}, more than the {} of memory available on this machine "
                                  "(free, reclaimable and swap): trace fewer tokens",
                                  run(), size_text(machine->bytes)));
  }
  return e;
}

// Shows the plan to config.on_plan, which may refuse the run. It comes before the memory limit's
// check: a run refused for the limit would, with the limit raised, be refused for a mistyped step
// or token.
void show_plan(const TraceConfig& c, std::int64_t t_q, std::int64_t t_k, std::int64_t batch,
               bool padded, const std::vector<PlannedStep>& plan) {
  if (c.on_plan) c.on_plan(PlannedRun{c, t_q, t_k, batch, padded, plan});
}

// The run's plan, once the lengths are known: shown to config.on_plan unless it was (`shown`);
// refused when it would need more memory than config.max_memory, before anything large is
// allocated; then the steps the Recorder follows.
void plan_run(Recorder& rec, std::int64_t t_q, std::int64_t t_k, std::int64_t batch, bool padded,
              std::int64_t tokens = 0, bool shown = false) {
  const TraceConfig& c = rec.config();
  std::vector<PlannedStep> plan = plan_steps(c, t_q, t_k, batch, padded, tokens);
  if (!shown) show_plan(c, t_q, t_k, batch, padded, plan);
  const MemoryEstimate e = check_memory(c, t_q, t_k, batch, padded, tokens);
  if (c.on_memory_estimate) c.on_memory_estimate(e.matrix_bytes(c), c.threads);
  rec.follow(std::move(plan));
}

// Refuses a vocabulary too small for the dictionary's ids (and the padding token).
void check_vocabulary(const Trace& trace) {
  const TraceConfig& c = trace.config;
  const Vocabulary& v = trace.vocabulary;
  const std::int64_t needed = std::max(v.end_id(), trace.pad_id ? *trace.pad_id + 1 : 0);
  if (needed <= c.vocab_size) return;
  const char* whose = c.sentences.size() > 1 ? "the batch's"
                      : c.cross              ? "the two sentences'"
                                             : "the sentence's";
  const std::string what = c.embedding
                               ? fmt::format("the embedding table in {} has {} rows, fewer than",
                                             c.embedding->source, c.vocab_size)
                               : fmt::format("vocabulary size {} is smaller than", c.vocab_size);
  if (v.end_id() != v.size()) {  // a tokenizer's own ids
    throw Error(
        fmt::format("{} {} token ids need ({} tokens, the largest id {}{}): it must be at "
                    "least {}",
                    what, whose, c.tokenizer->name(), v.end_id() - 1,
                    trace.pad_id ? fmt::format(", padding id {}", *trace.pad_id) : "", needed));
  }
  throw Error(fmt::format("{} {} {} distinct words{}: it must be at least {}", what, whose,
                          v.size(), trace.pad_id ? " and the padding token" : "", needed));
}

// Refuses a given embedding table whose row labels are not the tokens of the ids they hold: its
// rows are read by id, so a row labelled 'zebra' would silently embed 'apple'. A row no token
// reads is not checked (TokenizedSentence::named).
void check_embedding_labels(const Trace& trace) {
  const std::optional<GivenMatrix>& e = trace.config.embedding;
  if (!e || e->row_labels.empty()) return;
  auto check = [&e](const TokenizedSentence& s) {
    for (std::size_t i = 0; i < s.ids.size(); ++i) {
      const auto id = static_cast<std::size_t>(s.ids[i]);
      if (id >= e->row_labels.size()) continue;
      const std::string& label = e->row_labels[id];
      if (s.named(i, label)) continue;
      throw Error(fmt::format(
          "the embedding table in {} labels row {} '{}', but that row is token id {}, '{}': a "
          "table's rows follow the token ids from 0; put each token's row at its id, or give the "
          "table without labels",
          e->source, id + 1, label, id, s.words[i]));
    }
  };
  for (const TokenizedSentence& s : trace.inputs) check(s);
  if (trace.cross) check(*trace.cross);
}

// The ids of a text's tokens; its words are the tokens as the tokenizer shows them (and the
// tokens themselves are kept when that differs), padded to `padded_to`.
TokenizedSentence tokenized(const Tokenizer& tokenizer, const Vocabulary& vocabulary,
                            std::vector<std::string> words, std::size_t padded_to,
                            std::int64_t pad_id) {
  TokenizedSentence s;
  s.length = static_cast<std::int64_t>(words.size());
  s.ids = encode(vocabulary, words);
  for (std::string& w : words) {
    std::string shown = tokenizer.display(w);
    if (shown != w && s.tokens.empty()) s.tokens = words;
    w = std::move(shown);
  }
  s.words = std::move(words);
  if (!s.tokens.empty())
    s.tokens.resize(std::max(padded_to, s.tokens.size()), std::string(kPadToken));
  s.words.resize(std::max(padded_to, s.words.size()), std::string(kPadToken));
  s.ids.resize(s.words.size(), pad_id);
  return s;
}

// What the lengths are, as soon as they are known: T, T_k, the batch, whether it is padded, and
// the number of distinct token ids (the padding token's too).
using LengthsKnown =
    std::function<void(std::int64_t, std::int64_t, std::int64_t, bool, std::int64_t)>;

// The lengths as the tokenizer counts them before it stores a token, when it can count every
// text (Tokenizer::count); nothing when it cannot. The dictionary's size there is the most it
// can be: every token distinct, and the padding token.
void count_inputs(const TraceConfig& c, const LengthsKnown& counted) {
  if (c.sentences.empty()) return;
  std::int64_t t = 0, shortest = -1, all = 0;
  for (const std::string& sentence : c.sentences) {
    const std::optional<std::size_t> n = c.tokenizer->count(sentence);
    if (!n || *n == 0) return;  // the tokenizer's own message, when it tokenizes
    const auto tokens = static_cast<std::int64_t>(*n);
    t = std::max(t, tokens);
    shortest = shortest < 0 ? tokens : std::min(shortest, tokens);
    all += tokens;
  }
  std::int64_t t_k = t;
  if (c.cross) {
    const std::optional<std::size_t> n = c.tokenizer->count(*c.cross);
    if (!n || *n == 0) return;
    t_k = static_cast<std::int64_t>(*n);
    all += t_k;
  }
  const bool padded = shortest < t;
  counted(t, t_k, static_cast<std::int64_t>(c.sentences.size()), padded, all + (padded ? 1 : 0));
}

// How messages name sentence b: by its line in config.sentences_file, "sentence 3 of 4" in a
// batch, or `alone`.
std::string sentence_name(const TraceConfig& c, std::size_t b, std::string_view alone) {
  if (c.sentence_lines.size() == c.sentences.size()) {
    return fmt::format("{}: line {}: the sentence", c.sentences_file, c.sentence_lines[b]);
  }
  if (c.sentences.size() > 1) return fmt::format("sentence {} of {}", b + 1, c.sentences.size());
  if (!c.sentences_file.empty()) return fmt::format("{}: {}", c.sentences_file, alone);
  return std::string(alone);
}

// The words of every sentence, one dictionary for all of them, and the padded ids. `counted`,
// if set, is called before any token is stored, with the lengths count_inputs counts; `known`
// before the ids are made (the run's memory plan goes there).
void tokenize_inputs(Trace& trace, const LengthsKnown& known, const LengthsKnown& counted = {}) {
  const TraceConfig& c = trace.config;
  const auto batch_size = static_cast<std::int64_t>(c.sentences.size());
  if (counted) count_inputs(c, counted);
  std::vector<std::vector<std::string>> words;
  for (std::size_t b = 0; b < c.sentences.size(); ++b) {
    words.push_back(c.tokenizer->tokens(c.sentences[b], sentence_name(c, b, "the sentence")));
  }
  std::vector<std::string> cross_words;
  if (c.cross) cross_words = c.tokenizer->tokens(*c.cross, "the key and value sentence");
  std::size_t t = 0;
  for (const auto& w : words) t = std::max(t, w.size());
  const bool padded =
      std::any_of(words.begin(), words.end(), [t](const auto& w) { return w.size() < t; });
  if (c.model && static_cast<std::int64_t>(t) > c.model->config().n_positions) {
    const auto longest =
        std::find_if(words.begin(), words.end(), [t](const auto& w) { return w.size() == t; }) -
        words.begin();
    throw Error(fmt::format(
        "{} has {} tokens, more than the model's {} positions (n_positions): give a shorter text",
        sentence_name(c, static_cast<std::size_t>(longest), "the text"), t,
        c.model->config().n_positions));
  }
  // Before anything large: T is known now. The dictionary's size counts only for the backward
  // pass (the embedding table's gradient); otherwise the plan comes first, so that the
  // dictionary and the ids are built in the memory it made ready: on the project's virtual
  // machines each new 4 KiB page of the heap costs microseconds.
  const auto plan = [&](std::int64_t tokens) {
    known(static_cast<std::int64_t>(t), static_cast<std::int64_t>(c.cross ? cross_words.size() : t),
          batch_size, padded, tokens);
  };
  if (!c.backward) plan(0);
  if (words.size() == 1 && !c.cross) {
    trace.vocabulary = c.tokenizer->vocabulary(words[0]);  // one sentence: its words, uncopied
  } else {
    std::vector<std::string> all_words;
    for (const auto& w : words) all_words.insert(all_words.end(), w.begin(), w.end());
    all_words.insert(all_words.end(), cross_words.begin(), cross_words.end());
    trace.vocabulary = c.tokenizer->vocabulary(all_words);
  }
  // The dictionary holds each distinct token once; with padding, one more.
  if (c.backward) plan(static_cast<std::int64_t>(trace.vocabulary.size()) + (padded ? 1 : 0));
  if (padded) trace.pad_id = c.tokenizer->padding_id(trace.vocabulary);
  check_vocabulary(trace);
  for (auto& w : words) {
    trace.inputs.push_back(
        tokenized(*c.tokenizer, trace.vocabulary, std::move(w), t, trace.pad_id.value_or(0)));
  }
  if (c.cross) {
    trace.cross = tokenized(*c.tokenizer, trace.vocabulary, std::move(cross_words), 0, 0);
  }
  check_embedding_labels(trace);
}

// The rows of the ids: from the given table, as nn.Embedding.from_pretrained(E, padding_idx)
// reads them (the padding token's row as given: padding_idx only keeps it from the gradient);
// or nn.Embedding's as PyTorch draws them, whose padding row padding_idx zeroes.
Matrix embed_ids(const Trace& trace, const std::vector<std::int64_t>& ids) {
  const TraceConfig& c = trace.config;
  Matrix x(static_cast<Eigen::Index>(ids.size()), c.d_in);  // (ΣT, d_in)
  if (c.embedding) {
    for (std::size_t r = 0; r < ids.size(); ++r) {
      x.row(static_cast<Eigen::Index>(r)) = c.embedding->values.row(ids[r]);
    }
    return x;
  }
  x = embed(c.seed, c.vocab_size, c.d_in, ids, c.kernel, c.threads);
  for (std::size_t r = 0; r < ids.size(); ++r) {
    if (trace.pad_id && ids[r] == *trace.pad_id) x.row(static_cast<Eigen::Index>(r)).setZero();
  }
  return x;
}

// The rows of a given X: labelled by the tokens, or numbered.
TokenizedSentence given_rows(const TraceConfig& c) {
  TokenizedSentence s;
  s.length = c.x->values.rows();
  s.words = c.x->row_labels;
  for (Eigen::Index i = static_cast<Eigen::Index>(s.words.size()); i < s.length; ++i) {
    s.words.push_back(std::to_string(i + 1));
  }
  return s;
}

// X as given: its labels are the tokens, or the row numbers.
Inputs given_x(Trace& trace, Recorder& rec) {
  const TraceConfig& c = trace.config;
  plan_run(rec, c.x->values.rows(), c.x->values.rows(), 1, false);
  const TokenizedSentence& s = trace.inputs.emplace_back(given_rows(c));
  return {{&rec.add(StepKind::kEmbeddings, fmt::format("X = {}", c.x->source), {"T", "d_in"},
                    c.x->values, std::nullopt, std::nullopt,
                    {.rows = s.words, .title = "the input matrix, one row per token"})},
          nullptr};
}

}  // namespace

Inputs tokenize_and_embed(Trace& trace, Recorder& rec) {
  const TraceConfig& c = trace.config;
  if (c.x) return given_x(trace, rec);
  // A text is refused for the memory limit before its tokens are stored, where the tokenizer can
  // count them: one-letter words take some 40 bytes each as strings and ids, so a sentence of
  // 1 GiB could otherwise take tens of GB before the limit was checked. Without the backward pass
  // the check is the plan's own (the dictionary's size does not count). With it, the dictionary's
  // size is not known yet: only where the tokens alone would take more than the limit is the run
  // checked now, as if the dictionary were empty (a run refused so would be refused with it), and
  // otherwise by the plan, with the dictionary's size, as before.
  // on_plan sees the plan then too, where it is whole without the dictionary's size.
  bool shown = false;
  const auto counted = [&c, &shown](std::int64_t t_q, std::int64_t t_k, std::int64_t batch,
                                    bool padded, std::int64_t tokens) {
    constexpr double kBytesPerToken = 64.0;  // a token's string, id and label, with some margin
    if (!c.backward) {
      if (c.on_plan) show_plan(c, t_q, t_k, batch, padded, plan_steps(c, t_q, t_k, batch, padded));
      shown = true;
      check_memory(c, t_q, t_k, batch, padded, 0);
    } else if (kBytesPerToken * static_cast<double>(tokens) > static_cast<double>(c.max_memory)) {
      check_memory(c, t_q, t_k, batch, padded, 0);
    }
  };
  tokenize_inputs(
      trace,
      [&rec, &shown](std::int64_t t_q, std::int64_t t_k, std::int64_t batch, bool padded,
                     std::int64_t tokens) {
        plan_run(rec, t_q, t_k, batch, padded, tokens, shown);
      },
      counted);
  if (c.model) return embed_model(trace, rec);
  // torch.manual_seed(seed); X = nn.Embedding(V, d_in[, padding_idx])(ids): one call for every
  // sentence, so that the generator runs once.
  std::vector<std::int64_t> all_ids;
  for (const auto& s : trace.inputs) all_ids.insert(all_ids.end(), s.ids.begin(), s.ids.end());
  if (trace.cross) all_ids.insert(all_ids.end(), trace.cross->ids.begin(), trace.cross->ids.end());
  Matrix embedded = embed_ids(trace, all_ids);  // (ΣT, d_in)

  std::string equation =
      c.embedding ? "X = E(ids)" : std::string(step_info(StepKind::kEmbeddings).equation);
  std::string note;
  if (trace.pad_id) {
    equation = c.embedding
                   ? fmt::format("X = E(ids), padding_idx={}", *trace.pad_id)
                   : fmt::format("X = Embedding(V, d_in, padding_idx={})(ids)", *trace.pad_id);
    note = c.embedding
               ? fmt::format(
                     "'{}' rows are row {} of the table in {}, as given: "
                     "nn.Embedding.from_pretrained(E, padding_idx={}) reads it as it is, "
                     "and padding_idx only keeps it out of the gradient",
                     kPadToken, *trace.pad_id, c.embedding->source, *trace.pad_id)
               : fmt::format("'{}' rows are zero: padding_idx={} zeroes that row of the table",
                             kPadToken, *trace.pad_id);
  } else if (c.embedding) {
    note = fmt::format("the rows of the embedding table E in {}", c.embedding->source);
  }
  Inputs inputs;
  const auto t = static_cast<Eigen::Index>(trace.inputs[0].words.size());
  const auto batch_size = static_cast<Eigen::Index>(trace.inputs.size());
  for (Eigen::Index b = 0; b < batch_size; ++b) {
    const auto& s = trace.inputs[static_cast<std::size_t>(b)];
    inputs.x.push_back(
        &rec.add(StepKind::kEmbeddings, equation, {"T", "d_in"},
                 batch_size == 1 && !trace.cross ? std::move(embedded)  // the whole matrix: no copy
                                                 : Matrix(embedded.middleRows(b * t, t)),
                 static_cast<int>(b), std::nullopt,
                 {.rows = s.words,
                  .note = note,
                  .title = c.cross ? "the embedded query sentence, one row per token" : ""}));
  }
  if (trace.cross) {
    inputs.x_cross = &rec.add(
        StepKind::kEmbeddings2,
        c.embedding ? "X₂ = E(ids₂)" : std::string(step_info(StepKind::kEmbeddings2).equation),
        {"T₂", "d_in"}, embedded.bottomRows(static_cast<Eigen::Index>(trace.cross->ids.size())),
        std::nullopt, std::nullopt, {.rows = trace.cross->words});
  }
  return inputs;
}

}  // namespace attn::lesson

namespace attn {

Trace outline_trace(const TraceConfig& config) {
  Trace trace;
  trace.config = resolve(config);
  if (trace.config.x) {
    trace.inputs.push_back(lesson::given_rows(trace.config));
  } else {
    lesson::tokenize_inputs(trace,
                            [](std::int64_t, std::int64_t, std::int64_t, bool, std::int64_t) {});
  }
  // The run's check of the target, on the output's shape as the plan has it.
  const TraceConfig& c = trace.config;
  const bool side_by_side = c.heads > 1 && c.multihead == MultiheadForm::kWrapper;
  if (c.backward) lesson::check_target(trace, side_by_side ? c.heads * c.d_v : c.d_v);
  return trace;
}

}  // namespace attn
