#pragma once

// Splitting a loop over threads. Every caller computes each index the same way whatever the
// split, so the results are the same bits for any number of threads.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attn {

// Below this much work (the caller's estimate of operations), waking threads costs more than it
// saves: a loop runs on the calling thread alone.
inline constexpr double kParallelMinWork = 1e6;

// Runs body(begin, end) over [0, n), split into at most `threads` contiguous ranges, each on its
// own thread (the calling thread takes the first). With threads <= 1, or work under
// kParallelMinWork, it runs body(0, n) on the calling thread. The pool's loops take one calling
// thread at a time; a loop on the calling thread alone may run on any thread.
void parallel_for(std::int64_t n, int threads, double work,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

// Runs body(begin, end) over [0, n) in chunks of `grain` indices (the last may be shorter; more
// for n of 2³¹ and more), on up to `threads` threads: each thread has a contiguous share of the
// chunks, which it runs in order, and when it is done it takes chunks from the end of another's,
// so that a thread that starts late does less. The same rule for small work as parallel_for.
//
// In both, an exception that body throws, on whichever thread, stops the chunks not yet begun
// and is rethrown to the caller once every thread is done.
void parallel_chunks(std::int64_t n, std::int64_t grain, int threads, double work,
                     const std::function<void(std::int64_t, std::int64_t)>& body);

// Which of the pool's threads this is: 1, 2, ... for the workers, 0 for any other thread (the
// one that calls parallel_for or parallel_chunks takes their first share). Less than
// pool_threads() after, and max(pool_threads(), threads) during, a loop on `threads` threads:
// any worker the pool has may take part in a loop.
int pool_thread();
// The pool's threads so far: its workers and the calling thread (at least 1).
int pool_threads();
// The CPU that the pool's worker `worker` (1 .. pool_threads() - 1) was moved to as it started,
// away from the CPU of the thread that made it (read while it could run there only; the system
// may move it later), or -1 when it was not moved (one allowed CPU) or there is no such worker.
int pool_start_cpu(int worker);

// The cores this process may use: the physical cores (physical_cores) of the CPUs of its
// affinity mask, so that `taskset` and a container's CPU set are honoured
// (std::thread::hardware_concurrency counts every CPU the system has online) and two threads
// of one core (SMT) count once, as PyTorch's default counts them; and at most its cgroups' CPU
// time limit (cgroup_cpu_limit), so that a container's `--cpus` is honoured too. At least 1.
int usable_cpus();
// The count of the affinity mask alone (hardware_concurrency where it cannot be read): cheap,
// where reading the cgroup files takes a few tenths of a millisecond of a process's start.
int affinity_cpus();
// The CPU time limit of the cgroups this process is in, in whole CPUs rounded up (a container's
// `--cpus 1.5` gives 2): cgroup v2's cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us,
// the least of the process's cgroup and its parents up to the hierarchy's mount point. 0 where
// there is no limit or it cannot be read. The two files read are arguments for the tests.
int cgroup_cpu_limit(const std::string& mountinfo = "/proc/self/mountinfo",
                     const std::string& cgroup = "/proc/self/cgroup");
// How many physical cores the CPUs numbered `cpus` are on: the distinct lists of sibling
// threads in <cpu_dir>/cpuN/topology/core_cpus_list (thread_siblings_list before Linux 5.7); a
// CPU whose list cannot be read counts as a core of its own, and where <cpu_dir>/smt/active
// says 0 every CPU is one. At least 1. The folder is an argument for the tests.
int physical_cores(const std::vector<int>& cpus,
                   const std::string& cpu_dir = "/sys/devices/system/cpu");
// The CPUs `cpus` (ascending) in the order a thread now on CPU `here` should start new threads
// on them: one CPU of each other core, the cores in turn from the one after `here`'s, then
// `here`'s core, then a second CPU of each core, and so on; `here` itself last. Without SMT (or
// where the cores cannot be read) that is the CPUs in turn from the one after `here`.
std::vector<int> spread_order(const std::vector<int>& cpus, int here,
                              const std::string& cpu_dir = "/sys/devices/system/cpu");

// One turn of a loop that waits for another thread: the CPU's spin-wait hint (x86's PAUSE), or
// a yield where there is none.
void spin_pause();

}  // namespace attn
