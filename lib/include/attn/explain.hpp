#pragma once

// One attention weight worked out by hand: every number of its arithmetic, as the trace and
// PyTorch's softmax kernel give them. --explain formats it; the numbers come from here.

#include <optional>

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

}  // namespace attn
