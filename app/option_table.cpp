// The table of every option (option_table.hpp): the sentence's and the model's sections here, the
// others in option_sections.cpp, the validators and builders in option_values.cpp.

#include "option_table.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <limits>

#include "attn/names.hpp"
#include "attn/rope.hpp"
#include "attn/trace.hpp"
#include "cli.hpp"
#include "option_parts.hpp"

namespace attn::cli {

std::vector<OptionSpec> sentence_options() {
  std::vector<OptionSpec> input;
  input.push_back(
      {"sentence",
       "SENTENCE...",
       std::string(kWalkthroughSentence),
       "UTF-8 text with at least one word",
       "The sentence to trace, quoted or not: the words of every argument form one sentence; "
       "a lone - reads it from standard input",
       "",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("sentence", o.words, help);
       }});
  input.push_back(
      {"-s,--sentence",
       "TEXT",
       "",
       "UTF-8 text with at least one word; given once per sentence; not with a sentence argument",
       "One sentence of a batch, given once per sentence; the batch is padded to the longest",
       "one sentence of a batch [B, T, d_in]; the batch is padded with `<pad>` to the longest",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("-s,--sentence", o.sentences, help)->allow_extra_args(false);
       }});
  input.push_back(file_option("--batch",
                              "A batch from a file, one sentence per line; - reads standard input",
                              "a UTF-8 text file, or `-` for standard input", &Options::batch));
  input.back().meaning =
      "a batch, one sentence per line; blank lines are skipped, a byte-order mark at a line's "
      "start and `\\r` line ends are dropped; a message about one sentence names its line";
  input.push_back(
      file_option("--file", "The sentence from a file (the whole file, its final newline dropped)",
                  "a text file; no sentence argument with it", &Options::file));
  input.back().meaning =
      "the sentence, from a file (a sentence argument `-` reads standard input): for sentences "
      "longer than a command line allows; the whole file is one sentence, its final newline "
      "dropped";
  input.push_back(
      {"--cross",
       "SENTENCE",
       "",
       "UTF-8 text with at least one word; one main sentence",
       "Cross-attention: keys and values from this second sentence, queries from the sentence",
       "cross-attention: keys and values from this sentence, queries from the main one; both "
       "share one dictionary and one embedding",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("--cross", o.cross, help);
       }});
  input.push_back(choice(
      "--tokenizer", "T", TokenizerChoice::kWords,
      "How text becomes tokens: words (the walkthrough's sorted words) or gpt2 (GPT-2's "
      "byte-level BPE, its 50,257 ids; --vocab-size defaults to 50257)",
      "`words`: the walkthrough's dictionary of the sentence's sorted distinct words; `gpt2`: "
      "GPT-2's byte-level BPE with its 50,257-token vocabulary, the text tokenized exactly as "
      "given (from `--file` or standard input: its bytes, less one final newline), the ids "
      "GPT-2's, `--vocab-size` 50257 unless given",
      [](Options& o) -> TokenizerChoice& { return o.tokenizer; }));
  return input;
}

namespace {

// The model section's options of today's attention: decoding with a KV cache, the online
// softmax, rotary embeddings, grouped-query heads, a sliding window.
std::vector<OptionSpec> modern_options() {
  std::vector<OptionSpec> model;
  model.push_back(flag(
      "--decode",
      "Also decode token by token with a KV cache (implies --causal): each new token's q, k, v, "
      "the cache, its scores, weights and z_t, checked against the full computation",
      "after each head's attention, incremental decoding with a KV cache, as a model's "
      "`generate()` runs it (implies `--causal`): for t = 1 … T the new token's q, k and v, the "
      "key and value caches as they grow, its row of scores and weights against the cache and "
      "its context vector z_t (steps `<id>_t<t>`); then `decode_check`, every z_t against the "
      "full causal computation's rows, with the largest difference",
      [](Options& o) -> bool& { return o.config.decode; }));
  model.back().allowed = "not with `--cross`";
  model.push_back(number(
      "--online-softmax", "", "1 .. 2^40; N >= T_k is one tile",
      "Also run FlashAttention's online softmax over tiles of N keys: the running max, sum and "
      "output per tile, checked against the ordinary softmax",
      "after each head's attention, FlashAttention's online softmax over tiles of N keys for "
      "every query row: the running max m, the rescaling factor c and the running sum ℓ after "
      "each tile, the output O and Z = O / ℓ, with the largest difference from "
      "`context_vectors`; a tile wholly masked for a row is skipped for that row. With "
      "`--explain`, the one query row tile by tile",
      [](Options & o) -> auto& { return o.config.online_softmax; },
      integer_in<std::int64_t>(1, kMaxOnlineTile, "1..2^40")));
  // Today's attention: rotary embeddings, grouped-query heads, sliding windows.
  model.push_back(flag("--rope", "Rotary position embeddings on Q and K, per head (Llama, GPT-J)",
                       "turn each pair of a head's query and key numbers by the token's position "
                       "times `inv_freq = 1 / θ^(arange(0, d, 2) / d)`, after the projections; "
                       "the cos and sin tables and the turned Q and K are steps of their own",
                       [](Options& o) -> bool& { return o.config.rope; }));
  OptionSpec theta{"--rope-theta",
                   "X",
                   "10000",
                   "a number > 0 that float32 holds (1.4e-45 to 3.4028235e38); needs `--rope`",
                   "With --rope: the base θ of the angles",
                   "the base θ of the rotary angles (Llama 3 uses 500000)",
                   {},
                   false,
                   nullptr};
  theta.add = [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
    return app.add_option("--rope-theta", o.config.rope_theta, help)
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              double v = 0;
              const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
              // PyTorch rounds θ to float32: it must stay above 0 and finite there.
              if (ec != std::errc() || ptr != text.data() + text.size() || !rope_base_float32(v)) {
                return fmt::format(
                    "'{}' is not a base; allowed: a number > 0 that float32 holds (1.4e-45 to "
                    "3.4028235e38)",
                    text);
              }
              return {};
            },
            "NUMBER > 0"));
  };
  model.push_back(std::move(theta));
  model.push_back(choice(
      "--rope-pairs", "P", RopePairs::kHalf,
      "With --rope: half (Llama: x_i with x_i+d/2) or interleaved (GPT-J: x_2i with x_2i+1)",
      "which numbers form a pair: `half` turns x_i with x_{i+d/2} (`rotate_half`, Llama in "
      "Hugging Face, LLMs-from-scratch); `interleaved` turns x_2i with x_2i+1 (GPT-J, RoFormer); "
      "needs `--rope`",
      [](Options& o) -> RopePairs& { return o.config.rope_pairs; }));
  model.push_back(number(
      "--kv-heads", "--heads",
      fmt::format("1 .. {}, dividing `--heads`; needs `--multihead split`", kMaxHeads),
      "Grouped-query attention: N key/value heads shared by the query heads (1: multi-query)",
      "grouped-query attention: N key/value heads, K/V head j serving query heads j·H/N … "
      "(j+1)·H/N − 1 (`repeat_interleave`); 1 is multi-query attention; W_k and W_v are N·d_out/H "
      "wide",
      [](Options & o) -> auto& { return o.config.kv_heads; },
      integer_in<std::int64_t>(1, kMaxHeads, fmt::format("1..{}", kMaxHeads))));
  model.push_back(number(
      "--window", "", "1..2^63-1 (implies `--causal`)",
      "Sliding-window attention: each token sees itself and the N - 1 tokens before it",
      "sliding-window attention (Mistral): query i sees keys max(0, i − N + 1) … i, the others "
      "are masked with −inf before the softmax; implies `--causal`, and N ≥ T is the causal trace",
      [](Options & o) -> auto& { return o.config.window; },
      integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..2^63-1")));
  return model;
}

}  // namespace

std::vector<OptionSpec> model_options() {
  const TraceConfig defaults;
  const std::string dim_allowed = fmt::format("1 .. {}", kMaxDimension);
  std::vector<OptionSpec> model;
  model.push_back(number(
      "--seed", fmt::format("{}", defaults.seed), "0 .. 2^64−1",
      "torch.manual_seed(N) before the embedding and again before the weights",
      "`torch.manual_seed(N)` before the embedding and again before the weights; only the low "
      "32 bits matter, as in PyTorch",
      [](Options & o) -> auto& { return o.config.seed; },
      integer_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "0..2^64-1")));
  model.push_back(number(
      "--vocab-size", fmt::format("{}", defaults.vocab_size),
      "1 .. 1,000,000,000, and at least the number of distinct words",
      "Rows of nn.Embedding(N, d_in): at least the sentence's distinct words",
      "rows of `nn.Embedding(N, d_in)`", [](Options & o) -> auto& { return o.config.vocab_size; },
      integer_in<std::int64_t>(1, kMaxVocabSize, fmt::format("1..{}", kMaxVocabSize))));
  model.push_back(number(
      "--d-in", fmt::format("{}", defaults.d_in), dim_allowed, "Width d_in of the embedding",
      "width of the embedding", [](Options & o) -> auto& { return o.config.d_in; }, dimension()));
  model.push_back(number(
      "--d-kq", fmt::format("{}", defaults.d_kq), dim_allowed,
      "Width d_q = d_k of queries and keys", "width d_q = d_k of queries and keys",
      [](Options & o) -> auto& { return o.config.d_kq; }, dimension()));
  model.push_back(number(
      "--d-v", fmt::format("{}", defaults.d_v), dim_allowed,
      "Width d_v of values and context vectors", "width d_v of values and context vectors",
      [](Options & o) -> auto& { return o.config.d_v; }, dimension()));
  model.push_back(number(
      "--d-out", "", dim_allowed + "; not with `--d-kq` or `--d-v`",
      "Sets d_kq and d_v to one width d_out, as the split multi-head form needs",
      "sets d_kq and d_v to one width, as the split multi-head form needs",
      [](Options & o) -> auto& { return o.d_out; }, dimension()));
  model.push_back(flag("--causal",
                       "Causal attention: a token attends only to itself and earlier tokens",
                       "mask every key that comes after its query (`torch.triu(ones(T, T), "
                       "diagonal=1)`), and show the walkthrough's other way too (softmax, zero, "
                       "renormalize)",
                       [](Options& o) -> bool& { return o.config.causal; }));
  model.push_back(choice("--masked-rows", "R", MaskedRows::kNan,
                         "With -s or --batch, or --cross and --window: weights of a row whose "
                         "every key is masked: nan (as torch.softmax) or zero (as "
                         "scaled_dot_product_attention)",
                         "with `-s` or `--batch`, or `--cross` and `--window`, the weights of a "
                         "row whose every key is masked (a `<pad>` query, or a query whose window "
                         "ends before the other sentence does): `nan` as `torch.softmax` gives, "
                         "`zero` as `scaled_dot_product_attention` gives",
                         [](Options& o) -> MaskedRows& { return o.config.masked_rows; }));
  model.push_back(number(
      "--heads", fmt::format("{}", defaults.heads), fmt::format("1 .. {}", kMaxHeads),
      "Number of attention heads", "number of heads",
      [](Options & o) -> auto& { return o.config.heads; },
      integer_in<std::int64_t>(1, kMaxHeads, fmt::format("1..{}", kMaxHeads))));
  model.push_back(choice(
      "--multihead", "F", MultiheadForm::kWrapper,
      "With --heads: wrapper (the walkthrough's module per head, contexts concatenated) or split "
      "(course code: one projection split into heads, then W_o)",
      "`wrapper`: the walkthrough's N single-head modules, each with its own weights, context "
      "vectors concatenated; `split`: one projection of width d_out split into N heads of d_out / "
      "N, then the output projection W_o (needs d_kq = d_v, a multiple of N)",
      [](Options& o) -> MultiheadForm& { return o.config.multihead; }));
  model.push_back(choice(
      "--init", "I", WeightInit::kRand,
      "Weights: rand (torch.rand(d_in, d_out), X W), rand-transposed (torch.rand(d_out, d_in), "
      "W x) or linear (nn.Linear(d_in, d_out, bias=False))",
      "the weights: `torch.rand(d_in, d_out)` used as `X @ W`; `torch.rand(d_out, d_in)` used as "
      "`W.matmul(x)`; `nn.Linear(d_in, d_out, bias=False)` (kaiming uniform, W_o with its bias)",
      [](Options& o) -> WeightInit& { return o.config.init; }));
  model.push_back(
      choice("--torch-kernel", "K", TorchKernel::kAvx2,
             "PyTorch's CPU kernels to reproduce: avx2 (x86-64) or default (ARM, other builds)",
             "which of PyTorch's CPU kernels to reproduce: `avx2` for x86-64 with AVX2 (PyTorch's "
             "default on such machines), `default` for PyTorch's other builds (ARM, Apple silicon, "
             "`ATEN_CPU_CAPABILITY=default`). Never detected from the host; only `--rope`'s "
             "tables in `avx2` need SLEEF's AVX2 code (libsleef3), and where it cannot run they "
             "are the C library's, as their note says",
             [](Options& o) -> TorchKernel& { return o.config.kernel; }));
  for (OptionSpec& spec : modern_options()) model.push_back(std::move(spec));
  return model;
}

namespace {

// Each section moved into the table (a braced list would copy every option: a tenth of the
// walkthrough's instructions).
std::vector<OptionSection> make_table() {
  std::vector<OptionSection> table;
  table.reserve(8);
  table.push_back({"The sentence", sentence_options()});
  table.push_back({"The model", model_options()});
  table.push_back({"A GPT-2 checkpoint", checkpoint_options()});
  table.push_back({"What is shown", view_options()});
  table.push_back({"Scripts", script_options()});
  table.push_back({"Your own numbers", own_number_options()});
  table.push_back({"Speed and memory", speed_options()});
  table.push_back({"The backward pass", gradient_options()});
  return table;
}

}  // namespace

}  // namespace attn::cli

namespace attn {

namespace {
constexpr std::array<EnumName<cli::ColorChoice>, 4> kColorChoices = {
    {{cli::ColorChoice::kAuto, "auto"},
     {cli::ColorChoice::kNever, "never"},
     {cli::ColorChoice::k256, "256"},
     {cli::ColorChoice::k24bit, "24bit"}}};
constexpr std::array<EnumName<HeatmapForm>, 3> kHeatmapForms = {{{HeatmapForm::kAuto, "auto"},
                                                                 {HeatmapForm::kValues, "values"},
                                                                 {HeatmapForm::kBlocks, "blocks"}}};
constexpr std::array<EnumName<cli::ProgressChoice>, 3> kProgressChoices = {
    {{cli::ProgressChoice::kAuto, "auto"},
     {cli::ProgressChoice::kAlways, "always"},
     {cli::ProgressChoice::kNever, "never"}}};
}  // namespace

template <>
std::span<const EnumName<cli::ColorChoice>> names_of<cli::ColorChoice>() {
  return kColorChoices;
}
template <>
std::span<const EnumName<cli::ProgressChoice>> names_of<cli::ProgressChoice>() {
  return kProgressChoices;
}
template <>
std::span<const EnumName<HeatmapForm>> names_of<HeatmapForm>() {
  return kHeatmapForms;
}

namespace {
constexpr std::array<EnumName<cli::TokenizerChoice>, 2> kTokenizerChoices = {
    {{cli::TokenizerChoice::kWords, "words"}, {cli::TokenizerChoice::kGpt2, "gpt2"}}};
}  // namespace

template <>
std::span<const EnumName<cli::TokenizerChoice>> names_of<cli::TokenizerChoice>() {
  return kTokenizerChoices;
}

}  // namespace attn

namespace attn::cli {

const std::vector<OptionSection>& option_table() {
  static const std::vector<OptionSection> table = make_table();
  return table;
}

const std::vector<OptionSpec>& diff_option_table() {
  static const std::vector<OptionSpec> table = [] {
    const DiffOptions defaults;
    std::vector<OptionSpec> t;
    for (const char* name : {"--atol", "--rtol"}) {
      const bool atol = std::string_view(name) == "--atol";
      OptionSpec spec{name,
                      "X",
                      fmt::format("{}", atol ? defaults.atol : defaults.rtol),
                      "a number ≥ 0",
                      atol ? "Absolute tolerance: equal when |a - b| <= atol + rtol * |b|"
                           : "Relative tolerance",
                      "",
                      {},
                      false,
                      nullptr};
      spec.meaning = atol ? "tolerances of `--expect` and `diff`: equal when \\|a − b\\| ≤ "
                            "atol + rtol·\\|b\\|"
                          : "the relative tolerance, as `--atol` says";
      spec.add = [atol, name = spec.names](CLI::App& app, Options&, DiffCommand& d,
                                           const std::string& help) {
        return app.add_option(name, atol ? d.tolerance.atol : d.tolerance.rtol, help)
            ->check(tolerance());
      };
      t.push_back(std::move(spec));
    }
    return t;
  }();
  return table;
}

const std::vector<std::pair<std::string, std::string>>& exclusive_options() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"--d-out", "--d-kq"},
      {"--d-out", "--d-v"},
      {"--format", "--query"},
      {"--explain", "--query"},
      {"--explain", "--format"},
      {"--steps", "--query"},
      {"--export", "--query"},
      {"--embedding", "--vocab-size"},
      {"--embedding", "--d-in"},
      {"--x", "--vocab-size"},
      {"--x", "--d-in"},
      {"--x", "--embedding"},
      {"--x", "--cross"},
      {"--w-query", "--d-kq"},
      {"--w-query", "--d-out"},
      {"--w-key", "--d-kq"},
      {"--w-key", "--d-out"},
      {"--w-value", "--d-v"},
      {"--w-value", "--d-out"},
      {"--explain-grad", "--query"},
      {"--explain-grad", "--explain"},
      {"--explain-grad", "--format"},
      {"--explain-grad", "--export"},
      {"--explain-grad", "--steps"},
      // A checkpoint brings its own tokens, widths, heads and weights, and is GPT-2's attention.
      {"--model", "--seed"},
      {"--model", "--vocab-size"},
      {"--model", "--d-in"},
      {"--model", "--d-kq"},
      {"--model", "--d-v"},
      {"--model", "--d-out"},
      {"--model", "--heads"},
      {"--model", "--multihead"},
      {"--model", "--init"},
      {"--model", "--x"},
      {"--model", "--embedding"},
      {"--model", "--w-query"},
      {"--model", "--w-key"},
      {"--model", "--w-value"},
      {"--model", "--w-out"},
      {"--model", "--b-out"},
      {"--model", "--cross"},
      {"--model", "--rope"},
      {"--model", "--kv-heads"},
      {"--model", "--window"},
      {"--model", "--decode"},
      {"--model", "--online-softmax"},
  };
  return pairs;
}

}  // namespace attn::cli
