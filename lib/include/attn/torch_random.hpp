#pragma once

// PyTorch's CPU random number generator, reproduced bit for bit (PyTorch 1.13 and later 2.x,
// float32). The generator is MT19937 seeded like torch.manual_seed; the distributions follow
// ATen's CPU kernels. See docs/design.md for the specification and its sources.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// at::mt19937 together with the cached normal of CPUGeneratorImpl.
class TorchGenerator {
 public:
  // torch.manual_seed(seed): only the low 32 bits of the seed are used.
  explicit TorchGenerator(std::uint64_t seed);

  // One 32-bit draw (tempered), as at::mt19937::operator().
  std::uint32_t random();
  // Two draws, the first one the high half.
  std::uint64_t random64();
  // Advances the engine by `count` draws without computing them (no tempering): the state
  // afterwards is the one `count` calls of random() would leave.
  void discard(std::uint64_t count);

  // (random() & 0xFFFFFF) * 2^-24: the float32 uniform in [0, 1) behind torch.rand.
  float uniform01();
  // out.size() calls of uniform01(), tempering the state's words in bulk.
  void fill_uniform01(std::span<float> out);
  // (random64() & (2^53 - 1)) * 2^-53: the double uniform of the small normal path.
  double uniform01_double();

  // The double normal that at::normal_distribution<double> leaves for the next call; cleared
  // only by seeding.
  std::optional<double>& normal_cache() { return normal_cache_; }

 private:
  void twist();

  std::array<std::uint32_t, 624> state_{};
  std::uint32_t left_ = 1;
  std::uint32_t next_ = 0;
  std::optional<double> normal_cache_;
};

// torch.rand(rows, cols): rows * cols draws, filled row-major.
Matrix torch_rand(TorchGenerator& gen, Eigen::Index rows, Eigen::Index cols);

// tensor.uniform_(from, to) on a contiguous float32 tensor. The bounds arrive as doubles and
// are cast to float first; the AVX2 kernel fuses x * (to - from) + from into one fma, the
// default kernel rounds the product and the sum separately.
void uniform_(std::span<float> out, TorchGenerator& gen, double from, double to,
              TorchKernel kernel);

// tensor.normal_(mean, std) on a contiguous float32 tensor (also torch.randn and the
// nn.Embedding initialisation). n >= 16 takes the vectorised Box-Muller (n uniforms first, then
// pairs (j, j + 8) of each block of 16, and a tail block of 16 fresh draws when n % 16 != 0);
// n < 16 takes the double-precision path with the generator's cache.
void normal_(std::span<float> out, TorchGenerator& gen, float mean, float std, TorchKernel kernel);

// The 16-lane Box-Muller transform of normal_fill: on entry `block` holds 16 uniforms, on exit
// 16 normals. Lane j supplies the radius and lane j + 8 the angle.
void normal_fill_16(std::span<float, 16> block, float mean, float std, TorchKernel kernel);
// normal_fill_16 on each block of 16 in turn. Requires: blocks.size() % 16 == 0.
void normal_fill_blocks(std::span<float> blocks, float mean, float std, TorchKernel kernel);

// The bound of nn.Linear's kaiming_uniform_(a = sqrt(5)) for a given fan_in, computed in double
// in Python's order of operations.
double kaiming_uniform_bound(std::int64_t fan_in);

// nn.Linear(in_features, out_features).weight: shape (out_features, in_features), drawn as
// uniform_(-bound, bound) row-major.
Matrix linear_weight(TorchGenerator& gen, Eigen::Index in_features, Eigen::Index out_features,
                     TorchKernel kernel);

// nn.Linear's bias: uniform_(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn after the weight.
Matrix linear_bias(TorchGenerator& gen, Eigen::Index in_features, Eigen::Index out_features,
                   TorchKernel kernel);

}  // namespace attn
