#pragma once

// The Trace: every intermediate of one attention computation, as an ordered list of named
// steps. Every output format and every test reads it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/tokenizer.hpp"
#include "attn/torch_random.hpp"

namespace attn {

inline constexpr std::string_view kWalkthroughSentence = "Life is short, eat dessert first";
// The largest d_in, d_kq and d_v: 8192 is wider than the models the lesson is about, and keeps
// every weight matrix under 256 MiB.
inline constexpr std::int64_t kMaxDimension = 8192;
// The largest vocabulary. The table is never stored (only the sentence's rows are computed, and
// the sentence's ids are the first ones), so the limit is one of sense, not of cost: no model has
// a billion words, and vocab_size * d_in stays far from PyTorch's int64 element count.
inline constexpr std::int64_t kMaxVocabSize = 1'000'000'000;

// What to compute. The defaults are the walkthrough's.
struct TraceConfig {
  std::string sentence{kWalkthroughSentence};
  std::uint64_t seed = 123;         // torch.manual_seed(seed), before the embedding and the weights
  std::int64_t vocab_size = 50000;  // nn.Embedding(vocab_size, d_in)
  std::int64_t d_in = 3;            // embedding width
  std::int64_t d_kq = 2;            // width of queries and keys
  std::int64_t d_v = 4;             // width of values and context vectors
  TorchKernel kernel = TorchKernel::kAvx2;
};

// One recorded step.
struct Step {
  std::string id;                       // stable, documented: "omega", "attention_weights", ...
  std::string symbol;                   // the lesson's symbol: "ω"
  std::string title;                    // "unnormalized attention scores"
  std::string equation;                 // "ω = Q Kᵀ"
  std::optional<int> head;              // set where heads apply (0-based)
  std::vector<std::string> row_labels;  // one per row, or empty (rows are indices)
  std::vector<std::string> col_labels;  // one per column, or empty
  Matrix values;                        // float32, row-major
};

struct Trace {
  TraceConfig config;
  std::vector<std::string> words;  // tokens, in sentence order
  Vocabulary vocabulary{{}};
  std::vector<std::int64_t> ids;  // one per word
  std::vector<Step> steps;        // in computation order

  // The step with this id. Throws Error naming the id if there is none.
  const Step& step(std::string_view id) const;
};

// The ids of the single-head trace's steps, in order.
const std::vector<std::string_view>& step_ids();

// Checks every setting against its allowed range. Throws Error naming the setting, its value
// and what is allowed.
void validate(const TraceConfig& config);

// Tokenizes, embeds, projects and attends, recording each step; like a module's forward().
// Throws Error for a config that validate() refuses or a sentence with no words.
Trace run_trace(const TraceConfig& config);

}  // namespace attn
