// The parsed options made a TraceConfig: the sentences read, the matrix files loaded, the model
// and the tokenizer chosen, every combination checked, and the threads counted.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/io.hpp"
#include "attn/memory.hpp"
#include "attn/parallel.hpp"
#include "attn/tokenizer.hpp"
#include "attn/tokenizer_gpt2.hpp"
#include "cli.hpp"
#include "variant_options.hpp"

namespace attn::cli {

namespace {

std::optional<GivenMatrix> given(const std::optional<std::string>& path,
                                 std::uint64_t memory_limit) {
  if (!path) return std::nullopt;
  LoadedMatrix m = load_matrix(*path, memory_limit);
  return GivenMatrix{std::move(m.values), *path, std::move(m.row_labels), m.vector};
}

// text without the spaces and tabs at its ends: "2, 5" and "omega, keys" are read as typed.
std::string_view trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace

bool outline_only(const Options& o) {
  return o.format == OutputFormat::kOverview && !o.explain && !o.query && !o.export_dir;
}

std::pair<std::int64_t, std::int64_t> parse_cell(const std::string& text, std::string_view option) {
  const std::size_t comma = text.find(',');
  std::int64_t i = 0, j = 0;
  auto parse = [](std::string_view part, std::int64_t& v) {
    part = trimmed(part);
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    return ec == std::errc() && ptr == part.data() + part.size() && v >= 1;
  };
  if (comma == std::string::npos || !parse(std::string_view(text).substr(0, comma), i) ||
      !parse(std::string_view(text).substr(comma + 1), j)) {
    throw Error(
        fmt::format("{0} '{1}' is not a cell: give I,J, the query's and the key's "
                    "token numbers from 1, like {0} 2,5",
                    option, text));
  }
  return {i, j};
}

namespace {

bool given_option(const Options& o, std::string_view name) {
  return std::find(o.given.begin(), o.given.end(), name) != o.given.end();
}

// The sentences, from one of: the arguments (one sentence, quoted or not; "-" reads standard
// input), -s/--sentence (one batch item each), --batch (a file, a sentence a line) or --file.
// A batch file's name goes to `file` and each sentence's line in it to `lines`, for messages
// ("batch.txt: line 5: the sentence"): blank lines are skipped, so "sentence 3 of 4" need not be
// line 3.
std::vector<std::string> read_sentences(const Options& o, std::string& file,
                                        std::vector<std::int64_t>& lines_of) {
  const std::uint64_t limit = o.config.max_memory;
  std::vector<std::string> sources;
  if (!o.words.empty()) sources.emplace_back("a sentence argument");
  if (!o.sentences.empty()) sources.emplace_back("-s/--sentence");
  if (o.batch) sources.emplace_back("--batch");
  if (o.file) sources.emplace_back("--file");
  if (sources.size() > 1) {
    throw Error(
        fmt::format("{} and {} both give the sentence: give it one way", sources[0], sources[1]));
  }
  // GPT-2 reads text exactly as given: only the file's final newline is dropped.
  const bool exact = o.tokenizer == TokenizerChoice::kGpt2;
  if (o.file) {
    file = *o.file;  // for messages: "FILE: the sentence is not valid UTF-8"
    return {read_sentence_file(*o.file, limit, exact)};
  }
  if (o.batch) {
    const std::string text = *o.batch == "-" ? read_sentence(STDIN_FILENO, "standard input", limit)
                                             : read_sentence_file(*o.batch, limit);
    const std::string source = *o.batch == "-" ? "standard input" : *o.batch;
    // Each sentence of a batch records at least eight steps of about 768 bytes each (the memory
    // estimate's), so a batch of more sentences than the limit holds at that rate is refused
    // before its lines are stored: a file of short lines would otherwise take some 130 bytes a
    // line in copies of the list before the plan's estimate refused it. The overview computes
    // no step, but holds each sentence's tokens and outline: 1 KiB a sentence (2 million lines of
    // two words took 1.47 GB).
    const std::uint64_t least = outline_only(o) ? 1024 : 6144;
    std::vector<std::string> lines;
    std::uint64_t count = 0;
    std::int64_t number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + start, end - start);
      ++number;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      // A lone CR ends the lines of an old Mac file: they would be read as one sentence.
      if (line.find('\r') != std::string_view::npos) {
        throw Error(
            fmt::format("{}: line {} holds a carriage return (\\r) that ends no line: a "
                        "batch's sentences are lines ended by \\n or \\r\\n (tr '\\r' "
                        "'\\n' converts a file whose lines end in \\r alone)",
                        source, number));
      }
      // A byte order mark at a line's start marks where a file began (`cat a.txt b.txt`), as the
      // first line's does, and is no part of its first word.
      while (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
      // A blank line, white space alone as Python's str.split() sees it (U+00A0 too), is skipped.
      if (!is_blank(line)) {
        if (++count <= limit / least) {
          lines.emplace_back(line);
          lines_of.push_back(number);
        }
      }
      start = end + 1;
    }
    if (count > limit / least) {
      throw Error(
          fmt::format("{} has {} sentences, which need at least {} ({} each), more than "
                      "the memory limit of {}: give fewer sentences, or raise the limit",
                      source, count, size_text(count * least), size_text(least), size_text(limit)),
          Setting::kMaxMemory);
    }
    if (lines.empty()) {
      throw Error(fmt::format("{} has no sentences: give one sentence per line", source));
    }
    file = source;
    return lines;
  }
  if (!o.sentences.empty()) return o.sentences;
  if (o.words.size() == 1 && o.words[0] == "-") {
    file = "standard input";
    return {read_sentence(STDIN_FILENO, file, limit, exact)};
  }
  if (o.words.empty()) return {};
  return {fmt::format("{}", fmt::join(o.words, " "))};
}

// What this run shows: the text trace, or another view that the option names.
std::string view_of(const Options& o) {
  if (o.explain_grad) return "--explain-grad";
  if (o.explain) return "--explain";
  if (o.query) return "--query";
  if (o.export_dir) return "--export";
  return fmt::format("--format {}", name_of(o.format));
}

// The backward pass's options: each needs the one it belongs to, and the views that show one
// path or one cell of the forward pass do not show the gradients.
void check_backward_options(const Options& o) {
  const bool backward = o.config.backward;
  if (given_option(o, "--loss") && !backward) {
    throw Error("--loss chooses the backward pass's loss: it needs --backward");
  }
  if (o.target && o.config.loss != Loss::kMse) {
    throw Error("--target is the target of the mse loss: it needs --loss mse");
  }
  if (o.config.loss == Loss::kMse && !o.target) {
    throw Error("--loss mse needs --target FILE: the values the final output should have");
  }
  if (o.config.learning_rate && !backward) {
    throw Error("--lr takes a step against the gradients: it needs --backward");
  }
  if (o.explain_grad && !backward) {
    throw Error("--explain-grad works out a gradient of the backward pass: it needs --backward");
  }
  if (backward && o.model) {
    throw Error(
        "--backward and --model do not go together: the backward pass follows the lesson's "
        "attention, and has no gradient through a checkpoint's ln_1, biases and earlier blocks");
  }
  if (backward && (o.query || o.explain)) {
    throw Error(
        fmt::format("--backward adds the gradient steps to a trace: it does not go with {}; "
                    "--explain-grad I,J works out a gradient",
                    o.query ? "--query" : "--explain"));
  }
}

// Refuses an option that this run's view would ignore: nothing given is silently dropped.
void check_view_options(const Options& o) {
  const std::string view = view_of(o);
  const bool plain =
      !o.explain && !o.query && !o.export_dir && !o.explain_grad;  // a view of --format
  const bool text = plain && o.format == OutputFormat::kText;
  const bool heatmap = plain && o.format == OutputFormat::kHeatmap;
  const bool html = plain && o.format == OutputFormat::kHtml;  // describes every step anyway
  auto refuse = [&view](std::string_view option, std::string_view what) {
    throw Error(fmt::format("{} {}: it does not go with {}", option, what, view));
  };
  const bool svg = plain && o.format == OutputFormat::kSvg;
  if (o.export_dir && given_option(o, "--format") && o.format != OutputFormat::kSvg) {
    throw Error(fmt::format(
        "--export writes .npy files and prints their names: give no --format with it, or "
        "--format svg to add a figure of each step (not --format {})",
        name_of(o.format)));
  }
  const bool svg_export = o.export_dir && o.format == OutputFormat::kSvg;
  if (svg && o.steps.size() != 1) {
    throw Error(fmt::format(
        "--format svg draws one step: choose it with --steps (like --steps attention_weights){}; "
        "--export DIR --format svg draws every step",
        o.steps.empty() ? "" : fmt::format(", not {}", o.steps.size())));
  }
  const bool notes =
      text || heatmap || html || o.query || o.explain ||
      (plain && (o.format == OutputFormat::kMarkdown || o.format == OutputFormat::kJson));
  if (o.text.describe && !notes) {
    refuse("--describe",
           "adds notes to text, markdown, heatmaps, HTML, JSON, --query and --explain");
  }
  if (o.step && !text && !heatmap) refuse("--step", "pauses text and heatmaps after each step");
  if (given_option(o, "--precision") &&
      !(text || heatmap || svg || svg_export || html ||
        (plain && o.format == OutputFormat::kMarkdown) || o.query || o.explain || o.explain_grad)) {
    refuse("--precision",
           "sets the decimals that text, markdown, heatmaps, SVG figures and HTML print");
  }
  if (given_option(o, "--color") && !heatmap) {
    refuse("--color", "colours heatmaps");
  }
  if (given_option(o, "--heatmap-form") && !heatmap) {
    refuse("--heatmap-form", "chooses how heatmaps draw their cells");
  }
  check_backward_options(o);
  if ((o.query || o.explain || o.explain_grad) && o.config.softmax_steps) {
    refuse("--softmax-steps", "adds the softmax's steps to a trace");
  }
  if (o.explain && !o.steps.empty()) refuse("--steps", "chooses the steps of a trace");
  if (o.explain_grad && o.config.learning_rate) {
    refuse("--lr", "takes a step of gradient descent after the gradients");
  }
  if (plain && o.format == OutputFormat::kOverview) {
    // The overview computes nothing: the options of a computation do not apply.
    if (!o.steps.empty()) refuse("--steps", "chooses the steps of a trace");
    if (o.expect) refuse("--expect", "compares a computed trace with a JSON trace");
    if (o.timings) refuse("--timings", "times the steps' computation");
    if (given_option(o, "--threads")) refuse("--threads", "sets the threads of the computation");
    if (given_option(o, "--progress")) refuse("--progress", "shows the computation's progress");
  }
  for (const char* name : {"--atol", "--rtol"}) {
    if (given_option(o, name) && !o.expect) {
      throw Error(fmt::format("{} goes with --expect (or with diff, after it)", name));
    }
  }
}

// Refuses the options that only a sentence or a drawn matrix reads, when there is none: the
// tokenizer of a given X with no sentence, the seed when every matrix is given.
void check_given_inputs(const Options& o) {
  const TraceConfig& c = o.config;
  if (c.x && o.sentences.empty() && given_option(o, "--tokenizer")) {
    throw Error(fmt::format(
        "--tokenizer splits a sentence into tokens: X in {} is given with no sentence to split; "
        "give the sentence that labels its rows, or no --tokenizer",
        c.x->source));
  }
  if (given_option(o, "--seed") && !c.model && !draws_from_seed(c)) {
    throw Error(fmt::format(
        "--seed {} draws nothing here: the input and every weight are given in files; give no "
        "--seed",
        c.seed));
  }
}

// A GPT-2 checkpoint: opened and checked, its layer and head chosen; its tokenizer is GPT-2's.
void choose_model(Options& o) {
  if (!o.model) {
    for (const char* name : {"--layer", "--head", "--n-head"}) {
      if (given_option(o, name)) {
        throw Error(fmt::format("{} chooses in a GPT-2 checkpoint: it goes with --model", name));
      }
    }
    return;
  }
  if (given_option(o, "--tokenizer") && o.tokenizer != TokenizerChoice::kGpt2) {
    throw Error("--model reads GPT-2's tokens: --tokenizer words does not go with it");
  }
  o.tokenizer = TokenizerChoice::kGpt2;
  o.config.model = Gpt2Checkpoint::open(*o.model, o.n_head.value_or(0));
  const Gpt2Config& m = o.config.model->config();
  if (o.config.layer >= m.n_layer) {
    throw Error(fmt::format("--layer {} is not in {}: its layers are 0 … {}", o.config.layer,
                            *o.model, m.n_layer - 1));
  }
  if (o.config.model_head && *o.config.model_head >= m.n_head) {
    throw Error(fmt::format("--head {} is not in {}: its heads are 0 … {}", *o.config.model_head,
                            *o.model, m.n_head - 1));
  }
}

// The tokenizer, and GPT-2's vocabulary size unless one is given.
void choose_tokenizer(Options& o) {
  if (o.tokenizer != TokenizerChoice::kGpt2) return;
  o.config.tokenizer = gpt2_tokenizer();
  if (!given_option(o, "--vocab-size")) o.config.vocab_size = kGpt2VocabSize;
}

// Whether no loop of the run can reach kParallelMinWork, so that its thread count cannot matter:
// the text's bytes bound its tokens, the widths and the dictionary its products and draws. The
// CPU time limit's files and the cores' topology then go unread: on the project's machine the
// limit's files took 0.3-0.4 ms of each process's start, and the walkthrough's whole run took
// 7.0 ms without them and 7.8 with them (hyperfine, 600 runs each, medians; docs/design.md,
// Threads).
bool too_small_for_threads(const TraceConfig& c) {
  if (c.model || c.x || c.embedding || c.w_query || c.w_key || c.w_value || c.w_out || c.target) {
    return false;
  }
  double bytes = 0.0;
  for (const std::string& s : c.sentences) bytes += static_cast<double>(s.size());
  if (c.cross) bytes += static_cast<double>(c.cross->size());
  const auto width = static_cast<double>(std::max({c.d_in, c.d_kq, c.d_v}));
  const double products = bytes * width * std::max(bytes, width) * static_cast<double>(c.heads);
  const double draws = static_cast<double>(c.vocab_size) * static_cast<double>(c.d_in);
  return std::max(products, draws) < kParallelMinWork;
}

}  // namespace

TraceConfig make_config(Options& o) {
  // A step named twice is the step once, in every format.
  std::vector<std::string> steps;
  for (const std::string& given_id : o.steps) {
    std::string id(trimmed(given_id));
    if (std::find(steps.begin(), steps.end(), id) == steps.end()) steps.push_back(std::move(id));
  }
  o.steps = std::move(steps);
  check_view_options(o);
  choose_model(o);
  choose_tokenizer(o);
  check_variant_options(o);
  std::string file;
  std::vector<std::int64_t> lines;
  o.sentences = read_sentences(o, file, lines);
  o.config.x = given(o.x, o.config.max_memory);
  o.config.embedding = given(o.embedding, o.config.max_memory);
  o.config.w_query = given(o.w_query, o.config.max_memory);
  o.config.w_key = given(o.w_key, o.config.max_memory);
  o.config.w_value = given(o.w_value, o.config.max_memory);
  o.config.w_out = given(o.w_out, o.config.max_memory);
  o.config.b_out = given(o.b_out, o.config.max_memory);
  o.config.target = given(o.target, o.config.max_memory);
  if (o.config.x && !o.sentences.empty()) {
    // The sentence labels X's rows.
    if (o.sentences.size() > 1)
      throw Error("--x gives one input matrix: give one sentence to label its rows");
    if (!o.config.x->row_labels.empty()) {
      throw Error(fmt::format("{} labels its rows already: give no sentence with it", *o.x));
    }
    for (const std::string& t : o.config.tokenizer->tokens(o.sentences[0], "the sentence")) {
      o.config.x->row_labels.push_back(o.config.tokenizer->display(t));
    }
  } else if (!o.sentences.empty()) {
    o.config.sentences = o.sentences;
    o.config.sentences_file = std::move(file);
    o.config.sentence_lines = std::move(lines);
  }
  check_given_inputs(o);
  if (o.d_out) o.config.d_kq = o.config.d_v = *o.d_out;
  o.config.cross = o.cross;
  if (o.config.decode && o.cross) {
    throw Error(
        "--decode and --cross do not go together: decoding caches each new token's own key and "
        "value, and cross-attention takes keys and values from another sentence");
  }
  if (o.key && !o.query) throw Error("--key " + std::to_string(*o.key) + " needs --query");
  if (o.force && !o.export_dir) throw Error("--force goes with --export");
  // Every core the process may use (taskset, a container's CPU set, one per physical core, its
  // CPU time limit), at most --threads' 256. A run too small to split any loop is not worth
  // reading the cores' topology and the time limit for.
  if (!o.threads) {
    o.config.threads = std::min(
        256, too_small_for_threads(o.config) ? attn::affinity_cpus() : attn::usable_cpus());
  } else {
    o.config.threads = *o.threads;
  }
  // What the chosen output writes per value, for the memory estimate.
  o.config.output_cost = o.export_dir ? export_cost(o.format == OutputFormat::kSvg)
                                      : output_cost(o.format, o.text.precision);
  if (o.explain) parse_cell(*o.explain);
  if (o.explain_grad) parse_cell(*o.explain_grad, "--explain-grad");
  return o.config;
}

}  // namespace attn::cli
