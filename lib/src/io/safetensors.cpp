// A GPT-2 checkpoint in safetensors: the file mapped, its header checked, its tensors read in
// float32 (F16 and BF16 converted), and its hyperparameters.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/statistics.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

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

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
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

// Closes a file descriptor when it goes out of scope.
struct Fd {
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};

// config.json's text, or nullopt when there is no such file. It must be a regular file, opened
// without blocking (a FIFO with no writer would block open() for ever), of at most 1 MiB: a
// GPT-2 config.json is about 1 KB, and a file that grows while it is read is stopped there.
std::optional<std::string> read_config_text(const std::string& path) {
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  const Fd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0 && errno == ENOENT) return std::nullopt;
  auto cannot_read = [&path] {
    return Error(fmt::format("{}: cannot read it: {}", path, std::strerror(errno)));
  };
  if (file.fd < 0) throw cannot_read();
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw cannot_read();
  if (!S_ISREG(st.st_mode)) {
    throw Error(
        fmt::format("{}: is not a file: a model's config.json must be a file of JSON", path));
  }
  auto too_large = [&path] {
    return Error(fmt::format("{}: is larger than 1 MiB: a GPT-2 config.json is about 1 KB", path));
  };
  if (static_cast<std::uint64_t>(st.st_size) > kMaxBytes) throw too_large();
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw cannot_read();
    if (n == 0) return text;
    if (static_cast<std::size_t>(n) > kMaxBytes - text.size()) throw too_large();
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// An integer hyperparameter of config.json, when present and not null.
std::optional<std::int64_t> config_int(const json& config, const char* key,
                                       const std::string& where) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
    throw Error(fmt::format("{}: {} is {}: it must be a positive integer", where, key, it->dump()));
  }
  return it->get<std::int64_t>();
}

using Tensors = std::vector<std::pair<std::string, Gpt2Checkpoint::Tensor>>;

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

// The tensors GPT-2 needs, by their names after `prefix` ("transformer." or "").
struct TensorCheck {
  const std::string& path;
  const Tensors& tensors;
  std::string prefix;

  // Whether the file has the tensor of this whole name.
  bool has(const std::string& full) const {
    return std::any_of(tensors.begin(), tensors.end(),
                       [&full](const auto& t) { return t.first == full; });
  }
  // The tensor `name`: present, in a float dtype, with this shape (0: any size, inferred, named
  // by `unknown` in order when the rank is wrong); its shape.
  const std::vector<std::int64_t>& need(const std::string& name, std::vector<std::int64_t> want,
                                        std::vector<const char*> unknown = {}) const {
    const std::string full = prefix + name;
    const auto it = std::find_if(tensors.begin(), tensors.end(),
                                 [&full](const auto& t) { return t.first == full; });
    if (it == tensors.end()) {
      throw Error(fmt::format("{}: has no tensor '{}': a GPT-2 checkpoint has it", path, full));
    }
    const Gpt2Checkpoint::Tensor& t = it->second;
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") {
      throw Error(fmt::format("{}: tensor '{}' is {}: a model's weights must be F32, F16 or BF16",
                              path, full, t.dtype));
    }
    if (t.shape.size() != want.size()) {
      std::vector<std::string> dims;
      auto names = unknown.begin();
      for (const std::int64_t d : want) {
        dims.push_back(d == 0 && names != unknown.end() ? *names++ : fmt::format("{}", d));
      }
      throw Error(fmt::format("{}: tensor '{}' has shape {}: GPT-2 needs a {} [{}]", path, full,
                              shape_text(t.shape), want.size() == 2 ? "matrix" : "vector",
                              fmt::join(dims, ", ")));
    }
    bool same = true;
    for (std::size_t i = 0; same && i < want.size(); ++i) {
      if (want[i] == 0) want[i] = t.shape[i];
      same = want[i] == t.shape[i];
    }
    if (!same) {
      throw Error(fmt::format("{}: tensor '{}' has shape {}: GPT-2 needs {}", path, full,
                              shape_text(t.shape), shape_text(want)));
    }
    return t.shape;
  }
};

// The number N of a tensor named `prefix`h.N.…, or nullopt for another name; a number too large
// for 64 bits is the largest.
std::optional<std::uint64_t> block_of(const std::string& name, const std::string& prefix) {
  const std::string start = prefix + "h.";
  if (!name.starts_with(start)) return std::nullopt;
  const char* first = name.data() + start.size();
  const char* last = name.data() + name.size();
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(first, last, n);
  if (end == first || end == last || *end != '.') return std::nullopt;
  return ec == std::errc::result_out_of_range ? UINT64_MAX : n;
}

// The prefix of GPT-2's names in the file: "" (wte.weight) or "transformer."; a tensor named
// both ways is refused as ambiguous.
std::string name_prefix(const std::string& path, const Tensors& tensors) {
  const TensorCheck check{path, tensors, ""};
  for (const auto& [name, t] : tensors) {
    if (name.starts_with("transformer.") && check.has(name.substr(12))) {
      throw Error(fmt::format("{}: has both '{}' and '{}': which one GPT-2 reads is ambiguous",
                              path, name.substr(12), name));
    }
  }
  if (check.has("wte.weight")) return "";
  if (check.has("transformer.wte.weight")) return "transformer.";
  throw Error(fmt::format(
      "{}: has no tensor 'wte.weight' (nor 'transformer.wte.weight'): it is not a GPT-2 "
      "checkpoint",
      path));
}

// n_layer: the blocks h.0 … h.{n_layer − 1} by their ln_1.weight, with no tensor of a block
// after a missing one (it would not be read).
std::int64_t block_count(const TensorCheck& gpt2) {
  std::int64_t n = 0;
  while (gpt2.has(fmt::format("{}h.{}.ln_1.weight", gpt2.prefix, n))) ++n;
  if (n == 0) {
    throw Error(fmt::format("{}: has no tensor '{}h.0.ln_1.weight': a GPT-2 checkpoint has it",
                            gpt2.path, gpt2.prefix));
  }
  for (const auto& [name, t] : gpt2.tensors) {
    const auto block = block_of(name, gpt2.prefix);
    if (block && *block >= static_cast<std::uint64_t>(n)) {
      throw Error(fmt::format(
          "{}: has tensor '{}' but no tensor '{}h.{}.ln_1.weight': the blocks h.0, h.1, … must "
          "have no gap",
          gpt2.path, name, gpt2.prefix, n));
    }
  }
  return n;
}

// config.json's hyperparameters (`text`, read from `where`), which must agree with those the
// shapes gave `c`; its n_head, which must be `n_head` where that is given (> 0). A key given
// twice is refused.
void read_config(const std::string& where, const std::string& text, std::int64_t n_head,
                 Gpt2Config& c) {
  json cfg;
  if (!io_detail::parse_json_unique_keys(text, where, cfg).ok) {
    throw Error(fmt::format("{}: is not valid JSON", where));
  }
  if (!cfg.is_object()) throw Error(fmt::format("{}: is not a JSON object", where));
  c.config_json = true;
  auto agree = [&](const char* key, std::int64_t actual, const std::string& from) {
    const auto value = config_int(cfg, key, where);
    if (value && *value != actual) {
      throw Error(fmt::format("{}: {} is {}, but {} gives {}", where, key, *value, from, actual));
    }
  };
  agree("n_embd", c.n_embd, "wte.weight's shape");
  agree("vocab_size", c.vocab_size, "wte.weight's shape");
  agree("n_positions", c.n_positions, "wpe.weight's shape");
  agree("n_layer", c.n_layer, "the file's blocks h.0 …");
  agree("n_inner", c.n_inner, "mlp.c_fc.weight's shape");
  if (!config_int(cfg, "n_inner", where) && c.n_inner != 4 * c.n_embd) {
    throw Error(fmt::format(
        "{}: n_inner is null, which means 4 · n_embd = {}, but mlp.c_fc.weight's shape gives {}",
        where, 4 * c.n_embd, c.n_inner));
  }
  const auto heads = config_int(cfg, "n_head", where);
  if (!heads) throw Error(fmt::format("{}: has no n_head", where));
  if (n_head > 0 && n_head != *heads) {
    throw Error(
        fmt::format("{}: n_head is {}, but {} heads were asked for", where, *heads, n_head));
  }
  c.n_head = *heads;
  if (const auto it = cfg.find("layer_norm_epsilon"); it != cfg.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0.0) || !(it->get<double>() < 1.0)) {
      throw Error(fmt::format("{}: layer_norm_epsilon is {}: it must be a number in (0, 1)", where,
                              it->dump()));
    }
    c.layer_norm_epsilon = it->get<double>();
  }
  if (const auto it = cfg.find("activation_function"); it != cfg.end() && !it->is_null()) {
    const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
    if (name == "gelu_new") {
      c.activation = Gpt2Activation::kGeluNew;
    } else if (name == "gelu") {
      c.activation = Gpt2Activation::kGelu;
    } else {
      throw Error(fmt::format(
          "{}: activation_function '{}' is not supported: gelu_new (GPT-2's tanh form) or gelu",
          where, name));
    }
  }
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

  Gpt2Config& c = m->config_;
  c.prefix = name_prefix(path, m->tensors_);
  const TensorCheck gpt2{path, m->tensors_, c.prefix};
  const auto& wte = gpt2.need("wte.weight", {0, 0}, {"vocab_size", "n_embd"});
  c.vocab_size = wte[0];
  c.n_embd = wte[1];
  c.n_positions = gpt2.need("wpe.weight", {0, c.n_embd}, {"n_positions"})[0];
  c.n_layer = block_count(gpt2);
  c.n_inner = gpt2.need("h.0.mlp.c_fc.weight", {c.n_embd, 0}, {"n_inner"})[1];
  c.dtype = m->tensor("h.0.attn.c_attn.weight").dtype;

  // config.json beside the file: its hyperparameters, which the shapes must agree with.
  const std::filesystem::path config_path =
      std::filesystem::path(path).parent_path() / "config.json";
  if (const auto text = read_config_text(config_path.string())) {
    read_config(config_path.string(), *text, n_head, c);
  } else {
    if (n_head <= 0) {
      throw Error(fmt::format("{}: has no config.json beside it: give the number of heads", path),
                  Setting::kModelHeads);
    }
    c.n_head = n_head;
  }
  if (c.n_embd % c.n_head != 0) {
    throw Error(fmt::format("{}: {} heads do not divide n_embd {}: d_head would not be whole",
                            c.config_json ? config_path.string() : path, c.n_head, c.n_embd));
  }
  const std::int64_t d = c.n_embd;
  for (std::int64_t l = 0; l < c.n_layer; ++l) {
    const std::string h = fmt::format("h.{}.", l);
    for (const char* part : {"ln_1", "ln_2"}) {
      gpt2.need(h + part + ".weight", {d});
      gpt2.need(h + part + ".bias", {d});
    }
    gpt2.need(h + "attn.c_attn.weight", {d, 3 * d});
    gpt2.need(h + "attn.c_attn.bias", {3 * d});
    gpt2.need(h + "attn.c_proj.weight", {d, d});
    gpt2.need(h + "attn.c_proj.bias", {d});
    gpt2.need(h + "mlp.c_fc.weight", {d, c.n_inner});
    gpt2.need(h + "mlp.c_fc.bias", {c.n_inner});
    gpt2.need(h + "mlp.c_proj.weight", {c.n_inner, d});
    gpt2.need(h + "mlp.c_proj.bias", {d});
  }
  gpt2.need("ln_f.weight", {d});
  gpt2.need("ln_f.bias", {d});
  return m;
}

}  // namespace attn
