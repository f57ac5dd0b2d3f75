// Today's attention variants: rotary position embeddings, grouped-query heads, sliding windows.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>

#include "attn/error.hpp"
#include "attn/grouping.hpp"
#include "attn/names.hpp"
#include "attn/render_json.hpp"
#include "attn/render_text.hpp"
#include "attn/rope.hpp"
#include "attn/simd.hpp"
#include "attn/trace.hpp"
#include "support/reference.hpp"

namespace {

using attn::Matrix;
using attn::TorchKernel;
namespace test = attn::test;

// The settings of a modern_*.json reference, as a TraceConfig.
attn::TraceConfig modern_config(const test::json& ref, TorchKernel kernel) {
  const test::json& s = ref.at("settings");
  attn::TraceConfig c;
  c.sentences = s.at("sentences").get<std::vector<std::string>>();
  c.seed = s.at("seed").get<std::uint64_t>();
  c.vocab_size = s.at("vocab_size").get<std::int64_t>();
  c.d_in = s.at("d_in").get<std::int64_t>();
  c.d_kq = s.at("d_kq").get<std::int64_t>();
  c.d_v = s.at("d_v").get<std::int64_t>();
  c.heads = s.at("heads").get<std::int64_t>();
  c.kv_heads = s.at("kv_heads").get<std::int64_t>();
  c.multihead = attn::parse_multihead(s.at("multihead").get<std::string>());
  c.init = attn::parse_init(s.at("init").get<std::string>());
  c.causal = s.at("causal").get<bool>();
  c.window = s.at("window").get<std::int64_t>();
  c.rope = s.at("rope").get<bool>();
  c.rope_theta = s.at("rope_theta").get<double>();
  c.rope_pairs =
      attn::parse_name<attn::RopePairs>("pairing", s.at("rope_pairs").get<std::string>());
  c.kernel = kernel;
  return c;
}

std::optional<int> optional_index(const test::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(j.get<int>());
}

constexpr const char* kCases[] = {"rope_half",
                                  "rope_half_wide",
                                  "rope_interleaved_fox_causal",
                                  "rope_wrapper_heads2",
                                  "rope_split_heads2_linear_causal",
                                  "rope_long_t40",
                                  "gqa_4_2_linear",
                                  "mqa_4_1_rand_causal",
                                  "gqa_6_3_rand_transposed",
                                  "gqa_4_4_linear",
                                  "window_3",
                                  "window_1_fox",
                                  "window_rope_gqa_fox",
                                  "batch_window_rope_wrapper",
                                  "batch_gqa_split"};

}  // namespace

TEST_CASE("every modern variant equals PyTorch's at every step, in both kernel flavours") {
  // Every bit is PyTorch's: the default kernels' pow, cos and sin are the C library's, the AVX2
  // kernels' SLEEF's, as here. Only on a CPU without AVX2 and FMA, where SLEEF's AVX2 code cannot
  // run and the tool takes the C library's for both, are the AVX2 kernels' tables and every step
  // after them held to 1e-6 of their largest value instead.
  int rotated_cases = 0;
  for (const TorchKernel kernel : test::kKernels) {
    for (const char* name : kCases) {
      const std::string file = std::string("modern_") + name + ".json";
      const test::json ref = test::load_reference(kernel, file);
      const std::string what = std::string(attn::kernel_name(kernel)) + " " + file;
      CAPTURE(what);
      const attn::Trace trace = attn::run_trace(modern_config(ref, kernel));
      for (std::size_t b = 0; b < trace.inputs.size(); ++b) {
        CHECK(trace.inputs[b].ids == ref.at("token_ids").at(b).get<std::vector<std::int64_t>>());
      }
      const bool rope = ref.at("settings").at("rope").get<bool>();
      rotated_cases += rope ? 1 : 0;
      std::size_t checked = 0;
      for (const test::json& expected : ref.at("steps")) {
        const auto id = expected.at("id").get<std::string>();
        const attn::Step& step = trace.step(id, optional_index(expected.at("head")),
                                            optional_index(expected.at("batch")));
        const std::string where = what + " " + id + " head " + expected.at("head").dump() +
                                  " batch " + expected.at("batch").dump();
        const bool before_rope = step.kind <= attn::StepKind::kValues;
        if (!rope || before_rope || kernel == TorchKernel::kDefault || attn::sleef_runs()) {
          test::check_bits(step.values, expected, where);
        } else {
          test::check_relative(step.values, expected, where);
        }
        ++checked;
      }
      // Every step of the trace has its reference.
      CHECK(checked == trace.steps.size());
    }
  }
  CHECK(rotated_cases == 18);
}

TEST_CASE("rope: position 0 is the identity, pairs keep their length, and scores see only i − j") {
  for (const auto pairs : {attn::RopePairs::kHalf, attn::RopePairs::kInterleaved}) {
    const std::int64_t d = 8;
    const attn::RopeTables t = attn::rope_tables(40, d, 10000.0f, pairs, TorchKernel::kDefault);
    CHECK(t.cos.row(0).isOnes());
    CHECK(t.sin.row(0).isZero());
    Matrix x(1, d), y(1, d);
    x << 0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f, 3.0f, -2.0f;
    y << 1.0f, 0.25f, -0.5f, 2.0f, 1.5f, -1.0f, 0.5f, 0.25f;
    Matrix out(1, d);
    attn::rope_rotate_row(x.data(), &t.cos(0, 0), &t.sin(0, 0), out.data(), d, pairs);
    CHECK(test::bits_of(out) == test::bits_of(x));
    // A pair's length is kept at every position.
    const std::int64_t half = d / 2;
    for (Eigen::Index p : {1, 7, 39}) {
      attn::rope_rotate_row(x.data(), &t.cos(p, 0), &t.sin(p, 0), out.data(), d, pairs);
      for (std::int64_t i = 0; i < half; ++i) {
        const auto a = pairs == attn::RopePairs::kHalf ? i : 2 * i;
        const auto b = pairs == attn::RopePairs::kHalf ? i + half : 2 * i + 1;
        const double before = std::hypot(x(0, a), x(0, b)),
                     after = std::hypot(out(0, a), out(0, b));
        CHECK(after == doctest::Approx(before).epsilon(1e-6));
      }
    }
    // q at i and k at j: the same score for the same i − j.
    auto score = [&](Eigen::Index i, Eigen::Index j) {
      Matrix q(1, d), k(1, d);
      attn::rope_rotate_row(x.data(), &t.cos(i, 0), &t.sin(i, 0), q.data(), d, pairs);
      attn::rope_rotate_row(y.data(), &t.cos(j, 0), &t.sin(j, 0), k.data(), d, pairs);
      return static_cast<double>(q.cwiseProduct(k).sum());
    };
    CHECK(score(5, 2) == doctest::Approx(score(33, 30)).epsilon(1e-5));
    CHECK(score(9, 9) == doctest::Approx(score(0, 0)).epsilon(1e-5));
    CHECK(score(5, 2) != doctest::Approx(score(5, 4)).epsilon(1e-3));
  }
  CHECK_THROWS_WITH_AS(attn::rope_inv_freq(3, 10000.0f, TorchKernel::kDefault),
                       "rotary embeddings rotate pairs: a width of 3 is not even", attn::Error);
}

TEST_CASE("grouped heads: K/V head g serves query heads g·H/N … as repeat_interleave does") {
  // torch.arange(3).repeat_interleave(2) = [0, 0, 1, 1, 2, 2]
  const std::int64_t expected[] = {0, 0, 1, 1, 2, 2};
  for (std::int64_t h = 0; h < 6; ++h) CHECK(attn::kv_head_of(h, 6, 3) == expected[h]);
  for (std::int64_t h = 0; h < 8; ++h) {
    CHECK(attn::kv_head_of(h, 8, 1) == 0);
    CHECK(attn::kv_head_of(h, 8, 8) == h);
  }
  CHECK(attn::query_heads_of(2, 6, 3).first == 4);
  CHECK(attn::query_heads_of(2, 6, 3).count == 2);
  CHECK_THROWS_AS(attn::kv_head_of(0, 6, 4), attn::Error);
}

TEST_CASE("sliding window: query i sees keys max(0, i − W + 1) … i") {
  const Matrix m = attn::window_mask(6, 6, 3);
  for (Eigen::Index i = 0; i < 6; ++i) {
    for (Eigen::Index j = 0; j < 6; ++j) {
      const bool seen = j <= i && j >= std::max<Eigen::Index>(0, i - 2);
      CHECK(m(i, j) == (seen ? 0.0f : 1.0f));
    }
  }
  CHECK((attn::window_mask(6, 6, 6) == attn::causal_mask(6, 6)));
  const Matrix diagonal_only = Matrix::Ones(4, 9) - Matrix(Matrix::Identity(4, 9));
  CHECK((attn::window_mask(4, 9, 1) == diagonal_only));
}

TEST_CASE("kv_heads = heads is exactly the split form, and a window of T or more the causal one") {
  attn::TraceConfig split;
  split.heads = 4;
  split.multihead = attn::MultiheadForm::kSplit;
  split.d_kq = split.d_v = 8;
  split.init = attn::WeightInit::kLinear;
  attn::TraceConfig same = split;
  same.kv_heads = 4;
  const attn::Trace a = attn::run_trace(split), b = attn::run_trace(same);
  CHECK(attn::render_json(a) == attn::render_json(b));
  CHECK(attn::render_text(a, {}) == attn::render_text(b, {}));

  attn::TraceConfig causal;
  causal.causal = true;
  causal.sentences = {"Life is short, eat dessert first", "eat dessert"};
  const attn::Trace c = attn::run_trace(causal);
  for (const std::int64_t w : {6, 7, 1000}) {
    attn::TraceConfig window = causal;
    window.causal = false;  // implied
    window.window = w;
    const attn::Trace t = attn::run_trace(window);
    CHECK(attn::render_text(t, {}) == attn::render_text(c, {}));
    CHECK(attn::render_json(t) == attn::render_json(c));
  }
  attn::TraceConfig narrow = causal;
  narrow.window = 5;
  CHECK(attn::render_text(attn::run_trace(narrow), {}) != attn::render_text(c, {}));
  // Decoding and the online softmax too: a window of T or more drops no key from the cache.
  attn::TraceConfig decode = causal;
  decode.decode = true;
  decode.online_softmax = 2;
  decode.rope = true;
  decode.heads = 2;
  const attn::Trace d = attn::run_trace(decode);
  for (const std::int64_t w : {6, 1000}) {
    attn::TraceConfig window = decode;
    window.window = w;
    const attn::Trace t = attn::run_trace(window);
    CHECK(attn::render_text(t, {}) == attn::render_text(d, {}));
    CHECK(attn::render_json(t) == attn::render_json(d));
  }
}

TEST_CASE("rope tables are PyTorch's bits, for bases from 1e-45 to 3.4e38, d 2..128, T 1..6000") {
  // make_rope_tables.py: PyTorch's inv_freq, cos and sin; in the AVX2 kernels SLEEF's pow over
  // blocks of 16 exponents and powf over the rest, SLEEF's cos and sin on every element.
  int checked = 0, refused = 0;
  // An x86-64 CPU with AVX2 and FMA runs SLEEF's AVX2 code, from libsleef3, which must be there.
  if (attn::cpu_isa() >= attn::Isa::kAvx2) CHECK_MESSAGE(attn::sleef_runs(), attn::sleef_missing());
  for (const TorchKernel kernel : test::kKernels) {
    if (kernel == TorchKernel::kAvx2 && !attn::sleef_runs()) {
      MESSAGE("this CPU has no AVX2 and FMA: SLEEF's AVX2 tables are not checked here");
      continue;
    }
    const test::json ref = test::load_reference(kernel, "rope_tables.json");
    for (const test::json& c : ref.at("cases")) {
      const auto d = c.at("d").get<std::int64_t>(), t = c.at("T").get<std::int64_t>();
      const auto pairs =
          attn::parse_name<attn::RopePairs>("pairing", c.at("pairs").get<std::string>());
      const std::string what =
          fmt::format("{} θ {} d {} T {} {}", attn::kernel_name(kernel),
                      c.at("theta").get<double>(), d, t, c.at("pairs").get<std::string>());
      CAPTURE(what);
      const std::optional<float> theta = attn::rope_base_float32(c.at("theta").get<double>());
      REQUIRE(theta);
      CHECK(fmt::format("{:08x}", std::bit_cast<std::uint32_t>(*theta)) ==
            c.at("theta_f32_bits").get<std::string>());
      if (c.at("overflow").get<bool>()) {
        // PyTorch's tables would be nan: refused, with the base as the setting to change.
        try {
          (void)attn::rope_tables(t, d, *theta, pairs, kernel);
          FAIL("not refused");
        } catch (const attn::Error& e) {
          CHECK(e.setting() == attn::Setting::kRopeTheta);
          CHECK(std::string(e.what()).find("overflows float32") != std::string::npos);
        }
        ++refused;
        continue;
      }
      const std::vector<float> inv = attn::rope_inv_freq(d, *theta, kernel);
      std::vector<std::string> inv_bits;
      for (const float x : inv)
        inv_bits.push_back(fmt::format("{:08x}", std::bit_cast<std::uint32_t>(x)));
      CHECK(inv_bits == c.at("inv_freq_bits").get<std::vector<std::string>>());
      const attn::RopeTables tables = attn::rope_tables(t, d, *theta, pairs, kernel);
      CHECK(test::sha256_f32le(tables.cos) == c.at("cos_sha256_f32le").get<std::string>());
      CHECK(test::sha256_f32le(tables.sin) == c.at("sin_sha256_f32le").get<std::string>());
      ++checked;
    }
  }
  CHECK(checked >= 363);
  CHECK(refused >= 4);
}

TEST_CASE("the rotary base is its float32 value: above 0 and finite there") {
  CHECK_FALSE(attn::rope_base_float32(0.0));
  CHECK_FALSE(attn::rope_base_float32(-1.0));
  CHECK_FALSE(attn::rope_base_float32(1e-46));  // 0 in float32
  CHECK(attn::rope_base_float32(1e-45) == std::numeric_limits<float>::denorm_min());
  CHECK(attn::rope_base_float32(3.4028235e38) == std::numeric_limits<float>::max());
  CHECK(attn::rope_base_float32(0x1.fffffefffffffp127) == std::numeric_limits<float>::max());
  CHECK_FALSE(attn::rope_base_float32(0x1.ffffffp127));  // rounds to infinity
  CHECK_FALSE(attn::rope_base_float32(std::numeric_limits<double>::infinity()));
  CHECK_FALSE(attn::rope_base_float32(std::numeric_limits<double>::quiet_NaN()));
  CHECK(attn::rope_base_float32(10000.0) == 10000.0f);
  attn::TraceConfig c;
  c.rope = true;
  c.rope_theta = 1e-45;
  c.d_kq = 16;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "the rotary base θ 1e-45 is too small for a head width of 16: inv_freq_7 = "
                       "1 / θ^(14/16) overflows float32, and the tables would be nan: give a "
                       "larger base",
                       attn::Error);
}

TEST_CASE("grouped heads take given W_k and W_v of N · d_out / H columns") {
  attn::TraceConfig c;
  c.heads = 4;
  c.kv_heads = 2;
  c.multihead = attn::MultiheadForm::kSplit;
  c.d_kq = c.d_v = 8;
  c.rope = true;
  const attn::Trace drawn = attn::run_trace(c);
  attn::TraceConfig given = c;
  given.w_key = attn::GivenMatrix{drawn.step(attn::StepKind::kWKey).values, "w_k.csv", {}};
  given.w_value = attn::GivenMatrix{drawn.step(attn::StepKind::kWValue).values, "w_v.csv", {}};
  const attn::Trace t = attn::run_trace(given);
  for (const attn::StepKind kind :
       {attn::StepKind::kKeys, attn::StepKind::kValues, attn::StepKind::kOutput}) {
    CHECK(test::bits_of(t.step(kind).values) == test::bits_of(drawn.step(kind).values));
  }
  given.w_key->values = Matrix::Ones(3, 5);  // 5 columns for 2 K/V heads
  CHECK_THROWS_WITH_AS(attn::run_trace(given),
                       "W_k in w_k.csv has shape [3, 5], but 2 key/value heads share it: with the "
                       "rand init it must be [d_in, d_kv], d_kv = 2 · d_head, a multiple of 2",
                       attn::Error);
}

TEST_CASE("variant settings that make no sense are refused") {
  attn::TraceConfig c;
  c.kv_heads = 2;
  c.heads = 4;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "2 key/value heads for 4 query heads need the split multi-head form: the "
                       "wrapper form's heads each have their own K and V",
                       attn::Error);
  c.multihead = attn::MultiheadForm::kSplit;
  c.d_kq = c.d_v = 12;
  c.heads = 6;
  c.kv_heads = 4;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "6 query heads cannot share 4 key/value heads equally: the K/V heads must "
                       "divide 6",
                       attn::Error);
  c = {};
  c.rope = true;
  c.d_kq = 3;
  CHECK_THROWS_WITH_AS(attn::run_trace(c),
                       "rotary embeddings turn pairs of numbers, but each head's queries and keys "
                       "have 3 (d_kq), an odd number: it must be even",
                       attn::Error);
  c = {};
  c.rope = true;
  c.cross = "a b c";
  CHECK_THROWS_AS(attn::run_trace(c), attn::Error);
  c = {};
  c.window = -1;
  CHECK_THROWS_AS(attn::run_trace(c), attn::Error);
}
