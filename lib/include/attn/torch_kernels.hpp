#pragma once

// PyTorch's CPU kernels, reproduced to the bit where the lesson needs them: which flavour of
// kernels (TorchKernel), exp as SLEEF computes it, the orders in which ATen adds a row, and the
// reference BLAS's matrix product. attention.cpp writes the lesson's math with these.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "attn/matrix.hpp"

namespace attn {

// Which of PyTorch's CPU kernels to reproduce. Never detected from the host: the same
// arguments give the same numbers on every machine.
//   kAvx2:    x86-64 with AVX2 (PyTorch's default on nearly every desktop and server);
//   kDefault: PyTorch's non-AVX2 kernels (ATEN_CPU_CAPABILITY=default, ARM and Apple builds).
enum class TorchKernel { kAvx2, kDefault };

// "avx2" or "default".
std::string_view kernel_name(TorchKernel kernel);
// Inverse of kernel_name. Throws Error for any other name.
TorchKernel parse_kernel(std::string_view name);

// How a matrix product is computed.
enum class MatmulKernel {
  kReference,  // left to right, acc = fl(acc + fl(a_ik * b_kj)): the order of the reference BLAS
               // that Debian's PyTorch links, so PyTorch's bits
  kBlocked,    // gemm_blocked (gemm.hpp): fused multiply-adds in blocks of 256, vectorised and
               // cache-blocked; tens of times faster, within float32 rounding of PyTorch
  kAuto,       // kBlocked for products of at least kBlockedMatmulWork multiply-adds, else
               // kReference: every small trace keeps PyTorch's bits
};
// The size (m · n · k multiply-adds) from which kAuto takes the blocked kernel: 2^20, a product
// of 64 x 128 by 128 x 128; below it the reference order costs under a millisecond.
inline constexpr double kBlockedMatmulWork = 1 << 20;

// The kernel `kernel` means for an (m, k) @ (k, n) product: kAuto resolved by size.
MatmulKernel matmul_kernel_for(MatmulKernel kernel, Eigen::Index m, Eigen::Index n, Eigen::Index k);

// a @ b by `kernel` (kReference: naive left-to-right float32 accumulation).
// Requires: a.cols() == b.rows(). Returns: (a.rows(), b.cols()).
// Rows are computed on up to `threads` threads; the result is the same bits for any count.
Matrix matmul(const Matrix& a, const Matrix& b, int threads = 1,
              MatmulKernel kernel = MatmulKernel::kReference);

// torch.addmm(bias, a, b), as Hugging Face's Conv1D calls it: (1, n), (m, k), (k, n) -> (m, n).
// In the reference order each cell's sum starts from its bias (the reference BLAS's sgemm with
// beta = 1 adds the products to C, which holds the bias), so its bits differ from a @ b + bias;
// the blocked kernel adds the bias after the product.
Matrix addmm(const Matrix& bias, const Matrix& a, const Matrix& b, int threads = 1,
             MatmulKernel kernel = MatmulKernel::kReference);

// a @ bᵀ, reading b in place for the blocked kernel: (m, k) and (n, k) -> (m, n).
Matrix matmul_transposed(const Matrix& a, const Matrix& b, int threads = 1,
                         MatmulKernel kernel = MatmulKernel::kReference);

// aᵀ @ b without forming aᵀ: (k, m) and (k, n) -> (m, n), each cell summed over the rows of a
// and b in order (the reference order) or by the blocked kernel, as matmul(aᵀ, b) computes it.
Matrix transposed_matmul(const Matrix& a, const Matrix& b, int threads = 1,
                         MatmulKernel kernel = MatmulKernel::kReference);

// A right-hand side prepared for products whose left-hand side comes in blocks of rows: a head's
// keys against its queries, its values against its weights, on a long input. The kernel is the
// one `kernel` means for the whole product of `rows` rows, and for the blocked kernel b is packed
// once, by the first block's product (so that a step's time has its own packing, and no other
// step's). Each block's product is the same bits as the same rows of the whole product.
class RowBlockProduct {
 public:
  // b (k, n); or, `transposed`, b (n, k) standing for bᵀ. b is read until the object goes.
  RowBlockProduct(const Matrix& b, bool transposed, Eigen::Index rows, MatmulKernel kernel);
  ~RowBlockProduct();
  RowBlockProduct(RowBlockProduct&&) noexcept;

  // Rows [first, first + count) of a, times b (or bᵀ): (count, n).
  // Requires: a.cols() is b's k; the rows lie inside a. Not for two threads at once.
  Matrix rows(const Matrix& a, Eigen::Index first, Eigen::Index count, int threads) const;
  // The kernel that computes it: kReference or kBlocked.
  MatmulKernel kernel() const { return kernel_; }

 private:
  const Matrix& b_;
  bool transposed_;
  MatmulKernel kernel_;
  struct Packed;
  mutable std::unique_ptr<Packed> packed_;  // for kBlocked, from the first block's product
};

// torch.exp on one float: SLEEF's expf_u10 (as PyTorch's AVX2 kernels vectorise it) for kAvx2,
// the C library's expf for kDefault.
float torch_expf(float x, TorchKernel kernel);

// The softmax kernel's three passes over one row of n >= 1 scores, none nan
// (_vec_softmax_lastdim):
// the row's max;
float torch_row_max(const float* s, Eigen::Index n, TorchKernel kernel);
// e_j = exp(s_j − m) into e (which may be s), and their sum, added in the order of ATen's 8-lane
// vec::reduce_all for the kernel flavour;
float torch_exp_sum(const float* s, Eigen::Index n, float m, TorchKernel kernel, float* e);
// w_j = e_j · inv (w may be e): PyTorch multiplies by the sum's reciprocal.
void torch_scale_row(const float* e, Eigen::Index n, float inv, TorchKernel kernel, float* w);

// out_i = x_i / d for n floats (out may be x): IEEE division, correctly rounded, so the same
// bits on every vector width and as ATen's `tensor / scalar`; on the widest vectors the CPU runs.
void torch_divide(const float* x, float d, float* out, std::size_t n);
// torch_divide of one row, and the largest quotient: the value torch_row_max gives for the
// quotients, for a row without nan (only the sign of a largest 0 may differ, which no exp(s − m)
// sees), so that a softmax need not read the row again for it.
float torch_divide_row_max(const float* x, float d, float* out, std::size_t n);

// The sum of n >= 0 floats in the order of ATen's 8-lane vec::reduce_all for the kernel flavour
// (as torch_exp_sum adds the exponentials; the softmax's backward adds its products so).
float torch_reduce_all_sum(const float* e, Eigen::Index n, TorchKernel kernel);

// g.sum(dim=0) of a contiguous (n, m) matrix in the order of ATen's sum kernel (cascade_sum's
// reduction over the outer dimension, one thread): a column is added in order into a cascade of
// blocks of 16 rows or more when it is one of a group of 4 (fewer than 8 columns) or of 32 (8 or
// more); any other column as a row's sum is (viewed as (-1, 4), torch_sum's order); a single
// column is contiguous, torch_sum. Each sum is added to 0, as ATen fills the output with 0
// first. Returns (1, m).
Matrix torch_sum_rows(const Matrix& g);

// Σ_j x_j · y_j over n >= 0 pairs in the order of ATen's vec::map2_reduce_all(x * y, x + y),
// the softmax backward's row sum: the first 8 products are the lanes; each later product is
// added to its lane (lane j % 8), the lanes then combined as torch_reduce_all_sum combines
// them. The AVX2 kernel, built by GCC with FMA, fuses every later product into its lane's add
// (fma(x_j, y_j, lane)); the default kernel rounds the product first. Rows shorter than 8 are
// the products added in order.
float torch_dot_reduce_all(const float* x, const float* y, Eigen::Index n, TorchKernel kernel);

// tensor.sum(dim=-1) of one contiguous row of n floats, added in the order of ATen's
// cascade_sum.
float torch_sum(const float* e, std::int64_t n);

// The elementwise functions of rotary embeddings' tables, as ATen runs them on a contiguous
// float32 tensor of n elements (see docs/design.md, "Rotary position embeddings").
//
// θ ** e (torch.pow of a number and a tensor): for kAvx2, ATen's vectorized_loop takes the
// exponents 16 at a time (two 8-lane vectors) through SLEEF's Sleef_powf8_u10 and the last
// n mod 16 through the C library's powf; for kDefault, powf for each.
void torch_pow(float base, const float* e, float* out, std::size_t n, TorchKernel kernel);
// torch.cos and torch.sin: for kAvx2, SLEEF's Sleef_cosf8_u10 and Sleef_sinf8_u10 for every
// element (vec::map: 8 at a time, the last partial vector loaded padded with zeros); for
// kDefault, the C library's cosf and sinf.
void torch_cos(const float* x, float* out, std::size_t n, TorchKernel kernel);
void torch_sin(const float* x, float* out, std::size_t n, TorchKernel kernel);
// GPT-2's gelu_new as Hugging Face's NewGELUActivation computes it on a float32 tensor of n
// elements, one torch operation after another, each rounded on its own:
// 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))), x³ as torch.pow(x, 3.0) takes it (x · x · x),
// tanh by torch.tanh: for kAvx2, SLEEF's Sleef_tanhf8_u10 on every element (vec::map: 8 at a
// time, the last partial vector padded with zeros); for kDefault, the C library's tanhf.
void torch_gelu_new(const float* x, float* out, std::size_t n, TorchKernel kernel);
// Whether kAvx2's SLEEF functions run here: they are libsleef's AVX2 code, from libsleef.so.3
// (Debian's libsleef3, the library PyTorch itself loads, opened on first use), which needs an
// x86-64 CPU with AVX2 and FMA. Where they cannot run, torch_pow, torch_cos, torch_sin and
// torch_gelu_new take the C library's functions in their place, and sleef_missing() says why.
bool sleef_runs();
// Why they cannot run ("this CPU has no AVX2 and FMA, …"), or empty.
std::string_view sleef_missing();

}  // namespace attn
