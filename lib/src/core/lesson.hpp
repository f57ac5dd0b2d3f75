#pragma once

// The lesson's steps, each a function that computes one part of the forward pass and records
// what it computed: run_trace (trace.cpp) calls them in order, as a model's forward() calls its
// layers. Internal to the library.

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/rope.hpp"
#include "attn/statistics.hpp"
#include "attn/steps.hpp"
#include "attn/trace.hpp"

namespace attn::lesson {

// What a step shows besides its values; an empty title is the catalogue's.
struct Labels {
  std::vector<std::string> rows = {};  // one per row, or none
  std::vector<std::string> cols = {};  // one per column, or none
  std::string note = {};
  std::string title = {};
  // A note that reports the largest of some measure of the rows: `note` holds "{0:.1e}" where
  // it goes. Rows at a time, the note gets the largest of every block's.
  std::optional<float> largest = {};
  std::string id_suffix = {};  // after the catalogue's id, for a step recorded once per token
  // A note that names rows: `note_of` makes it, in place of `note`, from the largest (0 without
  // one) and the rows flagged (0-based, of these values). Rows at a time, it is made once every
  // block is in, from every block's rows, numbered in the whole step.
  std::vector<Eigen::Index> flagged_rows = {};
  std::function<std::string(float largest, const std::vector<Eigen::Index>& rows)> note_of = {};
};

// The block a Recorder is recording (begin_rows): its rows, and the steps it adds to, in order.
// (Outside the class: a nested struct with member initializers is not complete where the
// class's std::optional member needs it to be, for clang.)
struct RecorderBlock {
  Eigen::Index first = 0, count = 0, total = 0;
  std::size_t next = 0;            // the position of the next add() in the block
  std::vector<std::size_t> steps;  // indices in the trace's steps
  std::vector<RowDigester> digesters;
  std::vector<std::string> notes;  // a `largest` note's text, before formatting
  std::vector<std::optional<float>> largest;
  std::vector<std::vector<Eigen::Index>> flagged_rows;  // Labels::flagged_rows, of the whole step
  std::vector<decltype(Labels::note_of)> note_of;
  std::vector<double> work;   // each step's planned_work()
  std::deque<Matrix> values;  // this block's values, as add() returned them
};

// Thrown by Recorder::stop_if_done once every step that TraceConfig::shown_steps names is
// recorded: run_trace ends the run there.
struct RunDone {};

// Records steps into a trace, adding the batch and head dimensions to their shapes where they
// apply, and hands them on (TraceConfig::on_step) once they are final.
class Recorder {
 public:
  explicit Recorder(Trace& trace);

  // Records a step of this kind. `batch` and `head` are set for per-item and per-head steps;
  // they are dropped when there is a single item or a single head. `dims` names the matrix's
  // dimensions ({"T", "d_in"}), or the one dimension of a vector stored as a row.
  const Matrix& add(StepKind kind, std::string equation, std::vector<std::string> dims,
                    Matrix values, std::optional<int> batch, std::optional<int> head,
                    Labels labels = {});

  // The last step is the product (m, k) @ (k, n): its size, for --timings, and its note when
  // the blocked kernel computed it. Rows at a time, m is the block's rows.
  void mark_product(Eigen::Index m, Eigen::Index n, Eigen::Index k);
  // The last step is a sum of products, each (m, k) @ (k, n): their sizes, for --timings, and the
  // note of the largest the blocked kernel computed, if any. Not rows at a time.
  struct ProductShape {
    Eigen::Index m, n, k;
  };
  void mark_products(const std::vector<ProductShape>& products);

  // Rows at a time (TraceConfig::stream_scores): between begin_rows and end_rows, add() records
  // rows [first, first + count) of the next steps, the same steps in the same order for every
  // block, and returns the block's values. A step whose columns are keys keeps only its digest;
  // any other is assembled row by row. The steps are complete, and flush() hands them on, after
  // the last block (first + count == total).
  void begin_rows(Eigen::Index first, Eigen::Index count, Eigen::Index total);
  void end_rows();

  // Hands every step recorded since the last flush to config.on_step, in order; with
  // config.release_scores, then frees the values of those whose columns are keys (the (T, T)
  // steps). Call it only where no later step reads those.
  void flush() { hand_on(false); }

  // flush(), with config.release_scores, except that the last step's values (a (T, T) step) are
  // handed back instead of freed: the next step can be computed in their memory.
  Matrix flush_take() { return hand_on(true); }

  // The number of steps recorded so far: where a head's steps begin, for release_from().
  std::size_t recorded() const { return trace_.steps.size(); }

  // With config.release_head_steps (and release_scores and stream_scores): frees the values of
  // the steps from `first` on that are handed on. Call it when a head is done, for the steps only
  // that head reads (its Q, K and V, its context vectors, which the caller has copied).
  void release_from(std::size_t first);

  const TraceConfig& config() const { return trace_.config; }
  // The last step recorded.
  const Step& last() const { return trace_.steps.back(); }

  // The steps to record from here on, in order: add() refuses (as a bug) a step that is not the
  // next one planned, so the plan that the memory estimate adds up is the one that allocates.
  void follow(std::vector<PlannedStep> plan);

  // Called where no step is half done (between the inputs, the weights, the items, a head's
  // projections and its scores, the heads and the backward pass): throws RunDone once every step
  // that config.shown_steps names is recorded, so that the steps after them are not computed.
  void stop_if_done() const;

  // lesson::require_finite(m, what, first_row), except that a block of rows that add() has just
  // digested is not read again: its statistics counted its finite values.
  const Matrix& require_finite(const Matrix& m, const char* what, Eigen::Index first_row = 0) const;

 private:
  Matrix hand_on(bool take_last);
  // The share of the plan's work recorded so far, 0 to 1 (TraceConfig::on_record).
  double done() const;
  const Matrix& add_rows(Step& s, Matrix values, const Labels& labels);
  // Gives the step's labels the list of a recent step that shows the same labels.
  void share_labels(Step& s);

  // The block being recorded (begin_rows).
  std::optional<RecorderBlock> block_;

  Trace& trace_;
  std::int64_t batch_size_;
  std::vector<PlannedStep> plan_;
  std::size_t recorded_ = 0;
  std::size_t stop_ = 0;  // the planned steps after which the run may end (shown_steps)
  double planned_work_ = 0.0, work_done_ = 0.0;  // the plan's planned_work(), and what is done
  std::size_t flushed_ = 0;
  const Matrix* known_finite_ = nullptr;  // the values add() returned last, if digested and finite
  std::vector<LabelList> recent_labels_;  // the last lists of labels recorded, newest first
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Refuses a matrix with an inf or nan, naming `what`: given numbers can be so large that a
// product overflows float32, and the overflow is reported where it happens. `first_row`: the
// row of the whole that is m's first (m a block of rows).
const Matrix& require_finite(const Matrix& m, const char* what, Eigen::Index first_row = 0);

// --- tokenize and embed (lesson_inputs.cpp) ---------------------------------------------------

// The embedded inputs: one X per batch item, and X₂ of cross-attention. The pointers are the
// steps' values, which the trace keeps in place.
struct Inputs {
  std::vector<const Matrix*> x;
  const Matrix* x_cross = nullptr;
};

// The words of every sentence, one dictionary for all of them, the padded ids, and X for each
// (or X as given). Refuses a run that would need more memory than the config allows, as soon as
// the lengths are known.
Inputs tokenize_and_embed(Trace& trace, Recorder& rec);

// --- the weights (lesson_weights.cpp) ---------------------------------------------------------

// A weight as the computation reads it: its step's values, which the trace keeps in place for
// the whole run (so a head's weights are held once, not also copied). Binds to a step's values
// only: a temporary is refused at compile time.
class WeightView {
 public:
  WeightView() = default;
  // Implicit both ways, so that it is read where a const Matrix& is.
  WeightView(const Matrix& m) : m_(&m) {}
  WeightView(Matrix&&) = delete;
  operator const Matrix&() const { return *m_; }

 private:
  const Matrix* m_ = nullptr;
};

struct HeadWeights {
  WeightView w_q, w_k, w_v;
};
struct Weights {
  std::vector<HeadWeights> heads;  // one set per head (wrapper), or one d_out wide (split)
  Matrix w_o, b_o;                 // the split form's output projection
  Matrix b_q, b_k, b_v;            // a model's projection biases (c_attn's), one row each
  // With rotary embeddings, their cos and sin tables (like a module's buffers).
  std::optional<RopeTables> rope;
};

// torch.manual_seed(seed), then every weight in PyTorch's creation order.
Weights draw_weights(Recorder& rec);

// --- a GPT-2 checkpoint (lesson_model.cpp) ----------------------------------------------------

// wte's and wpe's rows of every sentence, and their sum h₀, recorded per item.
Inputs embed_model(Trace& trace, Recorder& rec);

// The traced layer's attention weights: W_q, W_k, W_v and their biases, cut from c_attn; W_o and
// b_o, its c_proj.
Weights model_weights(Recorder& rec);

// Each item's stream entering the traced layer (blocks 0 … layer − 1 run on its h₀, each block
// converted from the checkpoint once for all the items), then ln_1 of it: the attention's X,
// which it returns (the steps' values), item by item.
std::vector<const Matrix*> enter_layer(Recorder& rec, const std::vector<const Matrix*>& h0,
                                       const std::vector<TokenizedSentence>& inputs);

// --- attention, one batch item at a time (lesson_attend.cpp) ----------------------------------

// The mask of one batch item: causal, padding, or both.
struct Mask {
  bool masked = false;  // a mask step is recorded
  // (T, T_k), 1 = masked; 0 x 0 when nothing is masked, or when the rows are computed a block
  // at a time (then, in a block's Item, the block's rows).
  Matrix values;
  std::string equation, note;
  std::vector<std::string> fully_masked;  // 1-based numbers of the rows that mask every key
  // The rule: key j after query i (causal), outside the window, or a padded query or key (i >=
  // query_length or j >= key_length).
  bool causal = false;
  Eigen::Index window = 0;  // > 0: key j more than window − 1 tokens before query i, too
  Eigen::Index t_q = 0, t_k = 0, query_length = 0, key_length = 0;
  // Rows [first, first + count) of the (T, T_k) mask.
  Matrix rows(Eigen::Index first, Eigen::Index count) const;
};

// One batch item: its tokens, its X, and its mask.
struct Item {
  int index = 0;
  const TokenizedSentence& queries;  // the query tokens
  const TokenizedSentence& keys;     // the key and value tokens
  const Matrix& x;                   // X
  const Matrix& x_kv;                // X, or X₂ for cross-attention
  Mask mask;
};

Mask make_mask(const Trace& trace, const TokenizedSentence& queries, const TokenizedSentence& keys);

// Q, K and V (the steps' values).
struct Qkv {
  const Matrix *q, *k, *v;
};
Qkv project(Recorder& rec, const Item& item, const HeadWeights& w, std::optional<int> head);
// A model's Q, K and V of every head: X W + b (lesson_model.cpp).
Qkv model_project(Recorder& rec, const Item& item, const Weights& w);

// One head's attention: ω, the mask, the scaling, the softmax (and its steps), the causal
// lesson's other way, and the context vectors Z, which it returns.
const Matrix& attend(Recorder& rec, const Item& item, const Matrix& q, const Matrix& k,
                     const Matrix& v, std::int64_t d_k, std::optional<int> head);

// --- the KV cache and the online softmax (lesson_decode.cpp) ----------------------------------

// Incremental decoding of one head, after its attention: for each token t, q_t, k_t and v_t (the
// rows of q, k and v), the cache as it grows, the row of scores and weights against it, and z_t;
// then every z_t stacked, checked against z (the full computation's).
void decode_lesson(Recorder& rec, const Item& item, const Matrix& q, const Matrix& k,
                   const Matrix& v, std::int64_t d_k, const Matrix& z, std::optional<int> head);

// FlashAttention's online softmax of one head over the scaled (and masked) scores, tile by tile,
// checked against z.
void online_lesson(Recorder& rec, const Item& item, const Matrix& scaled, const Matrix& v,
                   const Matrix& z, std::optional<int> head);

// --- the heads together (lesson_heads.cpp) ----------------------------------------------------

// Every head of one item, attended in turn: the wrapper's per-head projections, or the split
// form's one projection cut into heads. Returns the heads' Z side by side, (T, H·d_v): each head's
// columns are written as it is done, so that its own Z step can be freed.
Matrix attend_heads(Recorder& rec, const Item& item, const Weights& w);

// The heads' Z side by side (attend_heads's, recorded as a step when there are several), and the
// split form's output projection.
void combine_heads(Recorder& rec, const Item& item, const Weights& w, Matrix z);

// --- the backward pass (lesson_loss.cpp, lesson_backward.cpp, lesson_backward_inputs.cpp) ------

// i, when there are several (of heads, of batch items); none otherwise, as the Recorder and
// Trace::step index steps.
std::optional<int> index_if(bool several, std::int64_t i);

// The rows of every matrix, one after another: (Σ rows, cols). Requires: at least one part.
Matrix stacked(const std::vector<Matrix>& parts);

// The attention's final output of one item: Z, the heads' Z side by side, or the split form's
// output projection.
const Matrix& final_output(const Trace& trace, std::optional<int> batch);

// Refuses a target (the mse loss's) that is not `cols` wide with a row per output row (every
// item's tokens, padded), or whose row labels are not those tokens in order.
void check_target(const Trace& trace, Eigen::Index cols);

// L of the items' final outputs (`outs`: their rows one after another, `items` items), read as
// PyTorch holds them: the split form's (W_o Zᵀ)ᵀ with --init rand-transposed is a transposed view
// (loss_value). target: for the mse loss.
float lesson_loss(const TraceConfig& c, const Matrix& outs, const Matrix& target,
                  std::int64_t items);

// Records the loss of every item's final output (checking the mse loss's target), and returns
// its gradient at each item's output (lesson_loss.cpp).
std::vector<Matrix> record_loss(Recorder& rec, const Trace& trace, std::int64_t batch);

// The items of a batch whose weights are applied as W.matmul(xᵀ) (--init rand-transposed): their
// weights' gradients are added item by item (items_transposed_product); 1 otherwise.
std::int64_t transposed_batch(const TraceConfig& c, std::size_t items);

// The forward pass again for other weights, without recording: one item's final output.
// mask: the item's (T, T_k) mask as its mask step holds it, or null for none. The shapes of its
// matrix products are added to `products` (for Recorder::mark_products).
Matrix forward_output(const TraceConfig& c, const Matrix& x, const Matrix& x_kv, const Matrix* mask,
                      const Weights& w, std::vector<Recorder::ProductShape>& products);

// One item's gradients at the projections: dL/dQ, dL/dK, dL/dV per head (wrapper) or one set
// (split: d_out wide, K and V d_kv wide).
struct ItemGrads {
  const Matrix* mask = nullptr;  // the item's mask step's values, or null for none
  std::vector<Matrix> dq, dk, dv;
};

// The weights', X's and the embedding table's gradients, then the step of gradient descent.
void record_input_grads(Recorder& rec, const Trace& trace, const Inputs& inputs, const Weights& w,
                        const std::vector<ItemGrads>& items);

// "row 3" or "rows 3, 5" (1-based numbers; past ten, "rows 1, …, 10 and 5 more"); with verbs,
// "row 3 is" or "rows 3, 5 are".
std::string rows_text(const std::vector<std::string>& rows, std::string_view one_verb = {},
                      std::string_view many_verb = {});

// After the forward steps: the loss and every gradient back to the inputs (config.backward).
void backward(Trace& trace, Recorder& rec, const Inputs& inputs, const Weights& w);

}  // namespace attn::lesson
