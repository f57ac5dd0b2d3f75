#pragma once

// The step catalogue: every step a trace can hold, once, with its id, title, equation,
// description and the views that draw it. The trace, --describe, the memory plan, the heatmap's
// choice and every renderer name steps through it; no step id is written anywhere else.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
  // The backward pass (--backward): gradients of the loss, from the output back to the inputs.
  kLoss,                  // L
  kGradOutput,            // dL/d out, the split form
  kGradWOut,              // dL/dW_o
  kGradBOut,              // dL/db_o
  kGradContextConcat,     // dL/dZ of the heads side by side
  kGradContext,           // dL/dZ
  kGradAttentionWeights,  // dL/dA = dZ Vᵀ
  kGradValues,            // dL/dV = Aᵀ dZ
  kGradRowDot,            // r = rowsum(dA ⊙ A)
  kGradScaledScores,      // dL/dS = A ⊙ (dA − r)
  kGradOmega,             // dL/dω = dS / √d_k, 0 where masked
  kGradZeroedWeights,     // the causal lesson's other way, backwards: through the row sums,
  kGradUnmaskedWeights,   // ... the zeroing,
  kGradOmegaOtherWay,     // ... the unmasked softmax and the scaling, to ω
  kGradRotatedQueries,    // dL/dQ' = dω K' (rotary embeddings)
  kGradRotatedKeys,       // dL/dK' = dωᵀ Q'
  kGradQueries,           // dL/dQ = dω K (or back through the rotation)
  kGradKeys,              // dL/dK = dωᵀ Q (or back through the rotation)
  kGradSharedKeys,        // a shared K/V head's dL/dK: its query heads' summed
  kGradSharedValues,      // ... and its dL/dV
  kGradWQuery,            // dL/dW_q
  kGradWKey,              // dL/dW_k
  kGradWValue,            // dL/dW_v
  kGradEmbeddings,        // dL/dX
  kGradEmbeddings2,       // dL/dX₂
  kGradEmbeddingTable,    // the embedding table's gradient rows, by token
  kStepWQuery,            // W_q − η dL/dW_q
  kStepWKey,              // W_k − η dL/dW_k
  kStepWValue,            // W_v − η dL/dW_v
  kStepWOut,              // W_o − η dL/dW_o
  kStepBOut,              // b_o − η dL/db_o
  kLossAfterStep,         // L with the stepped weights
  // Incremental decoding with a KV cache (--decode), per head, one set per new token t:
  kDecodeQuery,    // q_t
  kDecodeKey,      // k_t
  kDecodeValue,    // v_t
  kKeyCache,       // the keys cached so far
  kValueCache,     // the values cached so far
  kDecodeScores,   // q_t K_cacheᵀ / √d_k
  kDecodeWeights,  // softmax of those
  kDecodeContext,  // z_t
  kDecodeCheck,    // every z_t, against the full computation's Z
  // FlashAttention's online softmax (--online-softmax B), per head:
  kOnlineMax,      // m after each tile
  kOnlineRescale,  // c = exp(m_before − m_after) of each tile
  kOnlineSum,      // ℓ after each tile
  kOnlineOutput,   // O after the last tile
  kOnlineContext,  // Z = O / ℓ
  // Rotary position embeddings (recorded after the projections, before ω).
  kRopeCos,         // the cos table
  kRopeSin,         // the sin table
  kRotatedQueries,  // Q rotated
  kRotatedKeys,     // K rotated
  // A GPT-2 checkpoint (--model):
  kTokenEmbeddings,     // wte's rows of the ids
  kPositionEmbeddings,  // wpe's rows 0 … T−1
  kResidualStream,      // the stream entering the layer traced, after the blocks before it
  kLayerNorm,           // ln_1 of the stream: the attention's X
  kBQuery,              // b_q, c_attn's bias for the queries
  kBKey,                // b_k
  kBValue,              // b_v
  kHeadQueries,         // a head's Q: its d / H columns of Q
  kHeadKeys,            // its K
  kHeadValues,          // its V
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
// Whether a trace's step id is chosen by `ids` (--steps): it is one of them, or it is one token's
// step of incremental decoding (key_cache_t3) and its kind's id (key_cache) is one of them, so
// that the id the overview shows chooses every token's step.
bool step_id_chosen(std::span<const std::string> ids, std::string_view step_id);

}  // namespace attn
