#pragma once

// How the overview (render_overview.cpp) draws each kind of step: its symbol and its place in
// the drawing.

#include <string_view>

#include "attn/trace.hpp"

namespace attn::overview {

// Where a step goes in the drawing.
enum class Place {
  kStage,   // a line of its own: "→ ω [6×6]"
  kBeside,  // on the line of the stage before: "Q [6×2], K [6×2]"
  kWith,    // a "with" line under the stage it feeds (`feeds`): the weights, the mask
  kAside,   // a line under the stage before, not on the way to the output: a check, the
            // causal lesson's other way
};

// How the overview draws a step: the tutorial's symbol, its place, and for an aside the words
// that lead its line.
struct Look {
  std::string_view symbol;
  Place place;
  StepKind feeds = StepKind::kEmbeddings;  // kWith: the stage it is used by
  std::string_view lead = {};              // kAside
};

// The look of a step of kind `kind`. Throws std::logic_error for a kind the overview does not
// draw (a bug).
Look look(StepKind kind);

}  // namespace attn::overview
