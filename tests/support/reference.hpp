#pragma once

// Test helpers: PyTorch references from data/reference/, bit patterns, digests, and matrix
// comparisons that name the worst cell.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/torch_random.hpp"

namespace attn::test {

using nlohmann::json;

// Both kernel flavours, for tests that run once per flavour.
inline constexpr TorchKernel kKernels[] = {TorchKernel::kAvx2, TorchKernel::kDefault};

// data/reference/<flavour>/<file>, parsed.
json load_reference(TorchKernel kernel, std::string_view file);

// A reference tensor {shape, values, bits}: its values rebuilt from the bits (exact).
// 1-D tensors become one row.
Matrix tensor_from_bits(const json& tensor);

// The float32 bit pattern of each element, row-major.
std::vector<std::uint32_t> bits_of(const Matrix& m);

// sha256 of the little-endian float32 bytes, as lowercase hex.
std::string sha256_f32le(const Matrix& m);

// Checks that `actual` has the reference tensor's shape and exactly its bits; on failure reports
// the number of differing elements and the first one.
void check_bits(const Matrix& actual, const json& expected, const std::string& what);

// Checks a whole tensor against a digest {shape, sha256_f32le[, first_values, last_values]}.
void check_digest(const Matrix& actual, const json& digest, const std::string& what);

// Checks |actual - expected| <= tolerance everywhere; on failure reports the worst cell.
void check_matrix_near(const Matrix& actual, const Matrix& expected, float tolerance,
                       const std::string& what);

// Checks |actual − reference| <= `relative` (1e-6) of the reference tensor's largest finite
// |value|, with nan and ±inf where the reference has them.
void check_relative(const Matrix& actual, const json& expected, const std::string& what,
                    float relative = 1e-6f);

}  // namespace attn::test
