#include "attn/embedding.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "attn/error.hpp"

namespace attn {

namespace {

void check_shape(std::int64_t vocab_size, std::int64_t d_in) {
  if (vocab_size < 1) {
    throw Error("vocabulary size " + std::to_string(vocab_size) + " is too small: it must be >= 1");
  }
  if (d_in < 1) throw Error("d_in " + std::to_string(d_in) + " is too small: it must be >= 1");
}

}  // namespace

Matrix embedding_table(std::uint64_t seed, std::int64_t vocab_size, std::int64_t d_in,
                       TorchKernel kernel) {
  check_shape(vocab_size, d_in);
  TorchGenerator gen(seed);
  Matrix table(vocab_size, d_in);  // (V, d_in)
  normal_(std::span<float>(table.data(), static_cast<std::size_t>(table.size())), gen, 0.0f, 1.0f,
          kernel);
  return table;
}

Matrix embed(std::uint64_t seed, std::int64_t vocab_size, std::int64_t d_in,
             std::span<const std::int64_t> ids, TorchKernel kernel) {
  check_shape(vocab_size, d_in);
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= vocab_size) {
      throw Error("token id " + std::to_string(id) +
                  " is outside the vocabulary: ids must be in 0.." +
                  std::to_string(vocab_size - 1));
    }
  }
  const std::uint64_t n = static_cast<std::uint64_t>(vocab_size) * static_cast<std::uint64_t>(d_in);
  Matrix x(static_cast<Eigen::Index>(ids.size()), d_in);  // X: (T, d_in)
  const auto d = static_cast<std::uint64_t>(d_in);
  if (ids.empty()) return x;

  if (n < 16) {
    // The small path draws pairs through a cache: nothing can be skipped, and nothing needs to be.
    const Matrix table = embedding_table(seed, vocab_size, d_in, kernel);
    for (std::size_t t = 0; t < ids.size(); ++t) {
      x.row(static_cast<Eigen::Index>(t)) = table.row(ids[t]);
    }
    return x;
  }

  // normal_fill: element e is finished by the 16-block e / 16 (uniform draws 16b .. 16b + 15),
  // unless n % 16 != 0 and e >= n - 16: then the tail block (draws n .. n + 15) overwrites it.
  const bool has_tail = n % 16 != 0;
  const std::uint64_t tail_start = n - 16;

  std::vector<std::int64_t> rows(ids.begin(), ids.end());  // distinct ids, ascending
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());

  // The needed blocks in draw order; each row's elements are written as their block finishes.
  TorchGenerator gen(seed);
  std::uint64_t position = 0;  // draws consumed so far
  std::array<float, 16> block{};
  Matrix row_values(static_cast<Eigen::Index>(rows.size()), d_in);  // (distinct ids, d_in)

  auto copy_out = [&](std::uint64_t block_first, std::uint64_t lane_begin, std::uint64_t lane_end) {
    // Lanes [lane_begin, lane_end) of the block hold elements block_first + lane.
    for (std::uint64_t lane = lane_begin; lane < lane_end; ++lane) {
      const std::uint64_t e = block_first + lane;
      const auto row_id = static_cast<std::int64_t>(e / d);
      const auto it = std::lower_bound(rows.begin(), rows.end(), row_id);
      if (it == rows.end() || *it != row_id) continue;
      row_values(it - rows.begin(), static_cast<Eigen::Index>(e % d)) = block[lane];
    }
  };
  auto draw_block = [&](std::uint64_t first_draw) {
    gen.discard(first_draw - position);
    for (float& v : block) v = gen.uniform01();
    position = first_draw + 16;
    normal_fill_16(block, 0.0f, 1.0f, kernel);
  };

  std::uint64_t last_block = UINT64_MAX;
  for (const std::int64_t r : rows) {
    const std::uint64_t begin = static_cast<std::uint64_t>(r) * d;
    const std::uint64_t end = begin + d;
    for (std::uint64_t b = begin / 16; b * 16 < end && b < n / 16; ++b) {
      if (b == last_block) continue;  // already drawn for the previous row
      draw_block(b * 16);
      last_block = b;
      copy_out(b * 16, 0, 16);
    }
  }
  if (has_tail) {
    // Rows from tail_start / d on have elements in [n - 16, n).
    if (static_cast<std::uint64_t>(rows.back()) >= tail_start / d) {
      draw_block(n);
      copy_out(tail_start, 0, 16);
    }
  }

  for (std::size_t t = 0; t < ids.size(); ++t) {
    const auto it = std::lower_bound(rows.begin(), rows.end(), ids[t]);
    x.row(static_cast<Eigen::Index>(t)) = row_values.row(it - rows.begin());
  }
  return x;
}

}  // namespace attn
