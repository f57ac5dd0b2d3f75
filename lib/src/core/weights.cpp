#include "attn/weights.hpp"

#include <fmt/format.h>

#include "attn/attention.hpp"
#include "attn/error.hpp"

namespace attn {

Matrix draw_weight(TorchGenerator& gen, WeightInit init, std::int64_t d_in, std::int64_t d_out,
                   TorchKernel kernel) {
  switch (init) {
    case WeightInit::kRand:
      return torch_rand(gen, d_in, d_out);
    case WeightInit::kRandTransposed:
      return torch_rand(gen, d_out, d_in);
    case WeightInit::kLinear:
      return linear_weight(gen, d_in, d_out, kernel);
  }
  throw Error("unknown init");
}

Matrix apply_weight(const Matrix& x, const Matrix& w, WeightInit init, int threads,
                    MatmulKernel kernel) {
  if (init == WeightInit::kRand) return project(x, w, threads, kernel);
  const Matrix w_t = w.transpose();  // (d_in, d_out)
  return project(x, w_t, threads, kernel);
}

std::string weight_equation(WeightInit init, std::string_view w, std::string_view d_in,
                            std::string_view d_out) {
  switch (init) {
    case WeightInit::kRand:
      return fmt::format("{} = torch.rand({}, {})", w, d_in, d_out);
    case WeightInit::kRandTransposed:
      return fmt::format("{} = torch.rand({}, {})", w, d_out, d_in);
    case WeightInit::kLinear:
      return fmt::format("{} = nn.Linear({}, {}, bias=False).weight", w, d_in, d_out);
  }
  return {};
}

std::string projection_equation(WeightInit init, std::string_view out, std::string_view x,
                                std::string_view w) {
  switch (init) {
    case WeightInit::kRand:
      return fmt::format("{} = {} {}", out, x, w);
    case WeightInit::kRandTransposed:
      return fmt::format("{} = ({} {}ᵀ)ᵀ", out, w, x);
    case WeightInit::kLinear:
      return fmt::format("{} = {} {}ᵀ", out, x, w);
  }
  return {};
}

std::vector<std::string> weight_dims(WeightInit init, const std::string& d_in,
                                     const std::string& d_out) {
  if (init == WeightInit::kRand) return {d_in, d_out};
  return {d_out, d_in};
}

}  // namespace attn
