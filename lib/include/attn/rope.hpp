#pragma once

// Rotary position embeddings (RoPE): each pair of a head's numbers is rotated by an angle that
// grows with the token's position, so that q⁽ⁱ⁾ · k⁽ʲ⁾ depends on i − j. The float32 operations
// are PyTorch's, in its order (see docs/design.md, "Rotary position embeddings").

#include <cstdint>
#include <optional>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// Which numbers form a pair.
enum class RopePairs {
  kHalf,         // Llama (Hugging Face), LLMs-from-scratch: x_i with x_{i+d/2}, rotate_half
  kInterleaved,  // GPT-J, RoFormer: x_{2i} with x_{2i+1}
};

// The float32 number a base θ becomes in PyTorch (`theta ** tensor` rounds it to the tensor's
// type), or nullopt when that is 0 or infinite: θ is allowed exactly when this has a value.
std::optional<float> rope_base_float32(double theta);

// inv_freq = 1 / θ^(arange(0, d, 2) / d), in float32 as PyTorch's `kernel` computes it (θ ** x
// by torch_pow, torch_kernels.hpp): (d/2) values.
// Requires d even and >= 2, theta > 0 and finite (throws Error otherwise). Throws Error
// (Setting::kRopeTheta) when a value overflows float32, as it does for a tiny θ.
std::vector<float> rope_inv_freq(std::int64_t d, float theta, TorchKernel kernel);

// The cos and sin tables: row p is position p (p = 0 … positions − 1), d columns. Column c
// holds the angle p · inv_freq[c mod d/2] (half: cat(angles, angles)) or p · inv_freq[c / 2]
// (interleaved: each angle twice, repeat_interleave(2)); cos and sin in float32, by torch_cos
// and torch_sin over the (positions, d) angles, so PyTorch's bits for `kernel` where
// sleef_runs() (the C library's cos and sin otherwise; see torch_kernels.hpp).
// Requires as rope_inv_freq; throws Error (Setting::kRopeTheta) when an angle overflows float32.
struct RopeTables {
  Matrix cos, sin;  // (positions, d)
};
RopeTables rope_tables(std::int64_t positions, std::int64_t d, float theta, RopePairs pairs,
                       TorchKernel kernel);

// One row of width d at one position: out = x·cos + rotate(x)·sin, each product and the sum
// rounded to float32 (no fused multiply-add), where rotate(x) = cat(−x[d/2:], x[:d/2]) (half)
// or (−x₁, x₀, −x₃, x₂, …) (interleaved). cos and sin are the tables' row for the position.
// x and out may be the same array. Requires d even.
void rope_rotate_row(const float* x, const float* cos, const float* sin, float* out, std::int64_t d,
                     RopePairs pairs);

// Every row i of x rotated at position i, each block of d_head columns as its own head (the
// tables' width is d_head). Requires x.cols() a multiple of d_head and x.rows() <= the tables'
// rows.
Matrix rope_rotate(const Matrix& x, const RopeTables& tables, RopePairs pairs);

}  // namespace attn
