// The matrix products PyTorch's steps call: the reference order (each cell one left-to-right sum,
// the bits of PyTorch's small products) or the blocked kernel (gemm.cpp), chosen by the size of
// the product (matmul_kernel_for).

#include <fmt/format.h>

#include <cstdint>
#include <memory>

#include "attn/error.hpp"
#include "attn/gemm.hpp"
#include "attn/parallel.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

namespace {

void require_inner(const Matrix& a, const Matrix& b, Eigen::Index a_inner, Eigen::Index b_inner,
                   const char* what) {
  if (a_inner != b_inner) {
    throw Error(fmt::format("{}: shapes [{}, {}] and [{}, {}] do not fit together", what, a.rows(),
                            a.cols(), b.rows(), b.cols()));
  }
}

}  // namespace

MatmulKernel matmul_kernel_for(MatmulKernel kernel, Eigen::Index m, Eigen::Index n,
                               Eigen::Index k) {
  if (kernel != MatmulKernel::kAuto) return kernel;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return work >= kBlockedMatmulWork ? MatmulKernel::kBlocked : MatmulKernel::kReference;
}

namespace {

StridedMatrix strided(const Matrix& m) { return {m.data(), m.rows(), m.cols(), m.cols(), 1}; }

// a @ bᵀ without forming bᵀ: bᵀ(k, j) is b(j, k).
StridedMatrix strided_transpose(const Matrix& m) {
  return {m.data(), m.cols(), m.rows(), 1, m.cols()};
}

Matrix blocked(const StridedMatrix& a, const StridedMatrix& b, int threads) {
  Matrix c = uninitialized_matrix(a.rows, b.cols);  // (M, N)
  gemm_blocked(a, b, c.data(), b.cols, threads);
  return c;
}

// a @ b in the reference order, each cell's sum started from bias(0, j), or from 0 without one
// (sgemm with beta = 1 adds the products to C, which then holds the bias).
Matrix reference_matmul(const Matrix& a, const Matrix& b, int threads, const Matrix* bias) {
  Matrix c = uninitialized_matrix(a.rows(), b.cols());  // (M, N)
  const double work =
      static_cast<double>(a.rows()) * static_cast<double>(b.cols()) * static_cast<double>(a.cols());
  // Rows in parallel: each cell is the same left-to-right sum on any thread.
  parallel_for(a.rows(), threads, work, [&](std::int64_t begin, std::int64_t end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      for (Eigen::Index j = 0; j < b.cols(); ++j) {
        float acc = bias != nullptr ? (*bias)(0, j) : 0.0f;
        for (Eigen::Index k = 0; k < a.cols(); ++k) acc = acc + a(i, k) * b(k, j);
        c(i, j) = acc;
      }
    }
  });
  return c;
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b, int threads, MatmulKernel kernel) {
  require_inner(a, b, a.cols(), b.rows(), "matmul");
  if (matmul_kernel_for(kernel, a.rows(), b.cols(), a.cols()) == MatmulKernel::kBlocked) {
    return blocked(strided(a), strided(b), threads);
  }
  return reference_matmul(a, b, threads, nullptr);
}

Matrix addmm(const Matrix& bias, const Matrix& a, const Matrix& b, int threads,
             MatmulKernel kernel) {
  require_inner(a, b, a.cols(), b.rows(), "addmm");
  if (bias.rows() != 1 || bias.cols() != b.cols()) {
    throw Error(fmt::format("addmm: a bias of shape [{}, {}] does not fit a product {} wide",
                            bias.rows(), bias.cols(), b.cols()));
  }
  if (matmul_kernel_for(kernel, a.rows(), b.cols(), a.cols()) == MatmulKernel::kBlocked) {
    Matrix c = blocked(strided(a), strided(b), threads);
    for (Eigen::Index i = 0; i < c.rows(); ++i) c.row(i) += bias;
    return c;
  }
  return reference_matmul(a, b, threads, &bias);
}

Matrix matmul_transposed(const Matrix& a, const Matrix& b, int threads, MatmulKernel kernel) {
  require_inner(a, b, a.cols(), b.cols(), "a @ bᵀ");
  if (matmul_kernel_for(kernel, a.rows(), b.rows(), a.cols()) == MatmulKernel::kBlocked) {
    return blocked(strided(a), strided_transpose(b), threads);  // reads b in place
  }
  const Matrix b_t = b.transpose();
  return matmul(a, b_t, threads, MatmulKernel::kReference);
}

Matrix transposed_matmul(const Matrix& a, const Matrix& b, int threads, MatmulKernel kernel) {
  require_inner(a, b, a.rows(), b.rows(), "aᵀ @ b");
  if (matmul_kernel_for(kernel, a.cols(), b.cols(), a.rows()) == MatmulKernel::kBlocked) {
    return blocked(strided_transpose(a), strided(b), threads);  // reads a in place
  }
  Matrix c = uninitialized_matrix(a.cols(), b.cols());  // (M, N)
  const double work =
      static_cast<double>(a.cols()) * static_cast<double>(b.cols()) * static_cast<double>(a.rows());
  parallel_for(a.cols(), threads, work, [&](std::int64_t begin, std::int64_t end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      for (Eigen::Index j = 0; j < b.cols(); ++j) {
        float acc = 0.0f;
        for (Eigen::Index k = 0; k < a.rows(); ++k) acc = acc + a(k, i) * b(k, j);
        c(i, j) = acc;
      }
    }
  });
  return c;
}

struct RowBlockProduct::Packed {
  GemmPackedB b;
};

RowBlockProduct::RowBlockProduct(const Matrix& b, bool transposed, Eigen::Index rows,
                                 MatmulKernel kernel)
    : b_(b), transposed_(transposed) {
  const Eigen::Index k = transposed ? b.cols() : b.rows(), n = transposed ? b.rows() : b.cols();
  kernel_ = matmul_kernel_for(kernel, rows, n, k);
}
RowBlockProduct::~RowBlockProduct() = default;
RowBlockProduct::RowBlockProduct(RowBlockProduct&&) noexcept = default;

Matrix RowBlockProduct::rows(const Matrix& a, Eigen::Index first, Eigen::Index count,
                             int threads) const {
  const Eigen::Index k = transposed_ ? b_.cols() : b_.rows();
  const Eigen::Index n = transposed_ ? b_.rows() : b_.cols();
  require_inner(a, b_, a.cols(), k, "a block of rows @ b");
  Matrix c = uninitialized_matrix(count, n);  // (count, N)
  const float* a_rows = a.data() + first * a.cols();
  if (kernel_ == MatmulKernel::kBlocked) {
    if (!packed_) {
      packed_ = std::make_unique<Packed>(
          Packed{GemmPackedB(transposed_ ? strided_transpose(b_) : strided(b_), threads)});
    }
    gemm_blocked(StridedMatrix{a_rows, count, a.cols(), a.cols(), 1}, packed_->b, c.data(), n,
                 threads);
    return c;
  }
  // The reference order, as matmul: each cell the same left-to-right sum.
  const double work = static_cast<double>(count) * static_cast<double>(n) * static_cast<double>(k);
  parallel_for(count, threads, work, [&](std::int64_t begin, std::int64_t end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      const float* ai = a_rows + i * a.cols();
      for (Eigen::Index j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (Eigen::Index p = 0; p < k; ++p) {
          acc = acc + ai[p] * (transposed_ ? b_(j, p) : b_(p, j));
        }
        c(i, j) = acc;
      }
    }
  });
  return c;
}

}  // namespace attn
