#pragma once

// The weight recipes: how W_q, W_k, W_v (and W_o) are drawn and applied.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/attention.hpp"
#include "attn/matrix.hpp"
#include "attn/torch_random.hpp"

namespace attn {

// How W_q, W_k, W_v (and W_o) are drawn and applied.
enum class WeightInit {
  kRand,            // the walkthrough: W = torch.rand(d_in, d_out); Q = X W
  kRandTransposed,  // its earlier version: W = torch.rand(d_out, d_in); q = W.matmul(x)
  kLinear,          // course code: nn.Linear(d_in, d_out, bias=False); Q = X Wᵀ
};
std::string_view init_name(WeightInit init);   // "rand", "rand-transposed", "linear"
WeightInit parse_init(std::string_view name);  // throws Error for any other name

// W for one projection from d_in to d_out, drawn from `gen` as the init draws it:
// (d_in, d_out) for kRand; (d_out, d_in) for kRandTransposed and kLinear.
Matrix draw_weight(TorchGenerator& gen, WeightInit init, std::int64_t d_in, std::int64_t d_out,
                   TorchKernel kernel);

// The projection: X W for kRand, X Wᵀ for the (d_out, d_in) layouts. x: (T, d_in) -> (T, d_out).
// Throws Error naming both shapes if they do not fit.
Matrix apply_weight(const Matrix& x, const Matrix& w, WeightInit init, int threads = 1,
                    MatmulKernel kernel = MatmulKernel::kReference);

// "W_q = torch.rand(d_in, d_kq)", as the init draws the weight `w`.
std::string weight_equation(WeightInit init, std::string_view w, std::string_view d_in,
                            std::string_view d_out);
// "Q = X W_q", as the init applies the weight `w` to `x`.
std::string projection_equation(WeightInit init, std::string_view out, std::string_view x,
                                std::string_view w);
// The names of a weight's dimensions, in the order the init stores them.
std::vector<std::string> weight_dims(WeightInit init, const std::string& d_in,
                                     const std::string& d_out);

}  // namespace attn
