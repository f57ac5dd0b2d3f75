#pragma once

// Grouped-query attention and sliding windows: which key/value head a query head reads, and
// which keys a query sees. Plain index arithmetic, shared by every path that attends.

#include <cstdint>
#include <string>

#include "attn/matrix.hpp"

namespace attn {

// The key/value head that query head h (0-based) reads when `heads` query heads share
// `kv_heads` K/V heads: h / (heads / kv_heads), as torch.repeat_interleave(k, heads / kv_heads)
// lays them out. Requires kv_heads >= 1 dividing heads, 0 <= h < heads.
std::int64_t kv_head_of(std::int64_t h, std::int64_t heads, std::int64_t kv_heads);

// The query heads that K/V head g serves: first … first + count − 1.
struct HeadRange {
  std::int64_t first, count;
};
HeadRange query_heads_of(std::int64_t g, std::int64_t heads, std::int64_t kv_heads);

// Which query heads each K/V head serves, counting from 1: "K/V head 1 serves query heads 1, 2;
// K/V head 2 serves query heads 3, 4".
std::string kv_sharing_text(std::int64_t heads, std::int64_t kv_heads);

// Whether query i may see key j under a sliding window of `window` keys (i, j from 0): keys
// max(0, i − window + 1) … i. window 0 means no window: causal only, j <= i.
bool key_visible(std::int64_t i, std::int64_t j, std::int64_t window);

// The window's mask: (t_q, t_k), 1 where key_visible is false. A window of t_q or more masks
// exactly the causal triu(ones(t_q, t_k), diagonal=1).
Matrix window_mask(std::int64_t t_q, std::int64_t t_k, std::int64_t window);

}  // namespace attn
