#pragma once

// The lesson's steps, each a function that computes one part of the forward pass and records
// what it computed: run_trace (trace.cpp) calls them in order, as a model's forward() calls its
// layers. Internal to the library.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "attn/rope.hpp"
#include "attn/steps.hpp"
#include "attn/trace.hpp"

namespace attn::lesson {

// What a step shows besides its values; an empty title is the catalogue's.
struct Labels {
  std::vector<std::string> rows = {};  // one per row, or none
  std::vector<std::string> cols = {};  // one per column, or none
  std::string note = {};
  std::string title = {};
};

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
  // the blocked kernel computed it.
  void mark_product(Eigen::Index m, Eigen::Index n, Eigen::Index k);

  // Hands every step recorded since the last flush to config.on_step, in order; with
  // config.release_scores, then frees the values of those whose columns are keys (the (T, T)
  // steps). Call it only where no later step reads those.
  void flush() { hand_on(false); }

  // flush(), with config.release_scores, except that the last step's values (a (T, T) step) are
  // handed back instead of freed: the next step can be computed in their memory.
  Matrix flush_take() { return hand_on(true); }

  const TraceConfig& config() const { return trace_.config; }

  // The steps to record from here on, in order: add() refuses (as a bug) a step that is not the
  // next one planned, so the plan that the memory estimate adds up is the one that allocates.
  void follow(std::vector<PlannedStep> plan) { plan_ = std::move(plan); }

 private:
  Matrix hand_on(bool take_last);

  Trace& trace_;
  std::int64_t batch_size_;
  std::vector<PlannedStep> plan_;
  std::size_t recorded_ = 0;
  std::size_t flushed_ = 0;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Refuses a matrix with an inf or nan, naming `what`: given numbers can be so large that a
// product overflows float32, and the overflow is reported where it happens.
const Matrix& require_finite(const Matrix& m, const char* what);

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

struct HeadWeights {
  Matrix w_q, w_k, w_v;
};
struct Weights {
  std::vector<HeadWeights> heads;  // one set per head (wrapper), or one d_out wide (split)
  Matrix w_o, b_o;                 // the split form's output projection
  // With rotary embeddings, their cos and sin tables (like a module's buffers).
  std::optional<RopeTables> rope;
};

// torch.manual_seed(seed), then every weight in PyTorch's creation order.
Weights draw_weights(Recorder& rec);

// --- attention, one batch item at a time (lesson_attend.cpp) ----------------------------------

// The mask of one batch item: causal, padding, or both.
struct Mask {
  bool masked = false;  // a mask step is recorded
  Matrix values;        // (T, T_k), 1 = masked; 0 x 0 when nothing is masked
  std::string equation, note;
  std::vector<std::string> fully_masked;  // 1-based numbers of the rows that mask every key
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

// One head's attention: ω, the mask, the scaling, the softmax (and its steps), the causal
// lesson's other way, and the context vectors Z, which it returns.
const Matrix& attend(Recorder& rec, const Item& item, const Matrix& q, const Matrix& k,
                     const Matrix& v, std::int64_t d_k, std::optional<int> head);

// --- the heads together (lesson_heads.cpp) ----------------------------------------------------

// Every head of one item, attended in turn: the wrapper's per-head projections, or the split
// form's one projection cut into heads. Returns each head's Z.
std::vector<Matrix> attend_heads(Recorder& rec, const Item& item, const Weights& w);

// The heads' Z side by side, and the split form's output projection.
void combine_heads(Recorder& rec, const Item& item, const Weights& w,
                   const std::vector<Matrix>& zs);

}  // namespace attn::lesson
