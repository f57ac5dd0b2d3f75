#pragma once

#include <Eigen/Core>
#include <cstddef>

namespace attn {

// Every matrix in a trace: float32, row-major, like a contiguous PyTorch tensor.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Asks Linux for 2 MiB pages (transparent huge pages) for the whole 2 MiB pages inside
// [data, data + bytes), best effort: for memory not yet touched. Does nothing elsewhere.
void advise_huge_pages(void* data, std::size_t bytes);

// A (rows, cols) matrix whose values are not yet set. From 8 MiB, its memory is asked to come
// in 2 MiB pages (Linux transparent huge pages, where the system allows them): a (4096, 4096)
// score matrix then takes 32 page faults instead of 16,384.
Matrix uninitialized_matrix(Eigen::Index rows, Eigen::Index cols);

}  // namespace attn
