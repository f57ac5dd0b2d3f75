#include "attn/diff.hpp"

#include <doctest/doctest.h>

#include "attn/error.hpp"
#include "attn/render_json.hpp"
#include "attn/trace.hpp"

namespace {

attn::TraceDocument document(const attn::TraceConfig& c, const std::string& name) {
  return attn::parse_trace_json(attn::render_json(attn::run_trace(c)), name);
}

}  // namespace

TEST_CASE("the same trace is equal to itself") {
  const attn::TraceDocument a = document({}, "a.json");
  const attn::DiffResult d = attn::diff_traces(a, a, {});
  CHECK(d.equal);
  CHECK(d.report == "equal: 11 steps, 222 cells, all within atol 1e-08, rtol 1e-05\n");
}

TEST_CASE("a changed cell is reported with its step, labels, both values and the difference") {
  const attn::TraceDocument a = document({}, "a.json");
  attn::TraceDocument b = a;
  b.source = "b.json";
  b.steps[7].values(1, 4) += 0.001f;  // omega, query 'is', key 'dessert'
  const attn::DiffResult d = attn::diff_traces(a, b, {});
  CHECK_FALSE(d.equal);
  CHECK(d.report ==
        "omega: row 2 \"is\", column 5 \"dessert\": 1.29029357 vs 1.29129362, difference "
        "-1.00e-03\n"
        "different: 1 of 222 cells differ, in 1 of 11 steps; 0 steps in only one trace (atol "
        "1e-08, rtol 1e-05)\n");
  // Within a looser tolerance the traces are equal.
  CHECK(attn::diff_traces(a, b, {.atol = 0.01, .rtol = 0}).equal);
}

TEST_CASE("steps only in one trace, and steps of another shape, are differences") {
  attn::TraceConfig causal;
  causal.causal = true;
  const attn::TraceDocument a = document({}, "a.json"), b = document(causal, "b.json");
  const attn::DiffResult d = attn::diff_traces(a, b, {});
  CHECK_FALSE(d.equal);
  CHECK(d.report.find("mask: only in b.json\n") != std::string::npos);
  attn::TraceConfig longer;
  longer.sentences = {"a b c"};
  const attn::DiffResult s = attn::diff_traces(a, document(longer, "c.json"), {});
  CHECK(s.report.find("embeddings: shape [6, 3] in a.json, [3, 3] in c.json\n") !=
        std::string::npos);
}

TEST_CASE("nan equals nan and infinities equal themselves") {
  attn::TraceConfig c;
  c.sentences = {"a b c", "d"};
  const attn::TraceDocument a = document(c, "a.json");
  CHECK(attn::diff_traces(a, a, {}).equal);
}

TEST_CASE("files that are not traces are refused, naming the file") {
  CHECK_THROWS_WITH_AS(attn::parse_trace_json("{", "x.json"),
                       doctest::Contains("x.json is not JSON: "), attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_trace_json("[1, 2]", "x.json"),
                       "x.json is not an attn-trace trace: it has no \"tool\": \"attn-trace\" and "
                       "\"steps\"",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_trace_json(
                           R"({"tool": "attn-trace", "schema_version": 9, "steps": []})", "x.json"),
                       "x.json has schema version 9: this attn-trace reads version 1", attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(
          R"({"tool": "attn-trace", "schema_version": 1, "steps": [{"id": "a", "head": null,
              "batch": null, "values": [[1, 2], [3]]}]})",
          "x.json"),
      "x.json is not a valid trace: step 1: row 2 has 1 values, row 1 has 2", attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(
          R"({"tool": "attn-trace", "schema_version": 1, "steps": [{"id": "a", "head": null,
              "batch": null, "values": [["x"]]}]})",
          "x.json"),
      "x.json is not a valid trace: step 1: \"x\" is not a number", attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(R"({"tool": "attn-trace", "schema_version": 1, "steps": [{}]})",
                             "x.json"),
      doctest::Contains("x.json is not a valid trace: step 1: "), attn::Error);
}
