#pragma once

// One attention weight worked out by hand: every number of its arithmetic, as the trace and
// PyTorch's softmax kernel give them. --explain formats it; the numbers come from here.

#include <optional>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct CellWorking {
  Eigen::Index i = 0, j = 0;  // the query's and the key's row, from 0
  Matrix q, k;      // q⁽ⁱ⁾ and k⁽ʲ⁾: (1, d_k), this head's columns in the split form
  Matrix products;  // q_d · k_d for each d: (1, d_k)
  // With rotary embeddings: q⁽ⁱ⁾ and k⁽ʲ⁾ before the rotation (q and k are after it); 0 x 0
  // without.
  Matrix q_unrotated, k_unrotated;
  float omega = 0;          // ω_ij, from the trace
  float root = 0;           // √d_k in float32
  float scaled = 0;         // ω_ij / √d_k, −inf when the key is masked
  Matrix scaled_row;        // s_i, the row's scaled scores: (1, T_k)
  bool row_masked = false;  // every key of the row is masked
  float row_max = 0;        // m_i
  Eigen::Index argmax = 0;  // the first key with the row's largest score
  Matrix exponentials;      // e_it = exp(s_it − m_i): (1, T_k)
  float sum = 0;            // Σ_i, added in the kernel's order
  float weight = 0;         // e_ij / Σ_i
  float trace_weight = 0;   // the trace's attention_weights[i, j]
};

// The working of weight (qi, kj) of one head of one batch item (head and batch as the trace
// indexes its steps). Requires the trace's queries, keys, omega, scaled_scores and
// attention_weights steps.
CellWorking work_out_cell(const Trace& trace, std::optional<int> head, std::optional<int> batch,
                          Eigen::Index qi, Eigen::Index kj);

// One token's step of incremental decoding (--decode), from the trace's per-token steps: its q_t,
// k_t and v_t, the cache when it is decoded, its row against the cache and z_t; and how z_t
// compares with the full computation's row.
struct DecodedToken {
  const Step* query = nullptr;        // decode_query_t<t>: (1, d_k)
  const Step* key = nullptr;          // decode_key_t<t>
  const Step* value = nullptr;        // decode_value_t<t>
  const Step* key_cache = nullptr;    // key_cache_t<t>: (n, d_k)
  const Step* value_cache = nullptr;  // value_cache_t<t>
  const Step* scores = nullptr;       // decode_scores_t<t>: (1, n)
  const Step* weights = nullptr;      // decode_weights_t<t>
  const Step* context = nullptr;      // decode_context_t<t>: (1, d_v)
  Eigen::Index first = 0;  // the cache's first token (from 0): it holds tokens first … t
  float difference = 0;    // the largest |z_t − context_vectors[t]| (largest_difference)
};

// Token qi (from 0) of one head of one batch item. Requires a trace with --decode's steps.
DecodedToken decoded_token(const Trace& trace, std::optional<int> head, std::optional<int> batch,
                           Eigen::Index qi);

// One query row of the online softmax (--online-softmax): the tiles it skips, and how its Z
// compares with the ordinary softmax's.
struct OnlineRowCheck {
  std::vector<Eigen::Index> skipped;  // the tiles (from 0) wholly masked for the row
  float difference = 0;               // the largest |online_context[qi] − context_vectors[qi]|
};

// Row qi (from 0) of one head of one batch item. Requires a trace with --online-softmax's steps.
OnlineRowCheck online_row_check(const Trace& trace, std::optional<int> head,
                                std::optional<int> batch, Eigen::Index qi);

}  // namespace attn
