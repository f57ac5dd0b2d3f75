#pragma once

// What each step computes and why, in a sentence or two: --describe turns the trace into a
// lesson.

#include <string_view>

namespace attn {

// The description of the step with this id; empty for an id it does not know.
std::string_view describe_step(std::string_view id);

}  // namespace attn
