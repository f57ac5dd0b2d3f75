#include "attn/trace.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/render_summary.hpp"
#include "attn/simd.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;
namespace test = attn::test;

namespace {

// What a run's plan and memory estimate are made from, read off the run: the queries' and keys'
// lengths, the sentences, whether they were padded, and the tokens of the embedding table's
// gradient (the dictionary, and the padding token; 0 without the backward pass).
struct RunShape {
  std::int64_t t_q, t_k, batch;
  bool padded;
  std::int64_t tokens;
};
RunShape shape_of(const attn::Trace& trace) {
  const auto t_q = static_cast<std::int64_t>(trace.inputs[0].words.size());
  return {t_q, trace.cross ? static_cast<std::int64_t>(trace.cross->words.size()) : t_q,
          static_cast<std::int64_t>(trace.inputs.size()), trace.pad_id.has_value(),
          trace.config.backward
              ? static_cast<std::int64_t>(trace.vocabulary.size()) + (trace.pad_id ? 1 : 0)
              : 0};
}

attn::TraceConfig config_of(const test::json& ref, TorchKernel kernel) {
  const test::json& s = ref.at("settings");
  attn::TraceConfig c;
  c.sentences = {s.at("sentence").get<std::string>()};
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  c.d_kq = s.at("d_kq").get<std::int64_t>();
  c.d_v = s.at("d_v").get<std::int64_t>();
  c.kernel = kernel;
  return c;
}

// The single-head trace's steps, in order (docs/cli.md lists them).
const std::vector<std::string> kSingleHeadSteps = {
    "embeddings", "w_query", "w_key",         "w_value",           "queries",        "keys",
    "values",     "omega",   "scaled_scores", "attention_weights", "context_vectors"};

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

      CHECK(trace.inputs.at(0).words == ref.at("words").get<std::vector<std::string>>());
      CHECK(trace.inputs.at(0).ids == ref.at("token_ids").get<std::vector<std::int64_t>>());
      std::vector<std::string> dictionary;
      for (const auto& [word, id] : ref.at("dictionary").items()) {
        CHECK(trace.vocabulary.id(word) == id.get<std::int64_t>());
        dictionary.push_back(word);
      }
      CHECK(trace.vocabulary.words().size() == dictionary.size());

      REQUIRE(trace.steps.size() == kSingleHeadSteps.size());
      for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const attn::Step& step = trace.steps[i];
        CHECK(step.id == kSingleHeadSteps[i]);
        const test::json& expected = ref.at("steps").at(step.id);
        // Every step bit for bit: the generator's draws, and the arithmetic in PyTorch's
        // reference BLAS order and softmax kernel.
        test::check_bits(step.values, expected, what + " " + step.id);
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
    CHECK(trace.inputs.at(0).ids == ref.at("token_ids").get<std::vector<std::int64_t>>());
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
  c.sentences = {"a b c d e f g h i j k l m n o p q"};
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
  c.sentences = {" ,, "};
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

namespace {

// The settings of a variant reference, as a TraceConfig.
attn::TraceConfig variant_config(const test::json& ref, TorchKernel kernel) {
  const test::json& s = ref.at("settings");
  attn::TraceConfig c;
  if (s.contains("queries_from")) {
    c.sentences = {s.at("sentences")[0].get<std::string>()};
    c.cross = s.at("sentences")[1].get<std::string>();
  } else if (s.contains("sentences")) {
    c.sentences = s.at("sentences").get<std::vector<std::string>>();
  } else {
    c.sentences = {s.at("sentence").get<std::string>()};
  }
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  c.d_kq =
      s.contains("d_out") ? s.at("d_out").get<std::int64_t>() : s.at("d_kq").get<std::int64_t>();
  c.d_v = s.contains("d_out") ? s.at("d_out").get<std::int64_t>() : s.at("d_v").get<std::int64_t>();
  c.heads = s.at("heads").get<std::int64_t>();
  if (s.contains("multihead"))
    c.multihead = attn::parse_multihead(s.at("multihead").get<std::string>());
  std::string init = s.at("init").get<std::string>();
  std::replace(init.begin(), init.end(), '_', '-');
  c.init = attn::parse_init(init);
  c.causal = s.at("causal").get<bool>();
  if (s.contains("masked_rows"))
    c.masked_rows = attn::parse_masked_rows(s.at("masked_rows").get<std::string>());
  c.kernel = kernel;
  return c;
}

std::optional<int> optional_index(const test::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(j.get<int>());
}

}  // namespace

TEST_CASE("every variant equals PyTorch's at every step, in both kernel flavours") {
  const char* cases[] = {"causal",
                         "causal_fox",
                         "heads2_wrapper",
                         "heads4_wrapper",
                         "heads2_split",
                         "heads4_split",
                         "heads2_split_causal",
                         "heads2_split_rand",
                         "cross",
                         "cross_causal",
                         "init_linear",
                         "init_rand_transposed",
                         "batch_padded_nan",
                         "batch_padded_zero",
                         "batch_padded_causal_zero"};
  for (const TorchKernel kernel : test::kKernels) {
    for (const char* name : cases) {
      const std::string file = std::string("variant_") + name + ".json";
      const test::json ref = test::load_reference(kernel, file);
      const std::string what = std::string(attn::kernel_name(kernel)) + " " + file;
      CAPTURE(what);
      const attn::Trace trace = attn::run_trace(variant_config(ref, kernel));

      const auto& sentences = ref.at("sentences");
      const auto& ids = ref.at("token_ids");
      for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
        CHECK(trace.inputs[b].ids == ids.at(b).get<std::vector<std::int64_t>>());
        const auto words = sentences.at(b).get<std::vector<std::string>>();
        CHECK(trace.inputs[b].length == static_cast<std::int64_t>(words.size()));
      }
      if (trace.cross) CHECK(trace.cross->ids == ids.at(1).get<std::vector<std::int64_t>>());
      for (const auto& [word, id] : ref.at("dictionary").items()) {
        if (word == attn::kPadToken) {
          CHECK(trace.pad_id == id.get<std::int64_t>());
        } else {
          CHECK(trace.vocabulary.id(word) == id.get<std::int64_t>());
        }
      }
      for (const test::json& expected : ref.at("steps")) {
        const auto id = expected.at("id").get<std::string>();
        const attn::Step& step = trace.step(id, optional_index(expected.at("head")),
                                            optional_index(expected.at("batch")));
        const std::string where = what + " " + id + " head " + expected.at("head").dump() +
                                  " batch " + expected.at("batch").dump();
        test::check_bits(step.values, expected, where);
      }
      if (ref.contains("omega_24")) {
        // The earlier walkthrough's omega_24 = query_2.dot(keys[4]) = 11.1466.
        const Matrix omega_24 = trace.step("omega").values.block(1, 4, 1, 1);
        test::check_bits(omega_24, test::json{{"bits", {ref.at("omega_24").at("bits")}}}, what);
        CHECK(omega_24(0, 0) == doctest::Approx(11.1466).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("causal: changing a later token leaves every earlier token's output unchanged") {
  attn::TraceConfig a, b;
  a.causal = b.causal = true;
  // The same dictionary, so every earlier token keeps its id and its embedding.
  a.sentences = {"the cat sat on the cat"};
  b.sentences = {"the cat sat on the sat"};
  a.vocab_size = b.vocab_size = 100;
  for (const auto heads : {1, 2}) {
    a.heads = b.heads = heads;
    const attn::Trace ta = attn::run_trace(a), tb = attn::run_trace(b);
    for (int h = 0; h < heads; ++h) {
      const std::optional<int> head = heads > 1 ? std::optional<int>(h) : std::nullopt;
      const Matrix za = ta.step("context_vectors", head).values;
      const Matrix zb = tb.step("context_vectors", head).values;
      // Rows 1..5 see only "the cat sat on the"; row 6 sees the changed word.
      CHECK(test::bits_of(za.topRows(5)) == test::bits_of(zb.topRows(5)));
      CHECK(test::bits_of(za.bottomRows(1)) != test::bits_of(zb.bottomRows(1)));
    }
  }
}

TEST_CASE("a fully masked row follows the chosen rule") {
  attn::TraceConfig c;
  c.sentences = {"one two three", "four"};
  for (const auto rule : {attn::MaskedRows::kNan, attn::MaskedRows::kZero}) {
    c.masked_rows = rule;
    const attn::Trace t = attn::run_trace(c);
    const Matrix& a = t.step("attention_weights", std::nullopt, 1).values;  // "four <pad> <pad>"
    CHECK(a(0, 0) == 1.0f);
    CHECK(a(0, 1) == 0.0f);
    for (Eigen::Index i = 1; i < 3; ++i) {
      for (Eigen::Index j = 0; j < 3; ++j) {
        if (rule == attn::MaskedRows::kNan) {
          CHECK(std::bit_cast<std::uint32_t>(a(i, j)) == 0xffc00000u);  // torch.softmax's nan
        } else {
          CHECK(a(i, j) == 0.0f);
        }
      }
    }
    CHECK(t.step("attention_weights", std::nullopt, 1).note.find("rows 2, 3 mask every key") !=
          std::string::npos);
    // The first sentence has no padding: nothing of it is masked.
    CHECK(t.step("attention_weights", std::nullopt, 0).values.allFinite());
  }
}

TEST_CASE("variant settings that do not fit together are refused") {
  attn::TraceConfig c;
  c.heads = 2;
  c.multihead = attn::MultiheadForm::kSplit;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "the split multi-head form projects to one width d_out, but d_kq 2 and d_v "
                       "4 differ: give one width",
                       attn::Error);
  c.heads = 3;
  c.d_kq = c.d_v = 4;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "d_out 4 does not split into 3 heads: it must be a multiple of 3",
                       attn::Error);
  c = {};
  c.sentences = {"a b", "c"};
  c.cross = "d e";
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "cross-attention takes one query sentence; got 2 sentences", attn::Error);
  c = {};
  c.sentences = {"a b c", "d"};
  c.vocab_size = 4;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "vocabulary size 4 is smaller than the batch's 4 distinct words and the "
                       "padding token: it must be at least 5",
                       attn::Error);
  c = {};
  c.sentences = {"a b", ""};
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "sentence 2 of 2 has no words: give at least one word (commas and white "
                       "space do not count)",
                       attn::Error);
  // Named by their lines in a batch file, where the program gives every sentence's line.
  c.sentences_file = "b.txt";
  c.sentence_lines = {1, 3};
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "b.txt: line 3: the sentence has no words: give at least one word (commas "
                       "and white space do not count)",
                       attn::Error);
  c.sentence_lines.pop_back();
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "sentence 2 of 2 has no words: give at least one word (commas and white "
                       "space do not count)",
                       attn::Error);
  c = {};
  c.heads = 65;
  CHECK_THROWS_WITH_AS(attn::run_trace(c), "heads 65 is out of range: allowed 1..64", attn::Error);
}

TEST_CASE("select_steps keeps the named steps in order and refuses unknown ids") {
  attn::Trace t = attn::run_trace({});
  attn::select_steps(t, {"context_vectors", "omega"});
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].id == "omega");
  CHECK(t.steps[1].id == "context_vectors");
  attn::Trace u = attn::run_trace({});
  CHECK_THROWS_WITH_AS(attn::select_steps(u, {"mask"}),
                       "step 'mask' is not in this trace: its steps are embeddings, w_query, "
                       "w_key, w_value, queries, keys, values, omega, scaled_scores, "
                       "attention_weights, context_vectors",
                       attn::Error);
}

TEST_CASE("bring your own numbers: the embedding table, X and the weights") {
  const attn::Trace base = attn::run_trace({});
  // The table whose rows are the walkthrough's embeddings gives the walkthrough's trace.
  attn::TraceConfig c;
  const Matrix x = base.step("embeddings").values;
  Matrix table(6, 3);
  const std::vector<std::int64_t>& ids = base.inputs[0].ids;
  for (std::size_t t = 0; t < ids.size(); ++t)
    table.row(ids[t]) = x.row(static_cast<Eigen::Index>(t));
  c.embedding = attn::GivenMatrix{table, "table.csv", {}};
  const attn::Trace with_table = attn::run_trace(c);
  CHECK(with_table.config.vocab_size == 6);
  CHECK(test::bits_of(with_table.step("context_vectors").values) ==
        test::bits_of(base.step("context_vectors").values));

  // X itself, with the walkthrough's weights given too: the same context vectors.
  attn::TraceConfig d;
  d.x = attn::GivenMatrix{x, "x.npy", {"Life", "is", "short", "eat", "dessert", "first"}};
  d.w_query = attn::GivenMatrix{base.step("w_query").values, "wq.npy", {}};
  d.w_key = attn::GivenMatrix{base.step("w_key").values, "wk.npy", {}};
  d.w_value = attn::GivenMatrix{base.step("w_value").values, "wv.npy", {}};
  d.seed = 7;  // the drawn weights are all replaced
  const attn::Trace given = attn::run_trace(d);
  CHECK(test::bits_of(given.step("context_vectors").values) ==
        test::bits_of(base.step("context_vectors").values));
  CHECK(given.step("w_query").equation == "W_q = wq.npy");
  CHECK(given.step("embeddings").row_labels[5] == "first");
}

TEST_CASE("draws_from_seed: what is not given is drawn, as draw_weights draws it") {
  attn::TraceConfig c;
  CHECK(attn::draws_from_seed(c));  // the embedding and every weight
  c.x = attn::GivenMatrix{Matrix::Zero(2, 3), "x.csv", {}};
  c.w_query = c.w_key = attn::GivenMatrix{Matrix::Zero(3, 2), "w.csv", {}};
  CHECK(attn::draws_from_seed(c));  // W_v
  c.w_value = c.w_query;
  CHECK_FALSE(attn::draws_from_seed(c));
  c.multihead = attn::MultiheadForm::kSplit;
  CHECK(attn::draws_from_seed(c));  // W_o
  c.w_out = attn::GivenMatrix{Matrix::Zero(2, 2), "wo.csv", {}};
  CHECK_FALSE(attn::draws_from_seed(c));
  c.init = attn::WeightInit::kLinear;
  CHECK(attn::draws_from_seed(c));  // b_o
}

TEST_CASE("given matrices whose shapes do not fit are refused, naming both") {
  attn::TraceConfig c;
  c.x = attn::GivenMatrix{Matrix::Zero(6, 3), "x.csv", {}};
  c.w_query = attn::GivenMatrix{Matrix::Zero(4, 2), "wq.npy", {}};
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "W_q in wq.npy has shape [4, 2], but X has d_in 3: with the rand init it "
                       "must be [d_in, d_kq]",
                       attn::Error);
  c.w_query = attn::GivenMatrix{Matrix::Zero(3, 2), "wq.npy", {}};
  c.w_key = attn::GivenMatrix{Matrix::Zero(3, 5), "wk.npy", {}};
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "W_k in wk.npy has shape [3, 5], but W_q in wq.npy gives d_kq 2: queries "
                       "and keys have one width",
                       attn::Error);
  attn::TraceConfig e;
  e.embedding = attn::GivenMatrix{Matrix::Zero(4, 3), "e.npy", {}};
  CHECK_THROWS_WITH_AS(attn::run_trace(e),
                       "the embedding table in e.npy has 4 rows, fewer than the sentence's 6 "
                       "distinct words: it must be at least 6",
                       attn::Error);
  attn::TraceConfig l;
  l.x = attn::GivenMatrix{Matrix::Zero(2, 3), "x.csv", {"a", "b", "c"}};
  CHECK_THROWS_WITH_AS(attn::run_trace(l),
                       "x.csv has 2 rows but 3 labels were given: one label per row", attn::Error);
}

TEST_CASE("the memory estimate counts a batch's weight gradients with rand-transposed weights") {
  attn::TraceConfig c;
  c.backward = true;
  c.sentences = {"a b c", "d e"};
  c.d_in = 8;
  c.d_kq = 5;
  c.d_v = 7;
  const attn::MemoryEstimate rand = attn::estimate_memory(attn::resolve(c), 3, 3, 2, true);
  c.init = attn::WeightInit::kRandTransposed;
  const attn::MemoryEstimate transposed = attn::estimate_memory(attn::resolve(c), 3, 3, 2, true);
  // Each item's product of the widest weight (8 x 7) at once, before the sum over the items.
  CHECK(transposed.working - rand.working == 2 * 8 * 7);
  c.multihead = attn::MultiheadForm::kSplit;
  c.heads = 1;
  c.d_kq = c.d_v = 12;  // W_o (12 x 12) is wider than W_q (8 x 12)
  const attn::MemoryEstimate split = attn::estimate_memory(attn::resolve(c), 3, 3, 2, true);
  c.init = attn::WeightInit::kRand;
  CHECK(split.working - attn::estimate_memory(attn::resolve(c), 3, 3, 2, true).working ==
        2 * 12 * 12);
}

TEST_CASE("the memory estimate counts every step and refuses a run above the limit") {
  attn::TraceConfig c;
  // 11 steps of the walkthrough: 18 + 6 + 6 + 12 + 12 + 12 + 24 + 3 x 36 + 24 = 222 floats;
  // 8 steps label their 6 rows, and omega, the scaled scores and the weights their 6 columns.
  const attn::MemoryEstimate e = attn::estimate_memory(attn::resolve(c), 6, 6, 1, false);
  CHECK(e.floats == 222);
  CHECK(e.steps == 11);
  CHECK(e.labels == 66);
  CHECK(e.tokens == 6);
  // A label: 32 bytes of text for 6 tokens, and 2 more; a step's record 768 bytes; each token's
  // label held in 3 lists of 48-byte strings, its text 8 times.
  const double label = 32.0 / 6.0 + 2.0;
  const double walkthrough = 222 * 4.0 + 11 * 768.0 + 6 * (3 * 48.0 + 8 * label);
  CHECK(attn::estimate_bytes(attn::resolve(c), 6, 6, 1, false) == doctest::Approx(walkthrough));
  CHECK(walkthrough == doctest::Approx(10552.0));
  c.max_memory = 512;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "this run would need about 10.3 KiB (T = 6 tokens, 1 head), more than the "
                       "memory limit of 512 bytes: trace fewer tokens, or raise the limit",
                       attn::Error);
  c.max_memory = attn::kDefaultMaxMemory;
  c.output_cost = {.per_value = 12.0, .per_step = 100.0, .label_copies = 2.0};
  CHECK(attn::estimate_bytes(attn::resolve(c), 6, 6, 1, false) ==
        doctest::Approx(walkthrough + 222 * 12.0 + 11 * 100.0 + 66 * label * 2.0));
  c.output_cost.labels_per_cell = true;  // a CSV: each value of a labelled row, and of a column
  CHECK(attn::estimate_bytes(attn::resolve(c), 6, 6, 1, false) ==
        doctest::Approx(walkthrough + 222 * 12.0 + 11 * 100.0 + 66 * label * 2.0 +
                        (222 - 6 - 6 - 12 + 3 * 36) * label));
}

TEST_CASE("a trace's steps share one list of each sentence's labels") {
  const auto same_list = [](const attn::LabelList& a, const attn::LabelList& b) {
    return &a.list() == &b.list();
  };
  for (const bool streamed : {false, true}) {
    CAPTURE(streamed);
    attn::TraceConfig c;
    c.sentences = {"Life is short, eat dessert first", "eat dessert first"};
    c.heads = 2;
    c.stream_scores = c.release_scores = streamed;
    c.score_block_rows = 2;  // three blocks of rows, each step's labels appended block by block
    const attn::Trace t = attn::run_trace(c);
    const attn::LabelList& first = t.step(attn::StepKind::kEmbeddings, std::nullopt, 0).row_labels;
    const attn::LabelList& second = t.step(attn::StepKind::kEmbeddings, std::nullopt, 1).row_labels;
    CHECK(first == std::vector<std::string>{"Life", "is", "short", "eat", "dessert", "first"});
    CHECK(second == std::vector<std::string>{"eat", "dessert", "first", "<pad>", "<pad>", "<pad>"});
    for (const int head : {0, 1}) {
      for (const int b : {0, 1}) {
        const attn::Step& w = t.step(attn::StepKind::kAttentionWeights, head, b);
        const attn::LabelList& own = b == 0 ? first : second;
        CHECK(same_list(w.row_labels, own));
        CHECK(same_list(w.col_labels, own));
        CHECK(same_list(t.step(attn::StepKind::kQueries, head, b).row_labels, own));
      }
    }
  }
  // A copy shares the list; appending to it copies the list first.
  attn::LabelList a{"x", "y"};
  attn::LabelList b = a;
  CHECK(&a.list() == &b.list());
  b.append({"z"});
  CHECK(a == std::vector<std::string>{"x", "y"});
  CHECK(b == std::vector<std::string>{"x", "y", "z"});
  CHECK(b.share_if_same(attn::LabelList{"x", "y", "z"}));
  CHECK_FALSE(b.share_if_same(a));
  CHECK(attn::LabelList{}.empty());
}

TEST_CASE("given numbers whose products overflow float32 are refused where they overflow") {
  attn::TraceConfig c;
  c.x = attn::GivenMatrix{Matrix::Constant(2, 3, 1e20f), "x.npy", {}};
  c.w_query = attn::GivenMatrix{Matrix::Constant(3, 2, 1e20f), "wq.npy", {}};
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "the queries Q overflow float32 at row 1, column 1 (inf): the given numbers "
                       "are too large; scale them down",
                       attn::Error);
}

TEST_CASE("scores that overflow are refused at their row when they go through in blocks") {
  // Row 3 of X is large: its query and key are finite (3e19), their product is not. Rows at a
  // time, ω's finiteness comes from the block's statistics, and row 3 is in the second block.
  Matrix x = Matrix::Ones(5, 3);
  x.row(2).setConstant(1e19f);
  for (const std::int64_t rows : {2, 5}) {
    CAPTURE(rows);
    attn::TraceConfig c;
    c.x = attn::GivenMatrix{x, "x.npy", {}};
    c.w_query = c.w_key = c.w_value = attn::GivenMatrix{Matrix::Ones(3, 2), "w.npy", {}};
    c.release_scores = c.stream_scores = true;
    c.score_block_rows = rows;
    CHECK_THROWS_WITH_AS(attn::run_trace(c),
                         "the scores ω overflow float32 at row 3, column 3 (inf): the given "
                         "numbers are too large; scale them down",
                         attn::Error);
  }
  // A block with no inf or nan passes: the same X, scaled down.
  attn::TraceConfig c;
  c.x = attn::GivenMatrix{x / 1e10f, "x.npy", {}};
  c.w_query = c.w_key = c.w_value = attn::GivenMatrix{Matrix::Ones(3, 2), "w.npy", {}};
  c.release_scores = c.stream_scores = true;
  c.score_block_rows = 2;
  CHECK_NOTHROW(attn::run_trace(c));
}

TEST_CASE("the trace is the same bits for any number of threads") {
  attn::TraceConfig c;
  std::string sentence;
  for (int i = 0; i < 300; ++i) sentence.append("w").append(std::to_string(i % 250)).append(" ");
  c.sentences = {sentence};
  c.d_in = 64;
  c.d_kq = 32;
  c.d_v = 16;
  c.heads = 2;
  c.causal = true;
  c.threads = 1;
  const attn::Trace one = attn::run_trace(c);
  for (const int threads : {2, 3}) {
    c.threads = threads;
    const attn::Trace many = attn::run_trace(c);
    REQUIRE(many.steps.size() == one.steps.size());
    for (std::size_t i = 0; i < one.steps.size(); ++i) {
      CAPTURE(one.steps[i].id);
      CHECK(test::bits_of(many.steps[i].values) == test::bits_of(one.steps[i].values));
    }
  }
}

TEST_CASE("the heads side by side hold each head's Z in its columns, on any number of threads") {
  // T · d_head of 1040 · 128 values: each head's copy into the heads side by side goes to the
  // threads (place_head), in both multi-head forms.
  attn::TraceConfig c;
  std::string sentence;
  for (int i = 0; i < 1040; ++i) sentence.append("w").append(std::to_string(i)).append(" ");
  c.sentences = {sentence};
  c.vocab_size = 1040;
  c.d_in = 8;
  c.heads = 3;
  for (const attn::MultiheadForm form :
       {attn::MultiheadForm::kWrapper, attn::MultiheadForm::kSplit}) {
    c.multihead = form;
    c.d_kq = form == attn::MultiheadForm::kSplit ? 3 * 128 : 8;
    c.d_v = form == attn::MultiheadForm::kSplit ? 3 * 128 : 128;
    std::vector<std::vector<std::uint32_t>> concat;
    for (const int threads : {1, 2}) {
      c.threads = threads;
      const attn::Trace t = attn::run_trace(c);
      const attn::Matrix* side_by_side = nullptr;
      std::vector<const attn::Matrix*> heads;
      for (const attn::Step& s : t.steps) {
        if (s.kind == attn::StepKind::kContextConcat) side_by_side = &s.values;
        if (s.kind == attn::StepKind::kContextVectors) heads.push_back(&s.values);
      }
      CAPTURE(threads);
      REQUIRE(side_by_side != nullptr);
      REQUIRE(heads.size() == 3);
      REQUIRE(side_by_side->rows() == 1040);
      REQUIRE(side_by_side->cols() == 3 * 128);
      for (std::size_t h = 0; h < heads.size(); ++h) {
        CAPTURE(h);
        const attn::Matrix columns =
            side_by_side->middleCols(static_cast<Eigen::Index>(h) * 128, 128);
        CHECK(test::bits_of(columns) == test::bits_of(*heads[h]));
      }
      concat.push_back(test::bits_of(*side_by_side));
    }
    CHECK(concat[1] == concat[0]);
  }
}

namespace {

// The large case's config: 256 distinct words, d_in 512, d_kq = d_v = 64, nn.Linear weights.
attn::TraceConfig large_config(const test::json& ref, TorchKernel kernel) {
  attn::TraceConfig c = config_of(ref, kernel);
  c.init = ref.at("settings").at("init") == "linear" ? attn::WeightInit::kLinear
                                                     : attn::WeightInit::kRand;
  return c;
}

// The reference's step `id`.
const test::json& step_of(const test::json& ref, const std::string& id) {
  for (const test::json& step : ref.at("steps")) {
    if (step.at("id") == id) return step;
  }
  throw std::runtime_error("no step " + id);
}

// The sampled rows of a reference step {"rows": {"index", "bits"}}, against the same rows of m:
// the largest |difference| and the largest |value| of the reference rows.
struct Difference {
  double worst = 0.0, scale = 0.0;
};
Difference sampled_difference(const Matrix& m, const test::json& step) {
  const test::json& rows = step.at("rows");
  double worst = 0.0, scale = 0.0;
  for (std::size_t r = 0; r < rows.at("index").size(); ++r) {
    const auto i = rows.at("index").at(r).get<Eigen::Index>();
    const test::json& bits = rows.at("bits").at(r);
    for (std::size_t j = 0; j < bits.size(); ++j) {
      const auto b =
          static_cast<std::uint32_t>(std::stoul(bits.at(j).get<std::string>(), nullptr, 16));
      const double want = std::bit_cast<float>(b);
      scale = std::max(scale, std::fabs(want));
      worst = std::max(worst, std::fabs(double{m(i, static_cast<Eigen::Index>(j))} - want));
    }
  }
  return {worst, scale};
}

// The largest |difference| relative to the largest |value| of the reference rows.
double relative_difference(const Matrix& m, const test::json& step) {
  const Difference d = sampled_difference(m, step);
  return d.scale > 0.0 ? d.worst / d.scale : d.worst;
}

}  // namespace

TEST_CASE(
    "large shapes: the blocked kernel stays within the stated tolerance, the reference order is "
    "exact") {
  for (const auto& [kernel, file] : {std::pair{TorchKernel::kAvx2, "large_linear_t256.json"},
                                     std::pair{TorchKernel::kDefault, "large_linear_t256.json"},
                                     std::pair{TorchKernel::kAvx2, "large_rand_t256.json"},
                                     std::pair{TorchKernel::kDefault, "large_rand_t256.json"}}) {
    const test::json ref = test::load_reference(kernel, file);
    const std::string flavour = std::string(attn::kernel_name(kernel)) + " " + file;
    CAPTURE(flavour);
    attn::TraceConfig c = large_config(ref, kernel);
    c.threads = 2;
    const attn::Trace fast = attn::run_trace(c);  // auto: every product here is blocked
    c.matmul = attn::MatmulKernel::kReference;
    const attn::Trace exact = attn::run_trace(c);
    for (const test::json& step : ref.at("steps")) {
      const std::string id = step.at("id").get<std::string>();
      CAPTURE(id);
      const attn::Step& f = fast.step(id);
      const attn::Step& e = exact.step(id);
      REQUIRE(f.shape == step.at("shape").get<std::vector<std::int64_t>>());
      // The stated tolerance (design.md, Large products): each product, and the scaling, within
      // 1e-5 of the step's largest value (float32's epsilon is 1.2e-7; a sum of 512 products
      // may round differently at each of them). The softmax turns a difference δ of a row's
      // scaled scores into one of at most 2δ of its weights, whatever the scores' size (with
      // torch.rand's weights here, several hundred), 1e-6 more for its own rounding; and A V
      // adds the weights' difference times the largest |value| to its own 1e-5.
      const Difference d = sampled_difference(f.values, step);
      double allowed = 1e-5 * d.scale;
      if (id == "attention_weights" || id == "context_vectors") {
        const Difference scaled =
            sampled_difference(fast.step("scaled_scores").values, step_of(ref, "scaled_scores"));
        const double weights = 2.0 * scaled.worst + 1e-6;
        allowed = id == "attention_weights"
                      ? weights
                      : allowed + weights * fast.step("values").values.cwiseAbs().maxCoeff();
      }
      MESSAGE(flavour, " ", id, ": blocked vs PyTorch, largest difference ", d.worst,
              ", largest value ", d.scale, ", allowed ", allowed);
      CHECK(d.worst <= allowed);
      CHECK(relative_difference(e.values, step) == 0.0);
      const bool product = id == "queries" || id == "keys" || id == "values" || id == "omega" ||
                           id == "context_vectors";
      const bool says_blocked = f.note.find("blocked kernel") != std::string::npos;
      CHECK(says_blocked == product);
      CHECK(e.note.find("blocked kernel") == std::string::npos);
    }
  }
}

TEST_CASE("the vectorised code paths change no bit of a trace, nor of its summary") {
  // AVX-512 / AVX2 products, softmax, exp, normal_ and statistics against the plain C++ code.
  std::string words;
  for (int i = 0; i < 300; ++i) words += fmt::format("w{} ", i);
  std::vector<attn::TraceConfig> configs(3);
  configs[0].sentences = {words};
  configs[0].vocab_size = 300;
  configs[0].d_in = 96;
  configs[0].d_kq = configs[0].d_v = 64;  // blocked products
  configs[0].heads = 2;
  configs[0].threads = 2;
  configs[1] = configs[0];
  configs[1].causal = true;
  configs[1].softmax_steps = true;
  configs[2].sentences = {"Life is short, eat dessert first", "a b"};  // masked rows: nan
  for (const attn::TraceConfig& c : configs) {
    const attn::Trace fast = attn::run_trace(c);
    const std::string fast_summary = attn::render_summary(fast, 5, 2);
    attn::set_simd_enabled(false);
    const attn::Trace plain = attn::run_trace(c);
    const std::string plain_summary = attn::render_summary(plain, 5, 2);
    attn::set_simd_enabled(true);
    REQUIRE(fast.steps.size() == plain.steps.size());
    for (std::size_t i = 0; i < fast.steps.size(); ++i) {
      CAPTURE(fast.steps[i].id);
      CHECK(test::bits_of(fast.steps[i].values) == test::bits_of(plain.steps[i].values));
    }
    CHECK(fast_summary == plain_summary);
  }
}

TEST_CASE("the memory estimate is what a run allocates, for every variant") {
  // The Recorder refuses any step the plan does not hold, so each of these runs follows its
  // plan; the estimate (without output) is then the floats the trace holds, times 4.
  std::vector<attn::TraceConfig> configs(16);
  configs[10].backward = true;
  configs[11].heads = 2, configs[11].multihead = attn::MultiheadForm::kSplit;
  configs[11].d_kq = configs[11].d_v = 4, configs[11].rope = true, configs[11].kv_heads = 1;
  configs[12].decode = true, configs[12].online_softmax = 2;
  configs[13].backward = true, configs[13].causal = true, configs[13].heads = 2;
  configs[13].sentences = {"a b c", "d"};
  // Batches of more than three: the estimate is extrapolated from two and three sentences.
  configs[14].sentences = {"a b c", "d", "e f", "g h i j", "k"};
  configs[14].heads = 2, configs[14].causal = true;
  configs[15].sentences = {"a b", "c d", "e f", "g h"};
  configs[15].softmax_steps = true;
  configs[1].causal = true;
  configs[2].heads = 3;
  configs[3].heads = 2, configs[3].multihead = attn::MultiheadForm::kSplit;
  configs[3].d_kq = configs[3].d_v = 4, configs[3].init = attn::WeightInit::kLinear;
  configs[4].cross = "The quick brown fox jumps over the lazy dog";
  configs[4].causal = true;
  configs[5].sentences = {"Life is short, eat dessert first", "eat dessert", "short life"};
  configs[5].softmax_steps = true;
  configs[6].sentences = {"a b", "c d"};  // equal lengths: no padding, no mask
  configs[7].init = attn::WeightInit::kRandTransposed, configs[7].d_kq = 5;
  configs[8].x = attn::GivenMatrix{Matrix::Constant(4, 3, 0.5f), "x.npy", {}};
  configs[9].heads = 2, configs[9].causal = true, configs[9].softmax_steps = true;
  configs[9].sentences = {"a b c", "d"};
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    const attn::Trace trace = attn::run_trace(configs[i]);
    double floats = 0;
    for (const attn::Step& s : trace.steps) floats += static_cast<double>(s.values.size());
    const RunShape r = shape_of(trace);
    const attn::MemoryEstimate e =
        attn::estimate_memory(trace.config, r.t_q, r.t_k, r.batch, r.padded, r.tokens);
    CHECK(e.floats - e.working == floats);
    CHECK(e.steps == static_cast<double>(trace.steps.size()));
    double labels = 0;
    for (const attn::Step& s : trace.steps) {
      labels += static_cast<double>(s.row_labels.size() + s.col_labels.size());
    }
    CHECK(e.labels == labels);
    // The plan's ids are the run's (what --steps is checked against before the run).
    CHECK(attn::planned_step_ids(attn::plan_steps(trace.config, r.t_q, r.t_k, r.batch, r.padded,
                                                  r.tokens)) == attn::step_ids(trace.steps));
  }
}

TEST_CASE("a backward pass's summary frees the scores nothing reads, and says the same") {
  // release_unread: what the command line's --format summary sets for --backward. Its lines, made
  // as the steps are handed on, are the whole trace's summary; the steps it frees are the ones
  // released_unread names, each head's; the estimate holds what stays and one head's at a time.
  std::vector<attn::TraceConfig> configs(6);
  for (attn::TraceConfig& c : configs) c.backward = true;
  configs[0].heads = 3;
  configs[1].heads = 2, configs[1].causal = true, configs[1].sentences = {"a b c", "d e"};
  configs[2].heads = 2, configs[2].multihead = attn::MultiheadForm::kSplit;
  configs[2].d_kq = configs[2].d_v = 4, configs[2].rope = true, configs[2].kv_heads = 1;
  configs[3].cross = "The quick brown fox jumps over the lazy dog", configs[3].heads = 2;
  configs[4].softmax_steps = true, configs[4].learning_rate = 0.5;
  configs[5].sentences = {"Life is short, eat dessert first", "a b"};  // a fully masked row
  configs[5].masked_rows = attn::MaskedRows::kZero;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    const attn::Trace whole = attn::run_trace(configs[i]);
    attn::TraceConfig c = configs[i];
    std::string lines, attention;
    c.release_unread = true;
    c.on_step = [&](const attn::Step& s) {
      lines += attn::summary_step_line(s);
      attention += attn::summary_attention(s);
    };
    const attn::Trace freed = attn::run_trace(c);
    CHECK(attn::summary_head(freed) + lines + attention == attn::render_summary(whole));
    REQUIRE(freed.steps.size() == whole.steps.size());
    double kept = 0, unread_forward = 0, unread_backward = 0;
    int released = 0;
    for (std::size_t j = 0; j < whole.steps.size(); ++j) {
      const attn::Step &a = whole.steps[j], &b = freed.steps[j];
      CAPTURE(a.id);
      if (attn::released_unread(a.kind)) {
        CHECK(b.values.size() == 0);
        const bool gradient = a.id.starts_with("grad_");
        (gradient ? unread_backward : unread_forward) += static_cast<double>(a.values.size());
        ++released;
      } else {
        CHECK(test::bits_of(b.values) == test::bits_of(a.values));
        kept += static_cast<double>(b.values.size());
      }
    }
    CHECK(released > 0);
    const RunShape r = shape_of(freed);
    const attn::MemoryEstimate e =
        attn::estimate_memory(freed.config, r.t_q, r.t_k, r.batch, r.padded, r.tokens);
    const double units = static_cast<double>(r.batch * freed.config.heads);
    CHECK(e.floats - e.working == kept + std::max(unread_forward, unread_backward) / units);
  }
}

TEST_CASE("the plan counts each product's multiply-adds as the run records them") {
  // planned_work() (the progress line's estimate) counts a step's inner dimension; --timings
  // counts the products the run marks (Recorder::mark_product). Forward and backward, each form.
  std::vector<attn::TraceConfig> configs(11);
  for (attn::TraceConfig& c : configs) c.backward = true;
  configs[0].backward = false, configs[0].heads = 2, configs[0].softmax_steps = true;
  configs[9].decode = true, configs[10].online_softmax = 2;
  configs[1].heads = 2, configs[1].sentences = {"a b c", "d e"};
  configs[2].heads = 2, configs[2].multihead = attn::MultiheadForm::kSplit;
  configs[2].d_kq = configs[2].d_v = 4, configs[2].init = attn::WeightInit::kLinear;
  configs[3].multihead = attn::MultiheadForm::kSplit, configs[3].d_kq = configs[3].d_v = 4;
  configs[4].heads = 2, configs[4].multihead = attn::MultiheadForm::kSplit;
  configs[4].d_kq = configs[4].d_v = 4, configs[4].rope = true, configs[4].kv_heads = 1;
  configs[5].heads = 2, configs[5].multihead = attn::MultiheadForm::kSplit;
  configs[5].d_kq = configs[5].d_v = 8, configs[5].rope = true;
  configs[6].cross = "The quick brown fox jumps over the lazy dog";
  configs[7].causal = true, configs[7].heads = 2, configs[7].d_kq = 3;
  configs[8].init = attn::WeightInit::kRandTransposed, configs[8].d_kq = 5, configs[8].d_v = 2;
  // The loss after --lr's step: the forward pass again, its products counted on that step.
  for (const int i : {1, 2, 4, 6, 8, 9, 10}) {
    configs[static_cast<std::size_t>(i)].learning_rate = 0.1;
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    const attn::Trace trace = attn::run_trace(configs[i]);
    const RunShape r = shape_of(trace);
    const std::vector<attn::PlannedStep> plan =
        attn::plan_steps(trace.config, r.t_q, r.t_k, r.batch, r.padded, r.tokens);
    REQUIRE(plan.size() == trace.steps.size());
    int products = 0;
    for (std::size_t j = 0; j < plan.size(); ++j) {
      const attn::Step& s = trace.steps[j];
      CAPTURE(s.id);
      const double planned = static_cast<double>(plan[j].inner) *
                             static_cast<double>(plan[j].rows) * static_cast<double>(plan[j].cols);
      const bool reduction = s.kind == attn::StepKind::kRowMax ||
                             s.kind == attn::StepKind::kRowSums ||
                             s.kind == attn::StepKind::kGradRowDot;
      if (reduction) {
        CHECK(plan[j].inner == r.t_k);
      } else {
        CHECK(planned == s.multiply_adds);
      }
      products += s.multiply_adds > 0.0;
    }
    CHECK(products > 0);
  }
}

TEST_CASE("on_plan sees the plan before anything is computed, and may refuse the run") {
  attn::TraceConfig c;
  c.decode = true;  // 6 tokens, decoded one at a time (causal), in a batch of two
  c.sentences = {"Life is short, eat dessert first", "a b c d"};
  int recorded = 0, prepared = 0;
  c.on_record = [&recorded](const attn::Step&, double) { ++recorded; };
  c.on_memory_estimate = [&prepared](double, int) { ++prepared; };
  std::vector<std::string> chosen;
  int plans = 0;
  c.on_plan = [&chosen, &plans](const attn::PlannedRun& run) {
    ++plans;
    CHECK(run.t_q == 6);
    CHECK(run.t_k == 6);
    CHECK(run.batch == 2);
    CHECK(run.padded);
    CHECK(run.config.decode);
    attn::require_step_ids(chosen, attn::planned_step_ids(run.steps));
  };
  const std::string known =
      "its steps are embeddings, w_query, w_key, w_value, queries, keys, values, omega, mask, "
      "masked_omega, scaled_scores, attention_weights, unmasked_weights, zeroed_weights, "
      "renormalized_weights, context_vectors, decode_query_t1 to _t6, decode_key_t1 to _t6, "
      "decode_value_t1 to _t6, key_cache_t1 to _t6, value_cache_t1 to _t6, "
      "decode_scores_t1 to _t6, decode_weights_t1 to _t6, decode_context_t1 to _t6, "
      "decode_check; a decoding step's id without _t<t>, such as decode_query, gives it for "
      "every token";
  for (const std::string bad : {"omgea", "decode_query_t7", "decode_query_t0", "grad_omega"}) {
    CAPTURE(bad);
    chosen = {"omega", bad};
    try {
      (void)attn::run_trace(c);
      FAIL("not refused");
    } catch (const attn::Error& e) {
      const std::string what = e.what();
      CHECK(what.starts_with(fmt::format("step '{}' is not in this trace: {}", bad, known)));
    }
    CHECK(recorded == 0);
    CHECK(prepared == 0);
  }
  // A token's step by its id, or every token's by the kind's.
  chosen = {"decode_query_t6", "decode_weights", "omega"};
  plans = 0;
  attn::Trace trace = attn::run_trace(c);
  CHECK(plans == 1);  // once, before the memory limit's check
  CHECK(recorded > 0);
  attn::select_steps(trace, chosen);
  CHECK(trace.steps.size() == 2 * (1 + 6 + 1));
  // The backward pass's plan is shown once the dictionary's size is known: its embedding table's
  // gradient is a step of it.
  c = attn::TraceConfig{};
  c.backward = true;
  chosen = {"grad_embedding_table"};
  plans = 0;
  c.on_plan = [&chosen, &plans](const attn::PlannedRun& run) {
    ++plans;
    attn::require_step_ids(chosen, attn::planned_step_ids(run.steps));
  };
  CHECK(attn::run_trace(c).steps.size() > 1);
  CHECK(plans == 1);
}

namespace {

// A tokenizer of single ASCII characters, numbered in order of first appearance: a second
// implementation of the seam.
class CharTokenizer final : public attn::Tokenizer {
 public:
  std::string_view name() const override { return "chars"; }
  std::vector<std::string> tokens(std::string_view text, std::string_view) const override {
    std::vector<std::string> out;
    for (const char ch : text) out.emplace_back(1, ch);
    return out;
  }
  attn::Vocabulary vocabulary(const std::vector<std::string>& tokens) const override {
    std::vector<std::string> seen;
    for (const std::string& t : tokens) {
      if (std::find(seen.begin(), seen.end(), t) == seen.end()) seen.push_back(t);
    }
    return attn::Vocabulary(seen);
  }
  std::string display(std::string_view token) const override { return std::string(token); }
};

}  // namespace

TEST_CASE("a second tokenizer plugs into the trace through the Tokenizer interface") {
  attn::TraceConfig c;
  c.tokenizer = std::make_shared<CharTokenizer>();
  c.sentences = {"abca"};
  const attn::Trace trace = attn::run_trace(c);
  CHECK(trace.vocabulary.words() == std::vector<std::string>{"a", "b", "c"});
  CHECK(trace.inputs[0].ids == std::vector<std::int64_t>{0, 1, 2, 0});
  CHECK(trace.step(attn::StepKind::kAttentionWeights).values.rows() == 4);
}

TEST_CASE("rows at a time, a long input's estimate holds a block of scores, not a head's") {
  // T = 16,384, d_in 1024, 8 heads of 128: one head's (T, T) scores alone are 1 GiB.
  attn::TraceConfig c;
  c.d_in = 1024, c.d_kq = c.d_v = 128, c.heads = 8, c.vocab_size = 16384;
  c.release_scores = true;
  const double held = attn::estimate_bytes(attn::resolve(c), 16384, 16384, 1, false);
  c.stream_scores = true;
  const double streamed = attn::estimate_bytes(attn::resolve(c), 16384, 16384, 1, false);
  CHECK(held > 1024.0 * 1024 * 1024);
  CHECK(streamed < 512.0 * 1024 * 1024);
  CHECK(attn::score_block_rows(c, 16384) == 48);  // 3 MiB of scores: at least 48 rows
  CHECK(attn::score_block_rows(c, 4096) == 48);   // 768 KiB, whole slivers
  CHECK(attn::score_block_rows(c, 1024) == 240);  // 960 KiB
  CHECK(attn::score_block_rows(c, 6) == 43680);
  // About 1 MiB per thread, up to four: each thread's rows of a block stay in its L2 cache.
  c.threads = 2;
  CHECK(attn::score_block_rows(c, 16384) == 48);
  CHECK(attn::score_block_rows(c, 4096) == 96);
  CHECK(attn::score_block_rows(c, 1024) == 480);
  c.threads = 8;
  CHECK(attn::score_block_rows(c, 4096) == 240);
  CHECK(attn::score_block_rows(c, 1024) == 1008);
  c.threads = 1;
  c.score_block_rows = 5;
  CHECK(attn::score_block_rows(c, 16384) == 5);
  // Each head's own steps freed when it is done (--format summary): X, the weights, one head's
  // Q, K, V and Z, the heads side by side (each head's Z written into it), a block of scores
  // and K and V packed.
  c.score_block_rows = 0;
  c.release_head_steps = true;
  // The floats (matrix_bytes); the estimate adds the steps' records and labels.
  const auto floats = [&c] {
    return attn::estimate_memory(attn::resolve(c), 16384, 16384, 1, false).matrix_bytes(c);
  };
  const double t = 16384, released = floats();
  CHECK(released == doctest::Approx(4.0 * (t * 1024 + 8 * 3 * 1024 * 128 + 4 * t * 128 +
                                           8 * t * 128 + 48 * t + t * 256)));
  CHECK(released < streamed * 0.6);
  // With one head, its Z is copied out of its step before the step is freed.
  c.heads = 1;
  const double one = floats();
  CHECK(one == doctest::Approx(
                   4.0 * (t * 1024 + 3 * 1024 * 128 + 4 * t * 128 + t * 128 + 48 * t + t * 256)));
}

TEST_CASE("on_record reports the share of the planned work done, up to 1 at the end") {
  // A step's planned work: a product's multiply-adds, or a fixed cost per value.
  CHECK(attn::planned_work({attn::StepKind::kOmega, 4, 5, 3}) == 4.0 * 5 * (3 + 16));
  CHECK(attn::planned_work({attn::StepKind::kScaledScores, 4, 5}) == 4.0 * 5 * 16);
  CHECK(attn::planned_work({attn::StepKind::kEmbeddings, 4, 5}) == 4.0 * 5 * 150);
  for (const bool streamed : {false, true}) {
    CAPTURE(streamed);
    attn::TraceConfig c;
    std::string sentence;
    for (int i = 0; i < 40; ++i) sentence += fmt::format("w{} ", i);
    c.sentences = {sentence, "a shorter one"};
    c.vocab_size = 64, c.d_in = 16, c.d_kq = 8, c.d_v = 4, c.heads = 3, c.causal = true;
    c.release_scores = c.stream_scores = streamed;
    c.score_block_rows = 7;  // 40 rows: 6 blocks, the last of 5
    struct Seen {
      std::string id;
      std::int64_t rows_done;
      double done;
    };
    std::vector<Seen> seen;
    c.on_record = [&seen](const attn::Step& s, double done) {
      seen.push_back({s.id, s.rows_done, done});
    };
    const attn::Trace trace = attn::run_trace(c);
    REQUIRE(!seen.empty());
    // Every record moves the share on: by a step, or by a block of its rows.
    for (std::size_t i = 1; i < seen.size(); ++i) {
      CAPTURE(seen[i].id);
      CHECK(seen[i].done > seen[i - 1].done);
    }
    CHECK(seen.front().done > 0.0);
    CHECK(seen.back().done == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(seen.back().done <= 1.0);
    // The first record is the first item's embeddings: its share of the plan's work.
    const std::vector<attn::PlannedStep> plan = attn::plan_steps(attn::resolve(c), 40, 40, 2, true);
    double total = 0.0;
    for (const attn::PlannedStep& s : plan) total += attn::planned_work(s);
    CHECK(seen.front().id == "embeddings");
    CHECK(seen.front().done == doctest::Approx(attn::planned_work(plan.front()) / total));
    // Rows at a time, each step of a head's attention is seen once per block of its rows.
    const auto omega_records = std::count_if(
        seen.begin(), seen.end(), [](const Seen& s) { return s.id.starts_with("omega"); });
    CHECK(omega_records == (streamed ? 2 * 3 * 6 : 2 * 3));
  }
}

TEST_CASE("each step that is not a block of rows is handed on as soon as it is final") {
  // The summary digests a step when on_step sees it: X, each weight and each projection are seen
  // right after they are recorded, while their values are in the cache, not when the head ends.
  // Every step is still seen once, in the trace's order, so the summary is the same.
  std::vector<attn::TraceConfig> configs(3);
  configs[0].heads = 2;
  configs[1].heads = 2, configs[1].multihead = attn::MultiheadForm::kSplit;
  configs[1].d_kq = configs[1].d_v = 4;
  configs[2].cross = "The quick brown fox", configs[2].init = attn::WeightInit::kLinear;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    attn::TraceConfig c = configs[i];
    c.release_scores = c.stream_scores = c.release_head_steps = true;
    std::vector<std::string> events;  // "+id" recorded, "=id" handed on
    std::string lines;
    c.on_record = [&events](const attn::Step& s, double) {
      const std::string e = fmt::format("+{}", s.id);  // once per step, not per block
      if (events.empty() || events.back() != e) events.push_back(e);
    };
    c.on_step = [&](const attn::Step& s) {
      events.push_back(fmt::format("={}", s.id));
      lines += attn::summary_step_line(s);
    };
    const attn::Trace trace = attn::run_trace(c);
    std::vector<std::string> handed;
    for (const std::string& e : events) {
      if (e[0] == '=') handed.push_back(e.substr(1));
    }
    REQUIRE(handed.size() == trace.steps.size());
    for (std::size_t j = 0; j < handed.size(); ++j) CHECK(handed[j] == trace.steps[j].id);
    int immediate = 0;
    for (std::size_t j = 0; j < events.size(); ++j) {
      const std::string& e = events[j];
      const bool early = e.starts_with("+embeddings") || e.starts_with("+w_") ||
                         e.starts_with("+queries") || e.starts_with("+keys") ||
                         e.starts_with("+values");
      if (!early) continue;
      CAPTURE(e);
      // Handed on before any later step but another sentence's embeddings is recorded.
      std::size_t k = j + 1;
      const std::string handed_on = fmt::format("={}", e.substr(1));
      while (k < events.size() && events[k] != handed_on) {
        CHECK((events[k][0] == '=' || events[k].starts_with("+embeddings")));
        ++k;
      }
      CHECK(k < events.size());
      ++immediate;
    }
    CHECK(immediate >= 7);  // X, W_q, W_k, W_v, Q, K, V at least
    CHECK(lines == attn::render_summary(attn::run_trace(configs[i]))
                       .substr(attn::summary_head(trace).size(), lines.size()));
  }
}

TEST_CASE("a run that shows some steps stops after them, and they are the whole run's") {
  // shown_steps (--steps): the steps after the last one shown are not computed. For every step
  // id of each variant, the steps kept are the whole run's, bit for bit, with the same notes.
  std::vector<attn::TraceConfig> configs(7);
  configs[1].causal = true, configs[1].heads = 2, configs[1].backward = true;
  configs[2].heads = 2, configs[2].multihead = attn::MultiheadForm::kSplit;
  configs[2].d_kq = configs[2].d_v = 4, configs[2].rope = true, configs[2].kv_heads = 1;
  configs[3].sentences = {"a b c", "d"}, configs[3].softmax_steps = true;
  configs[4].decode = true, configs[4].online_softmax = 2;
  configs[5].cross = "The quick brown fox", configs[5].window = 2;
  configs[6].backward = true, configs[6].learning_rate = 0.5;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    const attn::Trace whole = attn::run_trace(configs[i]);
    for (const std::string& id : attn::step_ids(whole.steps)) {
      CAPTURE(id);
      attn::TraceConfig c = configs[i];
      c.shown_steps = {id};
      attn::Trace shown = attn::run_trace(c);
      attn::Trace all = whole;
      attn::select_steps(shown, {id});
      attn::select_steps(all, {id});
      REQUIRE(shown.steps.size() == all.steps.size());
      for (std::size_t k = 0; k < all.steps.size(); ++k) {
        CHECK(shown.steps[k].id == all.steps[k].id);
        CHECK(shown.steps[k].note == all.steps[k].note);
        CHECK(test::bits_of(shown.steps[k].values) == test::bits_of(all.steps[k].values));
      }
    }
    // The first step alone: nothing after the inputs is computed.
    attn::TraceConfig c = configs[i];
    c.shown_steps = {whole.steps.front().id};
    CHECK(attn::run_trace(c).steps.size() < whole.steps.size() / 2);
  }
  // A head's projections alone: its scores are not computed.
  attn::TraceConfig c;
  c.heads = 2, c.shown_steps = {"values"};
  const attn::Trace projected = attn::run_trace(c);
  CHECK(projected.steps.back().kind == attn::StepKind::kValues);
  CHECK(projected.steps.back().head == 1);
}

TEST_CASE("a run that shows some steps is estimated up to the last of them") {
  // T = 16,384, d_in 1024, 8 heads of 128, the text trace: every head's (T, T) steps are held.
  attn::TraceConfig c;
  c.d_in = 1024, c.d_kq = c.d_v = 128, c.heads = 8, c.vocab_size = 16384;
  c.output_cost = attn::output_cost(attn::OutputFormat::kText);
  c = attn::resolve(c);
  const double whole = attn::estimate_bytes(c, 16384, 16384, 1, false);
  c.shown_steps = {"embeddings"};
  const double embedded = attn::estimate_bytes(c, 16384, 16384, 1, false);
  c.shown_steps = {"omega"};  // every head's ω: up to the last head's
  const double scored = attn::estimate_bytes(c, 16384, 16384, 1, false);
  CHECK(whole > 64.0 * (1u << 30));
  // X, and its text as the one step written, and a tenth more (the weights are not drawn yet).
  CHECK(embedded > 16384.0 * 1024 * (4.0 + c.output_cost.per_value_alone));
  CHECK(embedded < 1.1 * 16384.0 * 1024 * (4.0 + c.output_cost.per_value_alone));
  CHECK(scored > 8 * 16384.0 * 16384 * 4);
  CHECK(scored < whole);
}
