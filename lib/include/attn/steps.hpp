#pragma once

// The step catalogue: every step a trace can hold, once, with its id, title, equation,
// description and the views that draw it. The trace, --describe, the memory plan, the heatmap's
// choice and every renderer name steps through it; no step id is written anywhere else.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace attn {

// The steps, in the order a trace records them.
enum class StepKind : std::uint8_t {
  kEmbeddings,           // X
  kEmbeddings2,          // X₂, cross-attention's second sentence
  kWQuery,               // W_q
  kWKey,                 // W_k
  kWValue,               // W_v
  kWOut,                 // W_o, the split form's output projection
  kBOut,                 // b_o, its bias
  kQueries,              // Q
  kKeys,                 // K
  kValues,               // V
  kOmega,                // ω = Q Kᵀ
  kMask,                 // M
  kMaskedOmega,          // ω with the masked keys at −inf
  kScaledScores,         // ω / √d_k
  kRowMax,               // the softmax's row max
  kExponentials,         // exp(s − m)
  kRowSums,              // Σ_j exp(s − m)
  kAttentionWeights,     // A
  kWeightSums,           // the check that each row of A sums to 1
  kUnmaskedWeights,      // the causal lesson's other way: softmax without the mask,
  kZeroedWeights,        // ... the masked weights zeroed,
  kRenormalizedWeights,  // ... each row divided by its sum
  kContextVectors,       // Z = A V
  kContextConcat,        // the heads' Z side by side
  kOutput,               // the split form's output projection
  // Rotary position embeddings (recorded after the projections, before ω).
  kRopeCos,        // the cos table
  kRopeSin,        // the sin table
  kRotatedQueries,  // Q rotated
  kRotatedKeys,     // K rotated
};

// What a step is, for every view.
struct StepInfo {
  StepKind kind;
  std::string_view id;           // stable and documented: "attention_weights"
  std::string_view title;        // "attention weights, each row sums to 1"
  std::string_view equation;     // the usual form: "A = softmax(ω / √d_k)"
  std::string_view description;  // --describe: what it computes and why
  bool heatmap;                  // --format heatmap draws it when no --steps are chosen
  bool scores;                   // a (T, T_k) matrix whose columns are keys
  bool signed_values;            // its values can be negative: the heatmap centres its colours on 0
};

// Every step, in recording order.
std::span<const StepInfo> step_catalogue();
const StepInfo& step_info(StepKind kind);
// The step with this id, if there is one.
std::optional<StepKind> step_kind(std::string_view id);

}  // namespace attn
