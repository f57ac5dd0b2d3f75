#include "attn/render_json.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "attn/diff.hpp"
#include "attn/version.hpp"
#include "support/reference.hpp"

namespace test = attn::test;

TEST_CASE("float_text is the shortest text that reads back as the same float32") {
  CHECK(attn::float_text(0.33737018704414368f) == "0.3373702");
  CHECK(attn::float_text(1.2902936f) == "1.2902936");
  CHECK(attn::float_text(-0.0f) == "-0.0");  // "-0" is the integer 0 to Python's json
  CHECK(attn::float_text(0.0f) == "0");
  CHECK(attn::float_text(1e-5f) == "1e-05");
  CHECK(attn::float_text(std::numeric_limits<float>::quiet_NaN()) == "\"nan\"");
  CHECK(attn::float_text(-std::numeric_limits<float>::infinity()) == "\"-inf\"");
}

TEST_CASE("a JSON trace reads back with every float32 bit, nan, -inf and -0 included") {
  attn::TraceConfig c;
  c.sentences = {"Life is short, eat dessert first", "eat dessert"};
  c.causal = true;
  c.heads = 2;
  attn::TraceConfig backward;  // its gradients hold negative zeros
  backward.causal = true;
  backward.backward = true;
  const std::string backward_json = attn::render_json(attn::run_trace(backward));
  CHECK(backward_json.find(", -0.0,") != std::string::npos);
  CHECK(backward_json.find("-0,") == std::string::npos);
  for (const attn::TraceConfig& config : {c, backward}) {
    const attn::Trace trace = attn::run_trace(config);
    const attn::TraceDocument doc = attn::parse_trace_json(attn::render_json(trace), "t.json");
    REQUIRE(doc.steps.size() == trace.steps.size());
    for (std::size_t i = 0; i < doc.steps.size(); ++i) {
      const attn::Step& s = trace.steps[i];
      CHECK(doc.steps[i].id == s.id);
      CHECK(doc.steps[i].row_labels == s.row_labels);
      const auto want = test::bits_of(s.values);
      auto got = test::bits_of(doc.steps[i].values);
      // nan reads back as nan (its sign bit is not kept): compare nan by class.
      for (std::size_t k = 0; k < want.size(); ++k) {
        if (std::isnan(std::bit_cast<float>(want[k]))) {
          CHECK(std::isnan(std::bit_cast<float>(got[k])));
          got[k] = want[k];
        }
      }
      CHECK(got == want);
    }
  }
}

TEST_CASE("the document carries the tool, its version, the schema version and the settings") {
  const nlohmann::json doc = nlohmann::json::parse(attn::render_json(attn::run_trace({})));
  CHECK(doc.at("tool") == "attn-trace");
  CHECK(doc.at("version") == attn::kVersion);
  CHECK(doc.at("schema_version") == attn::kJsonSchemaVersion);
  CHECK(doc.at("settings").at("seed") == 123);
  CHECK(doc.at("settings").at("torch_kernel") == "avx2");
  CHECK(doc.at("dictionary").at("Life") == 0);
  CHECK(doc.at("inputs")[0].at("ids") == std::vector<int>{0, 4, 5, 2, 1, 3});
  const nlohmann::json& omega = doc.at("steps")[7];
  CHECK(omega.at("id") == "omega");
  CHECK(omega.at("equation") == "ω = Q Kᵀ");
  CHECK(omega.at("shape") == std::vector<int>{6, 6});
  CHECK(omega.at("tensor_shape").at("names") == std::vector<std::string>{"T", "T"});
  CHECK(omega.at("head").is_null());
  CHECK(omega.at("col_labels")[4] == "dessert");
  CHECK(omega.at("values")[1][4].get<double>() == doctest::Approx(1.2902936));
}

TEST_CASE("the manifest names one file per step") {
  const attn::Trace trace = attn::run_trace({});
  std::vector<attn::ExportEntry> files = attn::export_plan(trace);
  for (std::size_t i = 0; i < files.size(); ++i) files[i].name = fmt::format("f{}", i);
  const nlohmann::json m = nlohmann::json::parse(attn::render_manifest(trace, files));
  CHECK(m.at("files").size() == trace.steps.size());
  CHECK(m.at("files")[7].at("file") == "f7");
  CHECK(m.at("files")[7].at("id") == "omega");
  CHECK_FALSE(m.at("files")[7].contains("values"));
}
