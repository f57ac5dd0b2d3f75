#include "attn/diff.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

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

TEST_CASE("the report shows a file name's control characters escaped") {
  attn::TraceConfig causal;
  causal.causal = true;
  const attn::TraceDocument a = document({}, "a\x1b[2J.json");
  const attn::TraceDocument b = document(causal, "b\n.json");
  const attn::DiffResult d = attn::diff_traces(a, b, {});
  CHECK(d.report.find("mask: only in b\\n.json\n") != std::string::npos);
  attn::TraceConfig longer;
  longer.sentences = {"a b c"};
  const attn::DiffResult s = attn::diff_traces(a, document(longer, "c\x9b.json"), {});
  CHECK(s.report.find("embeddings: shape [6, 3] in a\\x1b[2J.json, [3, 3] in c\\x9b.json\n") !=
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
      "x.json is not a valid trace: step 1: row 2 has 1 value where row 1 has 2: the rows of a "
      "step have one length",
      attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(
          R"({"tool": "attn-trace", "schema_version": 1, "steps": [{"id": "a", "head": null,
              "batch": null, "values": [["x"]]}]})",
          "x.json"),
      "x.json is not a valid trace: step 1: \"x\" is not a number", attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(R"({"tool": "attn-trace", "schema_version": 1, "steps": [{}]})",
                             "x.json"),
      "x.json is not a valid trace: step 1: it has no \"id\"", attn::Error);
}

TEST_CASE("a trace's steps are read field by field: each wrong one is named") {
  // One step, its fields given as JSON text after "id".
  const auto step = [](const std::string& fields) {
    return R"({"tool": "attn-trace", "schema_version": 1, "steps": [)" + fields + "]}";
  };
  const std::string ok = R"("head": null, "batch": null, "shape": [1, 2], "values": [[1, 2]])";
  CHECK(attn::parse_trace_json(step(R"({"id": "a", )" + ok + "}"), "x.json").steps.size() == 1);
  const std::pair<std::string, std::string> cases[] = {
      {"5", "it is 5, not an object"},
      {R"({"id": 3, "head": null})", "\"id\" is 3: it must be a string"},
      {R"({"id": "a", "batch": null})", "it has no \"head\""},
      {R"({"id": "a", "head": -1, "batch": null})",
       "\"head\" is -1: it must be null or a whole number from 0"},
      {R"({"id": "a", "head": 0, "batch": 0})",
       "\"batch\" is 0: it must be null or a whole number from 1"},
      {R"({"id": "a", "head": null, "batch": null, "row_labels": [1]})",
       "\"row_labels\" is an array: it must be an array of strings"},
      {R"({"id": "a", "head": null, "batch": null, "col_labels": "b"})",
       "\"col_labels\" is \"b\": it must be an array of strings"},
      {R"({"id": "a", "head": null, "batch": null})", "it has no \"values\""},
      {R"({"id": "a", "head": null, "batch": null, "values": {}})",
       "\"values\" is an object: it must be an array of rows"},
      {R"({"id": "a", "head": null, "batch": null, "values": [5]})",
       "row 1 is 5: a row is an array of values"},
      {R"({"id": "a", "head": null, "batch": null, "shape": [1, 3], "values": [[1, 2]]})",
       "\"shape\" is [1, 3] but its values are 1 row of 2: they must agree"},
      {R"({"id": "a", "head": null, "batch": null, "shape": [-1, 2], "values": [[1, 2]]})",
       "\"shape\" is [-1, 2] but its values are 1 row of 2: they must agree"},
      {R"({"id": "a", "head": null, "batch": null, "values": [[[1]]]})",
       "row 1 holds an array: a row is an array of numbers"},
      {R"({"id": "a", "head": null, "batch": null, "row_labels": ["x"], "values": [[1], [2]]})",
       "\"row_labels\" has 1 label for 2 rows: one each, or none"},
      {R"({"id": "a", "head": null, "batch": null, "col_labels": ["x", "y"], "values": [[1]]})",
       "\"col_labels\" has 2 labels for 1 column: one each, or none"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    CHECK_THROWS_WITH_AS(attn::parse_trace_json(step(c.first), "x.json"),
                         ("x.json is not a valid trace: step 1: " + c.second).c_str(), attn::Error);
  }
}

TEST_CASE("a JSON file with a NUL byte is refused: nlohmann would stop reading at it") {
  const std::string text =
      std::string(R"({"tool": "attn-trace",)") + std::string("\n\0 garbage", 10);
  CHECK_THROWS_WITH_AS(attn::parse_trace_json(text, "x.json"),
                       "x.json is not JSON: line 2, column 1: a NUL byte, which JSON text never "
                       "holds",
                       attn::Error);
}

namespace {

// A trace of one step of one row, with `values` as the JSON text of its cells.
std::string one_step_trace(const std::string& values) {
  return R"({"tool": "attn-trace", "schema_version": 1, "steps": [{"id": "omega", "head": null,
             "batch": null, "row_labels": ["a"], "col_labels": ["b", "c"], "values": [[)" +
         values + "]]}]}";
}

}  // namespace

TEST_CASE("diff reads values as float32: a value beyond its range is refused, never inf") {
  for (const std::string v : {"1e300", "1e39", "-3.5e38", "3.4028236e38"}) {
    CAPTURE(v);
    const std::string shown = v == "1e300"     ? "1e+300"
                              : v == "1e39"    ? "1e+39"
                              : v == "-3.5e38" ? "-3.5e+38"
                                               : "3.4028236e+38";
    CHECK_THROWS_WITH_AS(
        attn::parse_trace_json(one_step_trace("1, " + v), "t.json"),
        ("t.json is not a valid trace: step 1: row 1, column 2: " + shown +
         " is beyond float32's range: a trace holds float32 values, and writes an infinity as "
         "\"inf\" or \"-inf\"")
            .c_str(),
        attn::Error);
  }
  // The largest float32, and values that round to it or to the same float32, are read.
  const attn::TraceDocument a =
      attn::parse_trace_json(one_step_trace("3.4028235e38, 0.1"), "a.json");
  const attn::TraceDocument b =
      attn::parse_trace_json(one_step_trace("3.40282350e38, 0.100000001"), "b.json");
  CHECK(a.steps[0].values(0, 0) == std::numeric_limits<float>::max());
  CHECK(a.steps[0].values(0, 1) == 0.1f);
  CHECK(attn::diff_traces(a, b, {.atol = 0, .rtol = 0}).equal);
  // "inf" is an infinity, and equals only itself.
  const attn::TraceDocument inf = attn::parse_trace_json(one_step_trace(R"("inf", 0.1)"), "i.json");
  CHECK(std::isinf(inf.steps[0].values(0, 0)));
  CHECK_FALSE(attn::diff_traces(a, inf, {}).equal);
}

TEST_CASE("a trace with a key given twice is refused, naming its line") {
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(
          "{\"tool\": \"attn-trace\", \"schema_version\": 1,\n\"steps\": [{\"id\": "
          "\"omega\",\n \"values\": [[1]],\n \"values\": [[2]]}]}",
          "t.json"),
      "t.json: line 4: the key \"values\" appears twice in one object: each key may be given once",
      attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_trace_json(
          R"({"tool": "attn-trace", "schema_version": 1, "steps": [], "schema_version": 2})",
          "t.json"),
      "t.json: line 1: the key \"schema_version\" appears twice in one object: each key may be "
      "given once",
      attn::Error);
}

TEST_CASE("the report shows step ids and labels from the files with control characters escaped") {
  std::string text = one_step_trace("1, 2");
  text.replace(text.find("\"a\""), 3, R"("\u001b[2J\u0007")");
  text.replace(text.find("\"c\""), 3, "\"c\\u009b\"");
  text.replace(text.find("\"omega\""), 7, R"("omega\u001b]0;x")");
  const attn::TraceDocument a = attn::parse_trace_json(text, "a.json");
  attn::TraceDocument b = a;
  b.source = "b.json";
  b.steps[0].values(0, 1) = 3.0f;
  const attn::DiffResult d = attn::diff_traces(a, b, {});
  // A value that is not a number is named as JSON writes it, with a C1 control escaped too.
  CHECK_THROWS_WITH_AS(attn::parse_trace_json(one_step_trace(R"("\u001b", "x\u009b")"), "t.json"),
                       "t.json is not a valid trace: step 1: \"\\u001b\" is not a number",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_trace_json(one_step_trace(R"(1, "x\u009b")"), "t.json"),
                       "t.json is not a valid trace: step 1: \"x\\u009b\" is not a number",
                       attn::Error);
  CHECK(d.report.starts_with(
      "omega\\x1b]0;x: row 1 \"\\x1b[2J\\x07\", column 2 \"c\\x9b\": 2 vs 3, difference "
      "-1.00e+00\n"));
}

TEST_CASE("trace_document is the JSON trace read back, without the text") {
  attn::TraceConfig c;
  c.sentences = {"Life is short, eat dessert first", "eat dessert"};
  c.heads = 2;
  c.causal = true;
  const attn::Trace trace = attn::run_trace(c);
  const attn::TraceDocument direct = attn::trace_document(trace, "run");
  const attn::TraceDocument read = attn::parse_trace_json(attn::render_json(trace), "run");
  REQUIRE(direct.steps.size() == read.steps.size());
  for (std::size_t i = 0; i < read.steps.size(); ++i) {
    CAPTURE(i);
    CHECK(direct.steps[i].id == read.steps[i].id);
    CHECK(direct.steps[i].head == read.steps[i].head);
    CHECK(direct.steps[i].batch == read.steps[i].batch);
    CHECK(direct.steps[i].row_labels == read.steps[i].row_labels);
    CHECK(direct.steps[i].col_labels == read.steps[i].col_labels);
  }
  CHECK(attn::diff_traces(direct, read, {0.0, 0.0}).equal);
}
