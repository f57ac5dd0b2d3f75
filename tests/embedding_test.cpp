#include "attn/embedding.hpp"

#include <doctest/doctest.h>

#include "attn/error.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;
namespace test = attn::test;

namespace {

// The rows embed() computes by skipping must be the rows of the table PyTorch builds.
void check_rows_match_table(std::int64_t v, std::int64_t d, std::uint64_t seed,
                            const std::vector<std::int64_t>& ids, TorchKernel kernel) {
  const Matrix table = attn::embedding_table(seed, v, d, kernel);
  const Matrix x = attn::embed(seed, v, d, ids, kernel);
  REQUIRE(x.rows() == static_cast<Eigen::Index>(ids.size()));
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const Matrix want = table.row(ids[t]);
    const Matrix got = x.row(static_cast<Eigen::Index>(t));
    INFO("V " << v << " d " << d << " id " << ids[t]);
    CHECK(test::bits_of(got) == test::bits_of(want));
  }
}

}  // namespace

TEST_CASE("embed computes exactly the table's rows, for every layout of blocks and tails") {
  for (const TorchKernel kernel : test::kKernels) {
    // n < 16 (double path), n % 16 == 0, n % 16 != 0 with the tail over one or several rows,
    // rows wider than a block, repeated and unsorted ids, the first and the last row.
    check_rows_match_table(3, 2, 123, {2, 0, 0, 1}, kernel);
    check_rows_match_table(5, 3, 123, {4, 3, 0}, kernel);
    check_rows_match_table(6, 3, 123, {5, 0, 2, 5}, kernel);
    check_rows_match_table(100, 7, 9, {99, 98, 97, 0, 50, 50}, kernel);
    check_rows_match_table(33, 1, 1, {32, 31, 17, 16, 15, 0}, kernel);
    check_rows_match_table(10, 37, 77, {9, 3, 4, 0}, kernel);
    check_rows_match_table(40, 16, 5, {39, 0, 20}, kernel);
    check_rows_match_table(1000, 17, 123, {999, 998, 500, 1, 0}, kernel);
  }
}

TEST_CASE("embed gives the same bits on any number of threads, over several chunks of draws") {
  // 300 x 1024 is 19,200 blocks of 16 draws. Every third row: many short runs of needed blocks,
  // each a chunk of its own. Rows 0-139 and 160-299, with 150 and 0 again: two runs of 8,960
  // blocks, each two chunks, so that the threads transform one chunk while the next is drawn.
  std::vector<std::int64_t> sparse, runs;
  for (std::int64_t id = 299; id >= 0; id -= 3) sparse.push_back(id);
  sparse.push_back(150);
  for (std::int64_t id = 0; id < 300; ++id) {
    if (id < 140 || id >= 160) runs.push_back(id);
  }
  runs.push_back(150), runs.push_back(0);
  for (const auto& ids : {sparse, runs}) {
    for (const TorchKernel kernel : test::kKernels) {
      const Matrix one = attn::embed(42, 300, 1024, ids, kernel, 1);
      for (const int threads : {2, 3, 8}) {
        CAPTURE(threads);
        CHECK(test::bits_of(attn::embed(42, 300, 1024, ids, kernel, threads)) ==
              test::bits_of(one));
      }
      const Matrix table = attn::embedding_table(42, 300, 1024, kernel);
      for (std::size_t t = 0; t < ids.size(); ++t) {
        const Matrix want = table.row(ids[t]);
        const Matrix got = one.row(static_cast<Eigen::Index>(t));
        CHECK(test::bits_of(got) == test::bits_of(want));
      }
    }
  }
}

TEST_CASE("the walkthrough's 50,000 x 3 table has PyTorch's sha256") {
  for (const TorchKernel kernel : test::kKernels) {
    const test::json ref = test::load_reference(kernel, "rng.json");
    const test::json& digest =
        ref.at("cases").at("embedding_50000x3_seed123_digest").at("tensors")[0];
    CHECK(test::sha256_f32le(attn::embedding_table(123, 50000, 3, kernel)) ==
          digest.at("sha256_f32le").get<std::string>());
  }
}

TEST_CASE("rows of a wide table (1000 x 4096) are streamed without the table, bit for bit") {
  for (const TorchKernel kernel : test::kKernels) {
    const test::json ref = test::load_reference(kernel, "rng.json");
    const test::json& rows =
        ref.at("cases").at("embedding_1000x4096_seed3_digest").at("tensors")[0].at("rows");
    const auto ids = rows.at("index").get<std::vector<std::int64_t>>();
    const auto columns = rows.at("columns").get<Eigen::Index>();
    const Matrix x = attn::embed(3, 1000, 4096, ids, kernel);
    const Matrix first_columns = x.leftCols(columns);
    test::check_bits(first_columns,
                     test::json{{"bits", rows.at("bits")}, {"shape", {ids.size(), columns}}},
                     std::string(attn::kernel_name(kernel)) + " rows 0, 1, 500, 999");
  }
}

TEST_CASE("embed refuses ids outside the vocabulary and empty shapes") {
  const std::vector<std::int64_t> bad = {0, 5};
  CHECK_THROWS_WITH_AS(attn::embed(1, 5, 3, bad, TorchKernel::kAvx2),
                       "token id 5 is outside the vocabulary: ids must be in 0..4", attn::Error);
  CHECK_THROWS_WITH_AS(attn::embed(1, 0, 3, {}, TorchKernel::kAvx2),
                       "vocabulary size 0 is too small: it must be >= 1", attn::Error);
  CHECK_THROWS_WITH_AS(attn::embedding_table(1, 3, 0, TorchKernel::kAvx2),
                       "d_in 0 is too small: it must be >= 1", attn::Error);
}
