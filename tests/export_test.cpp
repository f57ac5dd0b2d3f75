#include "attn/export.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "attn/io.hpp"
#include "support/reference.hpp"

namespace test = attn::test;

TEST_CASE("one .npy per step, named by place, id, head and sentence, then the manifest") {
  attn::TraceConfig c;
  c.sentences = {"a b", "c d"};
  c.heads = 2;
  const attn::Trace trace = attn::run_trace(c);
  const std::vector<attn::ExportFile> files = attn::export_files(trace);
  REQUIRE(files.size() == trace.steps.size() + 1);
  CHECK(files[0].name == "01_embeddings_sentence1.npy");
  CHECK(files[2].name == "03_w_query_head1.npy");
  CHECK(files.back().name == "manifest.json");
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const attn::LoadedMatrix m = attn::parse_npy(files[i].bytes, files[i].name);
    CHECK(test::bits_of(m.values) == test::bits_of(trace.steps[i].values));
  }
  const nlohmann::json manifest = nlohmann::json::parse(files.back().bytes);
  CHECK(manifest.at("files")[2].at("file") == "03_w_query_head1.npy");
  CHECK(manifest.at("files")[2].at("head") == 1);
}

TEST_CASE("a vector step is a 1-D array") {
  attn::TraceConfig c;
  c.multihead = attn::MultiheadForm::kSplit;
  c.init = attn::WeightInit::kLinear;
  c.d_kq = c.d_v = 4;
  const attn::Trace trace = attn::run_trace(c);
  for (const attn::ExportFile& f : attn::export_files(trace)) {
    if (f.name.find("b_out") != std::string::npos) {
      CHECK(f.bytes.find("'shape': (4,)") != std::string::npos);
    }
  }
}
