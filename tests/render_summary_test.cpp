#include "attn/render_summary.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "attn/embedding.hpp"
#include "attn/simd.hpp"
#include "attn/statistics.hpp"
#include "support/hostile_labels.hpp"
#include "support/reference.hpp"

namespace test = attn::test;

namespace {

// The vector paths this CPU runs, the plain code first.
std::vector<attn::Isa> vector_paths() {
  std::vector<attn::Isa> paths;
  for (const attn::Isa isa : {attn::Isa::kPlain, attn::Isa::kAvx2, attn::Isa::kAvx512}) {
    if (isa <= attn::cpu_isa()) paths.push_back(isa);
  }
  return paths;
}

// m's statistics on every vector path, each checked against the plain code's, which it returns.
attn::MatrixStatistics same_statistics_on_every_path(const attn::Matrix& m, int threads) {
  const std::vector<attn::Isa> paths = vector_paths();
  std::vector<attn::MatrixStatistics> st;
  for (const attn::Isa isa : paths) {
    attn::limit_isa(isa);
    st.push_back(attn::matrix_statistics(m, threads));
  }
  attn::limit_isa(attn::cpu_isa());
  for (std::size_t p = 1; p < paths.size(); ++p) {
    CAPTURE(attn::isa_name(paths[p]));
    // To the bit: a zero's sign too.
    CHECK(std::bit_cast<std::uint64_t>(st[p].min) == std::bit_cast<std::uint64_t>(st[0].min));
    CHECK(std::bit_cast<std::uint64_t>(st[p].max) == std::bit_cast<std::uint64_t>(st[0].max));
    CHECK(std::bit_cast<std::uint64_t>(st[p].mean) == std::bit_cast<std::uint64_t>(st[0].mean));
    CHECK(st[p].finite == st[0].finite);
    CHECK(st[p].nonfinite == st[0].nonfinite);
    CHECK(st[p].checksum == st[0].checksum);
  }
  return st[0];
}

}  // namespace

TEST_CASE("the checksum is XXH3-64 of the float32 bytes, as Python's xxhash computes it") {
  CHECK(attn::xxh3_64(attn::Matrix(0, 0)) == 0x2d06800538d394c2u);  // XXH3-64 of no bytes
  const test::json ref = test::load_reference(attn::TorchKernel::kAvx2, "checksums.json");
  const std::string want =
      ref.at("embedding_50000x3_seed123").at("xxh3_64_f32le").get<std::string>();
  const attn::Matrix table = attn::embedding_table(123, 50000, 3, attn::TorchKernel::kAvx2);
  CHECK(fmt::format("{:016x}", attn::xxh3_64(table)) == want);
}

TEST_CASE("the checksum is the same on every vector path, whole and a block of rows at a time") {
  // XXH3 has a branch for each range of lengths (0, 1-3, 4-8, 9-16, 17-128, 129-240, longer, and
  // a streaming state's stripes and blocks): lengths across them, in blocks of uneven rows.
  const std::vector<attn::Isa> paths = vector_paths();
  for (const Eigen::Index cols : {1, 2, 3, 5, 16, 31, 60, 61, 257, 1024}) {
    attn::Matrix m(67, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i)
      m.data()[i] = static_cast<float>(i % 97) * 0.37f - 9.0f;
    std::vector<std::uint64_t> whole, rows;
    for (const attn::Isa isa : paths) {
      attn::limit_isa(isa);
      whole.push_back(attn::xxh3_64(m));
      attn::RowDigester d;
      for (Eigen::Index first = 0, n = 1; first < m.rows(); first += n, n = n * 2 + 1) {
        d.add(m.middleRows(first, std::min(n, m.rows() - first)));
      }
      rows.push_back(d.finish().statistics.checksum);
    }
    attn::limit_isa(attn::cpu_isa());
    CAPTURE(cols);
    for (std::size_t p = 0; p < paths.size(); ++p) {
      CHECK(whole[p] == whole[0]);
      CHECK(rows[p] == whole[0]);
    }
  }
}

TEST_CASE("the finiteness check finds one inf or nan anywhere, on every vector path") {
  const std::vector<attn::Isa> paths = vector_paths();
  const float finite_edges[] = {std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::denorm_min(), -0.0f, 0.0f};
  const float bad[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  for (const attn::Isa isa : paths) {
    attn::limit_isa(isa);
    CAPTURE(attn::isa_name(isa));
    for (const std::size_t n : std::initializer_list<std::size_t>{0, 1, 7, 8, 15, 16, 31, 32, 33,
                                                                  63, 64, 65, 127, 128, 200}) {
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = finite_edges[i % 5];
      CAPTURE(n);
      CHECK(attn::all_finite(v.data(), n));
      for (std::size_t at = 0; at < n; ++at) {
        for (const float b : bad) {
          const float kept = v[at];
          v[at] = b;
          CAPTURE(at);
          CHECK_FALSE(attn::all_finite(v.data(), n));
          v[at] = kept;
        }
      }
    }
  }
  attn::limit_isa(attn::cpu_isa());
}

TEST_CASE("a step's statistics and checksum are the same on any number of threads") {
  // Large enough (over a million values) for the threads to share the rows and the hash, with
  // rows that the statistics' vector path cannot take (nan, inf) among them.
  attn::Matrix m(1031, 1000);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    m.data()[i] = static_cast<float>((i * 7919) % 10007) * 1e-3f - 5.0f;
  }
  m(3, 5) = std::numeric_limits<float>::quiet_NaN();
  m(700, 999) = std::numeric_limits<float>::infinity();
  m(1030, 0) = -std::numeric_limits<float>::infinity();
  const attn::MatrixStatistics one = attn::matrix_statistics(m, 1);
  CHECK(one.checksum == attn::xxh3_64(m));
  CHECK(one.nonfinite == 3);
  CHECK(one.finite == m.size() - 3);
  for (const int threads : {1, 2, 3, 8}) {
    CAPTURE(threads);
    const attn::MatrixStatistics st = attn::matrix_statistics(m, threads);
    CHECK(st.min == one.min);
    CHECK(st.max == one.max);
    CHECK(st.mean == one.mean);
    CHECK(st.finite == one.finite);
    CHECK(st.checksum == one.checksum);
    attn::RowDigester d;
    for (Eigen::Index first = 0; first < m.rows(); first += 400) {
      d.add(m.middleRows(first, std::min<Eigen::Index>(400, m.rows() - first)), threads);
    }
    const attn::MatrixStatistics blocks = d.finish().statistics;
    CHECK(blocks.min == one.min);
    CHECK(blocks.max == one.max);
    CHECK(blocks.mean == one.mean);
    CHECK(blocks.checksum == one.checksum);
  }
}

TEST_CASE("a step's statistics are the same on every vector path") {
  // The vector paths take four rows at a time (AVX-512), one (AVX2) or one value (plain): the
  // same min, max and mean, to the bit, for widths with and without a tail of fewer than 8
  // values, with rows of nan and inf among rows the vector paths take.
  for (const Eigen::Index cols : {1, 7, 8, 9, 17, 64, 1000, 1031}) {
    attn::Matrix m(23, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      m.data()[i] = static_cast<float>((i * 7919) % 10007) * 1.7e-3f - 8.5f;
    }
    m(5, cols - 1) = std::numeric_limits<float>::quiet_NaN();
    m(10, 0) = -std::numeric_limits<float>::infinity();
    m(21, cols / 2) = std::numeric_limits<float>::infinity();
    for (const int threads : {1, 2}) {
      CAPTURE(cols);
      CAPTURE(threads);
      CHECK(same_statistics_on_every_path(m, threads).nonfinite == 3);
    }
  }
}

TEST_CASE("every width's end of row gives the same statistics on every vector path") {
  // Each vector path adds a row's last values (fewer than 8) to its lanes in registers, and
  // takes its lanes' min, max and sum there: every width from 1 to 70, with 1 to 9 rows (the
  // AVX-512 path's groups of four and the rows left over), values of both signs and all sizes,
  // subnormals, the largest floats, and zeros of either sign, which the min and max give as 0.
  const float specials[] = {-0.0f,
                            0.0f,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            3.0e38f};
  for (Eigen::Index cols = 1; cols <= 70; ++cols) {
    for (const Eigen::Index rows : {1, 4, 5, 9}) {
      attn::Matrix m(rows, cols);
      for (Eigen::Index i = 0; i < m.size(); ++i) {
        const auto k = static_cast<std::size_t>((i * 2654435761) % 97);
        m.data()[i] = k < 7 ? specials[k] : static_cast<float>(k) * (k % 2 ? -0.37f : 1.9f);
      }
      m.row(0).setConstant(-0.0f);  // a row of −0: min, max and mean 0
      CAPTURE(cols);
      CAPTURE(rows);
      const attn::MatrixStatistics st = same_statistics_on_every_path(m, 1);
      CHECK(st.nonfinite == 0);
      if (rows == 1) {
        CHECK(!std::signbit(st.min));
        CHECK(!std::signbit(st.max));
      }
    }
  }
}

TEST_CASE("the vector statistics set aside one inf or nan at any column, and opposite infinities") {
  // The vector paths check no value in their loop: a value that is not finite shows in its
  // lane's partial sum. One such value at each column, in a row the AVX-512 path takes with three
  // others, and +inf and −inf in one lane (their sum nan), beside the largest finite floats.
  const float inf = std::numeric_limits<float>::infinity();
  const float bad[] = {inf, -inf, std::numeric_limits<float>::quiet_NaN()};
  const auto same_on_every_path = [](const attn::Matrix& m) {
    return same_statistics_on_every_path(m, 1);
  };
  for (const Eigen::Index cols : {8, 15, 16, 17, 24, 33, 40}) {
    attn::Matrix m(8, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      m.data()[i] = i % 11 == 3   ? std::numeric_limits<float>::max()
                    : i % 11 == 7 ? -std::numeric_limits<float>::max()
                                  : static_cast<float>(i % 13) - 6.0f;
    }
    CAPTURE(cols);
    CHECK(same_on_every_path(m).nonfinite == 0);
    for (Eigen::Index c = 0; c < cols; ++c) {
      for (const float b : bad) {
        const float kept = m(2, c);
        m(2, c) = b;
        CAPTURE(c);
        CHECK(same_on_every_path(m).nonfinite == 1);
        m(2, c) = kept;
      }
      if (c + 8 < cols) {
        const float kept0 = m(5, c), kept1 = m(5, c + 8);
        m(5, c) = inf, m(5, c + 8) = -inf;
        CHECK(same_on_every_path(m).nonfinite == 2);
        m(5, c) = kept0, m(5, c + 8) = kept1;
      }
    }
  }
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

TEST_CASE("the summary of a run that frees its scores head by head is the same text") {
  // The streaming form of --format summary: each step summarised as it is handed on, the (T, T)
  // steps freed (or computed in place) as soon as the next one exists.
  std::vector<attn::TraceConfig> configs(7);
  configs[1].causal = true;
  configs[2].softmax_steps = true;
  configs[3].sentences = {"Life is short, eat dessert first", "a b c"};  // padded: masked
  configs[3].heads = 2;
  configs[4].heads = 3;
  configs[4].multihead = attn::MultiheadForm::kSplit;
  configs[4].d_kq = configs[4].d_v = 6;
  configs[5].cross = "dessert comes first";
  std::string words;
  for (int i = 0; i < 300; ++i) words += fmt::format("w{} ", i);
  configs[6].sentences = {words};
  configs[6].vocab_size = 300;
  configs[6].d_in = 64;
  configs[6].d_kq = configs[6].d_v = 64;  // every product is blocked
  configs[6].threads = 2;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CAPTURE(i);
    const attn::Trace whole = attn::run_trace(configs[i]);
    attn::TraceConfig streamed = configs[i];
    std::string lines, attention;
    streamed.release_scores = true;
    streamed.on_step = [&](const attn::Step& s) {
      lines += attn::summary_step_line(s, 2);
      attention += attn::summary_attention(s, 5, 2);
    };
    const attn::Trace released = attn::run_trace(streamed);
    CHECK(attn::summary_head(released) + lines + attention == attn::render_summary(whole));
    bool freed = false;
    for (const attn::Step& s : released.steps) freed = freed || s.values.size() == 0;
    CHECK(freed);
  }
}

TEST_CASE("a summary computed a block of query rows at a time is the same text and the same bits") {
  // --format summary of a long input: the (T, T_k) steps are never held whole, each keeps its
  // digest; every other step is assembled row by row. Blocks of 1, 5 and 7 rows (which do not
  // divide T) and the automatic size.
  std::vector<attn::TraceConfig> configs(9);
  configs[1].causal = true;
  configs[2].softmax_steps = true;
  configs[3].sentences = {"Life is short, eat dessert first", "a b c"};  // padded: masked
  configs[3].heads = 2;
  configs[4].heads = 3;
  configs[4].multihead = attn::MultiheadForm::kSplit;
  configs[4].d_kq = configs[4].d_v = 6;
  configs[5].cross = "dessert comes first";
  configs[5].causal = true;
  configs[6].sentences = {"a b c d e f g", "x y"};
  configs[6].causal = true;
  configs[6].softmax_steps = true;
  configs[6].masked_rows = attn::MaskedRows::kZero;
  std::string words;
  for (int i = 0; i < 300; ++i) words += fmt::format("w{} ", i);
  for (std::size_t i : {7u, 8u}) {
    configs[i].sentences = {words};
    configs[i].vocab_size = 300;
    configs[i].d_in = 64;
    configs[i].d_kq = configs[i].d_v = 64;  // every product is blocked
    configs[i].threads = 2;
  }
  configs[8].causal = true;
  configs[8].heads = 2;
  configs[8].init = attn::WeightInit::kLinear;
  // Traced whole even in a summary: the KV cache and the online softmax read a head's scores.
  configs.emplace_back().decode = true;
  configs.back().causal = true;
  configs.emplace_back().online_softmax = 2;
  configs.back().causal = true;
  configs.emplace_back().window = 2;
  configs.back().causal = true;
  // Rows 1 to 9 of the causal lesson's renormalized weights are 0 / 0: their kept keys' weights
  // underflow beside row 10's far larger score. The note names them from every block.
  attn::Matrix x(10, 3);
  for (Eigen::Index r = 0; r < 10; ++r) x.row(r) << 1.0f, 2.0f, 3.0f;
  x.row(9) << 40.0f, 50.0f, 60.0f;
  configs.emplace_back().x = attn::GivenMatrix{x, "x.csv", {}};
  configs.back().causal = true;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const attn::Trace whole = attn::run_trace(configs[i]);
    const bool whole_scores = configs[i].decode || configs[i].online_softmax > 0;
    for (std::int64_t rows : {0, 1, 5, 7}) {
      CAPTURE(i);
      CAPTURE(rows);
      attn::TraceConfig streamed = configs[i];
      std::string lines, attention;
      streamed.release_scores = true;
      streamed.stream_scores = true;
      streamed.score_block_rows = rows;
      streamed.on_step = [&](const attn::Step& s) {
        lines += attn::summary_step_line(s, 2);
        attention += attn::summary_attention(s, 5, 2);
      };
      const attn::Trace blocked = attn::run_trace(streamed);
      CHECK(attn::summary_head(blocked) + lines + attention == attn::render_summary(whole));
      // Freeing a head's own steps when it is done (--format summary) changes no line, and
      // keeps the values of the steps read after it: X, the weights, the heads side by side.
      std::string released_lines, released_attention;
      streamed.release_head_steps = true;
      streamed.on_step = [&](const attn::Step& s) {
        released_lines += attn::summary_step_line(s, 2);
        released_attention += attn::summary_attention(s, 5, 2);
      };
      const attn::Trace released = attn::run_trace(streamed);
      CHECK(released_lines == lines);
      CHECK(released_attention == attention);
      REQUIRE(released.steps.size() == whole.steps.size());
      for (const attn::Step& s : released.steps) {
        CAPTURE(s.id);
        const bool kept =
            s.kind == attn::StepKind::kEmbeddings || s.kind == attn::StepKind::kEmbeddings2 ||
            s.kind == attn::StepKind::kWQuery || s.kind == attn::StepKind::kWKey ||
            s.kind == attn::StepKind::kWValue || s.kind == attn::StepKind::kWOut ||
            s.kind == attn::StepKind::kBOut || s.kind == attn::StepKind::kContextConcat ||
            s.kind == attn::StepKind::kOutput;
        CHECK((s.values.size() > 0) == kept);
      }
      // A released trace keeps no scores, but a digested one keeps their summary.
      if (!whole_scores) CHECK(attn::render_summary(blocked) == attn::render_summary(whole));
      REQUIRE(blocked.steps.size() == whole.steps.size());
      for (std::size_t k = 0; k < whole.steps.size(); ++k) {
        const attn::Step &a = blocked.steps[k], &b = whole.steps[k];
        CAPTURE(b.id);
        CHECK(a.shape == b.shape);
        CHECK(a.row_labels == b.row_labels);
        CHECK(a.note == b.note);
        if (b.columns_are_keys && !whole_scores) {
          CHECK(a.values.size() == 0);
          REQUIRE(a.digest != nullptr);
          CHECK(a.digest->statistics.checksum == attn::xxh3_64(b.values));
        } else if (!b.columns_are_keys) {
          CHECK(a.digest == nullptr);
          CHECK(attn::xxh3_64(a.values) == attn::xxh3_64(b.values));
        }
      }
    }
  }
}

TEST_CASE("the most-attended keys name labels from a file escaped") {
  const std::string out = attn::render_summary(attn::test::hostile_trace(), 2);
  CHECK_FALSE(attn::test::has_raw_control(out));
  const std::vector<std::string> shown = attn::test::hostile_labels_escaped();
  CHECK(out.find("  query 1 '" + shown[0] + "' attends most to ") != std::string::npos);
  CHECK(out.find("  query 2 '" + shown[1] + "' attends most to ") != std::string::npos);
}
