#include "attn/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_PAUSE() _mm_pause()
#else
#define ATTN_PAUSE() std::this_thread::yield()
#endif

namespace attn {

namespace {

// One parallel loop: `chunks` pieces, handed out in order to whichever thread asks next.
struct Job {
  std::int64_t chunks;
  const std::function<void(std::int64_t)>* run_chunk;
  std::atomic<std::int64_t> next{0};
  std::exception_ptr failed;  // the first chunk's exception, under the pool's mutex
};

// Runs the job's chunks until none is left; after an exception, no more (returned).
std::exception_ptr drain(Job& job) {
  try {
    for (std::int64_t i = job.next.fetch_add(1, std::memory_order_relaxed); i < job.chunks;
         i = job.next.fetch_add(1, std::memory_order_relaxed)) {
      (*job.run_chunk)(i);
    }
  } catch (...) {
    job.next.store(job.chunks, std::memory_order_relaxed);
    return std::current_exception();
  }
  return nullptr;
}

// Worker threads that stay for the whole process: a parallel loop wakes them (microseconds)
// instead of starting threads (tens of microseconds each, and their stacks' page faults), which
// matters when a product takes a fraction of a millisecond. The calling thread starts on the
// chunks at once, and the workers take chunks as they come: a worker that the system wakes late
// (a virtual machine's idle core can take a millisecond) takes fewer of them, or none, instead of
// holding the loop up. After a loop, a worker watches for the next one for a little while
// before it sleeps: products come back to back, and a sleeping worker is the slow one to wake.
class Pool {
  static constexpr int kWatch = 20000;  // pauses: about 0.1–1 ms, depending on the CPU

 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  void run(std::int64_t chunks, int threads, const std::function<void(std::int64_t)>& run_chunk) {
    Job job{chunks, &run_chunk, {0}, nullptr};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (workers_.size() + 1 < static_cast<std::size_t>(threads)) {
        workers_.emplace_back([this] { work(); });
      }
      job_ = &job;
      wanted_ = threads - 1;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    // An exception in a chunk, on any thread, is rethrown here once every thread is done with
    // the job.
    std::exception_ptr failed = drain(job);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // a worker not yet awake no longer joins
    // The workers still on a chunk are watched for a while before this thread sleeps: on a
    // virtual machine a sleeping core can take 50-300 microseconds to wake, a tenth of a product
    // at T = 1024, and the other threads' last chunks are usually shorter than that.
    if (active_.load(std::memory_order_relaxed) != 0) {
      lock.unlock();
      for (int i = 0; i < kWatch && active_.load(std::memory_order_acquire) != 0; ++i) {
        ATTN_PAUSE();
      }
      lock.lock();
    }
    done_.wait(lock, [this] { return active_.load(std::memory_order_relaxed) == 0; });
    if (!failed) failed = job.failed;
    if (failed) std::rethrow_exception(failed);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      for (int i = 0; i < kWatch && generation_.load(std::memory_order_acquire) == seen; ++i) {
        ATTN_PAUSE();
      }
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock,
                 [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (job_ == nullptr || wanted_ == 0) continue;  // that loop is over, or has its threads
      --wanted_;
      Job& job = *job_;
      active_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      std::exception_ptr failed = drain(job);
      lock.lock();
      if (failed && !job.failed) job.failed = failed;
      if (active_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  int wanted_ = 0;
  std::atomic<int> active_{0};  // workers on the job; changed under the mutex, watched without it
  std::atomic<std::uint64_t> generation_{0};
  bool stop_ = false;
};

constexpr double kMinWork = 1e6;  // below this, waking threads costs more than it saves

}  // namespace

void parallel_for(std::int64_t n, int threads, double work,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t parts = std::min<std::int64_t>(n, threads);
  if (parts <= 1 || work < kMinWork) {
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
  grain = std::max<std::int64_t>(1, grain);
  const std::int64_t chunks = (n + grain - 1) / grain;
  if (threads <= 1 || chunks <= 1 || work < kMinWork) {
    body(0, n);
    return;
  }
  const std::function<void(std::int64_t)> chunk = [&](std::int64_t i) {
    body(i * grain, std::min(n, (i + 1) * grain));
  };
  Pool::instance().run(chunks, static_cast<int>(std::min<std::int64_t>(chunks, threads)), chunk);
}

}  // namespace attn
