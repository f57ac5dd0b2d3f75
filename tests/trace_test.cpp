#include "attn/trace.hpp"

#include <doctest/doctest.h>

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;
namespace test = attn::test;

namespace {

attn::TraceConfig config_of(const test::json& ref, TorchKernel kernel) {
  const test::json& s = ref.at("settings");
  attn::TraceConfig c;
  c.sentence = s.at("sentence").get<std::string>();
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  c.d_kq = s.at("d_kq").get<std::int64_t>();
  c.d_v = s.at("d_v").get<std::int64_t>();
  c.kernel = kernel;
  return c;
}

// Tolerance for the computed steps (PyTorch's matmul and softmax, reproduced in float32).
constexpr float kTolerance = 1e-6f;

}  // namespace

TEST_CASE("traces equal PyTorch's at every step, in both kernel flavours") {
  const char* cases[] = {"trace_article.json", "trace_fox_seed7.json", "trace_repeated_seed42.json",
                         "trace_long_seed2p32.json", "trace_tiny_seed1.json"};
  for (const TorchKernel kernel : test::kKernels) {
    for (const char* file : cases) {
      const test::json ref = test::load_reference(kernel, file);
      const std::string what = std::string(attn::kernel_name(kernel)) + " " + file;
      CAPTURE(what);
      const attn::Trace trace = attn::run_trace(config_of(ref, kernel));

      CHECK(trace.words == ref.at("words").get<std::vector<std::string>>());
      CHECK(trace.ids == ref.at("token_ids").get<std::vector<std::int64_t>>());
      std::vector<std::string> dictionary;
      for (const auto& [word, id] : ref.at("dictionary").items()) {
        CHECK(trace.vocabulary.id(word) == id.get<std::int64_t>());
        dictionary.push_back(word);
      }
      CHECK(trace.vocabulary.words().size() == dictionary.size());

      REQUIRE(trace.steps.size() == attn::step_ids().size());
      for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const attn::Step& step = trace.steps[i];
        CHECK(step.id == attn::step_ids()[i]);
        const test::json& expected = ref.at("steps").at(step.id);
        // The generator's outputs are promised bit for bit; the arithmetic within tolerance,
        // and bit for bit as well where PyTorch's reference BLAS and softmax kernel apply.
        test::check_bits(step.values, expected, what + " " + step.id);
        test::check_matrix_near(step.values, test::tensor_from_bits(expected), kTolerance,
                                what + " " + step.id);
      }
    }
  }
}

TEST_CASE("the shared golden walkthrough: every tensor, the table's digest, the second token") {
  for (const TorchKernel kernel : test::kKernels) {
    const test::json ref = test::load_reference(kernel, "golden_article_seed123.json");
    const std::string what = std::string(attn::kernel_name(kernel)) + " golden article";
    CAPTURE(what);
    attn::TraceConfig c;
    c.kernel = kernel;
    const attn::Trace trace = attn::run_trace(c);
    CHECK(trace.ids == ref.at("token_ids").get<std::vector<std::int64_t>>());
    for (const auto& [word, id] : ref.at("dictionary").items()) {
      CHECK(trace.vocabulary.id(word) == id.get<std::int64_t>());
    }
    test::check_digest(attn::embedding_table(123, 50000, 3, kernel),
                       ref.at("embedding_weight_digest"), what + " table");
    const std::pair<const char*, const char*> steps[] = {{"embedded_sentence", "embeddings"},
                                                         {"W_query", "w_query"},
                                                         {"W_key", "w_key"},
                                                         {"W_value", "w_value"},
                                                         {"queries", "queries"},
                                                         {"keys", "keys"},
                                                         {"values", "values"},
                                                         {"omega", "omega"},
                                                         {"attention_weights", "attention_weights"},
                                                         {"context_vectors", "context_vectors"}};
    for (const auto& [golden, id] : steps) {
      test::check_bits(trace.step(id).values, ref.at(golden), what + " " + id);
    }
    // The walkthrough's second token: x_2 is row 1; omega_24 is query_2 . keys[4].
    const test::json& second = ref.at("article_second_token");
    const Matrix omega_24 = trace.step("omega").values.block(1, 4, 1, 1);
    test::check_bits(omega_24, test::json{{"bits", {second.at("omega_24").at("bits")}}},
                     what + " omega_24");
    const Matrix z_2 = trace.step("context_vectors").values.row(1);
    test::check_bits(z_2, second.at("context_vector_2"), what + " context_vector_2");
  }
}

TEST_CASE("the shared golden nn.Linear walkthrough, computed with the library's steps") {
  for (const TorchKernel kernel : test::kKernels) {
    const test::json ref = test::load_reference(kernel, "golden_linear_v2_seed123_d3_dout2.json");
    const std::string what = std::string(attn::kernel_name(kernel)) + " golden linear";
    CAPTURE(what);
    attn::TraceConfig c;
    c.kernel = kernel;
    const Matrix x = attn::run_trace(c).step("embeddings").values;
    attn::TorchGenerator gen(123);
    const Matrix w_q = attn::linear_weight(gen, 3, 2, kernel);  // (out, in)
    const Matrix w_k = attn::linear_weight(gen, 3, 2, kernel);
    const Matrix w_v = attn::linear_weight(gen, 3, 2, kernel);
    test::check_bits(w_q, ref.at("W_query_weight"), what + " W_q");
    test::check_bits(w_k, ref.at("W_key_weight"), what + " W_k");
    test::check_bits(w_v, ref.at("W_value_weight"), what + " W_v");
    // Linear(x) = x @ W.T
    const Matrix q = attn::project(x, w_q.transpose()), k = attn::project(x, w_k.transpose());
    const Matrix v = attn::project(x, w_v.transpose());
    const Matrix omega = attn::omega_scores(q, k);
    const Matrix a = attn::softmax_rows(attn::scale(omega, 2), kernel);
    test::check_bits(q, ref.at("queries"), what + " queries");
    test::check_bits(omega, ref.at("omega"), what + " omega");
    test::check_bits(a, ref.at("attention_weights"), what + " weights");
    test::check_bits(attn::context_vectors(a, v), ref.at("context_vectors"), what + " context");
  }
}

TEST_CASE("the walkthrough's numbers, as ARCHITECTURE lists them") {
  const attn::Trace trace = attn::run_trace(attn::TraceConfig{});
  const Matrix& omega = trace.step("omega").values;
  CHECK(omega(1, 4) == doctest::Approx(1.2903).epsilon(1e-4));
  CHECK(trace.step("context_vectors").values(2, 2) == doctest::Approx(-0.26264992).epsilon(1e-7));
}

TEST_CASE("the same config gives the same bits") {
  attn::TraceConfig c;
  c.sentence = "a b c d e f g h i j k l m n o p q";
  c.d_in = 20;
  const attn::Trace a = attn::run_trace(c), b = attn::run_trace(c);
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    CHECK(test::bits_of(a.steps[i].values) == test::bits_of(b.steps[i].values));
  }
}

TEST_CASE("settings out of range are refused, naming the value and the range") {
  attn::TraceConfig c;
  c.d_in = 0;
  CHECK_THROWS_WITH_AS(attn::run_trace(c), "d_in 0 is out of range: allowed 1..8192", attn::Error);
  c = {};
  c.d_v = attn::kMaxDimension + 1;
  CHECK_THROWS_WITH_AS(attn::run_trace(c), "d_v 8193 is out of range: allowed 1..8192",
                       attn::Error);
  c = {};
  c.vocab_size = 5;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "vocabulary size 5 is smaller than the sentence's 6 distinct words: it must "
                       "be at least 6",
                       attn::Error);
  c = {};
  c.sentence = " ,, ";
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "the sentence has no words: give at least one word (commas and white space "
                       "do not count)",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::run_trace({}).step("mask"), "the trace has no step 'mask'",
                       attn::Error);
}

TEST_CASE("V = 50,000 with d_in = 4,096 computes only the sentence's rows") {
  attn::TraceConfig c;
  c.d_in = 4096;
  const attn::Trace trace = attn::run_trace(c);
  CHECK(trace.step("embeddings").values.rows() == 6);
  CHECK(trace.step("embeddings").values.cols() == 4096);
  CHECK(trace.step("context_vectors").values.allFinite());
}
