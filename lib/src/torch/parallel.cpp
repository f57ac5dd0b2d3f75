#include "attn/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace attn {

void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

namespace {

thread_local int this_pool_thread = 0;  // 0: not one of the pool's workers

// One parallel loop: `chunks` pieces, shared out as contiguous runs, one per thread (a share).
// Each thread takes its own share's chunks from the front, in order; a thread whose share is
// done takes chunks from the back of another's, one at a time. So each thread works along
// contiguous memory, and a thread that starts late or runs slow (a shared machine's other load)
// does less. Measured on 2 threads against chunks handed out in turn (so that neighbouring
// chunks ran on different cores): 18-25 % faster products at T = 1024 and 4096 (docs/design.md,
// Performance).
class Job {
 public:
  Job(std::int64_t chunks, int shares, const std::function<void(std::int64_t)>& run_chunk)
      : run_chunk_(run_chunk), shares_(static_cast<std::size_t>(shares)) {
    for (std::size_t s = 0; s < shares_.size(); ++s) {
      const auto n = static_cast<std::uint64_t>(chunks), k = shares_.size();
      shares_[s].range.store((n * s / k) << 32 | (n * (s + 1) / k), std::memory_order_relaxed);
    }
  }

  // Runs chunks, share `share`'s first, until none is left; after an exception, no more
  // (returned).
  std::exception_ptr drain(std::size_t share) {
    try {
      for (std::int64_t i = take(share); i >= 0; i = take(share)) run_chunk_(i);
    } catch (...) {
      cancelled_.store(true, std::memory_order_relaxed);
      return std::current_exception();
    }
    return nullptr;
  }

  std::size_t shares() const { return shares_.size(); }

  std::exception_ptr failed;  // the first chunk's exception, under the pool's mutex

 private:
  // A share: chunks [front, back), as front << 32 | back; a cache line's size, so that two
  // threads' shares seldom share a line (not aligned: glibc's aligned allocations leave pieces
  // behind in the heap, see gemm.cpp).
  struct Share {
    std::atomic<std::uint64_t> range{0};
    char pad[56];
  };

  // The next chunk for the thread of `share`, or -1 when there is none.
  std::int64_t take(std::size_t share) {
    if (cancelled_.load(std::memory_order_relaxed)) return -1;
    if (const std::int64_t i = pop(shares_[share], /*front=*/true); i >= 0) return i;
    for (std::size_t d = 1; d < shares_.size(); ++d) {
      if (const std::int64_t i = pop(shares_[(share + d) % shares_.size()], false); i >= 0) {
        return i;
      }
    }
    return -1;
  }

  static std::int64_t pop(Share& s, bool front) {
    std::uint64_t r = s.range.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t first = r >> 32, end = r & 0xffffffffu;
      if (first >= end) return -1;
      const std::uint64_t next = front ? r + (std::uint64_t{1} << 32) : r - 1;
      if (s.range.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
        return static_cast<std::int64_t>(front ? first : end - 1);
      }
    }
  }

  const std::function<void(std::int64_t)>& run_chunk_;
  std::vector<Share> shares_;
  std::atomic<bool> cancelled_{false};
};

#if defined(__linux__)
// The CPUs the calling thread may run on (its affinity mask); false where it cannot be read.
bool allowed_cpus(cpu_set_t& allowed) {
  CPU_ZERO(&allowed);
  return sched_getaffinity(0, sizeof allowed, &allowed) == 0;
}

// The numbers of the CPUs in `set`, ascending.
std::vector<int> cpu_numbers(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}
#endif

// The CPUs the pool's new workers should start on, worker `index` (1, 2, ...) on the
// (index - 1)-th modulo their count: the process's allowed CPUs in spread_order from the calling
// thread's, so that the first workers each have a core of their own (not a CPU that shares the
// calling thread's core through SMT) and more workers than CPUs are spread evenly; empty for no
// preference (one CPU allowed, or not Linux). Linux often starts a new thread on its creator's
// CPU and moves it only when it balances the load, milliseconds later; until then the two share
// one core, and each of a product's chunks takes twice as long. On the 2-core Zen 5 this happened
// in 8 of 30 runs at T = 1024 with one head on 2 threads (docs/design.md, Performance).
std::vector<int> start_cpus() {
#if defined(__linux__)
  cpu_set_t allowed;
  if (!allowed_cpus(allowed)) return {};
  const std::vector<int> cpus = cpu_numbers(allowed);
  if (cpus.size() < 2) return {};
  return spread_order(cpus, sched_getcpu());
#else
  return {};
#endif
}

// Moves the calling thread to `cpu` (from start_cpus), then lets it run on any allowed CPU again:
// the scheduler leaves a running thread where it is while that CPU is allowed. Returns the CPU
// the thread ran on while `cpu` was its only one, or -1 if it was not moved.
int move_to(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed, one;
  if (cpu < 0 || !allowed_cpus(allowed)) return -1;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) return -1;
  const int moved_to = sched_getcpu();
  (void)sched_setaffinity(0, sizeof allowed, &allowed);
  return moved_to;
#else
  (void)cpu;
  return -1;
#endif
}

// Worker threads that stay for the whole process: a parallel loop wakes them (microseconds)
// instead of starting threads (tens of microseconds each, and their stacks' page faults), which
// matters when a product takes a fraction of a millisecond. The calling thread starts on its
// share at once, and the workers on theirs as they come: a worker that the system wakes late
// (a virtual machine's idle core can take a millisecond) finds part of its share, or all of it,
// done by the others, instead of holding the loop up. After a loop, a worker watches for the next
// one for a little while before it sleeps: products come back to back, and a sleeping worker is the
// slow one to wake.
class Pool {
  static constexpr int kWatch = 20000;  // pauses: about 0.1–1 ms, depending on the CPU

 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  void run(std::int64_t chunks, int threads, const std::function<void(std::int64_t)>& run_chunk) {
    Job job(chunks, threads, run_chunk);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<int> starts;
      if (workers_.size() + 1 < static_cast<std::size_t>(threads)) starts = start_cpus();
      // More threads than CPUs take turns on them: a thread that watched would hold a CPU that
      // another needs for its chunks, so none watches (--threads 256 on 2 CPUs, T = 1,500: more
      // than two minutes, and 0.65 s without the watch and with the statistics' yield).
      if (static_cast<std::size_t>(threads) > cpus_) watch_.store(false, std::memory_order_relaxed);
      while (workers_.size() + 1 < static_cast<std::size_t>(threads)) {
        const int index = static_cast<int>(workers_.size()) + 1;
        const int cpu =
            starts.empty() ? -1 : starts[static_cast<std::size_t>(index - 1) % starts.size()];
        std::atomic<int>& started_on = started_on_.emplace_back(-1);
        workers_.emplace_back([this, index, cpu, &started_on] {
          this_pool_thread = index;
          started_on.store(move_to(cpu), std::memory_order_release);
          work();
        });
      }
      job_ = &job;
      wanted_ = threads - 1;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    // An exception in a chunk, on any thread, is rethrown here once every thread is done with
    // the job.
    std::exception_ptr failed = job.drain(0);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // a worker not yet awake no longer joins
    // The workers still on a chunk are watched for a while before this thread sleeps: on a
    // virtual machine a sleeping core can take 50-300 microseconds to wake, a tenth of a product
    // at T = 1024, and the other threads' last chunks are usually shorter than that.
    if (active_.load(std::memory_order_relaxed) != 0 && watch_.load(std::memory_order_relaxed)) {
      lock.unlock();
      for (int i = 0; i < kWatch && active_.load(std::memory_order_acquire) != 0; ++i) {
        spin_pause();
      }
      lock.lock();
    }
    done_.wait(lock, [this] { return active_.load(std::memory_order_relaxed) == 0; });
    if (!failed) failed = job.failed;
    if (failed) std::rethrow_exception(failed);
  }

  int size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(workers_.size()) + 1;
  }

  int started_on(int worker) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worker < 1 || static_cast<std::size_t>(worker) > started_on_.size()) return -1;
    return started_on_[static_cast<std::size_t>(worker) - 1].load(std::memory_order_acquire);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);  // ends the workers' watch
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      for (int i = 0; i < kWatch && watch_.load(std::memory_order_relaxed) &&
                      generation_.load(std::memory_order_acquire) == seen;
           ++i) {
        spin_pause();
      }
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock,
                 [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (job_ == nullptr || wanted_ == 0) continue;  // that loop is over, or has its threads
      Job& job = *job_;
      // Shares 1, 2, ... to the workers in the order they come; share 0 is the calling thread's.
      const std::size_t share = job.shares() - static_cast<std::size_t>(wanted_--);
      active_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      std::exception_ptr failed = job.drain(share);
      lock.lock();
      if (failed && !job.failed) job.failed = failed;
      if (active_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::deque<std::atomic<int>> started_on_;  // worker i + 1's move_to; a deque keeps each in place
  Job* job_ = nullptr;
  int wanted_ = 0;
  std::atomic<int> active_{0};  // workers on the job; changed under the mutex, watched without it
  std::atomic<std::uint64_t> generation_{0};
  bool stop_ = false;
  // The CPUs the process may use, and whether the threads watch for work before they sleep: not
  // once the pool has more threads than CPUs.
  const std::size_t cpus_ = static_cast<std::size_t>(affinity_cpus());
  std::atomic<bool> watch_{true};
};

}  // namespace

int pool_thread() { return this_pool_thread; }

int pool_threads() { return Pool::instance().size(); }

int pool_start_cpu(int worker) { return Pool::instance().started_on(worker); }

int affinity_cpus() {
#if defined(__linux__)
  cpu_set_t allowed;
  if (allowed_cpus(allowed) && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int usable_cpus() {
  int cpus = affinity_cpus();
#if defined(__linux__)
  cpu_set_t allowed;
  if (cpus > 1 && allowed_cpus(allowed)) {
    // Two threads of one core share its FMA units and its caches, which one thread of the
    // products already keeps busy; PyTorch's threads default to the physical cores too.
    cpus = std::min(cpus, physical_cores(cpu_numbers(allowed)));
  }
  // Under a CPU time limit, threads beyond it take turns: with 2 threads in a cgroup limited to
  // one CPU's time, eight heads at T = 1024 took 101 ms against 83 on one (docs/design.md).
  if (cpus > 1) {
    if (const int limit = cgroup_cpu_limit(); limit > 0) cpus = std::min(cpus, limit);
  }
#endif
  return cpus;
}

void parallel_for(std::int64_t n, int threads, double work,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t parts = std::min<std::int64_t>(n, threads);
  if (parts <= 1 || work < kParallelMinWork) {
    body(0, n);
    return;
  }
  // The same ranges as ever, [n·p / parts, n·(p + 1) / parts); only who runs each one varies.
  const std::function<void(std::int64_t)> range = [&](std::int64_t p) {
    body(n * p / parts, n * (p + 1) / parts);
  };
  Pool::instance().run(parts, static_cast<int>(parts), range);
}

void parallel_chunks(std::int64_t n, std::int64_t grain, int threads, double work,
                     const std::function<void(std::int64_t, std::int64_t)>& body) {
  // At most 2³¹ chunks (a share holds chunk numbers in 32 bits); any split gives the same result.
  grain = std::max({std::int64_t{1}, grain, (n >> 31) + 1});
  const std::int64_t chunks = (n + grain - 1) / grain;
  if (threads <= 1 || chunks <= 1 || work < kParallelMinWork) {
    body(0, n);
    return;
  }
  const std::function<void(std::int64_t)> chunk = [&](std::int64_t i) {
    body(i * grain, std::min(n, (i + 1) * grain));
  };
  Pool::instance().run(chunks, static_cast<int>(std::min<std::int64_t>(chunks, threads)), chunk);
}

}  // namespace attn
