#include "attn/steps.hpp"

#include <array>

namespace attn {

namespace {

constexpr std::array<StepInfo, 29> kCatalogue = {{
    {StepKind::kEmbeddings, "embeddings", "the embedded sentence, one row per token",
     "X = Embedding(V, d_in)(ids)",
     "Each token id picks one row of the embedding table: a vector of d_in numbers that stands "
     "for the word. Training would move these rows; here they are the random start.",
     false, false, true},
    {StepKind::kEmbeddings2, "embeddings_2",
     "the embedded key and value sentence, one row per token", "X₂ = Embedding(V, d_in)(ids₂)",
     "The second sentence's tokens, embedded with the same table: they will give the keys and "
     "values.",
     false, false, true},
    {StepKind::kWQuery, "w_query", "query weights", "W_q = torch.rand(d_in, d_kq)",
     "The query weights project an embedding to what a token looks for. They are trainable; "
     "here they are drawn at random.",
     false, false, true},
    {StepKind::kWKey, "w_key", "key weights", "W_k = torch.rand(d_in, d_kq)",
     "The key weights project an embedding to what a token offers to be found by.", false, false,
     true},
    {StepKind::kWValue, "w_value", "value weights", "W_v = torch.rand(d_in, d_v)",
     "The value weights project an embedding to what a token hands on when it is attended to.",
     false, false, true},
    {StepKind::kWOut, "w_out", "output weights", "W_o = torch.rand(d_out, d_out)",
     "The output projection mixes the heads' context vectors back into one space.", false, false,
     true},
    {StepKind::kBOut, "b_out", "output bias", "b_o = nn.Linear(d_out, d_out).bias",
     "The output projection's bias, added to every row.", false, false, true},
    {StepKind::kQueries, "queries", "queries, one row per token", "Q = X W_q",
     "One query per token: the embedding times W_q.", false, false, true},
    {StepKind::kKeys, "keys", "keys, one row per token", "K = X W_k",
     "One key per token: the embedding times W_k.", false, false, true},
    {StepKind::kValues, "values", "values, one row per token", "V = X W_v",
     "One value per token: the embedding times W_v.", false, false, true},
    {StepKind::kOmega, "omega", "unnormalized attention scores", "ω = Q Kᵀ",
     "Each score is the dot product of a query with a key: it is large when token j's key "
     "points the way token i's query does.",
     true, true, true},
    {StepKind::kMask, "mask", "the mask", "M = triu(ones(T, T), diagonal=1)",
     "The mask marks the pairs a query must not see: later tokens in causal attention, padding "
     "in a batch.",
     false, true, false},
    {StepKind::kMaskedOmega, "masked_omega", "scores with the masked keys set to −inf",
     "ω.masked_fill(M, −inf)",
     "Masked scores become −inf, so that the softmax gives them a weight of exactly 0.", true, true,
     true},
    {StepKind::kScaledScores, "scaled_scores", "scaled attention scores", "ω / √d_k",
     "A dot product of d_k terms grows with d_k; dividing by √d_k keeps the scores' spread the "
     "same for any width, so the softmax does not saturate into a one-hot row whose gradients "
     "vanish.",
     true, true, true},
    {StepKind::kRowMax, "row_max", "the largest scaled score of each row", "m_i = max_j s_ij",
     "The softmax subtracts each row's largest score first: exp never overflows, and the "
     "weights do not change, since the factor exp(−m) cancels.",
     false, false, true},
    {StepKind::kExponentials, "exponentials", "the exponentials of the scores minus the row max",
     "e_ij = exp(s_ij − m_i)",
     "exp turns every score into a positive number, the larger the score the more.", false, true,
     false},
    {StepKind::kRowSums, "row_sums", "the sum of each row of exponentials", "Σ_i = Σ_j e_ij",
     "The sum of each row's exponentials: dividing by it makes the row sum to 1.", false, false,
     false},
    {StepKind::kAttentionWeights, "attention_weights", "attention weights, each row sums to 1",
     "A = softmax(ω / √d_k)",
     "The softmax of each row: positive weights that sum to 1, saying how much each token "
     "attends to every other.",
     true, true, false},
    {StepKind::kWeightSums, "weight_sums", "the check: each row of the weights sums to 1",
     "Σ_j A_ij", "Each row of weights sums to 1, up to the rounding of float32.", false, false,
     true},
    {StepKind::kUnmaskedWeights, "unmasked_weights", "the other way: softmax without the mask",
     "A' = softmax(ω / √d_k)",
     "The other way to mask: first the ordinary softmax over every key, the later ones too.", false,
     true, false},
    {StepKind::kZeroedWeights, "zeroed_weights", "... then the masked weights set to 0",
     "A'' = A' ⊙ (1 − M)",
     "... then the weights of the later keys set to 0: the rows no longer sum to 1.", false, true,
     false},
    {StepKind::kRenormalizedWeights, "renormalized_weights", "... and each row divided by its sum",
     "A'' / A''.sum(dim=-1, keepdim=True)",
     "... and each row divided by its new sum: the same weights as masking the scores with −inf.",
     false, true, false},
    {StepKind::kContextVectors, "context_vectors", "context vectors, one row per token", "Z = A V",
     "Each context vector is the weighted sum of all the value vectors, with its row of "
     "attention weights as the weights: the token, enriched by what it attends to.",
     false, false, true},
    {StepKind::kContextConcat, "context_concat", "the heads' context vectors side by side",
     "Z = torch.cat([Z₁, …, Z_H], dim=-1)",
     "The heads' context vectors side by side: each head attended in its own way.", false, false,
     true},
    {StepKind::kOutput, "output", "the output projection", "out = Z W_o",
     "The output projection: the concatenated heads times W_o (plus its bias b_o when the "
     "weights are nn.Linear's).",
     false, false, true},
    {StepKind::kRopeCos, "rope_cos", "the rotary embeddings' cos table, one row per position",
     "cos = cos(cat(angles, angles))",
     "Rotary position embeddings turn each pair of a query's (and a key's) numbers by an angle "
     "that grows with the token's position p: p · inv_freq, a fast turn for the first pair and "
     "slower ones after. This table holds the cosines of those angles.",
     false, false, true},
    {StepKind::kRopeSin, "rope_sin", "the rotary embeddings' sin table, one row per position",
     "sin = sin(cat(angles, angles))", "The sines of the same angles.", false, false, true},
    {StepKind::kRotatedQueries, "rotated_queries", "queries turned by their positions",
     "Q' = Q·cos + rotate_half(Q)·sin",
     "Each query's pairs turned by its position's angles. A turned query dotted with a turned "
     "key depends on how far apart the two tokens are, not on where they are: the scores learn "
     "relative positions.",
     false, false, true},
    {StepKind::kRotatedKeys, "rotated_keys", "keys turned by their positions",
     "K' = K·cos + rotate_half(K)·sin",
     "Each key's pairs turned by its position's angles, as the queries are.", false, false, true},
}};

}  // namespace

std::span<const StepInfo> step_catalogue() { return kCatalogue; }

const StepInfo& step_info(StepKind kind) { return kCatalogue[static_cast<std::size_t>(kind)]; }

std::optional<StepKind> step_kind(std::string_view id) {
  for (const StepInfo& s : kCatalogue) {
    if (s.id == id) return s.kind;
  }
  return std::nullopt;
}

}  // namespace attn
