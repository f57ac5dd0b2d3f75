#include "option_table.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "attn/names.hpp"
#include "attn/rope.hpp"
#include "attn/trace.hpp"
#include "cli.hpp"

namespace attn::cli {

namespace {

// A validator that accepts a decimal integer in [lo, hi], says what it wanted otherwise, and
// passes the number on in plain decimal (CLI11 would read 0123 as octal and refuse 09).
template <typename Int>
CLI::Validator integer_in(Int lo, Int hi, const std::string& range, const std::string& note = "") {
  const std::string allowed = range + note;
  return CLI::Validator(
      [lo, hi, allowed](std::string& text) -> std::string {
        const std::size_t digits_from = (!text.empty() && text[0] == '-') ? 1 : 0;
        const bool is_integer =
            text.size() > digits_from &&
            text.find_first_not_of("0123456789", digits_from) == std::string::npos;
        if (!is_integer) return fmt::format("'{}' is not an integer; allowed: {}", text, allowed);
        Int value{};
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || value < lo || value > hi) {
          return fmt::format("{} is out of range; allowed: {}", text, allowed);
        }
        text = fmt::format("{}", value);
        return {};
      },
      range);
}

CLI::Validator dimension() {
  return integer_in<std::int64_t>(1, kMaxDimension, fmt::format("1..{}", kMaxDimension),
                                  " (wider is not sensible for a trace)");
}

CLI::Validator token_number() {
  return integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T");
}

// A tolerance: a finite number >= 0.
CLI::Validator tolerance() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0) ||
            !std::isfinite(v)) {
          return fmt::format("'{}' is not a tolerance; allowed: a number >= 0", text);
        }
        return {};
      },
      "NUMBER >= 0");
}

// A size in bytes, as CLI11's AsSizeValue reads it (4G, 512M, 100000; K, M, G, T are powers of
// 1024, in either case), passed on as the number of bytes; refused with the tool's own words.
CLI::Validator size_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // No sign: AsSizeValue would read -5G as a number of its own, wrapped around.
        if (text.find('-') != std::string::npos) {
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        // Decimal, always: AsSizeValue would read 0100 as octal.
        std::string bytes = text;
        const std::size_t digits = bytes.find_first_not_of("0123456789");
        const std::size_t zeros = bytes.find_first_not_of('0');
        if (zeros != std::string::npos && zeros > 0 &&
            zeros < (digits == std::string::npos ? bytes.size() : digits)) {
          bytes.erase(0, zeros);
        } else if (zeros == std::string::npos && bytes.size() > 1) {
          bytes = "0";
        } else if (zeros != std::string::npos && zeros > 0 && zeros == digits) {
          bytes.erase(0, zeros - 1);  // 00K: the number is 0
        }
        try {
          const std::string error = CLI::AsSizeValue(false)(bytes);
          if (!error.empty()) throw CLI::ValidationError(error);
        } catch (const CLI::ValidationError& e) {
          if (std::string_view(e.what()).find("overflow") != std::string_view::npos ||
              std::string_view(e.what()).find("multiplied") != std::string_view::npos) {
            return fmt::format("'{}' is too large: a size is at most 2^63 - 1 bytes", text);
          }
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        std::uint64_t value = 0;
        const auto [ptr, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), value);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && value >> 63 != 0)) {
          return fmt::format("'{}' is too large: a size is at most 2^63 - 1 bytes", text);
        }
        if (ec != std::errc() || value == 0) {
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        text = bytes;
        return {};
      },
      "SIZE");
}

std::string choices_text(const std::vector<std::string>& choices) {
  return fmt::format("`{}`", fmt::join(choices, "`, `"));
}

// Checks that a value is one of an enum's names ("fast not in {auto,reference,blocked}") and
// passes on its number, which CLI11 converts into the enum.
template <typename Enum>
CLI::Validator enum_names() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<Enum> value = value_named<Enum>(text);
        if (!value) {
          return fmt::format("{} not in {{{}}}", text, fmt::join(all_names<Enum>(), ","));
        }
        text = std::to_string(static_cast<int>(*value));
        return {};
      },
      "");
}

// An option that takes a number, written into `field` of the options once `validator` passed.
template <typename Field>
OptionSpec number(std::string name, std::string default_text, std::string allowed, std::string help,
                  std::string meaning, Field field, CLI::Validator validator) {
  OptionSpec spec{name,
                  "N",
                  std::move(default_text),
                  std::move(allowed),
                  std::move(help),
                  std::move(meaning),
                  {},
                  false,
                  nullptr};
  spec.add = [name, field, validator](CLI::App& app, Options& o, DiffCommand&,
                                      const std::string& text) {
    return app.add_option(name, field(o), text)->transform(validator);
  };
  return spec;
}

// An option whose value is one of an enum's names, written into `field` of the options.
template <typename Enum, typename Field>
OptionSpec choice(std::string names, std::string value, Enum default_value, std::string help,
                  std::string meaning, Field field) {
  OptionSpec spec{std::move(names),
                  std::move(value),
                  std::string(name_of(default_value)),
                  "",
                  std::move(help),
                  std::move(meaning),
                  all_names<Enum>(),
                  false,
                  nullptr};
  spec.allowed = choices_text(spec.choices);
  const std::string name = spec.names;
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_option(name, field(o), text)->transform(enum_names<Enum>());
  };
  return spec;
}

// A file the run reads.
OptionSpec file_option(std::string name, std::string help, std::string allowed,
                       std::optional<std::string> Options::*field, std::string value = "FILE") {
  OptionSpec spec{name, std::move(value), "", std::move(allowed), std::move(help), "", {},
                  true, nullptr};
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_option(name, o.*field, text);
  };
  return spec;
}

// A flag: on when given.
OptionSpec flag(std::string name, std::string help, std::string meaning,
                std::function<bool&(Options&)> field) {
  OptionSpec spec{name, "", "off", "", std::move(help), std::move(meaning), {}, false, nullptr};
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_flag(name, field(o), text);
  };
  return spec;
}

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
                         "With -s or --batch: weights of a row whose every key is masked (a "
                         "<pad> query): nan (as torch.softmax) or zero (as "
                         "scaled_dot_product_attention)",
                         "with `-s` or `--batch`, the weights of a row whose every key is masked "
                         "(a `<pad>` query): `nan` as `torch.softmax` gives, `zero` as "
                         "`scaled_dot_product_attention` gives",
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

std::vector<OptionSpec> view_options() {
  std::vector<OptionSpec> shown;
  shown.push_back(choice(
      "--format", "F", OutputFormat::kText,
      "Output: text (PyTorch's printing), json (every value exact), csv (a row per cell), "
      "markdown (tables for handouts), heatmap (the scores and weights as coloured grids), "
      "summary (statistics and checksums per step), overview (the pipeline's matrices and "
      "shapes on one screen, nothing computed), svg (one step as a figure, with --steps) or "
      "html (a self-contained lesson page: every step, heatmaps, each weight worked out on "
      "hover, a projector mode)",
      "the output format ([formats.md](formats.md)); `heatmap` draws ω, the masked and scaled "
      "scores and the weights (or the `--steps` chosen) as coloured grids; `summary` gives "
      "statistics and checksums per step instead of the values; `overview` draws the pipeline "
      "of the chosen variant, each matrix's name and shape from the token ids to the output, "
      "without computing it; `svg` draws the one step that `--steps` chooses as a standalone "
      "figure (with `--export`, a figure of every step beside its `.npy` file); "
      "`html` writes one self-contained page (no network, prints to PDF) "
      "with every step, its description and heatmap, each weight's working on hover or focus, the "
      "attention as lines and a projector mode",
      [](Options& o) -> OutputFormat& { return o.format; }));
  shown.back().allowed += "; not with `--query` or `--explain`";
  shown.push_back(
      {"--steps",
       "IDS",
       "all",
       "step ids of this run, comma-separated; may be repeated; not with `--query`",
       "Only these steps, by id, comma-separated (docs/cli.md lists the ids)",
       "only these steps, in every format and export; an id the run lacks is refused at once",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("--steps", o.steps, help)->delimiter(',')->allow_extra_args(false);
       }});
  shown.push_back(number(
      "--query", "", "1 .. T",
      "Print the path of the N-th token (1-based) instead of the whole trace",
      "print the path of the N-th token (1-based) instead of the whole trace: per head, and per "
      "sentence of a batch",
      [](Options & o) -> auto& { return o.query; }, token_number()));
  shown.push_back(number(
      "--key", "5, or T if T < 5", "1 .. T (of the `--cross` sentence, if any); needs `--query`",
      "With --query: the key whose dot product is written out",
      "which key's dot product the path writes out term by term",
      [](Options & o) -> auto& { return o.key; }, token_number()));
  shown.push_back(
      {"--explain",
       "I,J",
       "",
       "1 .. T, 1 .. T_k; not with `--query` or `--format`",
       "Work out attention weight (I, J) by hand: the dot product, the scaling, each "
       "exponential, the sum, the division",
       "work out attention weight (I, J) by hand: the dot product, the scaling, the row max, each "
       "exponential, the sum, the division",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("--explain", o.explain, help);
       }});
  shown.push_back(number(
      "--precision", "4", "0 .. 8", "Decimals printed, as torch.set_printoptions(precision=N)",
      "decimals printed, as `torch.set_printoptions(precision=N)`",
      [](Options & o) -> auto& { return o.text.precision; }, integer_in<int>(0, 8, "0..8")));
  shown.push_back(choice(
      "--color", "C", ColorChoice::kAuto,
      "Heatmap colour: auto (on a terminal, unless NO_COLOR or TERM=dumb), never (shading), "
      "256 or 24bit",
      "the heatmaps' colour: `auto` is 24-bit when `COLORTERM` is `truecolor` or `24bit`, else "
      "256 colours, on a terminal; shading characters when stdout is not a terminal, `NO_COLOR` "
      "is set or `TERM` is `dumb`; `never` always shades",
      [](Options& o) -> ColorChoice& { return o.color; }));
  shown.push_back(choice(
      "--heatmap-form", "F", HeatmapForm::kAuto,
      "Heatmap cells: auto (values when the grid fits the width, else blocks), values or blocks",
      "how heatmap cells are drawn: `values` prints each value on its colour, `blocks` one "
      "coloured block per cell with the tokens numbered and a key below; `auto` draws values when "
      "the grid fits the width (`COLUMNS`, the terminal's, or 80 when piped), else blocks",
      [](Options& o) -> HeatmapForm& { return o.heatmap_form; }));
  shown.push_back(flag("--softmax-steps",
                       "Show the softmax's row max, exponentials and sums as steps, and check "
                       "that each row of weights sums to 1",
                       "record the softmax's row max, exponentials and row sums as steps, and "
                       "`weight_sums`: each row's sum and its residual",
                       [](Options& o) -> bool& { return o.config.softmax_steps; }));
  shown.push_back(flag("--describe",
                       "Add a sentence or two under each step: what it computes and why",
                       "a sentence or two under each step's header: text, markdown and heatmaps, "
                       "`--query` and `--explain`; a `description` field in JSON",
                       [](Options& o) -> bool& { return o.text.describe; }));
  shown.push_back(
      flag("--step",
           "Pause after each step on a terminal, for one key: Enter or space goes "
           "on, b goes back, q quits, ? lists the keys",
           "text and heatmaps on a terminal: pause after each step, the last one too, for "
           "one key: Enter, space or → goes on (at the last step: ends), b or ← "
           "draws the previous step again, q or Ctrl-D quits at once, ? lists the "
           "keys ([the keys](#stepping-through-a-trace---step)); no pause when stdin "
           "or stdout is not a terminal",
           [](Options& o) -> bool& { return o.step; }));
  return shown;
}

std::vector<OptionSpec> script_options() {
  std::vector<OptionSpec> scripts;
  scripts.push_back(file_option(
      "--export",
      "Write one .npy per step, each step's whole tensor and manifest.json into this new or "
      "empty folder, as one set: all of it or nothing",
      "a new folder (its parents are created if needed), an empty one, or an earlier export with "
      "`--force`; not with `--query`",
      &Options::export_dir, "DIR"));
  scripts.back().meaning =
      "write one `.npy` per step, the whole tensor of each step that has several slices, and "
      "`manifest.json` there instead of printing the trace, as one set: all of it or, on any "
      "failure or interruption, nothing ([formats.md](formats.md#numpy---export-dir)); prints "
      "the paths written. With `--format svg` (the only `--format` it takes), each step's SVG "
      "figure too ([formats.md](formats.md#svg-figures---format-svg))";
  scripts.push_back(flag(
      "--force", "With --export: replace an earlier export in the folder, as a whole",
      "replace an earlier export in DIR, as a whole: none of its files is kept. Only a folder "
      "that holds an export of attn-trace and nothing else (its `manifest.json` and the files it "
      "lists) is replaced; any other folder that is not empty is refused",
      [](Options& o) -> bool& { return o.force; }));
  scripts.back().allowed = "needs `--export`";
  scripts.push_back(file_option(
      "--expect", "Compare the run with a JSON trace; exit 1 and report on stderr if it differs",
      "a JSON trace", &Options::expect));
  scripts.back().meaning =
      "compare the run with it (as `diff`); report on standard error; exit 1 if different";
  for (OptionSpec spec : diff_option_table()) {
    const std::string name = spec.names;
    spec.add = [name](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
      double& field = name == "--atol" ? o.tolerance.atol : o.tolerance.rtol;
      return app.add_option(name, field, help)->check(tolerance());
    };
    spec.allowed += "; needs `--expect`";
    scripts.push_back(std::move(spec));
  }
  return scripts;
}

std::vector<OptionSpec> own_number_options() {
  std::vector<OptionSpec> own;
  own.push_back(file_option("--x",
                            "The input matrix X (T × d_in) instead of tokenizing and "
                            "embedding; a sentence given with it labels the rows",
                            "`.npy`, `.csv`, `.json`; not with `--embedding`, `--cross`, "
                            "`--vocab-size`, `--d-in`",
                            &Options::x));
  own.push_back(file_option("--embedding", "The embedding table (V × d_in) instead of nn.Embedding",
                            "not with `--vocab-size`, `--d-in`", &Options::embedding));
  own.push_back(file_option("--w-query",
                            "W_q instead of a drawn one, in the layout --init stores it",
                            "not with `--d-kq`, `--d-out`", &Options::w_query));
  own.push_back(file_option("--w-key", "W_k instead of a drawn one", "not with `--d-kq`, `--d-out`",
                            &Options::w_key));
  own.push_back(file_option("--w-value", "W_v instead of a drawn one",
                            "not with `--d-v`, `--d-out`", &Options::w_value));
  own.push_back(file_option("--w-out", "W_o of the split form instead of a drawn one",
                            "`--multihead split`", &Options::w_out));
  own.push_back(file_option("--b-out", "b_o of the split form with --init linear",
                            "`--multihead split --init linear`", &Options::b_out));
  return own;
}

std::vector<OptionSpec> speed_options() {
  std::vector<OptionSpec> speed;
  speed.push_back(number(
      "--threads", "every usable core", "1 .. 256",
      "Threads for the large products and softmaxes; the output is the same for any number",
      "threads for the large products and softmaxes; the output is the same bytes for any "
      "number. By default, one per core the process may use: the CPUs `nproc` counts (`taskset` "
      "and a container's CPU set narrow them), the two threads of one core (SMT) counted once, "
      "and no more than its CPU time limit allows (a container's `--cpus`, rounded up)",
      [](Options & o) -> auto& { return o.threads; }, integer_in<int>(1, 256, "1..256")));
  speed.push_back(choice(
      "--matmul", "K", MatmulKernel::kAuto,
      "Matrix products: reference (PyTorch's order and bits), blocked (vectorised, within "
      "rounding of PyTorch) or auto (blocked from 2^20 multiply-adds)",
      "how the matrix products are computed: `reference` adds left to right, as the reference "
      "BLAS behind Debian's PyTorch does, so every value is PyTorch's to the bit; `blocked` is "
      "the fast kernel (AVX-512, AVX2 or plain C++, chosen by the CPU, the same bits on all of "
      "them), whose sums differ from PyTorch's in the last bits; `auto` takes `blocked` for "
      "products of at least 2²⁰ multiply-adds and `reference` below, so every small trace keeps "
      "PyTorch's bits. A step computed by the blocked kernel says so in its note "
      "([performance.md](performance.md))",
      [](Options& o) -> MatmulKernel& { return o.config.matmul; }));
  speed.push_back(
      {"--max-memory",
       "SIZE",
       "4G",
       "bytes, or with K, M, G, T",
       "Refuse a run that would need more memory than this (K, M, G, T suffixes)",
       "refuse a run whose matrices, steps, labels and output would need more, estimated before "
       "anything large is allocated; a run above the memory the machine has available, or its "
       "cgroup's memory limit, is refused too ([errors.md](errors.md#memory))",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("--max-memory", o.config.max_memory, help)->transform(size_value());
       }});
  speed.push_back(flag("--timings", "After the run, each step's wall time on stderr",
                       "after the run, each step's wall time on stderr, the matrix products' "
                       "GFLOP/s, and the time of the output",
                       [](Options& o) -> bool& { return o.timings; }));
  speed.push_back(choice(
      "--progress", "P", ProgressChoice::kAuto,
      "A progress line on stderr once a run has taken a second, with the time left: auto "
      "(when stderr is a terminal), always or never",
      "once a run has taken a second, a line on stderr says which step of which head is done "
      "and about how long the rest will take, updated ten times a second and cleared at the "
      "end; `auto` shows it when stderr is a terminal",
      [](Options& o) -> ProgressChoice& { return o.progress; }));
  return speed;
}

// A learning rate: a number > 0 whose float32, the η of the step, is > 0 and finite.
CLI::Validator learning_rate() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr const char* kAllowed =
            "allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38";
        double v = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        const bool whole = ptr == text.data() + text.size();
        if (ec == std::errc::result_out_of_range && whole) {
          // Beyond double: ±HUGE_VAL, or a positive number too small for it (float32's 0 too).
          v = std::strtod(text.c_str(), nullptr);
          if (v == 0 && text[0] != '-') v = std::numeric_limits<double>::denorm_min();
        } else if (ec != std::errc() || !whole || !std::isfinite(v)) {
          return fmt::format("'{}' is not a learning rate; {}", text, kAllowed);
        }
        if (!(v > 0)) return fmt::format("'{}' is not a learning rate; {}", text, kAllowed);
        const auto eta = static_cast<float>(v);
        if (eta == 0.0f) {
          return fmt::format("'{}' is too small a learning rate: float32 rounds it to 0; {}", text,
                             kAllowed);
        }
        if (!std::isfinite(eta)) {
          return fmt::format("'{}' is too large a learning rate: float32 cannot hold it; {}", text,
                             kAllowed);
        }
        return {};
      },
      "NUMBER > 0");
}

std::vector<OptionSpec> gradient_options() {
  std::vector<OptionSpec> grads;
  grads.push_back(flag("--backward",
                       "After the forward trace, the gradients of the loss step by step back to "
                       "the weights, X and the embedding table, as torch.autograd computes them",
                       "after the forward steps, the loss and its gradient step by step in "
                       "reverse: dL/d out, dL/dZ, dL/dA and dL/dV, the softmax's backward, "
                       "dL/dω, dL/dQ and dL/dK, each weight's gradient in its layout, dL/dX and "
                       "the embedding table's rows ([tutorial](tutorial.md#20-the-backward-pass))",
                       [](Options& o) -> bool& { return o.config.backward; }));
  grads.push_back(choice("--loss", "L", Loss::kSum,
                         "With --backward: sum (L = the sum of the final output) or mse "
                         "(L = mean((out - target)^2), with --target)",
                         "the loss: `sum` adds every element of the final output (Z for one "
                         "head, the heads' Z side by side for the wrapper, the output projection "
                         "with b_o for the split form); `mse` is `((out − target)**2).mean()`",
                         [](Options& o) -> Loss& { return o.config.loss; }));
  grads.back().allowed += "; needs `--backward`";
  grads.push_back(file_option("--target",
                              "With --loss mse: the target output (T x d_out; a batch's rows one "
                              "sentence after another)",
                              "`.npy`, `.csv`, `.json` of the final output's shape; needs "
                              "`--loss mse`",
                              &Options::target));
  grads.push_back(number(
      "--lr", "", "a number > 0 that float32 holds (1.4e-45 to 3.4e38); needs `--backward`",
      "With --backward: one step of gradient descent, W - ETA * dL/dW for every weight, and "
      "the loss after it",
      "one step of gradient descent with learning rate η: each weight `W − η·dL/dW`, then the "
      "forward pass again and the loss after the step",
      [](Options & o) -> auto& { return o.config.learning_rate; }, learning_rate()));
  grads.back().value = "ETA";
  grads.push_back(
      {"--explain-grad",
       "I,J",
       "",
       "1 .. T, 1 .. T_k; needs `--backward`; not with `--query`, `--explain` or `--format`",
       "With --backward: work out the gradient of score (I, J) by hand: dL/dA's dot product, "
       "the softmax's row sum, its backward, the scaling",
       "work out the gradient of score (I, J) term by term: dL/dA_IJ = dL/dZ_I · v_J, the row's "
       "r_I = Σ_j dL/dA_Ij A_Ij, dL/dS_IJ = A_IJ (dL/dA_IJ − r_I), and dL/dω_IJ = dL/dS_IJ / √d_k "
       "(0 when masked)",
       {},
       false,
       [](CLI::App& app, Options& o, DiffCommand&, const std::string& help) {
         return app.add_option("--explain-grad", o.explain_grad, help);
       }});
  return grads;
}

// A GPT-2 checkpoint: which file, which layer, which heads.
std::vector<OptionSpec> checkpoint_options() {
  std::vector<OptionSpec> gpt2;
  gpt2.push_back(file_option(
      "--model",
      "Trace a GPT-2 checkpoint's attention: its tokens, embeddings, and a layer's heads "
      "(implies --tokenizer gpt2)",
      "a GPT-2 `model.safetensors` (F32, F16 or BF16), with its `config.json` beside it or "
      "`--n-head`",
      &Options::model, "PATH"));
  gpt2.back().meaning =
      "trace a GPT-2 checkpoint in safetensors (Hugging Face's `model.safetensors`, its names "
      "with or without `transformer.`): GPT-2's tokens, the token and position embeddings, the "
      "residual stream entering `--layer` after the blocks before it, ln_1, and each head's Q, K, "
      "V, scores, weights and context, then c_proj; the hyperparameters come from `config.json` "
      "beside the file; implies `--tokenizer gpt2` and causal attention";
  gpt2.push_back(number(
      "--layer", "0", "0 .. n_layer − 1; needs `--model`",
      "With --model: the layer traced, numbered from 0 as the checkpoint's h.L",
      "the layer whose attention is traced, numbered from 0 as the checkpoint names it (`h.L`); "
      "the blocks before it run whole, and the trace starts from the stream they leave",
      [](Options & o) -> auto& { return o.config.layer; },
      integer_in<std::int64_t>(0, std::int64_t{1} << 30, "0..n_layer−1")));
  gpt2.push_back(number(
      "--head", "every head", "0 .. n_head − 1; needs `--model`",
      "With --model: trace this head only, numbered from 0 (the others still feed c_proj)",
      "trace only this head of the layer, numbered from 0 as bertviz and TransformerLens number "
      "them; the other heads are computed for the heads side by side and c_proj, and not shown",
      [](Options & o) -> auto& { return o.config.model_head; },
      integer_in<std::int64_t>(0, kMaxHeads - 1, fmt::format("0..{}", kMaxHeads - 1))));
  gpt2.push_back(number(
      "--n-head", "config.json's n_head", fmt::format("1 .. {}, dividing n_embd", kMaxHeads),
      "With --model and no config.json beside it: the checkpoint's number of heads",
      "the checkpoint's number of heads, for a `model.safetensors` without its `config.json` "
      "(the other hyperparameters come from the tensors' shapes); with a `config.json`, it must "
      "agree with its `n_head`",
      [](Options & o) -> auto& { return o.n_head; },
      integer_in<std::int64_t>(1, kMaxHeads, fmt::format("1..{}", kMaxHeads))));
  return gpt2;
}

std::vector<OptionSection> make_table() {
  return {{"The sentence", sentence_options()},
          {"The model", model_options()},
          {"A GPT-2 checkpoint", checkpoint_options()},
          {"What is shown", view_options()},
          {"Scripts", script_options()},
          {"Your own numbers", own_number_options()},
          {"Speed and memory", speed_options()},
          {"The backward pass", gradient_options()}};
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
