#include "attn/describe.hpp"

#include <utility>

namespace attn {

namespace {

constexpr std::pair<std::string_view, std::string_view> kDescriptions[] = {
    {"embeddings",
     "Each token id picks one row of the embedding table: a vector of d_in numbers that stands "
     "for the word. Training would move these rows; here they are the random start."},
    {"embeddings_2",
     "The second sentence's tokens, embedded with the same table: they will give the keys and "
     "values."},
    {"w_query",
     "The query weights project an embedding to what a token looks for. They are trainable; "
     "here they are drawn at random."},
    {"w_key", "The key weights project an embedding to what a token offers to be found by."},
    {"w_value",
     "The value weights project an embedding to what a token hands on when it is attended to."},
    {"w_out", "The output projection mixes the heads' context vectors back into one space."},
    {"b_out", "The output projection's bias, added to every row."},
    {"queries", "One query per token: the embedding times W_q."},
    {"keys", "One key per token: the embedding times W_k."},
    {"values", "One value per token: the embedding times W_v."},
    {"omega",
     "Each score is the dot product of a query with a key: it is large when token j's key "
     "points the way token i's query does."},
    {"mask",
     "The mask marks the pairs a query must not see: later tokens in causal attention, padding "
     "in a batch."},
    {"masked_omega",
     "Masked scores become −inf, so that the softmax gives them a weight of exactly 0."},
    {"scaled_scores",
     "A dot product of d_k terms grows with d_k; dividing by √d_k keeps the scores' spread the "
     "same for any width, so the softmax does not saturate into a one-hot row whose gradients "
     "vanish."},
    {"row_max",
     "The softmax subtracts each row's largest score first: exp never overflows, and the "
     "weights do not change, since the factor exp(−m) cancels."},
    {"exponentials",
     "exp turns every score into a positive number, the larger the score the more."},
    {"row_sums", "The sum of each row's exponentials: dividing by it makes the row sum to 1."},
    {"attention_weights",
     "The softmax of each row: positive weights that sum to 1, saying how much each token "
     "attends to every other."},
    {"weight_sums", "Each row of weights sums to 1, up to the rounding of float32."},
    {"unmasked_weights",
     "The other way to mask: first the ordinary softmax over every key, the later ones too."},
    {"zeroed_weights",
     "... then the weights of the later keys set to 0: the rows no longer sum to 1."},
    {"renormalized_weights",
     "... and each row divided by its new sum: the same weights as masking the scores with −inf."},
    {"context_vectors",
     "Each context vector is the weighted sum of all the value vectors, with its row of "
     "attention weights as the weights: the token, enriched by what it attends to."},
    {"context_concat",
     "The heads' context vectors side by side: each head attended in its own way."},
    {"output",
     "The output projection: the concatenated heads times W_o (plus its bias b_o when the "
     "weights are nn.Linear's)."},
};

}  // namespace

std::string_view describe_step(std::string_view id) {
  for (const auto& [key, text] : kDescriptions) {
    if (key == id) return text;
  }
  return {};
}

}  // namespace attn
