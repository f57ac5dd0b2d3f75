#include "render_overview_looks.hpp"

#include <stdexcept>

namespace attn::overview {

namespace {

// The backward pass's steps: the chain of gradients as stages, what branches off beside them.
Look backward_look(StepKind kind) {
  switch (kind) {
    case StepKind::kLoss:
      return {"L", Place::kStage};
    case StepKind::kGradOutput:
      return {"dL/d out", Place::kStage};
    case StepKind::kGradWOut:
      return {"dL/dW_o", Place::kAside, {}, "  → "};
    case StepKind::kGradBOut:
      return {"dL/db_o", Place::kAside, {}, "  → "};
    case StepKind::kGradContextConcat:
    case StepKind::kGradContext:
      return {"dL/dZ", Place::kStage};
    case StepKind::kGradAttentionWeights:
      return {"dL/dA", Place::kStage};
    case StepKind::kGradValues:
      return {"dL/dV", Place::kBeside};
    case StepKind::kGradRowDot:
      return {"r", Place::kAside, {}, "rowsum(dA ⊙ A): "};
    case StepKind::kGradScaledScores:
      return {"dL/dS", Place::kStage};
    case StepKind::kGradOmega:
      return {"dL/dω", Place::kStage};
    case StepKind::kGradZeroedWeights:
      return {"dL/dA''", Place::kAside, {}, "the other way back: "};
    case StepKind::kGradUnmaskedWeights:
      return {"dL/dA'", Place::kAside, {}, "  → "};
    case StepKind::kGradOmegaOtherWay:
      return {"dL/dω'", Place::kAside, {}, "  → "};
    case StepKind::kGradRotatedQueries:
      return {"dL/dQ'", Place::kStage};
    case StepKind::kGradRotatedKeys:
      return {"dL/dK'", Place::kBeside};
    case StepKind::kGradQueries:
      return {"dL/dQ", Place::kStage};
    case StepKind::kGradKeys:
      return {"dL/dK", Place::kBeside};
    case StepKind::kGradSharedKeys:
      return {"Σ_h dL/dK", Place::kStage};
    case StepKind::kGradSharedValues:
      return {"Σ_h dL/dV", Place::kBeside};
    case StepKind::kGradWQuery:
      return {"dL/dW_q", Place::kStage};
    case StepKind::kGradWKey:
      return {"dL/dW_k", Place::kBeside};
    case StepKind::kGradWValue:
      return {"dL/dW_v", Place::kBeside};
    case StepKind::kGradEmbeddings:
      return {"dL/dX", Place::kStage};
    case StepKind::kGradEmbeddings2:
      return {"dL/dX₂", Place::kBeside};
    case StepKind::kGradEmbeddingTable:
      return {"dL/dE", Place::kStage};
    case StepKind::kStepWQuery:
      return {"W_q − η dW_q", Place::kStage};
    case StepKind::kStepWKey:
      return {"W_k − η dW_k", Place::kBeside};
    case StepKind::kStepWValue:
      return {"W_v − η dW_v", Place::kBeside};
    case StepKind::kStepWOut:
      return {"W_o − η dW_o", Place::kBeside};
    case StepKind::kStepBOut:
      return {"b_o − η db_o", Place::kBeside};
    case StepKind::kLossAfterStep:
      return {"L after", Place::kStage};
    default:
      break;
  }
  throw std::logic_error("look: a step kind without a look");
}

// The looks of the variants' steps (decoding, the online softmax, rotary embeddings) and of a
// model's; the backward pass's after them.
Look variant_look(StepKind kind) {
  switch (kind) {
    case StepKind::kDecodeQuery:
      return {"q_t", Place::kAside, {}, "KV cache, per token t: "};
    case StepKind::kDecodeKey:
      return {"k_t", Place::kAside, {}, "  → "};
    case StepKind::kDecodeValue:
      return {"v_t", Place::kAside, {}, "  → "};
    case StepKind::kKeyCache:
      return {"K_cache", Place::kAside, {}, "  → "};
    case StepKind::kValueCache:
      return {"V_cache", Place::kAside, {}, "  → "};
    case StepKind::kDecodeScores:
      return {"s_t", Place::kAside, {}, "  → "};
    case StepKind::kDecodeWeights:
      return {"a_t", Place::kAside, {}, "  → "};
    case StepKind::kDecodeContext:
      return {"z_t", Place::kAside, {}, "  → "};
    case StepKind::kDecodeCheck:
      return {"Z_decode", Place::kAside, {}, "check: "};
    case StepKind::kOnlineMax:
      return {"m", Place::kAside, {}, "online softmax, per tile: "};
    case StepKind::kOnlineRescale:
      return {"c", Place::kAside, {}, "  → "};
    case StepKind::kOnlineSum:
      return {"ℓ", Place::kAside, {}, "  → "};
    case StepKind::kOnlineOutput:
      return {"O", Place::kAside, {}, "  → "};
    case StepKind::kOnlineContext:
      return {"O/ℓ", Place::kAside, {}, "  → "};
    case StepKind::kRopeCos:
      return {"cos", Place::kWith, StepKind::kRotatedQueries};
    case StepKind::kRopeSin:
      return {"sin", Place::kWith, StepKind::kRotatedQueries};
    case StepKind::kRotatedQueries:
      return {"Q'", Place::kStage};
    case StepKind::kRotatedKeys:
      return {"K'", Place::kBeside};
    case StepKind::kTokenEmbeddings:
      return {"wte[ids]", Place::kStage};
    case StepKind::kPositionEmbeddings:
      return {"wpe", Place::kBeside};
    case StepKind::kResidualStream:
      return {"h_L", Place::kStage};
    case StepKind::kLayerNorm:
      return {"ln_1(h)", Place::kStage};
    case StepKind::kBQuery:
      return {"b_q", Place::kWith, StepKind::kQueries};
    case StepKind::kBKey:
      return {"b_k", Place::kWith, StepKind::kQueries};
    case StepKind::kBValue:
      return {"b_v", Place::kWith, StepKind::kQueries};
    case StepKind::kHeadQueries:
      return {"Qₕ", Place::kStage};
    case StepKind::kHeadKeys:
      return {"Kₕ", Place::kBeside};
    case StepKind::kHeadValues:
      return {"Vₕ", Place::kBeside};
    default:
      return backward_look(kind);
  }
}

}  // namespace

Look look(StepKind kind) {
  switch (kind) {
    case StepKind::kEmbeddings:
      return {"X", Place::kStage};
    case StepKind::kEmbeddings2:
      return {"X₂", Place::kBeside};
    case StepKind::kWQuery:
      return {"W_q", Place::kWith, StepKind::kQueries};
    case StepKind::kWKey:
      return {"W_k", Place::kWith, StepKind::kQueries};
    case StepKind::kWValue:
      return {"W_v", Place::kWith, StepKind::kQueries};
    case StepKind::kWOut:
      return {"W_o", Place::kWith, StepKind::kOutput};
    case StepKind::kBOut:
      return {"b_o", Place::kWith, StepKind::kOutput};
    case StepKind::kQueries:
      return {"Q", Place::kStage};
    case StepKind::kKeys:
      return {"K", Place::kBeside};
    case StepKind::kValues:
      return {"V", Place::kBeside};
    case StepKind::kOmega:
      return {"ω", Place::kStage};
    case StepKind::kMask:
      return {"M", Place::kWith, StepKind::kMaskedOmega};
    case StepKind::kMaskedOmega:
      return {"masked ω", Place::kStage};
    case StepKind::kScaledScores:
      return {"ω/√d_k", Place::kStage};
    case StepKind::kRowMax:
      return {"m", Place::kStage};
    case StepKind::kExponentials:
      return {"e", Place::kStage};
    case StepKind::kRowSums:
      return {"Σ", Place::kStage};
    case StepKind::kAttentionWeights:
      return {"A", Place::kStage};
    case StepKind::kWeightSums:
      return {"ΣA", Place::kAside, {}, "check: "};
    case StepKind::kUnmaskedWeights:
      return {"A'", Place::kAside, {}, "the other way: "};
    case StepKind::kZeroedWeights:
      return {"A''", Place::kAside, {}, "  → "};
    case StepKind::kRenormalizedWeights:
      return {"A''/Σ", Place::kAside, {}, "  → "};
    case StepKind::kContextVectors:
      return {"Z", Place::kStage};
    case StepKind::kContextConcat:
      return {"Z", Place::kStage};
    case StepKind::kOutput:
      return {"out", Place::kStage};
    default:
      return variant_look(kind);
  }
  throw std::logic_error("look: a step kind without a look");
}

}  // namespace attn::overview
