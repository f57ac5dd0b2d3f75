#pragma once

// The overview: a run's pipeline on one screen, each matrix with the tutorial's name and its
// shape, from the token ids to the output. It is drawn from the run's plan (plan_steps), not
// from computed values, so the overview of a long input is instant and takes no memory.

#include <cstddef>
#include <string>

#include "attn/trace.hpp"

namespace attn {

// The input and the settings (the summary's brief header), then the pipeline that run_trace
// would record for `trace` (its config and inputs; its steps, if any, are not read): one line
// per stage, "→ ω [6×6]" with the step ids on the right, the weights under the stage that uses
// them, per-head stages indented under "2 heads, each:", and, last, the values a full trace
// holds against the memory limit. Every line is at most `width` display columns: long lines are
// wrapped at spaces, and a word wider than a line is cut with "…".
// Throws Error for a width under 40.
std::string render_overview(const Trace& trace, std::size_t width = 80);

}  // namespace attn
