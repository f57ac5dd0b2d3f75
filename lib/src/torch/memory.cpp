#include "attn/memory.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "attn/matrix.hpp"
#include "attn/parallel.hpp"

namespace attn {

std::string size_text(std::uint64_t bytes, int decimals) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  auto v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  return u == 0 ? fmt::format("{} bytes", bytes)
                : fmt::format("{:.{}f} {}", v, decimals, kUnits[u]);
}

void keep_heap() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

namespace {

// Whether the kernel gives a region advised MADV_HUGEPAGE 2 MiB pages when it is first written
// (transparent huge pages "always" or "madvise", not "never"). Read once.
bool huge_pages_on_fault() {
  static const bool on = [] {
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) return false;
    char text[64] = {};
    const std::size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    return n > 0 && std::strstr(text, "[never]") == nullptr;
  }();
  return on;
}

}  // namespace

void prepare_heap(double bytes, int threads) {
  constexpr double kWorthIt = 2.0 * (1 << 20);
  if (bytes < kWorthIt) return;
  const bool huge = huge_pages_on_fault();
  const double estimate = bytes;
  // The estimate counts the steps' values; the run also holds, for a while, the packed copy of
  // a product's B, the text it writes and what the allocator rounds up: an eighth more and
  // 2 MiB. With huge pages, only the pages the run writes are ever faulted in, so the block
  // asks for twice as much and 8 MiB: where the heap's free blocks are split by smaller ones,
  // a (T, T) block can land past the estimate (with 8 heads at T = 2048, 8 MiB past it), and
  // memory past the block is the heap's plain 4 KiB pages.
  bytes = huge ? bytes * 2.0 + 8.0 * (1 << 20) : bytes * 1.125 + 2.0 * (1 << 20);
  const double free_bytes =
      static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (free_bytes > 0.0) bytes = std::min(bytes, free_bytes / 2.0);
  // Whole 2 MiB pages: the block is one page larger than they are, and its 4 KiB pages below
  // them are never written (each would cost a fault of its own, and on a virtual machine the
  // first write to each costs again: about 5 us a page, where a 2 MiB page's costs once).
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto up_to_page = [](std::uintptr_t n) { return (n + kHuge - 1) & ~(kHuge - 1); };
  const std::uintptr_t ready = up_to_page(static_cast<std::uintptr_t>(bytes));
  void* p = std::malloc(ready + kHuge);
  if (p == nullptr) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t from = up_to_page(begin);
  attn::advise_huge_pages(p, ready + kHuge);
#if defined(MADV_POPULATE_WRITE)
  // Without huge pages, the 4 KiB pages are faulted in with one call, which costs a sixth of
  // what a fault per page costs later. With them, on one thread a page is faulted in when the
  // run first writes it, one fault per 2 MiB, and what the run does not use is never zeroed; on
  // more, the estimate's pages (not the margin) are faulted in now, a share per thread, so that
  // the threads zero them side by side rather than inside the steps, where the others wait for
  // the one that wrote a new page first.
  if (!huge) {
    (void)madvise(reinterpret_cast<void*>(from), ready, MADV_POPULATE_WRITE);
  } else if (threads > 1) {
    const std::uintptr_t populate =
        std::min(ready, up_to_page(static_cast<std::uintptr_t>(estimate)));
    // Worth waking the other threads for: a 2 MiB page takes some hundred microseconds.
    parallel_for(static_cast<std::int64_t>(populate / kHuge), threads, 1e9,
                 [&](std::int64_t first, std::int64_t last) {
                   (void)madvise(
                       reinterpret_cast<void*>(from + static_cast<std::uintptr_t>(first) * kHuge),
                       static_cast<std::uintptr_t>(last - first) * kHuge, MADV_POPULATE_WRITE);
                 });
  }
#endif
  std::free(p);
  // The block was the heap's top, and is again: the run's matrices are carved from its start.
  // The 4 KiB pages below the first 2 MiB page are taken by a block that is never written nor
  // freed, so that the run's first matrix starts on a 2 MiB page (glibc carves a request of
  // `pad - 8` bytes as exactly `pad` bytes of the top: a header of 16, rounded up to 16).
  const std::uintptr_t pad = from - begin;
  if (pad >= 64 * 1024) {
    static void* below_the_huge_pages = nullptr;
    if (below_the_huge_pages == nullptr) below_the_huge_pages = std::malloc(pad - 8);
  }
}

}  // namespace attn
