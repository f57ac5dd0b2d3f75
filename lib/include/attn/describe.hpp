#pragma once

// What each step computes and why, in a sentence or two: --describe turns the trace into a
// lesson.

#include <string_view>

#include "attn/steps.hpp"

namespace attn {

// The description of a step of this kind: the catalogue's, for every step of the kind, the
// per-token steps of decoding (key_cache_t3) too.
std::string_view describe_step(StepKind kind);
// The description of the step with this catalogue id; empty for an id it does not know.
std::string_view describe_step(std::string_view id);

}  // namespace attn
