// A GPT-2 checkpoint (--model): every step of a layer's attention against PyTorch's GPT-2
// (tests/reference/make_gpt2_model_references.py: F32, F16, BF16, with and without the
// transformer. prefix and config.json), the dtypes' conversion, and every malformed file's error.

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/trace.hpp"
#include "support/reference.hpp"
#include "support/temp_dir.hpp"

namespace attn {

namespace {

using test::json;

const std::string kModels = std::string(ATTN_REFERENCE_DIR) + "/gpt2_model/";

json expected(const std::string& name) {
  std::ifstream in(kModels + name + "/expected.json");
  REQUIRE(in);
  return json::parse(in);
}

// The case's trace, as attn-trace --model runs it.
Trace model_trace(const json& ref, const std::string& name) {
  const json& s = ref.at("settings");
  TraceConfig c;
  c.model = Gpt2Checkpoint::open(kModels + name + "/model.safetensors",
                                 s.at("config_json").get<bool>() ? 0 : s.at("n_head").get<int>());
  c.sentences = {ref.at("prompt").get<std::string>()};
  c.layer = s.at("layer").get<std::int64_t>();
  if (!s.at("head").is_null()) c.model_head = s.at("head").get<std::int64_t>();
  return run_trace(c);
}

}  // namespace

TEST_CASE("every step of a GPT-2 checkpoint's layer is PyTorch's within 1e-5") {
  for (const char* name :
       {"f32_l2_h2_d32", "f16_l3_h4_d64", "prefix_l2_h4_d32", "bf16_l1_h2_d16"}) {
    CAPTURE(name);
    const json ref = expected(name);
    const Trace trace = model_trace(ref, name);
    const json& s = ref.at("settings");
    const Gpt2Config& m = trace.config.model->config();
    CHECK(m.n_layer == s.at("n_layer").get<std::int64_t>());
    CHECK(m.n_head == s.at("n_head").get<std::int64_t>());
    CHECK(m.n_inner == s.at("n_inner").get<std::int64_t>());
    CHECK(m.dtype == s.at("dtype").get<std::string>());
    CHECK(m.prefix == (s.at("prefix").get<bool>() ? "transformer." : ""));
    CHECK(m.config_json == s.at("config_json").get<bool>());
    CHECK(activation_name(m.activation) == s.at("activation_function").get<std::string>());
    CHECK(trace.inputs.at(0).ids == ref.at("token_ids").get<std::vector<std::int64_t>>());
    // The same steps, in the same order, each within 1e-5 of its largest value.
    REQUIRE(trace.steps.size() == ref.at("steps").size());
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
      const Step& step = trace.steps[i];
      const json& want = ref.at("steps")[i];
      CAPTURE(step.id);
      CAPTURE(step.head);
      CHECK(step.id == want.at("id").get<std::string>());
      CHECK(step.head == (want.at("head").is_null()
                              ? std::nullopt
                              : std::optional<int>(want.at("head").get<int>())));
      test::check_relative(step.values, want, fmt::format("{} {}", name, step.id), 1e-5f);
    }
  }
}

TEST_CASE("a trace through gelu_new blocks is PyTorch's bits in every step") {
  // The layer norms, Conv1D's addmm, the attention and gelu_new all have PyTorch's bits (the
  // AVX2 flavour, as the references were made); only GELU's erf form (f16_l3_h4_d64, which
  // PyTorch hands to oneDNN) is within 1e-5, above. The default flavour's layer norm and
  // gelu_new have their own references below.
  for (const char* name : {"f32_l2_h2_d32", "prefix_l2_h4_d32", "bf16_l1_h2_d16"}) {
    CAPTURE(name);
    if (std::string_view(name) == "f32_l2_h2_d32" && !sleef_runs()) {
      MESSAGE("skipped " << name << ", whose layer 0 runs gelu_new: " << sleef_missing());
      continue;
    }
    const json ref = expected(name);
    const Trace trace = model_trace(ref, name);
    REQUIRE(trace.steps.size() == ref.at("steps").size());
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
      test::check_bits(trace.steps[i].values, ref.at("steps")[i],
                       fmt::format("{} {}", name, trace.steps[i].id));
    }
  }
}

TEST_CASE("nn.LayerNorm's float32 kernel, bit for bit, on rows of 1 to 8200 values") {
  // tests/reference/make_gpt2_kernel_references.py: each flavour's F.layer_norm, over lengths that
  // take the scalar update alone, the 8 lanes with and without a tail, and cascades 1 to 7 deep.
  for (const TorchKernel kernel : test::kKernels) {
    CAPTURE(kernel_name(kernel));
    const json ref = test::load_reference(kernel, "layer_norm.json");
    REQUIRE(ref.at("cases").size() >= 50);
    for (const json& c : ref.at("cases")) {
      const std::string name = c.at("name").get<std::string>();
      const Matrix y =
          layer_norm(test::tensor_from_bits(c.at("x")), test::tensor_from_bits(c.at("weight")),
                     test::tensor_from_bits(c.at("bias")), c.at("eps").get<double>(), "ln", kernel);
      test::check_bits(y, c.at("y"), name);
    }
  }
}

TEST_CASE("Conv1D is torch.addmm: each sum starts from the bias, and the blocked kernel is near") {
  // Values whose sums round differently from the bias first than from 0: 1e8 + 1 + 1 … stays 1e8,
  // while (1 + 1 + …) + 1e8 does not.
  Matrix x = Matrix::Ones(3, 64), w = Matrix::Ones(64, 5), b = Matrix::Constant(1, 5, 1e8f);
  const Matrix y = conv1d(x, w, b);
  CHECK(y(0, 0) == 1e8f);
  CHECK(y(2, 4) == 1e8f);
  CHECK((matmul(x, w) + b.replicate(3, 1))(0, 0) == 100000064.0f);
  // Above the blocked kernel's size, the bias is added after the product, within rounding.
  Matrix a = Matrix::Random(64, 128), c = Matrix::Random(128, 160), bias = Matrix::Random(1, 160);
  const Matrix blocked = addmm(bias, a, c, 2, MatmulKernel::kAuto);
  const Matrix reference = addmm(bias, a, c, 1, MatmulKernel::kReference);
  test::check_matrix_near(blocked, reference, 1e-4f, "addmm, blocked against reference");
  CHECK_THROWS_WITH_AS(addmm(Matrix::Zero(1, 4), a, c),
                       "addmm: a bias of shape [1, 4] does not fit a product 160 wide", Error);
}

TEST_CASE("gelu_new is Hugging Face's NewGELUActivation, bit for bit, on both flavours") {
  // tests/reference/make_gpt2_kernel_references.py: each torch operation rounded on its own, tanh
  // by SLEEF on every element (the last vector padded) on the AVX2 flavour, tanhf on the default.
  for (const TorchKernel kernel : test::kKernels) {
    CAPTURE(kernel_name(kernel));
    if (kernel == TorchKernel::kAvx2 && !sleef_runs()) {
      MESSAGE("skipped the AVX2 flavour: " << sleef_missing());
      continue;
    }
    const json ref = test::load_reference(kernel, "gelu_new.json");
    REQUIRE(ref.at("cases").size() >= 20);
    for (const json& c : ref.at("cases")) {
      const Matrix x = test::tensor_from_bits(c.at("x"));
      test::check_bits(gelu(x, Gpt2Activation::kGeluNew, kernel), c.at("y"),
                       c.at("name").get<std::string>());
    }
  }
}

TEST_CASE("a model's trace numbers its layer and heads from 0, and one head's trace feeds c_proj") {
  const json ref = expected("f32_l2_h2_d32");
  const Trace all = model_trace(ref, "f32_l2_h2_d32");
  TraceConfig c = all.config;
  c.model_head = 1;
  const Trace one = run_trace(c);
  CHECK(head_number(one.config, 1) == 1);
  CHECK(one.step(StepKind::kAttentionWeights, 1).values ==
        all.step(StepKind::kAttentionWeights, 1).values);
  CHECK_THROWS(one.step(StepKind::kAttentionWeights, 0));
  CHECK(one.step(StepKind::kOutput).values == all.step(StepKind::kOutput).values);
  // No causal lesson: GPT-2's mask is the one way it masks.
  CHECK_THROWS(all.step(StepKind::kUnmaskedWeights, 0));
}

TEST_CASE("a model refuses a layer, a head or a prompt it does not have") {
  const json ref = expected("bf16_l1_h2_d16");
  TraceConfig c;
  c.model = Gpt2Checkpoint::open(kModels + "bf16_l1_h2_d16/model.safetensors");
  c.sentences = {"Hello world"};
  c.layer = 1;
  CHECK_THROWS_WITH_AS(run_trace(c), "layer 1 is not in the model: its layers are 0 … 0", Error);
  c.layer = 0;
  c.model_head = 2;
  CHECK_THROWS_WITH_AS(run_trace(c), "head 2 is not in the model: its heads are 0 … 1", Error);
  c.model_head.reset();
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += " word";
  c.sentences = {long_text};
  CHECK_THROWS_WITH_AS(run_trace(c),
                       "the text has 40 tokens, more than the model's 32 positions (n_positions): "
                       "give a shorter text",
                       Error);
  c.sentences = {"Hello world"};
  c.rope = true;
  CHECK_THROWS_WITH_AS(
      run_trace(c),
      "a model's trace is GPT-2's: learned positions, a K/V head per query head, no window", Error);
}

// --- the file format ------------------------------------------------------------------------

namespace {

struct Entry {
  std::string name, dtype = "F32";
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes = {};  // empty: the size the shape needs, a pattern of floats
};

std::size_t element_bytes(const std::string& dtype) {
  return dtype == "F32" || dtype == "I32" ? 4 : dtype == "I64" ? 8 : 2;
}

// A safetensors file: the header (or `header` as given), then the entries' bytes back to back.
std::string safetensors(std::vector<Entry> entries, const std::string& header = "") {
  json h = json::object();
  std::string data;
  for (Entry& e : entries) {
    std::size_t n = 1;
    for (std::int64_t d : e.shape) n *= static_cast<std::size_t>(d);
    if (e.bytes.empty()) {
      for (std::size_t i = 0; i < n; ++i) {
        const float v = 0.01f * static_cast<float>(static_cast<int>(i % 13) - 6);
        const std::uint64_t bits = std::bit_cast<std::uint32_t>(v);
        const std::size_t size = element_bytes(e.dtype);
        for (std::size_t b = 0; b < size; ++b) {  // F16 and BF16: the float's high half
          const std::size_t shift = 8 * (size == 2 ? b + 2 : b);
          e.bytes.push_back(static_cast<unsigned char>(shift < 32 ? (bits >> shift) & 0xff : 0));
        }
      }
    }
    h[e.name] = {{"dtype", e.dtype},
                 {"shape", e.shape},
                 {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data.append(e.bytes.begin(), e.bytes.end());
  }
  const std::string text = header.empty() ? h.dump() : header;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>(text.size() >> (8 * i));
  return out + text + data;
}

// GPT-2's tensors for a tiny model: vocab 8, n_embd 4, 4 positions, n_inner 16.
std::vector<Entry> tiny_gpt2(int layers = 1, const std::string& prefix = "") {
  std::vector<Entry> e = {{prefix + "wte.weight", "F32", {8, 4}},
                          {prefix + "wpe.weight", "F32", {4, 4}}};
  for (int l = 0; l < layers; ++l) {
    const std::string h = fmt::format("{}h.{}.", prefix, l);
    for (const char* part : {"ln_1", "ln_2"}) {
      e.push_back({h + part + ".weight", "F32", {4}});
      e.push_back({h + part + ".bias", "F32", {4}});
    }
    e.push_back({h + "attn.c_attn.weight", "F32", {4, 12}});
    e.push_back({h + "attn.c_attn.bias", "F32", {12}});
    e.push_back({h + "attn.c_proj.weight", "F32", {4, 4}});
    e.push_back({h + "attn.c_proj.bias", "F32", {4}});
    e.push_back({h + "mlp.c_fc.weight", "F32", {4, 16}});
    e.push_back({h + "mlp.c_fc.bias", "F32", {16}});
    e.push_back({h + "mlp.c_proj.weight", "F32", {16, 4}});
    e.push_back({h + "mlp.c_proj.bias", "F32", {4}});
  }
  e.push_back({prefix + "ln_f.weight", "F32", {4}});
  e.push_back({prefix + "ln_f.bias", "F32", {4}});
  return e;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// The error that opening these bytes (with this config.json, if any) gives, without the path.
std::string open_error(const std::string& bytes, const std::string& config = "",
                       std::int64_t n_head = 2) {
  test::TempDir dir;
  write(dir / "model.safetensors", bytes);
  if (!config.empty()) write(dir / "config.json", config);
  try {
    Gpt2Checkpoint::open((dir / "model.safetensors").string(), n_head);
  } catch (const Error& e) {
    std::string what = e.what();
    const std::string path = (dir / "model.safetensors").string();
    for (const std::string& p : {path, (dir / "config.json").string()}) {
      if (what.rfind(p, 0) == 0) return "FILE" + what.substr(p.size());
    }
    return what;
  }
  return "opened";
}

std::vector<Entry> replaced(std::vector<Entry> e, const std::string& name, Entry with) {
  for (Entry& x : e) {
    if (x.name == name) x = std::move(with);
  }
  return e;
}

}  // namespace

TEST_CASE("a tiny checkpoint opens, with its hyperparameters from the shapes") {
  test::TempDir dir;
  write(dir / "model.safetensors", safetensors(tiny_gpt2(2, "transformer.")));
  const auto m = Gpt2Checkpoint::open((dir / "model.safetensors").string(), 2);
  CHECK(m->config().n_layer == 2);
  CHECK(m->config().n_embd == 4);
  CHECK(m->config().vocab_size == 8);
  CHECK(m->config().n_positions == 4);
  CHECK(m->config().n_inner == 16);
  CHECK(m->config().prefix == "transformer.");
  CHECK_FALSE(m->config().config_json);
  // A trace of id 0 ("!" in GPT-2's vocabulary), the one token the tiny vocabulary has a row for.
  TraceConfig c;
  c.model = m;
  c.sentences = {"!"};
  const Trace t = run_trace(c);
  CHECK(t.inputs[0].ids == std::vector<std::int64_t>{0});
  CHECK(t.step(StepKind::kTokenEmbeddings).values == m->token_rows({0}));
}

TEST_CASE("F16 and BF16 are converted exactly") {
  // 1.5, −0, 65504 (the largest half), 2^−24 (the smallest subnormal), inf, 3·2^−16 (subnormal)
  const std::vector<std::uint16_t> half = {0x3e00, 0x8000, 0x7bff, 0x0001, 0x7c00, 0x0003};
  const std::vector<float> want = {
      1.5f, -0.0f, 65504.0f, std::ldexp(1.0f, -24), INFINITY, 3 * std::ldexp(1.0f, -24)};
  std::vector<unsigned char> bytes;
  for (std::uint16_t h : half) {
    bytes.push_back(static_cast<unsigned char>(h & 0xff));
    bytes.push_back(static_cast<unsigned char>(h >> 8));
  }
  auto e = replaced(tiny_gpt2(), "wpe.weight", {"wpe.weight", "F16", {2, 4}, {}});
  e = replaced(e, "wte.weight", {"wte.weight", "F16", {1, 4}, {}});
  e[0].bytes.assign(bytes.begin(), bytes.begin() + 8);  // 1.5, −0, 65504, 2^−24
  e[1].bytes.assign(bytes.begin() + 10, bytes.end());   // 3·2^−24, then 1.5, −0, 65504
  e[1].bytes.insert(e[1].bytes.end(), bytes.begin(), bytes.begin() + 6);
  e[1].bytes.insert(e[1].bytes.end(), bytes.begin() + 8, bytes.begin() + 10);  // inf
  e[1].bytes.insert(e[1].bytes.end(), bytes.begin(), bytes.begin() + 6);       // 1.5, −0, 65504
  test::TempDir dir;
  write(dir / "model.safetensors", safetensors(e));
  const auto m = Gpt2Checkpoint::open((dir / "model.safetensors").string(), 2);
  const Matrix row = m->token_rows({0});
  for (int i = 0; i < 4; ++i)
    CHECK(std::bit_cast<std::uint32_t>(row(0, i)) ==
          std::bit_cast<std::uint32_t>(want[static_cast<std::size_t>(i)]));
  CHECK(std::bit_cast<std::uint32_t>(m->position_rows(1)(0, 0)) ==
        std::bit_cast<std::uint32_t>(3 * std::ldexp(1.0f, -24)));
  // wpe's second row begins with inf: it is refused with its position when it is read.
  CHECK_THROWS_WITH_AS(m->position_rows(2),
                       fmt::format("{}: tensor 'wpe.weight' has an inf at row 2, column 1: a "
                                   "checkpoint's weights must be finite",
                                   (dir / "model.safetensors").string())
                           .c_str(),
                       Error);
  // And a BF16 tensor.
  auto b = replaced(tiny_gpt2(), "wpe.weight", {"wpe.weight", "BF16", {4, 4}, {}});
  write(dir / "model.safetensors", safetensors(b));
  const auto mb = Gpt2Checkpoint::open((dir / "model.safetensors").string(), 2);
  // The pattern's first value, −0.06f, its low half dropped.
  CHECK(std::bit_cast<std::uint32_t>(mb->position_rows(1)(0, 0)) ==
        (std::bit_cast<std::uint32_t>(-0.06f) & 0xffff0000u));
}

TEST_CASE("every malformed checkpoint gets one clear error") {
  const auto ok = tiny_gpt2();
  CHECK(open_error(safetensors(ok)) == "opened");
  CHECK(open_error("abcd") ==
        "FILE: is not a safetensors file: 4 bytes, fewer than the header's 8-byte length");
  std::string too_long = safetensors(ok);
  too_long[5] = 1;
  CHECK(open_error(too_long).starts_with(
      "FILE: is not a safetensors file: its header length 1099511"));
  CHECK(open_error(safetensors({}, "{\"a\": [1, 2")) ==
        "FILE: is not a safetensors file: its 11-byte header is not JSON");
  CHECK(open_error(safetensors({}, "[1, 2, 3]")) ==
        "FILE: is not a safetensors file: its header is not a JSON object");
  CHECK(open_error(safetensors({}, R"({"x": 3})")) ==
        "FILE: tensor 'x' is not an object with dtype, shape and data_offsets");
  CHECK(open_error(safetensors(replaced(ok, "wte.weight", {"wte.weight", "Q4", {8, 4}, {0, 0}}))) ==
        "FILE: tensor 'wte.weight' has dtype 'Q4', which is not a safetensors dtype");
  CHECK(open_error(safetensors(
            {}, R"({"x": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]}})")) ==
        "FILE: tensor 'x' has shape [2,-1]: each size must be an integer from 0 to 2^40");
  CHECK(open_error(
            safetensors({}, R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})")) ==
        "FILE: tensor 'x' has data_offsets [0]: they must be two byte offsets [begin, end]");
  CHECK(open_error(
            safetensors({}, R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})")) ==
        "FILE: tensor 'x' has data_offsets [0, 8], outside the file's 0 bytes of data");
  CHECK(open_error(safetensors({{"x", "F32", {3}, std::vector<unsigned char>(8)}})) ==
        "FILE: tensor 'x' has data_offsets [0, 8]: 8 bytes, but F32 [3] needs 12");
  CHECK(
      open_error(safetensors({{"a", "F32", {2}, std::vector<unsigned char>(8)}},
                             R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, )"
                             R"("b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})")) ==
      "FILE: tensors 'a' and 'b' overlap: bytes [0, 8) and [4, 8)");
  CHECK(open_error(safetensors({{"x", "F32", {1}}})) ==
        "FILE: has no tensor 'wte.weight' (nor 'transformer.wte.weight'): it is not a GPT-2 "
        "checkpoint");
  auto missing = ok;
  std::erase_if(missing, [](const Entry& e) { return e.name == "h.0.attn.c_proj.bias"; });
  CHECK(open_error(safetensors(missing)) ==
        "FILE: has no tensor 'h.0.attn.c_proj.bias': a GPT-2 checkpoint has it");
  CHECK(open_error(safetensors(
            replaced(ok, "h.0.attn.c_attn.weight", {"h.0.attn.c_attn.weight", "F32", {4, 11}}))) ==
        "FILE: tensor 'h.0.attn.c_attn.weight' has shape [4, 11]: GPT-2 needs [4, 12]");
  CHECK(open_error(safetensors(replaced(ok, "wpe.weight", {"wpe.weight", "I64", {4, 4}}))) ==
        "FILE: tensor 'wpe.weight' is I64: a model's weights must be F32, F16 or BF16");
  // A key given twice, in the header or in config.json, is refused rather than the last one kept.
  CHECK(open_error(
            safetensors({}, R"({"x": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},)"
                            "\n"
                            R"("x": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}})")) ==
        "FILE: line 2: the key \"x\" appears twice in one object: each key may be given once");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "n_head": 4})", 0) ==
        "FILE: line 1: the key \"n_head\" appears twice in one object: each key may be given once");
  // The size is a checked product: [2^40, 2^40] of F32 would wrap around to 0 bytes.
  CHECK(
      open_error(safetensors(
          {},
          R"({"x": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 0]}})")) ==
      "FILE: tensor 'x' has shape [1099511627776, 1099511627776]: too large: F32 of that shape is "
      "more than 2^64 bytes");
  CHECK(
      open_error(
          safetensors(
              {},
              R"({"x": {"dtype": "F32", "shape": [1099511627776, 1099511627776, 0], "data_offsets": [0, 0]}})"))
          .starts_with("FILE: has no tensor 'wte.weight'"));
  // An empty tensor shares no byte, wherever its empty range lies, whatever its name.
  std::vector<Entry> empty;
  for (const Entry& e : ok) {  // before each tensor, two empty ones at its first byte
    empty.push_back({"a." + e.name, "F32", {0}});
    empty.push_back({e.name + ".z", "F32", {2, 0}});
    empty.push_back(e);
  }
  CHECK(open_error(safetensors(empty)) == "opened");
  // Blocks after a missing one, with or without n_layer in config.json.
  auto gap = tiny_gpt2(3);
  std::erase_if(gap, [](const Entry& e) { return e.name.starts_with("h.1."); });
  CHECK(open_error(safetensors(gap)) ==
        "FILE: has tensor 'h.2.attn.c_attn.bias' but no tensor 'h.1.ln_1.weight': the blocks h.0, "
        "h.1, … must have no gap");
  CHECK(open_error(safetensors(gap), R"({"n_head": 2, "n_layer": 3})", 0) ==
        "FILE: has tensor 'h.2.attn.c_attn.bias' but no tensor 'h.1.ln_1.weight': the blocks h.0, "
        "h.1, … must have no gap");
  auto extra = tiny_gpt2(1, "transformer.");
  extra.push_back({"transformer.h.1.attn.bias", "F32", {1}});
  CHECK(open_error(safetensors(extra)) ==
        "FILE: has tensor 'transformer.h.1.attn.bias' but no tensor 'transformer.h.1.ln_1.weight': "
        "the blocks h.0, h.1, … must have no gap");
  // A tensor of the wrong rank is named as such.
  CHECK(open_error(safetensors(replaced(ok, "wte.weight", {"wte.weight", "F32", {2}}))) ==
        "FILE: tensor 'wte.weight' has shape [2]: GPT-2 needs a matrix [vocab_size, n_embd]");
  CHECK(open_error(safetensors(replaced(ok, "wte.weight", {"wte.weight", "F32", {}}))) ==
        "FILE: tensor 'wte.weight' has shape []: GPT-2 needs a matrix [vocab_size, n_embd]");
  CHECK(open_error(safetensors(replaced(ok, "wte.weight", {"wte.weight", "F32", {1, 1, 2}}))) ==
        "FILE: tensor 'wte.weight' has shape [1, 1, 2]: GPT-2 needs a matrix [vocab_size, n_embd]");
  CHECK(open_error(safetensors(replaced(ok, "wpe.weight", {"wpe.weight", "F32", {4}}))) ==
        "FILE: tensor 'wpe.weight' has shape [4]: GPT-2 needs a matrix [n_positions, 4]");
  CHECK(open_error(safetensors(replaced(ok, "h.0.ln_2.bias", {"h.0.ln_2.bias", "F32", {1, 4}}))) ==
        "FILE: tensor 'h.0.ln_2.bias' has shape [1, 4]: GPT-2 needs a vector [4]");
  // A tensor named both with and without transformer. is ambiguous.
  auto both = ok;
  both.push_back({"transformer.wte.weight", "F32", {8, 4}});
  CHECK(open_error(safetensors(both)) ==
        "FILE: has both 'wte.weight' and 'transformer.wte.weight': which one GPT-2 reads is "
        "ambiguous");
  CHECK(open_error(safetensors(ok), "", 0) ==
        "FILE: has no config.json beside it: give the number of heads");
  CHECK(open_error(safetensors(ok), "", 3) ==
        "FILE: 3 heads do not divide n_embd 4: d_head would not be whole");
  // config.json
  CHECK(open_error(safetensors(ok), "{") == "FILE: is not valid JSON");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "activation_function": "relu"})", 0) ==
        "FILE: activation_function 'relu' is not supported: gelu_new (GPT-2's tanh form) or gelu");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "n_embd": 768})", 0) ==
        "FILE: n_embd is 768, but wte.weight's shape gives 4");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "n_inner": null, "n_layer": 1})", 0) ==
        "opened");
  CHECK(open_error(safetensors(
                       replaced(ok, "h.0.mlp.c_fc.weight", {"h.0.mlp.c_fc.weight", "F32", {4, 8}})),
                   R"({"n_head": 2})", 0) ==
        "FILE: n_inner is null, which means 4 · n_embd = 16, but mlp.c_fc.weight's shape gives 8");
  CHECK(open_error(safetensors(ok), R"({"n_layer": 1})", 0) == "FILE: has no n_head");
  CHECK(open_error(safetensors(ok), R"({"n_head": 4})", 2) ==
        "FILE: n_head is 4, but 2 heads were asked for");
  CHECK(open_error(safetensors(ok), R"({"n_head": 0})", 0) ==
        "FILE: n_head is 0: it must be a positive integer");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "layer_norm_epsilon": "x"})", 0) ==
        "FILE: layer_norm_epsilon is \"x\": it must be a number in (0, 1) that float32 holds "
        "(1.4e-45 or more)");
  // nn.LayerNorm's float32 kernel reads 1e-50 as 0.
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "layer_norm_epsilon": 1e-50})", 0) ==
        "FILE: layer_norm_epsilon is 1e-50: it must be a number in (0, 1) that float32 holds "
        "(1.4e-45 or more)");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "layer_norm_epsilon": 1e-45})", 0) ==
        "opened");
  // Hugging Face's settings that change the scores: GPT-2's own values only.
  CHECK(open_error(safetensors(ok),
                   R"({"n_head": 2, "scale_attn_weights": true, "reorder_and_upcast_attn": false,
                       "scale_attn_by_inverse_layer_idx": null})",
                   0) == "opened");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "scale_attn_weights": false})", 0) ==
        "FILE: scale_attn_weights is false, which leaves the scores undivided by √d_head: this "
        "tool traces GPT-2's own attention (scale_attn_weights true)");
  CHECK(
      open_error(safetensors(ok), R"({"n_head": 2, "scale_attn_by_inverse_layer_idx": true})", 0) ==
      "FILE: scale_attn_by_inverse_layer_idx is true, which divides the scores by the layer's "
      "number too: this tool traces GPT-2's own attention (scale_attn_by_inverse_layer_idx "
      "false)");
  CHECK(open_error(safetensors(ok), R"({"n_head": 2, "reorder_and_upcast_attn": 1})", 0) ==
        "FILE: reorder_and_upcast_attn is 1, which is neither true nor false: this tool traces "
        "GPT-2's own attention (reorder_and_upcast_attn false)");
  // Not a file.
  test::TempDir dir;
  CHECK_THROWS_WITH_AS(
      Gpt2Checkpoint::open(dir.path().string()),
      fmt::format("the model {} is not a file: give a model.safetensors", dir.path().string())
          .c_str(),
      Error);
  CHECK_THROWS_WITH_AS(Gpt2Checkpoint::open((dir / "none.safetensors").string()),
                       fmt::format("cannot open the model {}: No such file or directory",
                                   (dir / "none.safetensors").string())
                           .c_str(),
                       Error);
}

TEST_CASE("a model or a config.json that is not a file is refused at once, without blocking") {
  test::TempDir dir;
  const std::string model = (dir / "model.safetensors").string(),
                    config = (dir / "config.json").string();
  // A FIFO with no writer would block open() for ever.
  REQUIRE(::mkfifo(model.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(
      Gpt2Checkpoint::open(model),
      fmt::format("the model {} is not a file: give a model.safetensors", model).c_str(), Error);
  std::filesystem::remove(model);
  write(model, safetensors(tiny_gpt2()));
  const std::string not_a_file =
      fmt::format("{}: is not a file: a model's config.json must be a file of JSON", config);
  REQUIRE(::mkfifo(config.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(Gpt2Checkpoint::open(model), not_a_file.c_str(), Error);
  std::filesystem::remove(config);
  std::filesystem::create_directory(config);
  CHECK_THROWS_WITH_AS(Gpt2Checkpoint::open(model), not_a_file.c_str(), Error);
  std::filesystem::remove(config);
  // /dev/zero never ends; a large file is not read.
  std::filesystem::create_symlink("/dev/zero", config);
  CHECK_THROWS_WITH_AS(Gpt2Checkpoint::open(model), not_a_file.c_str(), Error);
  std::filesystem::remove(config);
  write(config, "{}");
  std::filesystem::resize_file(config, (std::uintmax_t{1} << 20) + 1);
  CHECK_THROWS_WITH_AS(
      Gpt2Checkpoint::open(model),
      fmt::format("{}: is larger than 1 MiB: a GPT-2 config.json is about 1 KB", config).c_str(),
      Error);
  std::filesystem::resize_file(config, 0);
  write(config, R"({"n_head": 2})");
  CHECK(Gpt2Checkpoint::open(model)->config().n_head == 2);
}

TEST_CASE("a nan or an infinity in a tensor the trace reads is refused with its position") {
  // The tiny checkpoint with `bits` (F32, F16 or BF16) at element `at` of the tensor `name`, the
  // others zero; the error of a trace of "!" (token 0) through block 0, or "traced".
  auto trace_error = [](const std::string& name, std::size_t at, const std::string& dtype,
                        std::uint32_t bits) {
    auto e = tiny_gpt2(2);
    std::string path;
    for (Entry& x : e) {
      std::size_t n = 1;
      for (std::int64_t d : x.shape) n *= static_cast<std::size_t>(d);
      const std::string type = x.name == name ? dtype : "F32";
      const std::size_t size = element_bytes(type);
      x.dtype = type;
      x.bytes.assign(n * size, 0);
      if (x.name != name) continue;
      for (std::size_t b = 0; b < size; ++b)
        x.bytes[at * size + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    test::TempDir dir;
    write(dir / "model.safetensors", safetensors(e));
    TraceConfig c;
    c.model = Gpt2Checkpoint::open((dir / "model.safetensors").string(), 2);
    c.sentences = {"!"};
    c.layer = 1;
    try {
      run_trace(c);
    } catch (const Error& error) {
      const std::string what = error.what(), prefix = (dir / "model.safetensors").string();
      return what.starts_with(prefix) ? "FILE" + what.substr(prefix.size()) : what;
    }
    return std::string("traced");
  };
  const std::uint32_t nan = 0x7fc00000u, inf = 0x7f800000u, minus_inf = 0xff800000u;
  CHECK(trace_error("h.0.attn.c_proj.weight", 5, "F32", nan) ==
        "FILE: tensor 'h.0.attn.c_proj.weight' has a nan at row 2, column 2: a checkpoint's "
        "weights must be finite");
  CHECK(trace_error("h.0.ln_2.bias", 3, "F32", inf) ==
        "FILE: tensor 'h.0.ln_2.bias' has an inf at element 4: a checkpoint's weights must be "
        "finite");
  CHECK(trace_error("h.0.mlp.c_proj.weight", 63, "F32", minus_inf) ==
        "FILE: tensor 'h.0.mlp.c_proj.weight' has a -inf at row 16, column 4: a checkpoint's "
        "weights must be finite");
  CHECK(trace_error("h.1.attn.c_attn.weight", 0, "F16", 0x7e00u) ==
        "FILE: tensor 'h.1.attn.c_attn.weight' has a nan at row 1, column 1: a checkpoint's "
        "weights must be finite");
  CHECK(trace_error("h.1.ln_1.weight", 1, "BF16", 0xff80u) ==
        "FILE: tensor 'h.1.ln_1.weight' has a -inf at element 2: a checkpoint's weights must be "
        "finite");
  // wte's row of the token read, wpe's rows of the positions read.
  CHECK(trace_error("wte.weight", 2, "F32", nan) ==
        "FILE: tensor 'wte.weight' has a nan at row 1, column 3: a checkpoint's weights must be "
        "finite");
  CHECK(trace_error("wpe.weight", 1, "F32", inf) ==
        "FILE: tensor 'wpe.weight' has an inf at row 1, column 2: a checkpoint's weights must be "
        "finite");
  // Rows and tensors the trace does not read are not scanned.
  CHECK(trace_error("wte.weight", 4, "F32", nan) == "traced");
  CHECK(trace_error("wpe.weight", 4, "F32", nan) == "traced");
  CHECK(trace_error("ln_f.weight", 0, "F32", nan) == "traced");
  // The traced layer's ln_2 and MLP come after its attention.
  CHECK(trace_error("h.1.ln_2.weight", 0, "F32", nan) == "traced");
  CHECK(trace_error("h.1.mlp.c_fc.weight", 0, "F32", inf) == "traced");
  CHECK(trace_error("h.1.mlp.c_proj.bias", 0, "F32", nan) == "traced");
}

TEST_CASE("a layer norm whose squared deviations overflow float32 is refused, not computed") {
  // PyTorch sums them in float32: 4e40 is infinite there, and its row 0 or nan.
  Matrix x(2, 4);
  x << 1.0f, 2.0f, 3.0f, 4.0f, 1e20f, -1e20f, 1e20f, -1e20f;
  const Matrix ones = Matrix::Ones(1, 4), zeros = Matrix::Zero(1, 4);
  CHECK_THROWS_WITH_AS(layer_norm(x, ones, zeros, 1e-5, "h.3.ln_2", TorchKernel::kAvx2),
                       "h.3.ln_2: the squared deviations of token 2's row overflow float32 (their "
                       "sum is 4e+40), as PyTorch's layer_norm sums them: the checkpoint's values "
                       "are too large",
                       Error);
  // Values near one another, but so large that PyTorch's moments square their distance from a
  // partial mean of 0 (F.layer_norm gives nan).
  x.row(1) << 2e19f, 2e19f, 2e19f, 2e19f;
  CHECK_THROWS_WITH_AS(layer_norm(x, ones, zeros, 1e-5, "h.3.ln_2", TorchKernel::kAvx2),
                       "h.3.ln_2: token 2's row has values of 2e+19, whose squares overflow "
                       "float32 in PyTorch's layer_norm (its row there is nan, or the bias alone): "
                       "the checkpoint's values are too large",
                       Error);
  x.row(1) << 1e18f, -1e18f, 1e18f, -1e18f;  // 4e36: finite
  const Matrix y = layer_norm(x, ones, zeros, 1e-5, "h.3.ln_2", TorchKernel::kAvx2);
  CHECK(y(1, 0) == doctest::Approx(1.0));
  CHECK(y(1, 1) == doctest::Approx(-1.0));
  // One value: its variance is 0, and F.layer_norm(tensor([[1e18]]), (1,), ones, zeros) is
  // 949036777472.0 (x · rstd less the rounded rstd · mean, in one fma).
  const Matrix one = Matrix::Constant(1, 1, 1e18f);
  CHECK(layer_norm(one, Matrix::Ones(1, 1), Matrix::Zero(1, 1), 1e-5, "ln", TorchKernel::kAvx2)(
            0, 0) == 949036777472.0f);
}

TEST_CASE("token and position embeddings whose sum overflows are refused at h₀, not as nan") {
  // wte's and wpe's values all 2e38: finite, their sum is not.
  auto e = tiny_gpt2(1);
  for (Entry& x : e) {
    if (x.name != "wte.weight" && x.name != "wpe.weight") continue;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(2e38f);
    for (int i = 0; i < 8 * 4; ++i) {
      for (int b = 0; b < 4; ++b) x.bytes.push_back(static_cast<unsigned char>(bits >> (8 * b)));
    }
    x.bytes.resize(static_cast<std::size_t>(x.shape[0] * x.shape[1]) * 4);
  }
  test::TempDir dir;
  write(dir / "model.safetensors", safetensors(e));
  TraceConfig c;
  c.model = Gpt2Checkpoint::open((dir / "model.safetensors").string(), 2);
  c.sentences = {"!"};
  CHECK_THROWS_WITH_AS(run_trace(c),
                       "the input embeddings h₀ = wte[ids] + wpe overflow float32 at row 1, column "
                       "1 (inf): the given numbers are too large; scale them down",
                       Error);
}

}  // namespace attn
