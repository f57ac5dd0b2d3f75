#pragma once

// Today's attention variants in the lesson: rotary position embeddings, grouped-query heads and
// sliding windows (lesson_modern.cpp). Internal to the library.

#include <optional>
#include <string>

#include "attn/grouping.hpp"
#include "attn/rope.hpp"
#include "lesson.hpp"

namespace attn {

// resolve()'s checks of the variants' settings: kv_heads set (0 becomes heads), the window
// turns causal on, and every combination that makes no sense refused (Error, naming settings).
void resolve_variants(TraceConfig& c);

// The width that one head's queries and keys have: d_kq (wrapper), d_out / H (split).
std::int64_t head_width(const TraceConfig& c);
// The K and V projections' width in the split form: kv_heads · d_out / H.
std::int64_t kv_width(const TraceConfig& c);
// "K/V head 1 serves query heads 1, 2; K/V head 2 serves query heads 3, 4" (from 1), or empty
// without grouping.
std::string sharing_note(const TraceConfig& c);

namespace lesson {

// With rope: the cos and sin tables for t positions, recorded as steps; nullopt otherwise.
std::optional<RopeTables> record_rope_tables(Recorder& rec, std::int64_t t);

// With rope: Q and K rotated per head, recorded as steps; p unchanged otherwise.
Qkv rotate(Recorder& rec, const Item& item, const Qkv& p, const std::optional<RopeTables>& rope,
           std::optional<int> head);

}  // namespace lesson

}  // namespace attn
