#include "cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <thread>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/io.hpp"
#include "attn/render_explain.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_json.hpp"
#include "attn/render_summary.hpp"
#include "attn/render_table.hpp"
#include "attn/version.hpp"

namespace attn::cli {

namespace {

// A validator that accepts a decimal integer in [lo, hi] and says what it wanted otherwise.
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
        return {};
      },
      range);
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

void add_tolerance_options(CLI::App& app, DiffOptions& t) {
  app.add_option("--atol", t.atol, "Absolute tolerance: |a - b| <= atol + rtol * |b|")
      ->check(tolerance())
      ->capture_default_str();
  app.add_option("--rtol", t.rtol, "Relative tolerance")->check(tolerance())->capture_default_str();
}

CLI::Validator dimension() {
  return integer_in<std::int64_t>(1, kMaxDimension, fmt::format("1..{}", kMaxDimension),
                                  " (wider is not sensible for a trace)");
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  app.add_option("sentences", o.sentences,
                 "The sentence to trace (default: the walkthrough's). Several sentences form a "
                 "batch, padded to the longest; quote each one");
  app.add_option("--seed", o.config.seed, "torch.manual_seed before the embedding and the weights")
      ->check(integer_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "0..2^64-1"))
      ->capture_default_str();
  app.add_option("--vocab-size", o.config.vocab_size,
                 "Rows of nn.Embedding(vocab-size, d-in); at least the sentence's distinct words")
      ->check(integer_in<std::int64_t>(1, kMaxVocabSize, fmt::format("1..{}", kMaxVocabSize)))
      ->capture_default_str();
  app.add_option("--d-in", o.config.d_in, "Embedding width d_in")
      ->check(dimension())
      ->capture_default_str();
  CLI::Option* d_kq = app.add_option("--d-kq", o.config.d_kq, "Width d_q = d_k of queries and keys")
                          ->check(dimension())
                          ->capture_default_str();
  CLI::Option* d_v =
      app.add_option("--d-v", o.config.d_v, "Width d_v of values and context vectors")
          ->check(dimension())
          ->capture_default_str();
  app.add_option("--d-out", o.d_out,
                 "Sets d_kq and d_v to one width d_out, as the split multi-head form has it")
      ->check(dimension())
      ->excludes(d_kq)
      ->excludes(d_v);
  app.add_flag("--causal", o.config.causal,
               "Causal attention: a token attends only to itself and earlier tokens");
  app.add_option("--masked-rows", o.masked_rows,
                 "Weights of a row whose every key is masked: nan (torch.softmax) or zero "
                 "(scaled_dot_product_attention)")
      ->check(CLI::IsMember({"nan", "zero"}))
      ->capture_default_str();
  app.add_option("--heads", o.config.heads, "Number of attention heads")
      ->check(integer_in<std::int64_t>(1, kMaxHeads, fmt::format("1..{}", kMaxHeads)))
      ->capture_default_str();
  app.add_option("--multihead", o.multihead,
                 "With --heads: wrapper (the walkthrough: one module per head, contexts "
                 "concatenated) or split (course code: one projection split into heads, then W_o)")
      ->check(CLI::IsMember({"wrapper", "split"}))
      ->capture_default_str();
  app.add_option("--init", o.init,
                 "Weights: rand (torch.rand(d_in, d_out), X W), rand-transposed (torch.rand(d_out, "
                 "d_in), W x) or linear (nn.Linear(d_in, d_out, bias=False))")
      ->check(CLI::IsMember({"rand", "rand-transposed", "linear"}))
      ->capture_default_str();
  app.add_option("--cross", o.cross,
                 "Cross-attention: keys and values from this second sentence, queries from the "
                 "sentence")
      ->type_name("SENTENCE");
  app.add_option("--query", o.query,
                 "Print the path of the N-th token (1-based) instead of the whole trace")
      ->check(integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T"));
  app.add_option("--key", o.key,
                 "With --query: the key whose dot product is written out (default 5, the "
                 "walkthrough's query_2.dot(keys[4]), or T if T < 5)")
      ->check(integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T"));
  app.add_option("--precision", o.text.precision, "Decimals printed, as torch.set_printoptions")
      ->check(integer_in<int>(0, 8, "0..8"))
      ->capture_default_str();
  app.add_option("--torch-kernel", o.kernel,
                 "PyTorch CPU kernels to reproduce: avx2 (x86 default) or default (non-AVX2, ARM)")
      ->check(CLI::IsMember({"avx2", "default"}))
      ->capture_default_str();
  CLI::Option* query = app.get_option("--query");
  CLI::Option* format =
      app.add_option(
             "--format", o.format,
             "Output: text (PyTorch's printing), json (every value exact), csv (one row per "
             "cell), markdown (tables for handouts) or heatmap (ω, scaled scores and weights "
             "as coloured grids)")
          ->check(CLI::IsMember({"text", "json", "csv", "markdown", "heatmap", "summary"}))
          ->capture_default_str()
          ->excludes(query);
  app.add_option("--color", o.color,
                 "Heatmap colour: auto (24-bit or 256 colours on a terminal, none when piped or "
                 "NO_COLOR is set), never (shading characters), 256, 24bit")
      ->check(CLI::IsMember({"auto", "never", "256", "24bit"}))
      ->capture_default_str();
  app.add_option("--explain", o.explain,
                 "Explain one attention weight, query I and key J (1-based): the dot product, the "
                 "scaling, each exponential, the sum, the division")
      ->type_name("I,J")
      ->excludes(query)
      ->excludes(format);
  app.add_option("--file", o.file,
                 "Read the sentence from this file (a sentence argument - reads standard input)")
      ->type_name("FILE");
  app.add_flag("--timings", o.timings,
               "After the run, print each step's wall time on stderr, and the matrix products' "
               "GFLOP/s");
  app.add_option("--progress", o.progress,
                 "Show what is being computed on stderr once a run has taken a second: auto "
                 "(when stderr is a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "Threads for the large products and softmaxes (default: every core); the "
                 "output is the same for any number")
      ->check(integer_in<int>(1, 256, "1..256"));
  app.add_option("--matmul", o.matmul,
                 "Matrix products: reference (PyTorch's order and bits, slow on large shapes), "
                 "blocked (vectorised, much faster, within rounding of PyTorch) or auto "
                 "(blocked from 2^20 multiply-adds, so every small trace keeps PyTorch's bits)")
      ->check(CLI::IsMember({"auto", "reference", "blocked"}))
      ->capture_default_str();
  app.add_option("--max-memory", o.max_memory,
                 "Refuse a run whose matrices and output would need more memory than this (K, "
                 "M, G, T suffixes), estimated before anything large is allocated")
      ->type_name("SIZE")
      ->capture_default_str();
  app.add_flag("--softmax-steps", o.config.softmax_steps,
               "Show the softmax's row max, exponentials and sums as steps, and check that each "
               "row of weights sums to 1");
  app.add_flag("--describe", o.text.describe,
               "Add a sentence or two under each step: what it computes and why");
  app.add_flag("--step", o.step,
               "Pause after each step when run in a terminal (Enter goes on, q quits)");
  CLI::Option* steps =
      app.add_option("--steps", o.steps,
                     "Only these steps, by id, comma-separated (docs/cli.md lists the ids)")
          ->type_name("IDS")
          ->delimiter(',')
          ->allow_extra_args(false)
          ->excludes(query);
  app.add_option("--export", o.export_dir,
                 "Write one .npy per step and manifest.json into this folder (created if needed)")
      ->type_name("DIR")
      ->excludes(query);
  app.add_flag("--force", o.force, "With --export: replace files that exist");
  app.add_option("--expect", o.expect,
                 "Compare the run with a JSON trace; exit 1 and report on stderr if it differs")
      ->type_name("FILE");
  add_tolerance_options(app, o.tolerance);

  CLI::Option* vocab = app.get_option("--vocab-size");
  CLI::Option* d_in = app.get_option("--d-in");
  CLI::Option* cross = app.get_option("--cross");
  CLI::Option* embedding =
      app.add_option("--embedding", o.embedding,
                     "The embedding table (V × d_in) from a .npy, .csv or .json file, instead of "
                     "nn.Embedding")
          ->type_name("FILE")
          ->excludes(vocab)
          ->excludes(d_in);
  app.add_option("--x", o.x,
                 "The input matrix X (T × d_in) from a file, instead of tokenizing and embedding; "
                 "a sentence given with it labels the rows")
      ->type_name("FILE")
      ->excludes(vocab)
      ->excludes(d_in)
      ->excludes(embedding)
      ->excludes(cross);
  CLI::Option* d_out = app.get_option("--d-out");
  app.add_option("--w-query", o.w_query, "W_q from a file (layout as --init stores it)")
      ->type_name("FILE")
      ->excludes(d_kq)
      ->excludes(d_out);
  app.add_option("--w-key", o.w_key, "W_k from a file")
      ->type_name("FILE")
      ->excludes(d_kq)
      ->excludes(d_out);
  app.add_option("--w-value", o.w_value, "W_v from a file")
      ->type_name("FILE")
      ->excludes(d_v)
      ->excludes(d_out);
  app.add_option("--w-out", o.w_out, "W_o of the split form from a file")->type_name("FILE");
  app.add_option("--b-out", o.b_out, "b_o of the split form with --init linear from a file")
      ->type_name("FILE");

  // An option given twice is an error (check_repeats), not a conversion failure inside CLI11.
  for (CLI::Option* opt : app.get_options()) {
    if (!opt->get_positional() && opt != steps) {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
}

void check_repeats(const CLI::App& app) {
  // Subcommand options are checked on their own App.
  for (const CLI::Option* opt : app.get_options()) {
    // --steps takes a list, and may be given more than once.
    if (!opt->get_positional() && opt->get_name() != "--steps" && opt->count() > 1) {
      throw Error(fmt::format("{}: given {} times, once is allowed (see attn-trace --help)",
                              opt->get_name(), opt->count()));
    }
  }
}

namespace {

std::optional<GivenMatrix> given(const std::optional<std::string>& path) {
  if (!path) return std::nullopt;
  LoadedMatrix m = load_matrix(*path);
  return GivenMatrix{std::move(m.values), *path, std::move(m.row_labels)};
}

// --export: every file is checked before any is written, and each is written atomically.
Outcome write_export(const Trace& trace, const Options& o) {
  const std::filesystem::path dir = *o.export_dir;
  Outcome outcome;
  for (const std::string& name : attn::write_export(trace, dir, o.force)) {
    outcome.out += (dir / name).string() + "\n";
  }
  return outcome;
}

// A file's last line ends in a newline, which is not part of the sentence.
std::string without_final_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string read_stdin() {
  std::string text;
  char buffer[1 << 16];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, stdin)) text.append(buffer, n);
  if (std::ferror(stdin)) throw Error("cannot read the sentence from standard input");
  return text;
}

// "4G", "512M", "100000" -> bytes (K, M, G, T are powers of 1024).
std::uint64_t parse_size(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  int shift = 0;
  if (ptr + 1 == end) {
    switch (*ptr) {
      case 'K':
      case 'k':
        shift = 10;
        break;
      case 'M':
      case 'm':
        shift = 20;
        break;
      case 'G':
      case 'g':
        shift = 30;
        break;
      case 'T':
      case 't':
        shift = 40;
        break;
      default:
        shift = -1;
    }
  } else if (ptr != end) {
    shift = -1;
  }
  if (ec != std::errc() || shift < 0 || value == 0 || (value >> (63 - shift)) != 0) {
    throw Error(
        fmt::format("--max-memory '{}' is not a size: give a number of bytes, or with K, "
                    "M, G or T, like 4G",
                    text));
  }
  return value << shift;
}

// "I,J" -> (I, J), both >= 1.
std::pair<std::int64_t, std::int64_t> parse_cell(const std::string& text) {
  const std::size_t comma = text.find(',');
  std::int64_t i = 0, j = 0;
  auto parse = [](std::string_view part, std::int64_t& v) {
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    return ec == std::errc() && ptr == part.data() + part.size() && v >= 1;
  };
  if (comma == std::string::npos || !parse(std::string_view(text).substr(0, comma), i) ||
      !parse(std::string_view(text).substr(comma + 1), j)) {
    throw Error(
        fmt::format("--explain '{}' is not a cell: give I,J, the query's and the key's "
                    "token numbers from 1, like --explain 2,5",
                    text));
  }
  return {i, j};
}

ColorMode color_mode(const Options& o) {
  if (o.color == "never") return ColorMode::kShade;
  if (o.color == "256") return ColorMode::k256;
  if (o.color == "24bit") return ColorMode::kTrueColor;
  if (!o.color_terminal) return ColorMode::kShade;  // auto: piped, or NO_COLOR
  return o.truecolor ? ColorMode::kTrueColor : ColorMode::k256;
}

}  // namespace

TraceConfig make_config(Options& o) {
  // A sentence too long for a command line: "-" reads standard input, --file a file.
  if (o.file) {
    if (!o.sentences.empty()) {
      throw Error("--file gives the sentence: give no sentence argument with it");
    }
    o.sentences.push_back(without_final_newlines(read_file(*o.file)));
  }
  for (std::string& sentence : o.sentences) {
    if (sentence == "-") sentence = without_final_newlines(read_stdin());
  }
  o.config.x = given(o.x);
  o.config.embedding = given(o.embedding);
  o.config.w_query = given(o.w_query);
  o.config.w_key = given(o.w_key);
  o.config.w_value = given(o.w_value);
  o.config.w_out = given(o.w_out);
  o.config.b_out = given(o.b_out);
  if (o.config.x && !o.sentences.empty()) {
    // The sentence labels X's rows.
    if (o.sentences.size() > 1)
      throw Error("--x gives one input matrix: give one sentence to label its rows");
    if (!o.config.x->row_labels.empty()) {
      throw Error(fmt::format("{} labels its rows already: give no sentence with it", *o.x));
    }
    o.config.x->row_labels = tokenize(o.sentences[0]);
  } else if (!o.sentences.empty()) {
    o.config.sentences = o.sentences;
  }
  if (o.d_out) o.config.d_kq = o.config.d_v = *o.d_out;
  o.config.cross = o.cross;
  o.config.kernel = parse_kernel(o.kernel);
  o.config.init = parse_init(o.init);
  o.config.multihead = parse_multihead(o.multihead);
  o.config.masked_rows = parse_masked_rows(o.masked_rows);
  o.config.matmul = parse_matmul(o.matmul);
  if (o.key && !o.query) throw Error("--key " + std::to_string(*o.key) + " needs --query");
  if (o.force && !o.export_dir) throw Error("--force goes with --export");
  o.config.max_memory = parse_size(o.max_memory);
  o.config.threads =
      o.threads.value_or(std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  // What the chosen output writes per value, for the memory estimate.
  o.config.output_bytes_per_value = o.export_dir            ? 0.0
                                    : o.format == "csv"     ? 60.0
                                    : o.format == "json"    ? 14.0
                                    : o.format == "heatmap" ? 40.0
                                    : o.format == "summary" ? 0.0
                                                            : 12.0;
  if (o.explain) parse_cell(*o.explain);
  return o.config;
}

namespace {

// The progress line: after a second, what is being computed, at most ten times a second.
class Progress {
 public:
  explicit Progress(std::int64_t heads) : heads_(heads) {}
  void operator()(const Step& s) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0 || std::chrono::duration<double>(now - shown_).count() < 0.1) return;
    shown_ = now;
    std::string where;
    if (s.batch) where += fmt::format("sentence {}, ", *s.batch + 1);
    if (s.head) where += fmt::format("head {}/{}, ", *s.head + 1, heads_);
    std::fprintf(stderr, "\r\x1b[Kattn-trace: %s%s done (%.1f s)", where.c_str(), s.id.c_str(),
                 elapsed);
    std::fflush(stderr);
    printed_ = true;
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // An error that ends the run early must not be written after the progress line.
  ~Progress() { finish(); }
  // Clears the line, if one is shown.
  void finish() {
    if (printed_) std::fputs("\r\x1b[K", stderr);
    printed_ = false;
  }

 private:
  std::int64_t heads_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_{};
  bool printed_ = false;
};

}  // namespace

Outcome run(Options& o) {
  const auto start = std::chrono::steady_clock::now();
  TraceConfig config = make_config(o);
  auto progress = std::make_shared<Progress>(config.heads);
  if (o.progress == "always" || (o.progress == "auto" && o.stderr_terminal)) {
    config.on_record = [progress](const Step& s) { (*progress)(s); };
  }
  // The summary of a plain run reduces each step to a line as soon as it is final, and frees the
  // (T, T) scores head by head: a long input needs one head's scores in memory, not all.
  const bool stream_summary =
      o.format == "summary" && !o.expect && !o.export_dir && !o.explain && !o.query;
  std::string lines, attention;
  if (stream_summary) {
    config.release_scores = true;
    config.on_step = [&](const Step& s) {
      if (!o.steps.empty() && std::find(o.steps.begin(), o.steps.end(), s.id) == o.steps.end()) {
        return;
      }
      lines += summary_step_line(s, config.threads);
      attention += summary_attention(s, 5, config.threads);
    };
  }
  Trace trace = run_trace(config);
  progress->finish();
  const auto computed = std::chrono::steady_clock::now();
  if (!o.steps.empty()) select_steps(trace, o.steps);

  Outcome outcome;
  if (o.explain) {
    const auto [i, j] = parse_cell(*o.explain);
    outcome.out = render_explain(trace, i, j, o.text);
  } else if (o.query) {
    outcome.out =
        render_query_path(trace, *o.query, o.key.value_or(default_path_key(trace)), o.text);
  } else if (o.export_dir) {
    outcome = write_export(trace, o);
  } else if (o.format == "json") {
    outcome.out = render_json(trace);
  } else if (o.format == "csv") {
    outcome.out = render_csv(trace);
  } else if (o.format == "markdown") {
    outcome.out = render_markdown(trace, o.text.precision);
  } else if (o.format == "summary") {
    outcome.out = stream_summary ? summary_head(trace) + lines + attention
                                 : render_summary(trace, 5, config.threads);
  } else if (o.format == "heatmap") {
    if (o.steps.empty()) {
      // ω, the scaled scores and the weights; the masked scores too when there is a mask.
      std::erase_if(trace.steps, [](const Step& s) {
        return s.id != "omega" && s.id != "masked_omega" && s.id != "scaled_scores" &&
               s.id != "attention_weights";
      });
    }
    outcome.out = render_heatmaps(trace, {color_mode(o), o.text.precision});
  } else if (o.step && o.interactive) {
    outcome.blocks = render_text_blocks(trace, o.text);
  } else {
    outcome.out = render_text(trace, o.text);
  }
  if (o.expect) {
    const TraceDocument run_doc = parse_trace_json(render_json(trace), "this run");
    TraceDocument expected = parse_trace_json(read_file(*o.expect), *o.expect);
    if (!o.steps.empty()) {
      // Only the steps this run shows.
      std::erase_if(expected.steps, [&o](const DocumentStep& s) {
        return std::find(o.steps.begin(), o.steps.end(), s.id) == o.steps.end();
      });
    }
    const DiffResult d = diff_traces(run_doc, expected, o.tolerance);
    outcome.err = d.report;
    if (!d.equal) outcome.code = kExitDifferent;
  }
  if (o.timings) {
    const auto end = std::chrono::steady_clock::now();
    outcome.err += render_timings(trace, std::chrono::duration<double>(end - start).count(),
                                  std::chrono::duration<double>(end - computed).count());
  }
  return outcome;
}

CLI::App* add_commands(CLI::App& app, Options& options, DiffCommand& diff_command) {
  app.name("attn-trace");
  app.description(
      "attn-trace: self-attention, step by step, with the numbers PyTorch prints.\n"
      "With no sentence it traces the walkthrough's \"Life is short, eat dessert first\".");
  app.set_version_flag("--version", std::string("attn-trace ") + kVersion);
  app.footer(
      "Exit codes: 0 success, 1 a difference found (diff, --expect), 2 invalid input or usage\n"
      "(one line on stderr). Documentation: docs/cli.md and docs/tutorial.md.");
  add_options(app, options);
  CLI::App* diff = app.add_subcommand(
      "diff", "Compare two JSON traces cell by cell: exit 0 if equal within tolerance, 1 if not");
  add_diff_options(*diff, diff_command);
  return diff;
}

void add_diff_options(CLI::App& diff, DiffCommand& command) {
  diff.add_option("a", command.a, "The first trace (JSON, from --format json)")
      ->type_name("FILE")
      ->required();
  diff.add_option("b", command.b, "The second trace; tolerances are relative to it")
      ->type_name("FILE")
      ->required();
  add_tolerance_options(diff, command.tolerance);
}

Outcome run_diff(const DiffCommand& command) {
  const TraceDocument a = parse_trace_json(read_file(command.a), command.a);
  const TraceDocument b = parse_trace_json(read_file(command.b), command.b);
  const DiffResult d = diff_traces(a, b, command.tolerance);
  Outcome outcome;
  outcome.out = d.report;
  outcome.code = d.equal ? kExitOk : kExitDifferent;
  return outcome;
}

}  // namespace attn::cli
