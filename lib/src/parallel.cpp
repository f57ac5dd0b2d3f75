#include "attn/parallel.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace attn {

void parallel_for(std::int64_t n, int threads, double work,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  constexpr double kMinWork = 1e6;  // below this, starting threads costs more than it saves
  const std::int64_t parts = std::min<std::int64_t>(n, threads);
  if (parts <= 1 || work < kMinWork) {
    body(0, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(parts - 1));
  for (std::int64_t p = 1; p < parts; ++p) {
    workers.emplace_back(body, n * p / parts, n * (p + 1) / parts);
  }
  body(0, n / parts);
  for (std::thread& w : workers) w.join();
}

}  // namespace attn
