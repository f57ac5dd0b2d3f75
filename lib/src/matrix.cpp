#include "attn/matrix.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attn {

Matrix uninitialized_matrix(Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t bytes = static_cast<std::uintptr_t>(m.size()) * sizeof(float);
  if (bytes >= 4 * kHuge) {
    // The whole 2 MiB pages inside the buffer; nothing has touched them yet. A refusal (no THP
    // on this system) changes nothing but speed, so the result is not checked.
    const auto begin = reinterpret_cast<std::uintptr_t>(m.data());
    const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
    const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
    if (last > first) {
      (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    }
  }
#endif
  return m;
}

}  // namespace attn
