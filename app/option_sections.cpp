// The option table's sections after the model's: what is shown, scripts, your own numbers,
// speed and memory, the backward pass, a GPT-2 checkpoint (option_parts.hpp).

#include <fmt/format.h>

#include <limits>

#include "attn/names.hpp"
#include "attn/trace.hpp"
#include "cli.hpp"
#include "option_parts.hpp"

namespace attn::cli {

namespace {

// How the chosen view is drawn: its decimals, colours and cells, the softmax's steps, the
// descriptions and the pauses.
std::vector<OptionSpec> drawing_options() {
  std::vector<OptionSpec> shown;
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

}  // namespace

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
       "step ids of this run, comma-separated (a space after a comma is allowed); may be repeated; "
       "not with `--query`",
       "Only these steps, by id, comma-separated (docs/cli.md lists the ids)",
       "only these steps, in every format and export; an id the run lacks is refused at once. "
       "The steps after the last of them are not computed (but for `--format html`, whose "
       "workings read every step)",
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
  for (OptionSpec& spec : drawing_options()) shown.push_back(std::move(spec));
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
  own.push_back(file_option("--embedding",
                            "The embedding table (V × d_in) instead of nn.Embedding, read as "
                            "nn.Embedding.from_pretrained reads it (a padding row as given)",
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

}  // namespace attn::cli
