// Private to torch_kernels.cpp and torch_sums.cpp: a softmax row's sum as ATen adds it.
#pragma once

#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn::torch_detail {

// The sum of a softmax row as ATen's vec::reduce_all computes it with 8-lane vectors: rows
// shorter than a vector are summed in order; longer rows are summed lane by lane (lane j % 8),
// then the 8 lanes are combined: in order by the default kernel, as a tree of shuffles by AVX2.
float row_sum(const float* e, Eigen::Index n, TorchKernel kernel);

#if defined(__x86_64__)
// The same for kAvx2 on AVX2 vectors (the CPU must have AVX2): the same bits.
float lane_sum_avx2(const float* e, Eigen::Index n);
// lane_sum_avx2 from value i on (8 <= i <= n, i a multiple of 8), where lanes[0 … 7] are the 8
// lanes' sums of values 0 … i − 1: a loop that makes the values adds each 8 as it goes.
float lane_sum_from_avx2(const float* lanes, const float* e, Eigen::Index i, Eigen::Index n);
#endif

}  // namespace attn::torch_detail
