#include "attn/matrix.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attn {

void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // The whole 2 MiB pages inside the block. A refusal (no THP on this system) changes nothing
  // but speed, so the result is not checked.
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data, (void)bytes;
#endif
}

Matrix uninitialized_matrix(Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);
  const std::size_t bytes = static_cast<std::size_t>(m.size()) * sizeof(float);
  if (bytes >= std::size_t{8} << 20) advise_huge_pages(m.data(), bytes);  // nothing touched yet
  return m;
}

}  // namespace attn
