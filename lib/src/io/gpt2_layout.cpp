// A GPT-2 checkpoint's layout: the tensors GPT-2 needs, by name and shape, and the
// hyperparameters they give, which config.json beside the file must agree with.

#include "gpt2_layout.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "attn/error.hpp"
#include "attn/gpt2_model.hpp"
#include "io_internal.hpp"

namespace attn::io_detail {

namespace {

using nlohmann::json;

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
    // nn.LayerNorm's float32 kernel reads it as a float: one that rounds to 0 there is none.
    if (!it->is_number() || !(it->get<double>() < 1.0) ||
        !(static_cast<float>(it->get<double>()) > 0.0f)) {
      throw Error(
          fmt::format("{}: layer_norm_epsilon is {}: it must be a number in (0, 1) that "
                      "float32 holds (1.4e-45 or more)",
                      where, it->dump()));
    }
    c.layer_norm_epsilon = it->get<double>();
  }
  // Settings of Hugging Face's GPT2Attention that change its scores; GPT-2's own are the default.
  const struct {
    const char* key;
    bool gpt2;
    const char* other;  // what the other value does
  } kScoreSettings[] = {
      {"scale_attn_weights", true, "leaves the scores undivided by √d_head"},
      {"scale_attn_by_inverse_layer_idx", false, "divides the scores by the layer's number too"},
      {"reorder_and_upcast_attn", false, "scales the scores before their product, in float32"}};
  for (const auto& setting : kScoreSettings) {
    const auto it = cfg.find(setting.key);
    if (it == cfg.end() || it->is_null() || (it->is_boolean() && it->get<bool>() == setting.gpt2)) {
      continue;
    }
    throw Error(fmt::format(
        "{}: {} is {}, which {}: this tool traces GPT-2's own attention ({} {})", where,
        setting.key, it->dump(), it->is_boolean() ? setting.other : "is neither true nor false",
        setting.key, setting.gpt2 ? "true" : "false"));
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

// The tensors GPT-2 needs, by their names after `prefix` ("transformer." or "").
struct TensorCheck {
  const std::string& path;
  const Tensors& tensors;
  std::string prefix;

  // The tensor `name`, which the file has.
  const Gpt2Checkpoint::Tensor& tensor(const std::string& name) const {
    for (const auto& [n, t] : tensors) {
      if (n == prefix + name) return t;
    }
    throw Error(fmt::format("{}: has no tensor '{}'", path, prefix + name));
  }
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

}  // namespace

Gpt2Config gpt2_layout(const std::string& path, const Tensors& tensors, std::int64_t n_head) {
  Gpt2Config c;
  c.prefix = name_prefix(path, tensors);
  const TensorCheck gpt2{path, tensors, c.prefix};
  const auto& wte = gpt2.need("wte.weight", {0, 0}, {"vocab_size", "n_embd"});
  c.vocab_size = wte[0];
  c.n_embd = wte[1];
  c.n_positions = gpt2.need("wpe.weight", {0, c.n_embd}, {"n_positions"})[0];
  c.n_layer = block_count(gpt2);
  c.n_inner = gpt2.need("h.0.mlp.c_fc.weight", {c.n_embd, 0}, {"n_inner"})[1];
  c.dtype = gpt2.tensor("h.0.attn.c_attn.weight").dtype;

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
  return c;
}

}  // namespace attn::io_detail
