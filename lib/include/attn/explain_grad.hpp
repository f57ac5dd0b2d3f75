#pragma once

// One gradient of the scores worked out by hand: dL/dω_ij from dL/dZ, V and A, every number of
// its arithmetic as the backward pass computes it. --explain-grad formats it.

#include <optional>

#include "attn/trace.hpp"

namespace attn {

struct GradCellWorking {
  Eigen::Index i = 0, j = 0;  // the query's and the key's row, from 0
  Matrix dz, v;               // dL/dZ row i and value j: (1, d_v) (the head's columns)
  Matrix products;            // dz_c · v_c for each c: (1, d_v)
  float da = 0;               // dL/dA_ij, their sum left to right
  Matrix a_row, da_row;       // row i of A (the softmax's output) and of dL/dA: (1, T_k)
  Matrix terms;               // dA_it · A_it for each key t: (1, T_k)
  float row_dot = 0;          // r_i, added in the softmax backward's order
  float a = 0;                // A_ij
  float ds = 0;               // (dA_ij − r_i) · A_ij
  float root = 0;             // √d_k in float32
  bool masked = false;        // the score was masked: its gradient is 0
  float domega = 0;           // dL/dω_ij
  float trace_domega = 0;     // the trace's grad_omega[i, j]
};

// The working of dL/dω (qi, kj) of one head of one batch item. Requires a trace with the
// backward pass's steps (config.backward).
GradCellWorking work_out_grad_cell(const Trace& trace, std::optional<int> head,
                                   std::optional<int> batch, Eigen::Index qi, Eigen::Index kj);

}  // namespace attn
