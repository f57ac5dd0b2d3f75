#pragma once

// How a run takes its memory: large matrices from a heap that is kept and prepared, not from a
// fresh mmap() and its page faults each time (keep_heap, prepare_heap: for programs; the library
// works without them); and how much memory the machine can give a run (machine_memory, which the
// library checks a run's estimate against).

#include <cstdint>
#include <optional>
#include <string>

namespace attn {

// A size for a message: "888 bytes", "1.0 KiB", "4.0 GiB" (powers of 1024, `decimals` decimals).
std::string size_text(std::uint64_t bytes, int decimals = 1);

// Large matrices from the heap rather than from fresh mmap()s, and the heap kept (glibc's
// mallopt): a long input's (T, T) steps then reuse the memory of the heads before them instead
// of faulting in (and the kernel zeroing) new pages for every one. Call once, first.
void keep_heap();

// Makes heap ready before a run of 2 MiB or more, for `bytes` and what the estimate does not
// count, in whole 2 MiB pages: allocated, asked for 2 MiB pages (MADV_HUGEPAGE), and freed back
// to the heap, which keeps it; the 4 KiB pages below the first 2 MiB page are set aside, never
// written, so that the run's matrices lie in 2 MiB pages. Where the system gives huge pages,
// twice `bytes` and 8 MiB, faulted in only where the run writes, except that with `threads` > 1
// the pages of `bytes` are faulted in now, a share on each thread; where it gives none, an eighth
// more than `bytes` and 2 MiB, faulted in with one call (MADV_POPULATE_WRITE, Linux 5.14)
// instead of a fault per 4 KiB during the run. Best effort: a refusal changes nothing but
// speed; and never more than half the memory the system has free.
// Fits TraceConfig::on_memory_estimate.
void prepare_heap(double bytes, int threads);

// The memory a run can have on this machine, and what sets it.
struct MachineMemory {
  std::uint64_t bytes = 0;
  bool cgroup = false;  // a cgroup's memory limit (a container's), not the system's free memory
};

// The memory a run can have on this machine, where it can be read: the least of what the system
// has available (`meminfo`'s MemAvailable, which counts the page cache the kernel can reclaim,
// and SwapFree) and the memory limit of the cgroups the process is in (cgroup v2's memory.max,
// v1's memory.limit_in_bytes; the least of its cgroup and its parents, as cgroup_cpu_limit
// finds them). nullopt where none can be read. The three files are arguments for the tests.
std::optional<MachineMemory> machine_memory(const std::string& meminfo = "/proc/meminfo",
                                            const std::string& mountinfo = "/proc/self/mountinfo",
                                            const std::string& cgroup = "/proc/self/cgroup");

}  // namespace attn
