#include "attn/describe.hpp"

#include <doctest/doctest.h>

#include "attn/trace.hpp"

TEST_CASE("every step of every variant has a description") {
  attn::TraceConfig c;
  c.sentences = {"a b c", "d"};
  c.causal = true;
  c.softmax_steps = true;
  c.heads = 2;
  c.multihead = attn::MultiheadForm::kSplit;
  c.init = attn::WeightInit::kLinear;
  c.d_kq = c.d_v = 4;
  for (const attn::Step& s : attn::run_trace(c).steps) {
    CAPTURE(s.id);
    CHECK_FALSE(attn::describe_step(s.id).empty());
  }
  attn::TraceConfig w;
  w.cross = "x y";
  w.heads = 2;
  for (const attn::Step& s : attn::run_trace(w).steps) {
    CAPTURE(s.id);
    CHECK_FALSE(attn::describe_step(s.id).empty());
  }
  CHECK(attn::describe_step("no_such_step").empty());
  CHECK(attn::describe_step("scaled_scores").find("√d_k") != std::string_view::npos);
}
