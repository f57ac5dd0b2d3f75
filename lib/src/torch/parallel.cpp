#include "attn/parallel.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace attn {

namespace {

// Worker threads that stay for the whole process: a parallel loop wakes them (microseconds)
// instead of starting threads (tens of microseconds each, and their stacks' page faults), which
// matters when a product takes a fraction of a millisecond.
class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  // Runs body(begin, end) for each of the `parts` ranges of [0, n), the first on this thread.
  void run(std::int64_t n, std::int64_t parts,
           const std::function<void(std::int64_t, std::int64_t)>& body) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (workers_.size() + 1 < static_cast<std::size_t>(parts)) {
      workers_.emplace_back([this] { work(); });
    }
    body_ = &body;
    n_ = n;
    parts_ = parts;
    next_part_ = 1;
    pending_ = parts - 1;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    body(0, n / parts);
    lock.lock();
    done_.wait(lock, [this] { return pending_ == 0; });
    body_ = nullptr;
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
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && next_part_ < parts_); });
      if (stop_) return;
      const std::int64_t p = next_part_++;
      if (next_part_ >= parts_) seen = generation_;
      const auto* body = body_;
      const std::int64_t n = n_, parts = parts_;
      lock.unlock();
      (*body)(n * p / parts, n * (p + 1) / parts);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
  std::int64_t n_ = 0, parts_ = 0, next_part_ = 0, pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

void parallel_for(std::int64_t n, int threads, double work,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  constexpr double kMinWork = 1e6;  // below this, waking threads costs more than it saves
  const std::int64_t parts = std::min<std::int64_t>(n, threads);
  if (parts <= 1 || work < kMinWork) {
    body(0, n);
    return;
  }
  Pool::instance().run(n, parts, body);
}

}  // namespace attn
