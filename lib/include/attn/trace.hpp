#pragma once

// The Trace: every intermediate of one attention computation, as an ordered list of named
// steps. Every output format and every test reads it.

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/attention.hpp"
#include "attn/backward.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/matrix.hpp"
#include "attn/output.hpp"
#include "attn/rope.hpp"
#include "attn/steps.hpp"
#include "attn/tokenizer.hpp"
#include "attn/torch_random.hpp"
#include "attn/weights.hpp"

namespace attn {

inline constexpr std::string_view kWalkthroughSentence = "Life is short, eat dessert first";
// The largest d_in, d_kq and d_v: 8192 is wider than the models the lesson is about, and keeps
// every weight matrix under 256 MiB.
inline constexpr std::int64_t kMaxDimension = 8192;
// The largest vocabulary. The table is never stored (only the sentence's rows are computed, and
// the sentence's ids are the first ones), so the limit is one of sense, not of cost: no model has
// a billion words, and vocab_size * d_in stays far from PyTorch's int64 element count.
inline constexpr std::int64_t kMaxVocabSize = 1'000'000'000;
// The default limit on the memory of a run (TraceConfig::max_memory): 4 GiB.
inline constexpr std::uint64_t kDefaultMaxMemory = std::uint64_t{4} << 30;
// The most heads: more than any model the lesson is about.
inline constexpr std::int64_t kMaxHeads = 64;
// The largest tile of --online-softmax: any tile at least T_k wide is one tile.
inline constexpr std::int64_t kMaxOnlineTile = std::int64_t{1} << 40;
// The token that pads the shorter sentences of a batch.
inline constexpr std::string_view kPadToken = "<pad>";

// How several heads are formed.
enum class MultiheadForm {
  kWrapper,  // the walkthrough: N single-head modules, each with its own weights; Z concatenated
  kSplit,    // course code: one projection of width d_out split into N heads, then W_o
};

std::string_view init_name(WeightInit init);           // "rand", "rand-transposed", "linear"
WeightInit parse_init(std::string_view name);          // throws Error for any other name
std::string_view multihead_name(MultiheadForm form);   // "wrapper", "split"
MultiheadForm parse_multihead(std::string_view name);  // throws Error for any other name
std::string_view masked_rows_name(MaskedRows rule);    // "nan", "zero"
MaskedRows parse_masked_rows(std::string_view name);   // throws Error for any other name
std::string_view matmul_name(MatmulKernel kernel);     // "auto", "reference", "blocked"
MatmulKernel parse_matmul(std::string_view name);      // throws Error for any other name

struct Step;
struct StepDigest;  // statistics.hpp

// A matrix the user gives instead of one the trace would compute or draw.
struct GivenMatrix {
  Matrix values;
  std::string source;                   // where it came from (a file name), for messages
  std::vector<std::string> row_labels;  // for X: the tokens; empty otherwise or when unknown
  bool vector = false;                  // the file held a 1-D array: one row, shown as [n]

  // Its shape as the file has it, for messages: "[rows, cols]", or "[n]" for a 1-D array.
  std::string shape() const;
};

// One step of a run's plan: what it is and its matrix's shape.
struct PlannedStep {
  StepKind kind;
  std::int64_t rows, cols;
  // Multiply-adds per value: for a step that is a matrix product (or a sum of them), its inner
  // dimension (their sum); for a row's reduction over the keys (its maximum, its sum, its dot
  // product), the keys; 0 for the others. Only planned_work() reads it.
  std::int64_t inner = 0;
};

// A run's plan, as TraceConfig::on_plan sees it: the config, resolved; the queries' length t_q
// (the longest sentence's, or X's rows) and the keys' t_k (the cross sentence's, else t_q); the
// number of sentences; whether they are padded; and every step the run will record, in order.
struct TraceConfig;
struct PlannedRun {
  const TraceConfig& config;
  std::int64_t t_q, t_k, batch;
  bool padded;
  const std::vector<PlannedStep>& steps;
};

// What to compute. The defaults are the walkthrough's.
struct TraceConfig {
  // One sentence, or several: a batch, padded to the longest with kPadToken.
  std::vector<std::string> sentences{std::string(kWalkthroughSentence)};
  // Where the sentences came from, for messages about one of them, where a program knows: a
  // batch file's name and each sentence's line in it ("batch.txt: line 5: the sentence"), or the
  // file of one sentence with no lines ("text.txt: the sentence"). Otherwise, or where the counts
  // differ, "the sentence", and "sentence 3 of 4" in a batch.
  std::string sentences_file;
  std::vector<std::int64_t> sentence_lines;
  // Cross-attention: keys and values come from this sentence, queries from the (one) sentence.
  std::optional<std::string> cross;
  // How the sentences become tokens and ids: the walkthrough's words, by default.
  std::shared_ptr<const Tokenizer> tokenizer = word_tokenizer();
  std::uint64_t seed = 123;         // torch.manual_seed(seed), before the embedding and the weights
  std::int64_t vocab_size = 50000;  // nn.Embedding(vocab_size, d_in)
  std::int64_t d_in = 3;            // embedding width
  std::int64_t d_kq = 2;            // width of queries and keys (d_out of the split form)
  std::int64_t d_v = 4;             // width of values (d_out of the split form)
  std::int64_t heads = 1;
  MultiheadForm multihead = MultiheadForm::kWrapper;
  WeightInit init = WeightInit::kRand;
  bool causal = false;                        // mask key j > query i
  MaskedRows masked_rows = MaskedRows::kNan;  // weights of a row whose every key is masked
  bool softmax_steps = false;  // record the softmax's row max, exponentials and sums as steps
  int threads = 1;  // for the large products and softmaxes; the result is the same for any count
  // The matrix products' kernel: kAuto keeps PyTorch's order for small products and takes the
  // blocked kernel for large ones; each step computed by the blocked kernel says so in its note.
  MatmulKernel matmul = MatmulKernel::kAuto;
  // Incremental decoding with a KV cache (implies causal): after each head's attention, every
  // token again, one at a time, against a cache of the keys and values before it.
  bool decode = false;
  // FlashAttention's online softmax over tiles of this many keys, after each head's attention;
  // 0: not traced.
  std::int64_t online_softmax = 0;
  // Rotary position embeddings (attn/rope.hpp) on Q and K after the projections, per head,
  // positions from 0: base θ (rope_theta, in float32) and the pairing.
  bool rope = false;
  double rope_theta = 10000.0;
  RopePairs rope_pairs = RopePairs::kHalf;
  // Grouped-query attention (the split form only): kv_heads K/V heads shared by the query heads,
  // K/V head g serving query heads g·(H/N) … (g+1)·(H/N) − 1. 0: one per query head (resolve
  // sets it to heads).
  std::int64_t kv_heads = 0;
  // A sliding window (implies causal): query i sees keys max(0, i − window + 1) … i. 0: none.
  std::int64_t window = 0;

  // A GPT-2 checkpoint (attn/gpt2_model.hpp): the sentences are GPT-2's tokens, embedded by its
  // wte and wpe; blocks 0 … layer − 1 run whole; then layer `layer`'s attention is traced, every
  // head or only `model_head` (the others are computed, for the heads side by side and c_proj).
  // resolve() sets the lesson's settings from it: GPT-2's tokenizer, the split form with n_head
  // heads, d_in = d_kq = d_v = n_embd, vocab_size, causal. Layers and heads are numbered from 0,
  // as the checkpoint's h.L names them, in every view (head_number).
  std::shared_ptr<const Gpt2Checkpoint> model;
  std::int64_t layer = 0;
  std::optional<std::int64_t> model_head;

  // Called with each step, in computation order, once its values are final (during run_trace).
  // With release_scores, the values of the (T, T) steps (those whose columns are keys) are freed
  // right after the call: the step keeps its id, labels and shape, its values become 0 x 0, and
  // a long input needs memory for one head's scores at a time (without the causal lesson and the
  // softmax's steps, the scaled scores and the weights are even computed in the memory of the
  // step before them: one (T, T) matrix per head). For renderers that reduce each step to a few
  // numbers (--format summary).
  std::function<void(const Step&)> on_step;
  bool release_scores = false;
  // With release_scores: a head's steps are computed a block of query rows at a time, and its
  // (T, T_k) steps are never held whole: each keeps its digest (Step::digest: statistics,
  // checksum and, for the weights, their glance, the same numbers as of the whole matrix) and no
  // values; the head's other steps are assembled row by row. `score_block_rows` rows a block;
  // 0 chooses about 1 MiB of scores a block (an L2 cache's worth; at least 48 rows).
  bool stream_scores = false;
  std::int64_t score_block_rows = 0;
  // With release_scores and stream_scores, for a renderer that reduces each step as on_step
  // sees it: the values of the steps only a head reads (its Q, K and V, its context vectors) are
  // freed when the head is done, and the split form's Q, K and V when the item's heads are; the
  // trace keeps those steps without values. A long input then holds one head's, not every head's.
  bool release_head_steps = false;
  // With on_step, in a backward pass, for such a renderer: the values of the (T, T_k) steps that
  // nothing later reads (released_unread) are freed once handed on: a head's scores before its
  // softmax when the head's forward is done, and its backward's when its backward is done. The
  // trace keeps those steps without values; a long input's backward then holds every head's
  // weights but one head's other scores.
  bool release_unread = false;
  // Called as each step, or each block of its rows, is recorded, its values still in use, with
  // the share of the run's planned work then done (0 to 1, by planned_work): for a progress
  // display.
  std::function<void(const Step&, double done)> on_record;
  // The steps a program will show, as --steps names them (step_id_chosen), or empty for every
  // step: the run ends at the first point after the last of them in the plan where no step is
  // half done (between the inputs, the weights, the items, the heads and the backward pass), so
  // that the steps after it are not computed. The trace then holds those steps and possibly a
  // few after them (select_steps keeps the shown ones); the memory estimate is still the whole
  // plan's.
  std::vector<std::string> shown_steps;
  // Called with the run's plan as soon as the sentences' lengths are known, before anything is
  // embedded or computed (and before on_memory_estimate): a program may refuse the run there
  // (throw) for what it will ask of the trace, such as a step id (require_step_ids) or a token
  // number that the run will not have, rather than after a long run.
  std::function<void(const PlannedRun&)> on_plan;
  // Called with the estimate's matrix_bytes() and `threads` once the sentences' lengths are
  // known, before anything large is allocated: a program may prepare that much memory.
  std::function<void(double bytes, int threads)> on_memory_estimate;

  // The memory a run may take, estimated before anything large is allocated (estimate_bytes):
  // the trace's floats, steps and labels, and what a renderer will write for them.
  std::uint64_t max_memory = kDefaultMaxMemory;
  OutputCost output_cost;
  TorchKernel kernel = TorchKernel::kAvx2;

  // Bring your own numbers. `x` replaces tokenizing and embedding (the sentence is not used);
  // `embedding` replaces nn.Embedding (its shape sets vocab_size and d_in); the weights replace
  // the drawn ones (their shapes set d_in, d_kq and d_v, in the layout `init` stores them). The
  // generator still draws every other weight in its usual order.
  std::optional<GivenMatrix> x;
  std::optional<GivenMatrix> embedding;
  std::optional<GivenMatrix> w_query, w_key, w_value, w_out, b_out;

  // The backward pass (lesson_backward.cpp): after the forward steps, the gradient of `loss`
  // with respect to every step back to the inputs. kMse needs `target`: the final output's
  // shape, the batch items' rows one after another. With `learning_rate`, one step of gradient
  // descent on the weights and the loss after it. The backward reads every head's weights, so
  // release_scores does not apply to it.
  bool backward = false;
  Loss loss = Loss::kSum;
  std::optional<GivenMatrix> target;
  std::optional<double> learning_rate;
};

// The labels of a step's rows or columns. Reads like a const list; copies share one list, and
// the Recorder gives a step the list of an earlier step that shows the same labels, so that a
// long sentence's tokens are held once, not once per step.
class LabelList {
 public:
  LabelList() = default;
  LabelList(std::vector<std::string> labels);  // NOLINT: a list is its labels
  LabelList(std::initializer_list<std::string> labels) : LabelList(std::vector(labels)) {}

  const std::vector<std::string>& list() const { return list_ ? *list_ : empty_list(); }
  operator const std::vector<std::string>&() const { return list(); }  // NOLINT
  std::size_t size() const { return list().size(); }
  bool empty() const { return list().empty(); }
  const std::string& operator[](std::size_t i) const { return list()[i]; }
  const std::string& at(std::size_t i) const { return list().at(i); }
  auto begin() const { return list().begin(); }
  auto end() const { return list().end(); }
  // Appends, copying the list first if another step shares it.
  void append(const std::vector<std::string>& more);
  // Shares `other`'s list if it holds the same labels; true if it does now.
  bool share_if_same(const LabelList& other);
  friend bool operator==(const LabelList& a, const LabelList& b) { return a.list() == b.list(); }
  friend bool operator==(const LabelList& a, const std::vector<std::string>& b) {
    return a.list() == b;
  }

 private:
  static const std::vector<std::string>& empty_list();
  std::shared_ptr<std::vector<std::string>> list_;
};

// One recorded step: one matrix (the slice for one batch item and one head where those apply).
struct Step {
  StepKind kind = StepKind::kEmbeddings;  // what it is (attn/steps.hpp)
  std::string id;                         // the catalogue's id: "omega", "attention_weights", ...
  std::string title;                      // "unnormalized attention scores"
  std::string equation;                   // "ω = Q Kᵀ"
  std::optional<int> head;   // 0-based, set for per-head steps when there are several heads
  std::optional<int> batch;  // 0-based, set for per-item steps of a batch
  // The whole tensor's shape as PyTorch holds it, with the lesson's names for each dimension:
  // shape_names {"B", "T", "d_in"} with shape {3, 6, 3}. The matrix is its last two dimensions.
  std::vector<std::string> shape_names;
  std::vector<std::int64_t> shape;
  LabelList row_labels;           // one per row, or empty (rows are indices)
  LabelList col_labels;           // one per column, or empty
  bool columns_are_keys = false;  // the columns are the key tokens (a score-like step)
  std::string note;               // a sentence that explains this step's values, or empty
  Matrix values;                  // float32, row-major
  // Wall-clock seconds from the previous step's recording to this one's: the work of this step.
  double seconds = 0.0;
  // For a matrix product (queries, keys, values, omega, context_vectors, output): m · n · k.
  double multiply_adds = 0.0;
  // A step computed rows at a time (TraceConfig::stream_scores) whose values were never held
  // whole: what is known of them. Its values are then 0 x 0.
  std::shared_ptr<const StepDigest> digest;
  // The rows computed so far: rows of the step, until it is complete (for a progress display).
  std::int64_t rows_done = 0;
};

// One sentence of the input, as tokens and ids.
struct TokenizedSentence {
  std::vector<std::string> words;  // in sentence order, padded with kPadToken to the batch's T
  std::vector<std::int64_t> ids;   // one per word
  // The tokens as the tokenizer writes them, where `words` shows them otherwise (GPT-2's
  // "Ġshort", shown as "␣short"); empty when they are the words.
  std::vector<std::string> tokens;
  std::int64_t length = 0;  // words before the padding

  // Whether `label` names token i: as it is shown, or as the tokenizer writes it (a given table's
  // or target's row labels). Requires: i < words.size().
  bool named(std::size_t i, const std::string& label) const {
    return label == words[i] || (!tokens.empty() && label == tokens[i]);
  }
};

struct Trace {
  TraceConfig config;
  Vocabulary vocabulary{{}};
  std::optional<std::int64_t> pad_id;      // the padding token's id, when a batch needs padding
  std::vector<TokenizedSentence> inputs;   // one per batch item (queries, keys and values)
  std::optional<TokenizedSentence> cross;  // the keys' and values' sentence of cross-attention
  std::deque<Step> steps;                  // in computation order

  // The step with this id (and head and batch item, where they apply). Throws Error naming it
  // if there is none.
  const Step& step(StepKind kind, std::optional<int> head = std::nullopt,
                   std::optional<int> batch = std::nullopt) const;
  const Step& step(std::string_view id, std::optional<int> head = std::nullopt,
                   std::optional<int> batch = std::nullopt) const;
  // The queries and keys one head attended with: its own Q and K in the wrapper form, its
  // columns of the one projection in the split form (q.view(T, H, d_head)[:, h]).
  std::pair<Matrix, Matrix> head_queries_keys(std::optional<int> head,
                                              std::optional<int> batch) const;
  // The tokens that label keys: the cross sentence's, or the batch item's own.
  const TokenizedSentence& key_sentence(int batch) const;

  // Where step() finds each step: built by the first lookup, and again once `steps` has changed
  // (another size or first step, or a step that no longer matches), so that a renderer's lookups
  // over a batch of many sentences do not each scan every step. Not for concurrent use.
  struct StepIndex;
  mutable std::shared_ptr<const StepIndex> step_index;
};

// How a head is numbered in every view: from 1, or from 0 in a model's trace (as h.L.attn's
// heads are numbered).
int head_number(const TraceConfig& config, int head);

// Whether head h's steps are recorded: every head, or a model's chosen one.
bool head_traced(const TraceConfig& config, std::int64_t head);

// The config with the dimensions that given matrices imply (vocab_size, d_in, d_kq, d_v), every
// setting checked against its allowed range and the others. Throws Error naming the setting or
// the file, its value or shape, and what is allowed.
TraceConfig resolve(const TraceConfig& config);

// Whether the run draws anything from its seed: the embedding (no X or table given), a weight
// that is not given, or every head's weights in the wrapper form; never with a model.
bool draws_from_seed(const TraceConfig& config);

// About how much a planned step costs, in multiply-adds: a product's, or for every other step
// its values at a fixed cost each (the embedding's draws at a higher one). For a progress
// display's estimate of the time left, not for --timings.
double planned_work(const PlannedStep& step);

// Whether TraceConfig::release_unread frees a step of this kind: ω, the masked and the scaled
// scores and the exponentials (the backward pass reads the weights, not them), and the backward's
// (T, T_k) gradients, dL/dA, dL/dS, dL/dω and the causal lesson's.
bool released_unread(StepKind kind);

// Every step a run of this (resolved) config records, in order, with its shape, for `batch`
// items of t_q query tokens and t_k key tokens (`padded`: the items' lengths differ, so there
// is a padding mask). run_trace records exactly these: its Recorder checks each step against
// the plan.
// `tokens`: the distinct token ids of the inputs, the rows of the embedding table's gradient
// (0 for a given X).
std::vector<PlannedStep> plan_steps(const TraceConfig& config, std::int64_t t_q, std::int64_t t_k,
                                    std::int64_t batch, bool padded, std::int64_t tokens = 0);

// Whether a run's heads go through blocks of query rows (release_scores and stream_scores):
// not with decode or online_softmax, whose lessons read a head's whole scores.
bool rows_at_a_time(const TraceConfig& config);

// The query rows of a block when a head's scores are computed rows at a time
// (stream_scores): score_block_rows, or 0 for about 1 MiB of scores a block, a multiple of 48 (at
// least 48).
std::int64_t score_block_rows(const TraceConfig& config, std::int64_t t_k);

// What a run of this plan holds, counted: the float32 values (every planned step's, one head's
// scores at a time with release_scores, and `working`: what no output writes, the backward
// pass's working copies, a masked item's own mask, a head's next scores as they are computed),
// the steps' records, their labels (a token for each row of T rows and each key column of a
// (T, T_k) step), the values in labelled rows or columns (for a CSV, which writes labels in every
// cell), and the tokens of the sentences.
struct MemoryEstimate {
  double floats = 0.0, working = 0.0, steps = 0.0, labels = 0.0, labelled_values = 0.0,
         tokens = 0.0;
  // The values the output writes: the chosen steps' (TraceConfig::shown_steps), or every step's;
  // and the largest chosen step (one slice), at OutputCost::per_value_alone (0 for a whole trace).
  double written = 0.0, largest_written = 0.0;
  // The values of the largest step (every slice of one id) and of the largest slice: the largest
  // figure, as OutputCost::figure_of_step counts one.
  double largest_step = 0.0, largest_slice = 0.0;
  // About the bytes: these, each at a measured size (a step's record about 768 bytes; each
  // token's label held in about three lists of 48-byte strings, and its text about eight times),
  // plus what the renderer writes for them (config.output_cost).
  double bytes(const TraceConfig& config, std::int64_t t_q, std::int64_t t_k) const;
  // The float32 values and what the renderer writes for them: the large blocks, which a program
  // may prepare (on_memory_estimate).
  double matrix_bytes(const TraceConfig& config) const;
};
MemoryEstimate estimate_memory(const TraceConfig& config, std::int64_t t_q, std::int64_t t_k,
                               std::int64_t batch, bool padded, std::int64_t tokens = 0);

// estimate_memory's bytes: what the memory limit is checked against.
double estimate_bytes(const TraceConfig& config, std::int64_t t_q, std::int64_t t_k,
                      std::int64_t batch, bool padded, std::int64_t tokens = 0);

// Keeps only the steps whose id is in `ids`, in the trace's order. Throws Error naming an id
// that no step of this trace has, and the ids it has.
void select_steps(Trace& trace, const std::vector<std::string>& ids);

// The steps' ids, each once, in the steps' order.
std::vector<std::string> step_ids(const std::deque<Step>& steps);

// The ids of the steps a run of this plan records, each once, in order: the same list as
// step_ids of the run's steps (a decoded token's steps carry the token: "decode_query_t2").
std::vector<std::string> planned_step_ids(const std::vector<PlannedStep>& plan);

// Each planned step's id, in the plan's order, repeated where the plan repeats it (each head's
// "omega"); a decoding step's with its token ("decode_query_t2").
std::vector<std::string> each_planned_id(const std::vector<PlannedStep>& plan);

// How many of the plan's steps a run records before every step that `shown` picks
// (step_id_chosen) is recorded: up to the last of them; the whole plan when `shown` is empty or
// picks none.
std::size_t planned_stop(const std::vector<PlannedStep>& plan, std::span<const std::string> shown);

// Throws Error for an id of `chosen` that picks none of `ids` (step_id_chosen): "step 'X' is not
// in this trace: its steps are A, B, ...".
void require_step_ids(std::span<const std::string> chosen, const std::vector<std::string>& ids);

// Tokenizes, embeds, projects and attends, recording each step; like a module's forward().
// Throws Error for a config that resolve() refuses or a sentence with no words.
Trace run_trace(const TraceConfig& config);

// A trace without steps: the config resolved, the sentences tokenized into one dictionary, and
// the padded ids — what run_trace knows before it embeds anything (for a given X, its rows'
// labels). Costs time and memory in the tokens only: nothing is embedded, drawn or computed.
// Throws Error as run_trace would for a config that resolve() refuses, a sentence with no
// words, or a vocabulary smaller than the dictionary.
Trace outline_trace(const TraceConfig& config);

}  // namespace attn
