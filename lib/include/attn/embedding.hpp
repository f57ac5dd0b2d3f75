#pragma once

// The embedding layer: torch.manual_seed(seed); nn.Embedding(vocab_size, d_in).

#include <cstdint>
#include <span>

#include "attn/matrix.hpp"
#include "attn/torch_random.hpp"

namespace attn {

// embed(ids) for a freshly seeded nn.Embedding(vocab_size, d_in): one row per id, in order.
// Only the rows the ids name are computed: the generator is advanced past every other draw
// without computing it, so the cost in memory is O(ids.size() * d_in), never
// O(vocab_size * d_in). Bit-identical to the rows of embedding_table().
// The normal transforms run on up to `threads` threads, with the same bits for any number.
// Requires: vocab_size >= 1, d_in >= 1, every id in [0, vocab_size). Throws Error otherwise.
// Returns: (ids.size(), d_in).
Matrix embed(std::uint64_t seed, std::int64_t vocab_size, std::int64_t d_in,
             std::span<const std::int64_t> ids, TorchKernel kernel, int threads = 1);

// The whole table, nn.Embedding(vocab_size, d_in).weight, as PyTorch builds it.
// Returns: (vocab_size, d_in). Meant for tests and small vocabularies.
Matrix embedding_table(std::uint64_t seed, std::int64_t vocab_size, std::int64_t d_in,
                       TorchKernel kernel);

}  // namespace attn
