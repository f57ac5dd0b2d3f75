// The KV cache (--decode) and FlashAttention's online softmax (--online-softmax): their steps
// against PyTorch's loops (tests/reference/make_decode_online.py), their checks against the
// ordinary computation, and the settings they refuse.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "attn/decode.hpp"
#include "attn/error.hpp"
#include "attn/names.hpp"
#include "attn/online_softmax.hpp"
#include "attn/render_summary.hpp"
#include "attn/trace.hpp"
#include "support/reference.hpp"

namespace attn {

namespace {

// The settings of a make_decode_online.py case, as a TraceConfig.
TraceConfig case_config(const test::json& ref, TorchKernel kernel) {
  const test::json& s = ref.at("settings");
  TraceConfig c;
  c.sentences = s.at("sentences").get<std::vector<std::string>>();
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  c.d_kq = s.at("d_kq").get<std::int64_t>();
  c.d_v = s.at("d_v").get<std::int64_t>();
  c.heads = s.at("heads").get<std::int64_t>();
  c.multihead = parse_multihead(s.at("multihead").get<std::string>());
  c.init = parse_init(s.at("init").get<std::string>());
  c.causal = s.at("causal").get<bool>();
  c.masked_rows = parse_masked_rows(s.at("masked_rows").get<std::string>());
  c.kv_heads = s.at("kv_heads").get<std::int64_t>();
  c.window = s.at("window").get<std::int64_t>();
  c.rope = s.at("rope").get<bool>();
  c.rope_theta = s.at("rope_theta").get<double>();
  c.rope_pairs = parse_name<RopePairs>("pairing", s.at("rope_pairs").get<std::string>());
  c.decode = s.contains("decode");
  if (s.contains("online")) c.online_softmax = s.at("online").get<std::int64_t>();
  c.kernel = kernel;
  return c;
}

std::optional<int> optional_index(const test::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(j.get<int>());
}

constexpr const char* kCases[] = {"decode",
                                  "decode_fox",
                                  "decode_heads2_wrapper",
                                  "decode_heads2_split",
                                  "decode_batch_padded",
                                  "online_b2",
                                  "online_b1_causal",
                                  "online_b4_causal_fox",
                                  "online_one_tile",
                                  "online_heads2_split_causal",
                                  "online_heads2_wrapper",
                                  "online_batch_padded_nan",
                                  "online_batch_padded_causal_zero",
                                  "decode_rope_half",
                                  "decode_rope_interleaved_split_heads2",
                                  "decode_gqa_4_2",
                                  "decode_window_2",
                                  "decode_window_rope_mqa_fox",
                                  "decode_batch_window_zero",
                                  "online_rope_half_b2",
                                  "online_mqa_4_1_causal_b3",
                                  "online_window_2_b2",
                                  "online_window_rope_gqa_fox_b3"};

// Where a check's note says the largest difference is.
std::string difference_in(const Step& s) {
  const std::size_t at = s.note.find("difference");
  return at == std::string::npos ? "" : s.note.substr(at);
}

}  // namespace

// Bits everywhere; only where SLEEF's AVX2 code cannot run (modern_test.cpp says why), the AVX2
// kernels' steps with rotary embeddings are held to 1e-6 of their largest value.
TEST_CASE("every decode and online-softmax step equals PyTorch's loop, bit for bit") {
  for (const TorchKernel kernel : test::kKernels) {
    for (const char* name : kCases) {
      const std::string file = fmt::format("variant_{}.json", name);
      const test::json ref = test::load_reference(kernel, file);
      const std::string what = fmt::format("{} {}", kernel_name(kernel), file);
      CAPTURE(what);
      const Trace trace = run_trace(case_config(ref, kernel));
      std::size_t checked = 0;
      for (const test::json& expected : ref.at("steps")) {
        const auto id = expected.at("id").get<std::string>();
        const Step& step = trace.step(id, optional_index(expected.at("head")),
                                      optional_index(expected.at("batch")));
        if (trace.config.rope && kernel != TorchKernel::kDefault && !attn::sleef_runs()) {
          test::check_relative(step.values, expected, what + " " + id);
        } else {
          test::check_bits(step.values, expected, what + " " + id);
        }
        ++checked;
      }
      // Every decode or online step of the trace has its reference.
      const auto ours = std::count_if(trace.steps.begin(), trace.steps.end(), [](const Step& s) {
        return s.kind >= StepKind::kDecodeQuery && s.kind <= StepKind::kOnlineContext;
      });
      CHECK(static_cast<std::size_t>(ours) == checked);
    }
  }
}

TEST_CASE("decoding gives the full causal computation's rows, with the largest difference") {
  for (const TorchKernel kernel : test::kKernels) {
    TraceConfig c;
    c.kernel = kernel;
    c.decode = true;
    for (const auto& [sentence, heads] : std::vector<std::pair<std::string, int>>{
             {std::string(kWalkthroughSentence), 1}, {"a b c d e f g h i j k l", 2}}) {
      c.sentences = {sentence};
      c.heads = heads;
      c.vocab_size = 100;
      const Trace t = run_trace(c);
      CHECK(t.config.causal);  // --decode implies the causal mask
      for (int h = 0; h < heads; ++h) {
        const std::optional<int> head = heads > 1 ? std::optional<int>(h) : std::nullopt;
        const Step& check = t.step("decode_check", head);
        const Matrix& z = t.step("context_vectors", head).values;
        const float worst = largest_difference(check.values, z);
        CHECK(worst <= 1e-6f * z.cwiseAbs().maxCoeff());
        if (t.inputs[0].words.size() < 8) {
          // T < 8: the softmax adds a short row in order either way, so the same bits.
          CHECK(test::bits_of(check.values) == test::bits_of(z));
          CHECK(difference_in(check) == "difference is 0: the same bits");
        } else {
          CHECK(difference_in(check) ==
                (worst == 0.0f ? std::string("difference is 0: the same bits")
                               : fmt::format("difference is {:.1e}: float32 rounding, since a "
                                             "blocked product or a softmax's sum over a shorter "
                                             "row groups its terms differently",
                                             worst)));
        }
        // The cache grows by one row per token, and row t of it is token t's key.
        const Matrix& k = t.step("keys", heads > 1 ? head : std::nullopt).values;
        const Step& cache = t.step("key_cache_t3", head);
        CHECK(cache.values.rows() == 3);
        CHECK(cache.title == "the key cache, one row per token seen so far (t = 3)");
        if (heads == 1) CHECK(test::bits_of(cache.values) == test::bits_of(k.topRows(3)));
      }
    }
  }
}

TEST_CASE("the online softmax equals the ordinary softmax's Z within 1e-6, for any tile") {
  TraceConfig c;
  c.sentences = {"the quick brown fox jumps over the lazy dog and runs far away"};
  c.vocab_size = 100;
  c.d_in = 5;
  c.d_kq = 4;
  c.d_v = 3;
  const Eigen::Index t_k = 13;
  for (const bool causal : {false, true}) {
    c.causal = causal;
    for (const std::int64_t tile : {1, 2, 3, 5, 8, 12, 13, 14, 1000}) {
      c.online_softmax = tile;
      const Trace t = run_trace(c);
      CAPTURE(tile);
      const Matrix& z = t.step("context_vectors").values;
      const Step& online = t.step("online_context");
      CHECK(largest_difference(online.values, z) <= 1e-6f * z.cwiseAbs().maxCoeff());
      const Eigen::Index tiles =
          (t_k + std::min<Eigen::Index>(tile, t_k) - 1) / std::min<Eigen::Index>(tile, t_k);
      CHECK(t.step("online_max").values.cols() == tiles);
      CHECK(t.step("online_sum").values.allFinite());  // no exp(−inf − (−inf))
      CHECK(t.step("online_rescale").values.allFinite());
      // ℓ after the last tile is the softmax's denominator for the row's final max.
      const Matrix& m = t.step("online_max").values;
      const Matrix& s = t.step("scaled_scores").values;
      for (Eigen::Index i = 0; i < s.rows(); ++i) {
        CHECK(m(i, tiles - 1) == s.row(i).maxCoeff());
      }
      // Causal: query 1 sees key 1 only, so every later tile is skipped for it.
      if (causal && tiles > 1) {
        CHECK(online.note.find("tiles of") != std::string::npos);
        CHECK(t.step("online_max").note.find("skipped") != std::string::npos);
        CHECK(t.step("online_rescale").values(0, tiles - 1) == 1.0f);
      }
    }
  }
}

TEST_CASE("a row whose every tile is masked follows the masked-rows rule") {
  TraceConfig c;
  c.sentences = {"one two three", "four"};
  c.online_softmax = 1;
  for (const auto rule : {MaskedRows::kNan, MaskedRows::kZero}) {
    c.masked_rows = rule;
    const Trace t = run_trace(c);
    const Matrix& z = t.step("online_context", std::nullopt, 1).values;  // "four <pad> <pad>"
    for (Eigen::Index d = 0; d < z.cols(); ++d) {
      if (rule == MaskedRows::kNan) {
        CHECK(std::isnan(z(1, d)));
      } else {
        CHECK(z(1, d) == 0.0f);
      }
    }
    CHECK(largest_difference(z, t.step("context_vectors", std::nullopt, 1).values) == 0.0f);
    // The note names the rows and what their 0 / 0 became; the first sentence has none.
    const std::string& note = t.step("online_context", std::nullopt, 1).note;
    CHECK(note.ends_with(rule == MaskedRows::kNan
                             ? "; rows 2, 3 masked every key, so ℓ = 0 and Z is nan there (0 / 0, "
                               "as torch.softmax's row is nan)"
                             : "; rows 2, 3 masked every key, so ℓ = 0 and Z is 0 there "
                               "(--masked-rows zero; FlashAttention's kernels divide by 1 where ℓ "
                               "is 0)"));
    CHECK(t.step("online_context", std::nullopt, 0).note.find("masked every key") ==
          std::string::npos);
  }
}

TEST_CASE("the online softmax row by row, tile by tile") {
  // s = [1, 3, −inf, 2], v = the identity's rows: Z is the weights themselves.
  Matrix s(1, 4);
  s << 1.0f, 3.0f, -INFINITY, 2.0f;
  const Matrix v = Matrix::Identity(4, 4);
  const OnlineRow row = online_softmax_row(s, v, 2, TorchKernel::kDefault, MaskedRows::kNan);
  REQUIRE(row.tiles.size() == 2);
  CHECK(row.tiles[0].m == 3.0f);
  CHECK(row.tiles[0].rescale == 0.0f);  // exp(−inf − 3)
  CHECK(row.tiles[1].m == 3.0f);
  CHECK(row.tiles[1].rescale == 1.0f);  // the max did not grow
  CHECK(row.tiles[1].p(0, 0) == 0.0f);  // exp(−inf)
  const float l = std::exp(-2.0f) + 1.0f + std::exp(-1.0f);
  CHECK(row.tiles[1].l == doctest::Approx(l));
  CHECK(row.z(0, 1) == doctest::Approx(1.0f / l));
  CHECK(row.z(0, 2) == 0.0f);
  // A tile of only −inf is skipped: nothing changes.
  Matrix masked(1, 3);
  masked << -INFINITY, -INFINITY, 5.0f;
  const OnlineRow r =
      online_softmax_row(masked, Matrix::Identity(3, 3), 2, TorchKernel::kAvx2, MaskedRows::kNan);
  CHECK(r.tiles[0].skipped);
  CHECK(std::isinf(r.tiles[0].m));
  CHECK(r.tiles[1].rescale == 0.0f);
  CHECK(r.z(0, 2) == 1.0f);
  CHECK(tile_count(6, 4) == 2);
  CHECK(tile_count(6, 6) == 1);
  CHECK(tile_count(6, 100) == 1);
}

TEST_CASE("the cache keeps a window's keys when one is set") {
  CHECK(cache_start(5) == 0);
  CHECK(cache_start(5, 3) == 3);
  CHECK(cache_start(1, 3) == 0);
  KvCache cache;
  for (Eigen::Index t = 0; t < 5; ++t) {
    cache_append(cache, Matrix::Constant(1, 2, static_cast<float>(t)),
                 Matrix::Constant(1, 1, static_cast<float>(t)), cache_start(t, 2));
  }
  CHECK(cache.first == 3);
  CHECK(cache.keys.rows() == 2);
  CHECK(cache.keys(0, 0) == 3.0f);
  CHECK(cache.values(1, 0) == 4.0f);
}

TEST_CASE("decoding with cross-attention is refused, and the tile size is checked") {
  TraceConfig c;
  c.decode = true;
  c.cross = "The quick brown fox";
  CHECK_THROWS_WITH_AS(run_trace(c),
                       "KV-cache decoding and cross-attention do not go together: decoding caches "
                       "each new token's own key and value, and cross-attention takes them from "
                       "another sentence",
                       Error);
  c = {};
  c.online_softmax = -1;
  CHECK_THROWS_WITH_AS(
      run_trace(c), "online softmax tile size -1 is out of range: allowed 0..1099511627776", Error);
  // Cross-attention with the online softmax is fine: T_k tiles of the other sentence.
  c = {};
  c.cross = "The quick brown fox jumps";
  c.online_softmax = 2;
  const Trace t = run_trace(c);
  CHECK(t.step("online_max").values.cols() == 3);
}

TEST_CASE("the streamed summary keeps the scaled scores the online softmax reads") {
  for (const bool causal : {false, true}) {
    TraceConfig c;
    c.causal = causal;
    c.online_softmax = 4;
    c.decode = causal;
    std::string lines;
    c.release_scores = true;
    c.on_step = [&lines](const Step& s) { lines += summary_step_line(s, 1); };
    const Trace streamed = run_trace(c);
    c.release_scores = false;
    c.on_step = nullptr;
    const Trace whole = run_trace(c);
    std::string expected;
    for (const Step& s : whole.steps) expected += summary_step_line(s, 1);
    CHECK(lines == expected);
    CHECK(test::bits_of(streamed.step("online_context").values) ==
          test::bits_of(whole.step("online_context").values));
  }
}

}  // namespace attn
