#include "attn/memory.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "attn/matrix.hpp"

namespace attn {

std::string size_text(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  auto v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

void keep_heap() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

void prepare_heap(double bytes) {
  constexpr double kWorthIt = 2.0 * (1 << 20);
  if (bytes < kWorthIt) return;
  // The estimate counts the steps' values; the run also holds, for a while, the packed copy of
  // a product's B, the text it writes and what the allocator rounds up: an eighth more and
  // 2 MiB. Memory faulted in here costs a sixth of what a page fault costs later.
  bytes = bytes * 1.125 + 2.0 * (1 << 20);
  const double free_bytes =
      static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (free_bytes > 0.0) bytes = std::min(bytes, free_bytes / 2.0);
  const auto size = static_cast<std::size_t>(bytes);
  void* p = std::malloc(size);
  if (p == nullptr) return;
  attn::advise_huge_pages(p, size);
#if defined(MADV_POPULATE_WRITE)
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(p) + size) & ~(page - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#endif
  std::free(p);
}

}  // namespace attn
