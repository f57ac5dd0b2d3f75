// Private to lib/src/io: what safetensors.cpp reads of a GPT-2 checkpoint (gpt2_layout.cpp).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/gpt2_model.hpp"

namespace attn::io_detail {

// A checkpoint's tensors, by name, in the header's order.
using Tensors = std::vector<std::pair<std::string, Gpt2Checkpoint::Tensor>>;

// "[768, 2304]".
inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The hyperparameters of the GPT-2 checkpoint at `path` whose header lists `tensors`: its names'
// prefix ("" or "transformer."), and every tensor GPT-2 reads present, in a float dtype, with the
// shapes that wte.weight, wpe.weight, the blocks h.0 … and mlp.c_fc.weight give; config.json beside
// the file, if there is one, must agree with them and gives n_head, which must be `n_head` where
// that is given (> 0); without it, `n_head` must be. Throws Error naming the file and the tensor.
Gpt2Config gpt2_layout(const std::string& path, const Tensors& tensors, std::int64_t n_head);

}  // namespace attn::io_detail
