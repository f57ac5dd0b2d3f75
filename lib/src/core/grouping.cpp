// Grouped-query heads and sliding windows: index arithmetic.

#include "attn/grouping.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "attn/error.hpp"

namespace attn {

namespace {

void check_grouping(std::int64_t heads, std::int64_t kv_heads) {
  if (kv_heads < 1 || heads < 1 || heads % kv_heads != 0) {
    throw Error(
        fmt::format("{} query heads cannot share {} key/value heads: the K/V heads must "
                    "divide the query heads",
                    heads, kv_heads));
  }
}

}  // namespace

std::int64_t kv_head_of(std::int64_t h, std::int64_t heads, std::int64_t kv_heads) {
  check_grouping(heads, kv_heads);
  if (h < 0 || h >= heads) {
    throw Error(fmt::format("query head {} is not one of 0..{}", h, heads - 1));
  }
  return h / (heads / kv_heads);
}

HeadRange query_heads_of(std::int64_t g, std::int64_t heads, std::int64_t kv_heads) {
  check_grouping(heads, kv_heads);
  if (g < 0 || g >= kv_heads) {
    throw Error(fmt::format("key/value head {} is not one of 0..{}", g, kv_heads - 1));
  }
  const std::int64_t group = heads / kv_heads;
  return {g * group, group};
}

std::string kv_sharing_text(std::int64_t heads, std::int64_t kv_heads) {
  std::vector<std::string> parts;
  for (std::int64_t g = 0; g < kv_heads; ++g) {
    const HeadRange r = query_heads_of(g, heads, kv_heads);
    std::vector<std::int64_t> served;
    for (std::int64_t h = r.first; h < r.first + r.count; ++h) served.push_back(h + 1);
    parts.push_back(fmt::format("K/V head {} serves query {} {}", g + 1,
                                served.size() == 1 ? "head" : "heads", fmt::join(served, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

bool key_visible(std::int64_t i, std::int64_t j, std::int64_t window) {
  if (j > i) return false;
  return window <= 0 || j > i - window;
}

Matrix window_mask(std::int64_t t_q, std::int64_t t_k, std::int64_t window) {
  Matrix m(t_q, t_k);
  for (Eigen::Index i = 0; i < t_q; ++i) {
    for (Eigen::Index j = 0; j < t_k; ++j) m(i, j) = key_visible(i, j, window) ? 0.0f : 1.0f;
  }
  return m;
}

}  // namespace attn
