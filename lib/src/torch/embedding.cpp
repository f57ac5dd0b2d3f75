#include "attn/embedding.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/parallel.hpp"

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

namespace {

// The rows of the table that a sentence's tokens take, and where each goes in X.
class RowScatter {
 public:
  RowScatter(std::span<const std::int64_t> ids, std::int64_t d_in, Matrix& x)
      : d_(static_cast<std::uint64_t>(d_in)), x_(x), order_(ids.size()) {
    // The tokens in order of their ids (stable: a repeated id keeps its tokens' order), and the
    // distinct ids, ascending: the tokens of rows_[k] are order_[first_[k] .. first_[k + 1]).
    for (std::size_t t = 0; t < order_.size(); ++t) order_[t] = t;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    for (std::size_t k = 0; k < order_.size(); ++k) {
      if (rows_.empty() || rows_.back() != ids[order_[k]]) {
        rows_.push_back(ids[order_[k]]), first_.push_back(k);
      }
    }
    first_.push_back(order_.size());
  }

  // The distinct ids, ascending.
  const std::vector<std::int64_t>& rows() const { return rows_; }

  // Whether the table's rows are whole blocks of 16 draws (d_in % 16 == 0): then each needed
  // row's draws can be made in X, in the row of its first token (its home), with no copy.
  bool in_place() const { return d_ % 16 == 0; }

  // Copies elements [from, from + count) of the table, in `values`, into the rows of X whose
  // tokens have them: into their homes, then from there into the repeats.
  void operator()(std::uint64_t from, std::uint64_t count, const float* values) const {
    for_each_part(from, count, [&](std::size_t k, std::uint64_t begin, std::uint64_t end) {
      std::copy(values + (begin - from), values + (end - from), at(first_[k], begin));
    });
    copy_repeats(from, count);
  }

  // In place: f(home, n) for each part of elements [from, from + count) of the table, in order,
  // `home` where its first token's row of X holds it.
  template <class F>
  void for_each_home(std::uint64_t from, std::uint64_t count, F&& f) const {
    for_each_part(from, count, [&](std::size_t k, std::uint64_t begin, std::uint64_t end) {
      f(at(first_[k], begin), end - begin);
    });
  }

  // In place: copies elements [from, from + count), made in their homes, into the rows of the
  // other tokens with the same id.
  void copy_repeats(std::uint64_t from, std::uint64_t count) const {
    for_each_part(from, count, [&](std::size_t k, std::uint64_t begin, std::uint64_t end) {
      const float* home = at(first_[k], begin);
      for (std::size_t j = first_[k] + 1; j < first_[k + 1]; ++j) {
        std::copy(home, home + (end - begin), at(j, begin));
      }
    });
  }

 private:
  // f(k, begin, end) for each needed row rows_[k] with elements in [from, from + count): its
  // elements [begin, end) of the table there.
  template <class F>
  void for_each_part(std::uint64_t from, std::uint64_t count, F&& f) const {
    const std::uint64_t last = from + count;
    auto it = std::lower_bound(rows_.begin(), rows_.end(), static_cast<std::int64_t>(from / d_));
    for (; it != rows_.end() && static_cast<std::uint64_t>(*it) * d_ < last; ++it) {
      const std::uint64_t begin = std::max(static_cast<std::uint64_t>(*it) * d_, from);
      const std::uint64_t end = std::min(static_cast<std::uint64_t>(*it) * d_ + d_, last);
      f(static_cast<std::size_t>(it - rows_.begin()), begin, end);
    }
  }

  // Where the j-th token in id order holds element e of the table.
  float* at(std::size_t j, std::uint64_t e) const {
    return &x_(static_cast<Eigen::Index>(order_[j]), static_cast<Eigen::Index>(e % d_));
  }

  std::uint64_t d_;
  Matrix& x_;
  std::vector<std::size_t> order_;
  std::vector<std::int64_t> rows_;
  std::vector<std::size_t> first_;
};

// The needed 16-blocks of draws, as runs of consecutive blocks in draw order; the generator skips
// the draws between runs (discard: no tempering), and draws each run in chunks. A chunk's
// uniforms come from the one generator in order; its blocks' Box-Muller transforms (two thirds
// of the time) are independent of each other, so they are split across the threads, each block
// computed as it would be alone. On several threads the chunks go through a pipeline: while the
// threads transform a chunk, the calling thread first draws the next chunk's uniforms, then joins
// them (parallel_chunks: the others take its share's last pieces). Drawing before transforming
// left the other threads waiting for a third of the time, and the uniforms took longer on two
// threads than on one, as writes to lines that the other core has read do on this project's
// machines (docs/design.md, Performance). Where the table's rows are whole blocks (in_place), a
// chunk is drawn and transformed in X, each row in its first token's row; otherwise in one of two
// buffers, then copied into X.
class RunDrawer {
 public:
  RunDrawer(TorchGenerator& gen, const RowScatter& scatter, TorchKernel kernel, int threads)
      : gen_(gen), scatter_(scatter), kernel_(kernel), threads_(threads) {}

  // Draws blocks [first_block, end_block) and scatters them into X. One thread draws a chunk and
  // transforms it while it is in cache: the pipeline only pays with another thread to transform
  // beside the drawing.
  void draw(std::uint64_t first_block, std::uint64_t end_block) {
    if (threads_ > 1) return draw_pipelined(first_block, end_block);
    for (std::uint64_t b = first_block; b < end_block; b += kChunkBlocks) {
      const std::uint64_t blocks = std::min(kChunkBlocks, end_block - b);
      uniforms(0, b, blocks);
      transform(0, b, 0, blocks);
    }
  }

  // Draws consumed so far.
  std::uint64_t position() const { return position_; }

 private:
  static constexpr std::uint64_t kChunkBlocks = 8192;  // 512 KiB of draws
  static constexpr std::uint64_t kPieceBlocks = 256;   // a thread's piece of a chunk: 16 KiB

  // Blocks [b, b + blocks)'s uniforms: in X where the rows are whole blocks, else in buffer
  // `which`.
  void uniforms(int which, std::uint64_t b, std::uint64_t blocks) {
    gen_.discard(b * 16 - position_);
    if (scatter_.in_place()) {
      scatter_.for_each_home(b * 16, blocks * 16, [this](float* home, std::uint64_t n) {
        gen_.fill_uniform01(std::span<float>(home, n));
      });
    } else {
      std::vector<float>& buffer = chunks_[which];
      buffer.resize(std::max<std::size_t>(buffer.size(), blocks * 16));
      gen_.fill_uniform01(std::span<float>(buffer.data(), blocks * 16));
    }
    position_ = (b + blocks) * 16;
  }

  // The normals of blocks [k0, k1) of the chunk whose first block is b (its uniforms in buffer
  // `which`, or in X), in place, and into the rows of X that have them.
  void transform(int which, std::uint64_t b, std::uint64_t k0, std::uint64_t k1) {
    const std::uint64_t from = (b + k0) * 16, count = (k1 - k0) * 16;
    if (scatter_.in_place()) {
      scatter_.for_each_home(from, count, [this](float* home, std::uint64_t n) {
        normal_fill_blocks(std::span<float>(home, n), 0.0f, 1.0f, kernel_);
      });
      scatter_.copy_repeats(from, count);
      return;
    }
    const std::span<float> draws(chunks_[which].data() + k0 * 16, count);
    normal_fill_blocks(draws, 0.0f, 1.0f, kernel_);
    scatter_(from, count, draws.data());
  }

  void draw_pipelined(std::uint64_t first_block, std::uint64_t end_block) {
    int current = 0;
    std::uint64_t blocks = std::min(kChunkBlocks, end_block - first_block);
    uniforms(current, first_block, blocks);
    for (std::uint64_t b = first_block; b < end_block;) {
      const std::uint64_t next = b + blocks;
      const std::uint64_t next_blocks = std::min(kChunkBlocks, end_block - next);
      const std::uint64_t pieces = (blocks + kPieceBlocks - 1) / kPieceBlocks;
      // Piece 0 is the next chunk's uniforms, pieces 1 .. the transforms; about 60 operations
      // per draw (a log, a sine and a cosine per pair, vectorised).
      parallel_chunks(static_cast<std::int64_t>(pieces + 1), 1, threads_,
                      60.0 * static_cast<double>(blocks * 16),
                      [&](std::int64_t begin, std::int64_t end) {
                        for (auto i = static_cast<std::uint64_t>(begin);
                             i < static_cast<std::uint64_t>(end); ++i) {
                          if (i == 0) {
                            if (next_blocks > 0) uniforms(1 - current, next, next_blocks);
                            continue;
                          }
                          const std::uint64_t k0 = (i - 1) * kPieceBlocks;
                          transform(current, b, k0, std::min(blocks, k0 + kPieceBlocks));
                        }
                      });
      b = next, blocks = next_blocks, current = 1 - current;
    }
  }

  TorchGenerator& gen_;
  const RowScatter& scatter_;
  TorchKernel kernel_;
  int threads_;
  std::uint64_t position_ = 0;
  std::vector<float> chunks_[2];
};

}  // namespace

Matrix embed(std::uint64_t seed, std::int64_t vocab_size, std::int64_t d_in,
             std::span<const std::int64_t> ids, TorchKernel kernel, int threads) {
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
  const std::uint64_t full_blocks = n / 16;
  const RowScatter scatter(ids, d_in, x);
  TorchGenerator gen(seed);
  RunDrawer drawer(gen, scatter, kernel, threads);
  std::uint64_t run_begin = 0, run_end = 0;  // [begin, end) blocks, empty at first
  for (const std::int64_t r : scatter.rows()) {
    const std::uint64_t begin = static_cast<std::uint64_t>(r) * d / 16;
    const std::uint64_t end =
        std::min(full_blocks, (static_cast<std::uint64_t>(r) * d + d + 15) / 16);
    if (begin >= end) continue;  // only in the tail
    if (begin > run_end) {
      if (run_end > run_begin) drawer.draw(run_begin, run_end);
      run_begin = begin;
    }
    run_end = std::max(run_end, end);
  }
  if (run_end > run_begin) drawer.draw(run_begin, run_end);
  if (n % 16 != 0) {
    // The tail block, for the rows with elements in [n - 16, n).
    const std::uint64_t tail_start = n - 16;
    if (static_cast<std::uint64_t>(scatter.rows().back()) * d + d > tail_start) {
      std::array<float, 16> block{};
      gen.discard(n - drawer.position());
      gen.fill_uniform01(block);
      normal_fill_16(block, 0.0f, 1.0f, kernel);
      scatter(tail_start, 16, block.data());
    }
  }
  return x;
}

}  // namespace attn
