#include "attn/steps.hpp"

#include <algorithm>
#include <array>

namespace attn {

namespace {

constexpr std::array<StepInfo, 85> kCatalogue = {{
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
    // The backward pass.
    {StepKind::kLoss, "loss", "the loss, the scalar the gradients are of", "L = Σ out",
     "The backward pass starts from one number, the loss. Every gradient below says how much L "
     "would change if that one value were nudged: dL/dx ≈ (L(x + h) − L(x)) / h.",
     false, false, true},
    {StepKind::kGradOutput, "grad_output", "the loss's gradient at the output projection",
     "dL/d out",
     "How L changes with each value of the output: 1 everywhere for L = Σ out, 2 (out − target) "
     "/ N for the mean squared error.",
     false, false, true},
    {StepKind::kGradWOut, "grad_w_out", "the gradient of the output weights",
     "dL/dW_o = Zᵀ dL/d out",
     "Each output weight's gradient: the context vectors it multiplied, times the output's "
     "gradient, summed over the tokens. In the layout W_o is stored.",
     false, false, true},
    {StepKind::kGradBOut, "grad_b_out", "the gradient of the output bias",
     "dL/db_o = Σ_t dL/d out_t",
     "The bias is added to every row, so its gradient is the output's gradient summed over the "
     "tokens.",
     false, false, true},
    {StepKind::kGradContextConcat, "grad_context_concat",
     "the gradient of the heads' context vectors side by side", "dL/dZ",
     "The gradient of the concatenated context vectors; each head takes its own columns.", false,
     false, true},
    {StepKind::kGradContext, "grad_context_vectors", "the gradient of the context vectors", "dL/dZ",
     "How L changes with each context vector: the start of one head's backward pass.", false, false,
     true},
    {StepKind::kGradAttentionWeights, "grad_attention_weights",
     "the gradient of the attention weights", "dL/dA = dL/dZ Vᵀ",
     "Z = A V, so weight A_ij's gradient is the dot product of row i of dL/dZ with value j: "
     "attending more to a value helps L as much as that value points along dL/dZ.",
     true, true, true},
    {StepKind::kGradValues, "grad_values", "the gradient of the values", "dL/dV = Aᵀ dL/dZ",
     "Each value's gradient: the gradients of the context vectors it went into, weighted by how "
     "much each query attended to it.",
     false, false, true},
    {StepKind::kGradRowDot, "grad_row_dot", "each row's weighted mean of dL/dA",
     "r_i = Σ_j dA_ij A_ij",
     "The softmax's backward subtracts, from each weight's gradient, the row's mean gradient "
     "weighted by the weights: the weights sum to 1, so raising one lowers the others.",
     false, false, true},
    {StepKind::kGradScaledScores, "grad_scaled_scores",
     "the gradient of the scaled scores, through the softmax", "dL/dS = A ⊙ (dA − r)",
     "The softmax's Jacobian applied to dL/dA: dS_ij = A_ij (dA_ij − r_i). A score whose weight "
     "is near 0 gets almost no gradient.",
     true, true, true},
    {StepKind::kGradOmega, "grad_omega", "the gradient of the scores ω", "dL/dω = dL/dS / √d_k",
     "Back through the scaling, and through the mask: a masked score was replaced by −inf, so "
     "its gradient is 0.",
     true, true, true},
    {StepKind::kGradZeroedWeights, "grad_zeroed_weights",
     "the other way, backwards: the gradient of the zeroed weights",
     "dL/dA'' = (dL/dA − rowsum(dL/dA ⊙ A)) / s",
     "The causal lesson's other way, run backwards from the same dL/dZ. Dividing each row by "
     "its sum s has a backward like the softmax's: each weight's gradient less the row's "
     "weighted mean, over s.",
     false, true, true},
    {StepKind::kGradUnmaskedWeights, "grad_unmasked_weights",
     "... the gradient of the unmasked softmax's weights", "dL/dA' = dL/dA'' ⊙ (1 − M)",
     "Zeroing a weight multiplied it by 0, so no gradient goes back through it.", false, true,
     true},
    {StepKind::kGradOmegaOtherWay, "grad_omega_other_way",
     "... back to ω: the same gradient as grad_omega", "dL/dω' = A' ⊙ (dL/dA' − r') / √d_k",
     "Through the unmasked softmax and the scaling. Its row sum r'_i = Σ_j dL/dA'_ij A'_ij is 0 "
     "up to rounding, so a masked score, whose weight was zeroed after the softmax, gets almost "
     "nothing, and every other score gets what grad_omega has.",
     true, true, true},
    {StepKind::kGradRotatedQueries, "grad_rotated_queries", "the gradient of the rotated queries",
     "dL/dQ' = dL/dω K'",
     "ω = Q' K'ᵀ: the gradient of the queries as rotated, the ones the scores read.", false, false,
     true},
    {StepKind::kGradRotatedKeys, "grad_rotated_keys", "the gradient of the rotated keys",
     "dL/dK' = dL/dωᵀ Q'",
     "A rotated key's gradient: the rotated queries weighted by its column "
     "of dL/dω.",
     false, false, true},
    {StepKind::kGradQueries, "grad_queries", "the gradient of the queries", "dL/dQ = dL/dω K",
     "ω = Q Kᵀ, so a query's gradient is the keys weighted by its row of dL/dω. With rotary "
     "embeddings, the rotated queries' gradient turned back: the rotation's transpose turns each "
     "pair by the opposite angle.",
     false, false, true},
    {StepKind::kGradKeys, "grad_keys", "the gradient of the keys", "dL/dK = dL/dωᵀ Q",
     "A key's gradient is the queries weighted by its column of dL/dω (turned back by the "
     "opposite angle with rotary embeddings).",
     false, false, true},
    {StepKind::kGradSharedKeys, "grad_shared_keys",
     "the gradient of the shared keys, each K/V head's query heads summed",
     "dL/dK_g = Σ_{h ∈ g} dL/dKₕ",
     "Grouped-query attention: several query heads read one K/V head, so its keys' gradient is "
     "the sum of theirs (repeat_interleave's backward).",
     false, false, true},
    {StepKind::kGradSharedValues, "grad_shared_values",
     "the gradient of the shared values, each K/V head's query heads summed",
     "dL/dV_g = Σ_{h ∈ g} dL/dVₕ",
     "A shared K/V head's values' gradient: the sum of its query heads'.", false, false, true},
    {StepKind::kGradWQuery, "grad_w_query", "the gradient of the query weights",
     "dL/dW_q = Xᵀ dL/dQ",
     "The query weights' gradient: the embeddings times the queries' gradient, summed over the "
     "tokens (and sentences). In the layout W_q is stored.",
     false, false, true},
    {StepKind::kGradWKey, "grad_w_key", "the gradient of the key weights", "dL/dW_k = Xᵀ dL/dK",
     "The key weights' gradient, in the layout W_k is stored.", false, false, true},
    {StepKind::kGradWValue, "grad_w_value", "the gradient of the value weights",
     "dL/dW_v = Xᵀ dL/dV", "The value weights' gradient, in the layout W_v is stored.", false,
     false, true},
    {StepKind::kGradEmbeddings, "grad_embeddings", "the gradient of the embeddings",
     "dL/dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ",
     "X went into the queries, the keys and the values, so its gradient is the sum of the three "
     "paths back.",
     false, false, true},
    {StepKind::kGradEmbeddings2, "grad_embeddings_2",
     "the gradient of the key and value sentence's embeddings", "dL/dX₂ = dK W_kᵀ + dV W_vᵀ",
     "X₂ gave the keys and values: its gradient comes back along those two paths.", false, false,
     true},
    {StepKind::kGradEmbeddingTable, "grad_embedding_table",
     "the embedding table's gradient, one row per token", "dL/dE[id] = Σ_{t: ids_t = id} dL/dX_t",
     "nn.Embedding's backward: each token's row of the table gets the gradients of every "
     "position that looked it up, summed; rows of words not in the input get 0.",
     false, false, true},
    {StepKind::kStepWQuery, "step_w_query", "the query weights after one step of gradient descent",
     "W_q − η dL/dW_q", "One step of training: each weight moves against its gradient.", false,
     false, true},
    {StepKind::kStepWKey, "step_w_key", "the key weights after one step", "W_k − η dL/dW_k",
     "The key weights, moved against their gradient.", false, false, true},
    {StepKind::kStepWValue, "step_w_value", "the value weights after one step", "W_v − η dL/dW_v",
     "The value weights, moved against their gradient.", false, false, true},
    {StepKind::kStepWOut, "step_w_out", "the output weights after one step", "W_o − η dL/dW_o",
     "The output weights, moved against their gradient.", false, false, true},
    {StepKind::kStepBOut, "step_b_out", "the output bias after one step", "b_o − η dL/db_o",
     "The output bias, moved against its gradient.", false, false, true},
    {StepKind::kLossAfterStep, "loss_after_step", "the loss again, with the stepped weights",
     "L(W − η dL/dW)",
     "The forward pass again with the new weights: for a small enough η the loss is lower.", false,
     false, true},
    {StepKind::kDecodeQuery, "decode_query", "the new token's query", "q_t = x_t W_q",
     "Decoding one token at a time: the new token's query, the row of Q for its position. It is "
     "used once, against the cache, and not kept.",
     false, false, true},
    {StepKind::kDecodeKey, "decode_key", "the new token's key", "k_t = x_t W_k",
     "The new token's key: computed once, appended to the cache, and never computed again.", false,
     false, true},
    {StepKind::kDecodeValue, "decode_value", "the new token's value", "v_t = x_t W_v",
     "The new token's value: computed once and appended to the cache.", false, false, true},
    {StepKind::kKeyCache, "key_cache", "the key cache, one row per token seen so far",
     "K_cache = cat(K_cache, k_t)",
     "The keys of every token so far, the new one last: the cache grows by one row per token, so "
     "no earlier key is computed twice.",
     false, false, true},
    {StepKind::kValueCache, "value_cache", "the value cache, one row per token seen so far",
     "V_cache = cat(V_cache, v_t)", "The values of every token so far, the new one last.", false,
     false, true},
    {StepKind::kDecodeScores, "decode_scores", "the new token's scaled scores against the cache",
     "s_t = q_t K_cacheᵀ / √d_k",
     "One row of scores: the new query against every cached key. The cache holds no later "
     "token, so no causal mask is needed (a padding key is still masked).",
     false, false, true},
    {StepKind::kDecodeWeights, "decode_weights", "the new token's attention weights",
     "a_t = softmax(s_t)", "The softmax of the new token's row: its weights over the cache.", false,
     false, false},
    {StepKind::kDecodeContext, "decode_context", "the new token's context vector",
     "z_t = a_t V_cache", "The new token's context vector: its weights times the cached values.",
     false, false, true},
    {StepKind::kDecodeCheck, "decode_check", "the check: every z_t, row by row",
     "Z_decode = cat(z_1, …, z_T)",
     "The decoded context vectors stacked: the same rows as the full causal computation's Z.",
     false, false, true},
    {StepKind::kOnlineMax, "online_max", "the running max m after each tile",
     "m′ = max(m, rowmax S)",
     "FlashAttention reads the keys in tiles and keeps each row's largest score so far: m starts "
     "at −inf and can only grow.",
     false, false, true},
    {StepKind::kOnlineRescale, "online_rescale", "the rescaling factor of each tile",
     "c = exp(m − m′)",
     "When a tile raises the max, what was summed so far was exponentiated against the old max: "
     "multiplying by c = exp(m − m′) <= 1 brings it to the new one. The first tile's c is 0.",
     false, false, false},
    {StepKind::kOnlineSum, "online_sum", "the running sum ℓ after each tile",
     "ℓ = c·ℓ + rowsum exp(S − m′)",
     "The softmax's denominator, accumulated tile by tile and rescaled whenever the max grows.",
     false, false, false},
    {StepKind::kOnlineOutput, "online_output", "the running output O after the last tile",
     "O = c·O + exp(S − m′) V_tile",
     "The weighted sum of values, not yet divided: each tile adds its exponentials times its "
     "values, after rescaling what came before.",
     false, false, true},
    {StepKind::kOnlineContext, "online_context", "the context vectors, O divided by ℓ", "Z = O / ℓ",
     "One division per row at the end gives the context vectors, though no row of weights was "
     "ever held whole.",
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
    {StepKind::kTokenEmbeddings, "token_embeddings", "token embeddings, the rows of wte",
     "wte[ids]",
     "Each token id picks its row of the model's token embedding table wte: n_embd numbers "
     "that training has made stand for the token.",
     false, false, true},
    {StepKind::kPositionEmbeddings, "position_embeddings", "position embeddings, the rows of wpe",
     "wpe[0 … T−1]",
     "GPT-2 learns one vector per position, and adds position t's to the token at t: the "
     "attention's dot products have no order of their own, and this gives them one.",
     false, false, true},
    {StepKind::kResidualStream, "residual_stream", "the residual stream entering the layer",
     "h_L = block_{L−1}(… block_0(h_0))",
     "Each block adds to the stream: h + attn(ln_1(h)), then h + mlp(ln_2(h)), the MLP with "
     "GELU between its two projections. The layer traced reads what the blocks before it left.",
     false, false, true},
    {StepKind::kLayerNorm, "ln_1", "the stream layer-normed: the attention's input X",
     "X = ln_1(h)",
     "Each row shifted to mean 0 and scaled to variance 1, then multiplied by ln_1's learned "
     "weight and shifted by its bias: what the attention projects.",
     false, false, true},
    {StepKind::kBQuery, "b_query", "query bias", "b_q = c_attn.bias[0 : d]",
     "GPT-2's projections have biases: c_attn adds b_q to every query.", false, false, true},
    {StepKind::kBKey, "b_key", "key bias", "b_k = c_attn.bias[d : 2d]",
     "c_attn adds b_k to every key. It adds the same number to every score of a query's row, so "
     "the softmax cancels it.",
     false, false, true},
    {StepKind::kBValue, "b_value", "value bias", "b_v = c_attn.bias[2d : 3d]",
     "c_attn adds b_v to every value.", false, false, true},
    {StepKind::kHeadQueries, "head_queries", "the head's queries, its columns of Q",
     "Qₕ = Q.view(T, H, d_head).transpose(0, 1)[h]",
     "GPT-2 splits Q into n_head heads of d / n_head columns each (split_heads): the head's "
     "queries are its own slice, and it scores with them alone.",
     false, false, true},
    {StepKind::kHeadKeys, "head_keys", "the head's keys, its columns of K",
     "Kₕ = K.view(T, H, d_head).transpose(0, 1)[h]",
     "The head's keys: the same columns of K as its queries take of Q.", false, false, true},
    {StepKind::kHeadValues, "head_values", "the head's values, its columns of V",
     "Vₕ = V.view(T, H, d_head).transpose(0, 1)[h]",
     "The head's values: what its weights mix into its context vectors.", false, false, true},
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

bool step_id_chosen(std::span<const std::string> ids, std::string_view step_id) {
  if (std::find(ids.begin(), ids.end(), step_id) != ids.end()) return true;
  // "<kind>_t<token>": the per-token steps of decoding carry the token after their kind's id.
  const std::size_t at = step_id.rfind("_t");
  if (at == std::string_view::npos || at + 2 == step_id.size() ||
      step_id.find_first_not_of("0123456789", at + 2) != std::string_view::npos) {
    return false;
  }
  const std::string_view base = step_id.substr(0, at);
  const std::optional<StepKind> kind = step_kind(base);
  return kind && *kind >= StepKind::kDecodeQuery && *kind <= StepKind::kDecodeContext &&
         std::find(ids.begin(), ids.end(), base) != ids.end();
}

}  // namespace attn
