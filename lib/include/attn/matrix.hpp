#pragma once

#include <Eigen/Core>

namespace attn {

// Every matrix in a trace: float32, row-major, like a contiguous PyTorch tensor.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A (rows, cols) matrix whose values are not yet set. From 8 MiB, its memory is asked to come
// in 2 MiB pages (Linux transparent huge pages, where the system allows them): a (4096, 4096)
// score matrix then takes 32 page faults instead of 16,384.
Matrix uninitialized_matrix(Eigen::Index rows, Eigen::Index cols);

}  // namespace attn
