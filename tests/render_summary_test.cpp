#include "attn/render_summary.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "attn/embedding.hpp"
#include "support/reference.hpp"

namespace test = attn::test;

TEST_CASE("the checksum is FNV-1a 64 of the float32 bytes, as the PyTorch references record it") {
  CHECK(attn::fnv1a64(attn::Matrix(0, 0)) == 0xcbf29ce484222325u);
  const test::json ref =
      test::load_reference(attn::TorchKernel::kAvx2, "golden_article_seed123.json");
  const std::string want = ref.at("embedding_weight_digest").at("fnv1a64_f32le").get<std::string>();
  const attn::Matrix table = attn::embedding_table(123, 50000, 3, attn::TorchKernel::kAvx2);
  CHECK(fmt::format("{:016x}", attn::fnv1a64(table)) == want);
}

TEST_CASE("the summary: one line per step, the row-sum residual, the most-attended keys") {
  const std::string out = attn::render_summary(attn::run_trace({}), 2);
  CHECK(out.find("tokens: 1 sentence of 6 tokens, 6 distinct words\n") != std::string::npos);
  CHECK(out.find("dictionary") == std::string::npos);
  CHECK(out.find("\nomega                              [6, 6]     -2.50373      3.47071") !=
        std::string::npos);
  CHECK(out.find("attention_weights: largest |row sum − 1| = 1.2e-07\n") != std::string::npos);
  CHECK(out.find("  query 2 'is' attends most to 'is' 0.6870, 'dessert' 0.1470, 'eat' 0.0840\n") !=
        std::string::npos);
  CHECK(out.find("query 3") == std::string::npos);  // only the first 2 queries
}
