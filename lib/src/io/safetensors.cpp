// A GPT-2 checkpoint in safetensors: the file mapped, its header checked, its tensors read in
// float32 (F16 and BF16 converted); which tensors GPT-2 needs, and its hyperparameters, are in
// gpt2_layout.cpp.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/statistics.hpp"
#include "gpt2_layout.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using io_detail::shape_text;
using io_detail::Tensors;
using nlohmann::json;

// The bytes of an element of each safetensors dtype.
std::size_t dtype_bytes(const std::string& dtype) {
  static const std::pair<const char*, std::size_t> kDtypes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  for (const auto& [name, bytes] : kDtypes) {
    if (dtype == name) return bytes;
  }
  return 0;
}

// IEEE half to float, exactly.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // ±0
  } else {        // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    bits = sign | static_cast<std::uint32_t>(112 - e) << 23 | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t load16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

// The file at `path` mapped whole, read-only, and its size: at least the header's 8-byte length.
// Opened without blocking: a FIFO with no writer would block open() for ever; it is no file.
std::pair<const unsigned char*, std::size_t> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw Error(fmt::format("cannot open the model {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("the model {} is not a file: give a model.safetensors", path));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw Error(fmt::format(
        "{}: is not a safetensors file: {} bytes, fewer than the header's 8-byte length", path,
        size));
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    throw Error(fmt::format("cannot map the model {}: {}", path, std::strerror(errno)));
  }
  return {static_cast<const unsigned char*>(map), size};
}

// The header's tensors: each entry a known dtype, a shape, and data_offsets of the right size
// within the `data_size` bytes of data; no two sharing a byte (an empty tensor shares none).
Tensors read_tensors(const std::string& path, const json& doc, std::size_t data_size) {
  Tensors tensors;
  for (const auto& item : doc.items()) {
    // Named copies, not structured bindings: clang 14 refuses a lambda that captures a binding.
    const std::string& name = item.key();
    const json& entry = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) {
      return Error(fmt::format("{}: tensor '{}' {}", path, name, what));
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      throw bad("is not an object with dtype, shape and data_offsets");
    }
    Gpt2Checkpoint::Tensor t;
    if (!entry["dtype"].is_string()) throw bad("has a dtype that is not a string");
    t.dtype = entry["dtype"].get<std::string>();
    const std::size_t bytes = dtype_bytes(t.dtype);
    if (bytes == 0) {
      throw bad(fmt::format("has dtype '{}', which is not a safetensors dtype", t.dtype));
    }
    const json& shape = entry["shape"];
    if (!shape.is_array()) throw bad("has a shape that is not a list");
    for (const json& d : shape) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t{1} << 40)) {
        throw bad(
            fmt::format("has shape {}: each size must be an integer from 0 to 2^40", shape.dump()));
      }
      t.shape.push_back(d.get<std::int64_t>());
    }
    // The size in bytes, its product checked: [2^40, 2^40] of F32 is 2^82 bytes, which an
    // unchecked product would wrap around to 0.
    std::uint64_t size = 0;
    if (std::find(t.shape.begin(), t.shape.end(), 0) == t.shape.end()) {
      size = bytes;
      for (const std::int64_t d : t.shape) {
        if (__builtin_mul_overflow(size, static_cast<std::uint64_t>(d), &size)) {
          throw bad(fmt::format("has shape {}: too large: {} of that shape is more than 2^64 bytes",
                                shape_text(t.shape), t.dtype));
        }
      }
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw bad(fmt::format("has data_offsets {}: they must be two byte offsets [begin, end]",
                            offsets.dump()));
    }
    const auto begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    if (begin > end || end > data_size) {
      throw bad(fmt::format("has data_offsets [{}, {}], outside the file's {} bytes of data", begin,
                            end, data_size));
    }
    if (end - begin != size) {
      throw bad(fmt::format("has data_offsets [{}, {}]: {} bytes, but {} {} needs {}", begin, end,
                            end - begin, t.dtype, shape_text(t.shape), size));
    }
    t.begin = begin;
    t.end = end;
    tensors.emplace_back(name, std::move(t));
  }
  Tensors sorted;
  std::copy_if(tensors.begin(), tensors.end(), std::back_inserter(sorted),
               [](const auto& t) { return t.second.begin < t.second.end; });
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.begin < b.second.begin; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].second.begin < sorted[i - 1].second.end) {
      throw Error(fmt::format("{}: tensors '{}' and '{}' overlap: bytes [{}, {}) and [{}, {})",
                              path, sorted[i - 1].first, sorted[i].first,
                              sorted[i - 1].second.begin, sorted[i - 1].second.end,
                              sorted[i].second.begin, sorted[i].second.end));
    }
  }
  return tensors;
}

}  // namespace

const char* activation_name(Gpt2Activation activation) {
  return activation == Gpt2Activation::kGelu ? "gelu" : "gelu_new";
}

Gpt2Checkpoint::~Gpt2Checkpoint() {
  if (map_ != nullptr) munmap(const_cast<unsigned char*>(map_), map_size_);
}

const Gpt2Checkpoint::Tensor& Gpt2Checkpoint::tensor(const std::string& name) const {
  for (const auto& [n, t] : tensors_) {
    if (n == config_.prefix + name) return t;
  }
  throw Error(fmt::format("{}: has no tensor '{}'", path_, config_.prefix + name));
}

Matrix Gpt2Checkpoint::read(const std::string& name, Eigen::Index first_row,
                            Eigen::Index rows) const {
  const Tensor& t = tensor(name);
  const Eigen::Index cols = t.shape.size() == 2 ? t.shape[1] : t.shape.empty() ? 1 : t.shape[0];
  Matrix m(rows, cols);
  const std::size_t bytes = dtype_bytes(t.dtype);
  const unsigned char* p =
      data_ + t.begin +
      static_cast<std::size_t>(first_row) * static_cast<std::size_t>(cols) * bytes;
  const auto n = static_cast<std::size_t>(rows * cols);
  float* const v = m.data();
  if (t.dtype == "F32") {
    std::memcpy(m.data(), p, n * 4);  // little-endian, as x86 is
  } else if (t.dtype == "F16") {
    for (std::size_t i = 0; i < n; ++i) m.data()[i] = half_to_float(load16(p + 2 * i));
  } else {  // BF16: the high half of a float32
    for (std::size_t i = 0; i < n; ++i) {
      m.data()[i] = std::bit_cast<float>(static_cast<std::uint32_t>(load16(p + 2 * i)) << 16);
    }
  }
  // A nan or an infinity would reach the trace's numbers, or be taken there for an overflow.
  if (!all_finite(v, n)) {
    const auto at = std::find_if(v, v + n, [](float x) { return !std::isfinite(x); }) - v;
    const std::string value = io_detail::not_finite_name(v[at]);
    throw Error(
        fmt::format("{}: tensor '{}' has {} {} at {}: a checkpoint's weights must be finite", path_,
                    config_.prefix + name, value == "inf" ? "an" : "a", value,
                    t.shape.size() == 2 ? io_detail::cell(first_row + at / cols, at % cols)
                                        : fmt::format("element {}", at + 1)));
  }
  return m;
}

Matrix Gpt2Checkpoint::read(const std::string& name) const {
  const Tensor& t = tensor(name);
  return read(name, 0, t.shape.size() == 2 ? t.shape[0] : 1);
}

Matrix Gpt2Checkpoint::token_rows(const std::vector<std::int64_t>& ids) const {
  Matrix m(static_cast<Eigen::Index>(ids.size()), config_.n_embd);
  for (std::size_t r = 0; r < ids.size(); ++r) {
    if (ids[r] < 0 || ids[r] >= config_.vocab_size) {
      throw Error(fmt::format("token id {} is outside the model's vocabulary of {}", ids[r],
                              config_.vocab_size));
    }
    m.row(static_cast<Eigen::Index>(r)) = read("wte.weight", ids[r], 1);
  }
  return m;
}

Matrix Gpt2Checkpoint::position_rows(std::int64_t t) const {
  if (t > config_.n_positions) {
    throw Error(
        fmt::format("{} tokens are more than the model's {} positions", t, config_.n_positions));
  }
  return read("wpe.weight", 0, t);
}

Gpt2Layer Gpt2Checkpoint::ln_1(std::int64_t l) const {
  if (l < 0 || l >= config_.n_layer) {
    throw Error(
        fmt::format("layer {} is not in the model: its layers are 0 … {}", l, config_.n_layer - 1));
  }
  const std::string h = fmt::format("h.{}.", l);
  Gpt2Layer w;
  w.ln_1_weight = read(h + "ln_1.weight");
  w.ln_1_bias = read(h + "ln_1.bias");
  return w;
}

Gpt2Layer Gpt2Checkpoint::attention(std::int64_t l) const {
  Gpt2Layer w = ln_1(l);
  const std::string h = fmt::format("h.{}.", l);
  w.c_attn_weight = read(h + "attn.c_attn.weight");
  w.c_attn_bias = read(h + "attn.c_attn.bias");
  w.attn_proj_weight = read(h + "attn.c_proj.weight");
  w.attn_proj_bias = read(h + "attn.c_proj.bias");
  return w;
}

Gpt2Layer Gpt2Checkpoint::layer(std::int64_t l) const {
  Gpt2Layer w = attention(l);
  const std::string h = fmt::format("h.{}.", l);
  w.ln_2_weight = read(h + "ln_2.weight");
  w.ln_2_bias = read(h + "ln_2.bias");
  w.c_fc_weight = read(h + "mlp.c_fc.weight");
  w.c_fc_bias = read(h + "mlp.c_fc.bias");
  w.mlp_proj_weight = read(h + "mlp.c_proj.weight");
  w.mlp_proj_bias = read(h + "mlp.c_proj.bias");
  return w;
}

std::shared_ptr<const Gpt2Checkpoint> Gpt2Checkpoint::open(const std::string& path,
                                                           std::int64_t n_head) {
  std::shared_ptr<Gpt2Checkpoint> m(new Gpt2Checkpoint());
  m->path_ = path;
  const auto [map, size] = map_file(path);
  m->map_ = map;
  m->map_size_ = size;

  // The header: its length (u64, little-endian), then that many bytes of JSON.
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | map[i];
  if (header > size - 8) {
    throw Error(fmt::format(
        "{}: is not a safetensors file: its header length {} runs past the end of the file "
        "({} bytes)",
        path, header, size));
  }
  json doc;  // a tensor named twice is refused, with its line
  const std::string_view header_text(reinterpret_cast<const char*>(map + 8), header);
  if (!io_detail::parse_json_unique_keys(header_text, path, doc).ok) {
    throw Error(
        fmt::format("{}: is not a safetensors file: its {}-byte header is not JSON", path, header));
  }
  if (!doc.is_object()) {
    throw Error(
        fmt::format("{}: is not a safetensors file: its header is not a JSON object", path));
  }
  m->data_ = map + 8 + header;
  m->tensors_ = read_tensors(path, doc, size - 8 - header);

  m->config_ = io_detail::gpt2_layout(path, m->tensors_, n_head);
  return m;
}

}  // namespace attn
