#pragma once

#include <Eigen/Core>

namespace attn {

// Every matrix in a trace: float32, row-major, like a contiguous PyTorch tensor.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attn
