#include "attn/torch_random.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <vector>

#include "attn/embedding.hpp"
#include "attn/error.hpp"
#include "attn/simd.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchGenerator;
using attn::TorchKernel;
namespace test = attn::test;

namespace {

Matrix randn(TorchGenerator& gen, Eigen::Index n, TorchKernel kernel, float mean = 0.0f,
             float std = 1.0f) {
  Matrix m(1, n);
  attn::normal_(std::span<float>(m.data(), static_cast<std::size_t>(n)), gen, mean, std, kernel);
  return m;
}

Matrix uniform(TorchGenerator& gen, Eigen::Index n, double from, double to, TorchKernel kernel) {
  Matrix m(1, n);
  attn::uniform_(std::span<float>(m.data(), static_cast<std::size_t>(n)), gen, from, to, kernel);
  return m;
}

using Recipe = std::function<std::vector<Matrix>(TorchKernel)>;

// Each case of data/reference/<flavour>/rng.json, as the same PyTorch calls written in C++.
std::map<std::string, Recipe> recipes() {
  std::map<std::string, Recipe> r;
  auto seeded = [](std::uint64_t seed,
                   std::function<std::vector<Matrix>(TorchGenerator&, TorchKernel)> f) {
    return [seed, f](TorchKernel k) {
      TorchGenerator gen(seed);
      return f(gen, k);
    };
  };
  r["rand_3x2_3x2_3x4_seed123"] = seeded(123, [](TorchGenerator& g, TorchKernel) {
    return std::vector<Matrix>{attn::torch_rand(g, 3, 2), attn::torch_rand(g, 3, 2),
                               attn::torch_rand(g, 3, 4)};
  });
  r["rand_2000_seed123"] = seeded(123, [](TorchGenerator& g, TorchKernel) {
    return std::vector<Matrix>{attn::torch_rand(g, 1, 2000)};
  });
  r["rand_4_seed_2p32_plus_123"] =
      seeded((std::uint64_t{1} << 32) + 123, [](TorchGenerator& g, TorchKernel) {
        return std::vector<Matrix>{attn::torch_rand(g, 1, 4)};
      });
  r["randn_sequence_seed123_1_to_15"] = seeded(123, [](TorchGenerator& g, TorchKernel k) {
    std::vector<Matrix> out;
    for (Eigen::Index n = 1; n <= 15; ++n) out.push_back(randn(g, n, k));
    return out;
  });
  r["randn_3_20_3_seed123"] = seeded(123, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{randn(g, 3, k), randn(g, 20, k), randn(g, 3, k)};
  });
  for (const Eigen::Index n : {16, 17, 31, 32, 33, 100, 4097}) {
    r["randn_" + std::to_string(n) + "_seed123"] = seeded(
        123, [n](TorchGenerator& g, TorchKernel k) { return std::vector<Matrix>{randn(g, n, k)}; });
  }
  r["normal_2_3_n100_seed5"] = seeded(5, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{randn(g, 100, k, 2.0f, 3.0f)};
  });
  r["normal_2_3_n7_seed5"] = seeded(5, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{randn(g, 7, k, 2.0f, 3.0f)};
  });
  r["normal_0.1_0.02_n1000_seed9"] = seeded(9, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{randn(g, 1000, k, 0.1f, 0.02f)};
  });
  r["uniform_m1_1_n5000_seed11"] = seeded(11, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{uniform(g, 5000, -1.0, 1.0, k)};
  });
  r["uniform_0.3_7.1_n5000_seed11"] = seeded(11, [](TorchGenerator& g, TorchKernel k) {
    return std::vector<Matrix>{uniform(g, 5000, 0.3, 7.1, k)};
  });
  struct Emb {
    std::int64_t v, d;
    std::uint64_t seed;
    const char* suffix;
  };
  for (const Emb e : std::initializer_list<Emb>{{1, 1, 123, ""},
                                                {3, 2, 123, ""},
                                                {5, 3, 123, ""},
                                                {4, 4, 123, ""},
                                                {6, 3, 123, ""},
                                                {10, 3, 123, ""},
                                                {7, 5, 123, ""},
                                                {100, 7, 123, ""},
                                                {33, 1, 123, ""},
                                                {1000, 17, 123, ""},
                                                {50, 8, 0, ""},
                                                {50, 8, 1, ""},
                                                {50, 8, 42, ""},
                                                {50, 8, (std::uint64_t{1} << 32) + 7, ""},
                                                {50, 8, 987654321, ""},
                                                {50000, 3, 123, "_digest"},
                                                {1000, 4096, 3, "_digest"}}) {
    r["embedding_" + std::to_string(e.v) + "x" + std::to_string(e.d) + "_seed" +
      std::to_string(e.seed) + e.suffix] = [e](TorchKernel k) {
      return std::vector<Matrix>{attn::embedding_table(e.seed, e.v, e.d, k)};
    };
  }
  for (const auto& [in, out] : {std::pair{3, 2}, {8, 4}, {5, 7}, {768, 64}}) {
    r["linear_" + std::to_string(in) + "to" + std::to_string(out) + "_x3_nobias_seed123"] =
        seeded(123, [in = in, out = out](TorchGenerator& g, TorchKernel k) {
          std::vector<Matrix> w;
          for (int i = 0; i < 3; ++i) w.push_back(attn::linear_weight(g, in, out, k));
          return w;
        });
  }
  r["linear_6to4_bias_then_4to3_bias_seed123"] = seeded(123, [](TorchGenerator& g, TorchKernel k) {
    std::vector<Matrix> t;
    t.push_back(attn::linear_weight(g, 6, 4, k));
    t.push_back(attn::linear_bias(g, 6, 4, k));
    t.push_back(attn::linear_weight(g, 4, 3, k));
    t.push_back(attn::linear_bias(g, 4, 3, k));
    return t;
  });
  return r;
}

// data/reference/<flavour>/golden_rng_basics.json: the generator cases of the shared PyTorch
// golden set, under their own names and layout.
std::map<std::string, Recipe> golden_recipes() {
  std::map<std::string, Recipe> r = recipes();
  auto rename = [&r](const std::string& from, const std::string& to) { r[to] = r.at(from); };
  rename("randn_3_20_3_seed123", "randn_3_then_20_then_3_seed123");
  rename("linear_768to64_x3_nobias_seed123", "linear_768to64_x3_nobias_seed123_digests");
  rename("rand_4_seed_2p32_plus_123",
         "rand_4_seed_2^32+123_(same as seed 123: only low 32 bits used)");
  r["randn_20_seed123"] = [](TorchKernel k) {
    TorchGenerator g(123);
    return std::vector<Matrix>{randn(g, 20, k)};
  };
  r["randn_sequence_seed123_n_1_2_3_5_15"] = [](TorchKernel k) {
    TorchGenerator g(123);
    std::vector<Matrix> out;
    for (const Eigen::Index n : {1, 2, 3, 5, 15}) out.push_back(randn(g, n, k));
    return out;
  };
  r["linear_4to3_bias_seed123"] = [](TorchKernel k) {
    TorchGenerator g(123);
    Matrix w = attn::linear_weight(g, 4, 3, k);
    return std::vector<Matrix>{w, attn::linear_bias(g, 4, 3, k)};
  };
  return r;
}

// Runs every case of a reference file through its C++ recipe and compares each tensor: bits, or
// a digest for the large ones. `tensors_of` reads one case's list of tensors.
void check_reference_file(const char* file, const std::map<std::string, Recipe>& known,
                          const std::function<test::json(const test::json&)>& tensors_of) {
  for (const TorchKernel kernel : test::kKernels) {
    const test::json ref = test::load_reference(kernel, file);
    for (const auto& entry : ref.at("cases").items()) {
      // Not a structured binding: clang 14 cannot capture one (CAPTURE, REQUIRE_MESSAGE).
      const std::string& name = entry.key();
      const test::json& c = entry.value();
      const std::string what = std::string(attn::kernel_name(kernel)) + " " + file + " " + name;
      CAPTURE(what);
      const auto it = known.find(name);
      REQUIRE_MESSAGE(it != known.end(), "no C++ recipe for reference case " << name);
      const std::vector<Matrix> got = it->second(kernel);
      const test::json tensors = tensors_of(c);
      REQUIRE(got.size() == tensors.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const std::string item = what + " tensor " + std::to_string(i);
        if (tensors[i].contains("sha256_f32le")) {
          test::check_digest(got[i], tensors[i], item);
        } else {
          test::check_bits(got[i], tensors[i], item);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("mt19937 seeded with 123 gives PyTorch's first draws") {
  TorchGenerator gen(123);
  CHECK(gen.random() == 0xb24bcdfeu);
  CHECK(gen.random() == 0xb6843d6du);
  CHECK(gen.random() == 0x49406d7eu);
}

TEST_CASE("the engine equals std::mt19937 seeded with the low 32 bits, on every path") {
  for (int i = 0; i <= static_cast<int>(attn::cpu_isa()); ++i) {
    const auto isa = static_cast<attn::Isa>(i);  // the twist on 1, 8 or 16 lanes
    CAPTURE(attn::isa_name(isa));
    attn::limit_isa(isa);
    for (const std::uint64_t seed :
         {std::uint64_t{0}, std::uint64_t{123}, (std::uint64_t{1} << 32) + 5, ~std::uint64_t{0}}) {
      TorchGenerator gen(seed), uniforms(seed);
      std::mt19937 ref(static_cast<std::uint32_t>(seed));
      for (int d = 0; d < 5000; ++d) REQUIRE(gen.random() == ref());
      // The uniforms a block at a time: each tempered word's low 24 bits times 2^-24.
      std::vector<float> u(5000);
      uniforms.fill_uniform01(u);
      std::mt19937 again(static_cast<std::uint32_t>(seed));
      for (const float x : u) REQUIRE(x == static_cast<float>(again() & 0x00FFFFFFu) * 0x1.0p-24f);
    }
  }
  attn::limit_isa(attn::cpu_isa());
}

TEST_CASE("discard(n) leaves the state that n draws leave, across twists") {
  for (const std::uint64_t skip : std::initializer_list<std::uint64_t>{
           0, 1, 2, 622, 623, 624, 625, 1247, 1248, 1249, 10000, 123457}) {
    TorchGenerator a(7), b(7);
    a.random();  // start mid-block too
    b.random();
    a.discard(skip);
    for (std::uint64_t i = 0; i < skip; ++i) b.random();
    INFO("skip " << skip);
    for (int i = 0; i < 700; ++i) REQUIRE(a.random() == b.random());
  }
}

TEST_CASE("kaiming bound follows Python's double arithmetic") {
  const double a = std::sqrt(5.0);
  CHECK(a * a == 5.000000000000001);
  CHECK(static_cast<float>(attn::kaiming_uniform_bound(3)) == std::bit_cast<float>(0x3f13cd3au));
  CHECK(static_cast<float>(attn::kaiming_uniform_bound(8)) == std::bit_cast<float>(0x3eb504f3u));
  CHECK(static_cast<float>(attn::kaiming_uniform_bound(768)) == std::bit_cast<float>(0x3d13cd3au));
}

TEST_CASE("every generator case matches PyTorch bit for bit, in both kernel flavours") {
  check_reference_file("rng.json", recipes(), [](const test::json& c) { return c.at("tensors"); });
}

TEST_CASE("every case of the shared golden set matches bit for bit, in both flavours") {
  // A case there is a list of tensors, one tensor, or {weight, bias}.
  check_reference_file("golden_rng_basics.json", golden_recipes(), [](const test::json& c) {
    return c.is_array()           ? c
           : c.contains("weight") ? test::json::array({c.at("weight"), c.at("bias")})
                                  : test::json::array({c});  // json{c} is a copy in clang
  });
}

TEST_CASE("the two flavours agree where PyTorch's kernels agree") {
  // torch.rand and the small (n < 16) path are the same code in both flavours.
  TorchGenerator a(9), b(9);
  CHECK(test::bits_of(randn(a, 15, TorchKernel::kAvx2)) ==
        test::bits_of(randn(b, 15, TorchKernel::kDefault)));
  CHECK(test::bits_of(attn::torch_rand(a, 4, 4)) == test::bits_of(attn::torch_rand(b, 4, 4)));
}

TEST_CASE("kernel names") {
  CHECK(attn::parse_kernel("avx2") == TorchKernel::kAvx2);
  CHECK(attn::parse_kernel("default") == TorchKernel::kDefault);
  CHECK(attn::kernel_name(TorchKernel::kDefault) == "default");
  CHECK_THROWS_WITH_AS(attn::parse_kernel("neon"),
                       "torch kernel 'neon' is not known: allowed are avx2, default", attn::Error);
}

TEST_CASE("the vectorised normal_ gives the plain code's bits") {
  // 6,250, 6,251 and 6,252 blocks: odd and even numbers of blocks and of pairs of blocks, for the
  // loops that take two at a time.
  for (const std::size_t n : {std::size_t{100'003}, std::size_t{100'019}, std::size_t{100'035}}) {
    for (const auto& [mean, std_dev] : {std::pair{0.0f, 1.0f}, {2.5f, 0.01f}, {-1.0f, 3.0f}}) {
      CAPTURE(n);
      std::vector<float> fast(n), plain(n);
      attn::TorchGenerator g1(99), g2(99);
      attn::normal_(fast, g1, mean, std_dev, attn::TorchKernel::kAvx2);
      attn::set_simd_enabled(false);
      attn::normal_(plain, g2, mean, std_dev, attn::TorchKernel::kAvx2);
      attn::set_simd_enabled(true);
      CHECK(std::memcmp(fast.data(), plain.data(), fast.size() * sizeof(float)) == 0);
      if (attn::cpu_isa() == attn::Isa::kAvx512) {  // two blocks at a time, and one (AVX2)
        std::vector<float> avx2(fast.size());
        attn::TorchGenerator g3(99);
        attn::limit_isa(attn::Isa::kAvx2);
        attn::normal_(avx2, g3, mean, std_dev, attn::TorchKernel::kAvx2);
        attn::limit_isa(attn::Isa::kAvx512);
        CHECK(std::memcmp(avx2.data(), plain.data(), avx2.size() * sizeof(float)) == 0);
      }
    }
  }
  // Uniforms at the edges: u1 = 1 − u in (0, 1] down to 2^-24, angles across every octant.
  std::array<float, 16> edge{}, edge_plain{};
  for (std::size_t j = 0; j < 8; ++j) {
    edge[j] = j == 0 ? 0.99999994f : static_cast<float>(j) / 8.0f;
    edge[j + 8] = j == 0 ? 0.99999994f : static_cast<float>(j) / 8.0f + 0.01f;
  }
  edge_plain = edge;
  // Two copies, reversed in the second: the 16-lane path takes both blocks at once.
  std::array<float, 32> pair{}, pair_plain{};
  std::copy(edge.begin(), edge.end(), pair.begin());
  std::copy(edge.rbegin(), edge.rend(), pair.begin() + 16);
  pair_plain = pair;
  attn::normal_fill_16(edge, 0.0f, 1.0f, attn::TorchKernel::kAvx2);
  attn::normal_fill_blocks(pair, 0.0f, 1.0f, attn::TorchKernel::kAvx2);
  attn::set_simd_enabled(false);
  attn::normal_fill_16(edge_plain, 0.0f, 1.0f, attn::TorchKernel::kAvx2);
  attn::normal_fill_blocks(pair_plain, 0.0f, 1.0f, attn::TorchKernel::kAvx2);
  attn::set_simd_enabled(true);
  CHECK(std::memcmp(edge.data(), edge_plain.data(), sizeof edge) == 0);
  CHECK(std::memcmp(pair.data(), pair_plain.data(), sizeof pair) == 0);
}
