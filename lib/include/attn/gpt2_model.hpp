#pragma once

// A GPT-2 checkpoint: Hugging Face's model.safetensors, memory-mapped and checked, with its
// hyperparameters (config.json beside it, or inferred from the shapes); and GPT-2's block,
// computed in float32 as PyTorch's GPT2Model computes it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/torch_kernels.hpp"

namespace attn {

// The MLP's activation (config.json's activation_function).
enum class Gpt2Activation {
  kGeluNew,  // "gelu_new": 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), GPT-2's own
  kGelu,     // "gelu": 0.5 x (1 + erf(x / √2))
};

// The hyperparameters.
struct Gpt2Config {
  std::int64_t n_layer = 0, n_head = 0, n_embd = 0, n_positions = 0, vocab_size = 0;
  std::int64_t n_inner = 0;  // the MLP's width: config.json's n_inner, 4 · n_embd when null
  double layer_norm_epsilon = 1e-5;
  Gpt2Activation activation = Gpt2Activation::kGeluNew;
  bool config_json = false;  // read from config.json (else inferred from the shapes)
  std::string prefix;        // "transformer." or "": how the file names its tensors
  std::string dtype;         // the attention weights' dtype in the file: "F32", "F16", "BF16"
};

// One block's weights, in float32, as the file stores them (Conv1D: y = x W + b, W (in, out));
// each bias and layer norm vector is one row.
struct Gpt2Layer {
  Matrix ln_1_weight, ln_1_bias;            // (1, d)
  Matrix c_attn_weight, c_attn_bias;        // (d, 3d), (1, 3d): q, k, v side by side
  Matrix attn_proj_weight, attn_proj_bias;  // (d, d), (1, d): the attention's c_proj
  Matrix ln_2_weight, ln_2_bias;            // (1, d)
  Matrix c_fc_weight, c_fc_bias;            // (d, n_inner), (1, n_inner)
  Matrix mlp_proj_weight, mlp_proj_bias;    // (n_inner, d), (1, d): the MLP's c_proj
};

class Gpt2Checkpoint {
 public:
  // Maps `path` (a regular file) and checks its header: a header length within the file, a JSON
  // object with no key given twice whose entries have a known dtype, a shape and data_offsets
  // within the data, of the size that dtype and shape need and overlapping no other's; then
  // GPT-2's tensors by name (with or without transformer., not both), rank and shape, and the
  // blocks h.0 … with no gap. The hyperparameters come from config.json in the same folder (a
  // regular file of at most 1 MiB); without it, they are inferred from the shapes and `n_head`
  // (> 0) gives the head count. Other tensors (h.N.attn.bias, h.N.attn.masked_bias,
  // lm_head.weight) are not read. Throws Error naming the file, the tensor or the key, and what is
  // wrong, for anything else; the tensors' values are checked finite as they are read.
  static std::shared_ptr<const Gpt2Checkpoint> open(const std::string& path,
                                                    std::int64_t n_head = 0);
  ~Gpt2Checkpoint();
  Gpt2Checkpoint(const Gpt2Checkpoint&) = delete;
  Gpt2Checkpoint& operator=(const Gpt2Checkpoint&) = delete;

  const Gpt2Config& config() const { return config_; }
  const std::string& path() const { return path_; }

  // wte's rows of `ids` (each < vocab_size): (ids, n_embd).
  Matrix token_rows(const std::vector<std::int64_t>& ids) const;
  // wpe's first t rows (t <= n_positions): (t, n_embd).
  Matrix position_rows(std::int64_t t) const;
  // Block `layer`'s weights (layer < n_layer), converted to float32.
  // Each of these throws Error naming the tensor and the position of a nan or an infinity read.
  Gpt2Layer layer(std::int64_t layer) const;
  // Only its ln_1's weight and bias (the traced layer's input X reads no more of the block).
  Gpt2Layer ln_1(std::int64_t layer) const;
  // Only ln_1 and the attention's c_attn and c_proj: what the traced layer's attention reads (its
  // ln_2 and MLP come after it).
  Gpt2Layer attention(std::int64_t layer) const;

  struct Tensor {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::size_t begin = 0, end = 0;  // in the data, after the header
  };

 private:
  Gpt2Checkpoint() = default;
  Matrix read(const std::string& name, Eigen::Index first_row, Eigen::Index rows) const;
  Matrix read(const std::string& name) const;
  const Tensor& tensor(const std::string& name) const;

  std::string path_;
  Gpt2Config config_;
  const unsigned char* map_ = nullptr;
  std::size_t map_size_ = 0;
  const unsigned char* data_ = nullptr;  // the data, after the header
  std::vector<std::pair<std::string, Tensor>> tensors_;
};

// nn.LayerNorm(d, eps) of each row, (x − mean) / √(var + eps) · weight + bias, with the bits of
// PyTorch's CPU kernel of that flavour (its moments by Welford's update in a cascade, in float32).
// Throws Error, naming the layer norm (`name`, "h.3.ln_1") and the row, where the row's squared
// deviations, or the square of its mean, overflow float32 in PyTorch's moments (its row is then
// nan, or the bias alone).
Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps,
                  std::string_view name, TorchKernel kernel);

// x W + b as Conv1D computes it, torch.addmm(b, x, W): each sum starts from the bias. On up to
// `threads` threads.
Matrix conv1d(const Matrix& x, const Matrix& weight, const Matrix& bias, int threads = 1,
              MatmulKernel matmul = MatmulKernel::kAuto);

// The activation, element by element: gelu_new with the bits of Hugging Face's
// NewGELUActivation (torch_gelu_new); gelu, F.gelu's erf form, which PyTorch's float32 CPU
// tensors hand to oneDNN, in double and rounded once, within 1e-6 of PyTorch's.
Matrix gelu(const Matrix& x, Gpt2Activation activation, TorchKernel kernel);

// How a block computes: PyTorch's kernels of that flavour, the products' kernel (--matmul), and
// the threads.
struct Gpt2Kernels {
  TorchKernel torch = TorchKernel::kAvx2;
  MatmulKernel matmul = MatmulKernel::kAuto;
  int threads = 1;
};

// GPT-2's causal self-attention of one block on ln_1's output `a`, every head: c_attn, the
// heads' softmax(q kᵀ / √d_head) v, side by side, then c_proj. Returns (T, d).
Matrix gpt2_attention(const Matrix& a, const Gpt2Layer& w, std::int64_t n_head,
                      const Gpt2Kernels& kernels);

// One whole block, number `block`: h + attn(ln_1(h)), then that + mlp(ln_2(that)).
Matrix gpt2_block(const Matrix& h, const Gpt2Layer& w, const Gpt2Config& config, std::int64_t block,
                  const Gpt2Kernels& kernels);

// The names of the activations: "gelu_new", "gelu".
const char* activation_name(Gpt2Activation activation);

}  // namespace attn
