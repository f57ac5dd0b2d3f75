#include "cli.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/gpt2_model.hpp"
#include "attn/io.hpp"
#include "attn/memory.hpp"
#include "attn/parallel.hpp"
#include "attn/render_explain.hpp"
#include "attn/render_explain_grad.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_html.hpp"
#include "attn/render_json.hpp"
#include "attn/render_overview.hpp"
#include "attn/render_summary.hpp"
#include "attn/render_svg.hpp"
#include "attn/render_table.hpp"
#include "attn/tokenizer_gpt2.hpp"
#include "attn/version.hpp"
#include "option_table.hpp"
#include "variant_options.hpp"

namespace attn::cli {

namespace {

// Options given twice are refused by check_repeats, after CLI11 has taken them all; a flag
// takes no value (CLI11 would read --causal=3 as true).
void take_last(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) continue;
    const std::string& name = opt->get_name();
    if (name != "--steps" && name != "--sentence") {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    if (opt->get_expected_min() == 0) opt->disable_flag_override();
  }
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  DiffCommand unused;
  // Each option by its long name, for the exclusions (CLI11's get_option compares every name
  // of every option: a tenth of the walkthrough's run, for 38 look-ups).
  std::vector<std::pair<std::string_view, CLI::Option*>> by_name;
  for (const OptionSection& section : option_table()) {
    for (const OptionSpec& spec : section.options) {
      CLI::Option* opt = spec.add(app, o, unused, spec.help);
      if (!spec.value.empty() && spec.names.front() == '-') opt->type_name(spec.value);
      const std::size_t comma = spec.names.rfind(',');
      by_name.emplace_back(
          std::string_view(spec.names).substr(comma == std::string::npos ? 0 : comma + 1), opt);
    }
  }
  auto option = [&by_name](std::string_view name) {
    for (const auto& [n, opt] : by_name) {
      if (n == name) return opt;
    }
    throw std::logic_error("the option table has no " + std::string(name));
  };
  for (const auto& [a, b] : exclusive_options()) option(a)->excludes(option(b));
  take_last(app);
}

std::string remedy(Setting setting) {
  switch (setting) {
    case Setting::kMaxMemory:
      return " with --max-memory";
    case Setting::kWidths:
      return " with --d-out";
    case Setting::kReplace:
      return " with --force";
    case Setting::kModelHeads:
      return " with --n-head";
    case Setting::kRopeTheta:
      return " with --rope-theta";
    case Setting::kNone:
      break;
  }
  return "";
}

void check_repeats(const CLI::App& app) {
  // Subcommand options are checked on their own App.
  for (const CLI::Option* opt : app.get_options()) {
    // --steps takes a list, and -s/--sentence a batch: both may be given more than once.
    if (!opt->get_positional() && opt->get_name() != "--steps" && opt->get_name() != "--sentence" &&
        opt->count() > 1) {
      throw Error(fmt::format("{}: given {} times, once is allowed (see attn-trace --help)",
                              opt->get_name(), opt->count()));
    }
  }
}

namespace {

// The Levenshtein distance between two option names.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "--casual" -> " (did you mean --causal?)", when an option of `app` is close enough.
std::string closest_option(const CLI::App& app, std::string_view name) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& long_name : opt->get_lnames()) {
      const std::string candidate = "--" + long_name;
      std::size_t d = edit_distance(name, candidate);
      // A prefix of an option is a likely typo too: --head for --heads.
      if (candidate.rfind(name, 0) == 0 && name.size() >= 4) d = std::min<std::size_t>(d, 1);
      if (d < best_distance) best_distance = d, best = candidate;
    }
  }
  return best.empty() ? "" : fmt::format(": did you mean {}?", best);
}

// What the user gave, checked in their terms before CLI11 reads it: an unknown option (with the
// closest spelling), and an argument that begins with '-' but is no option (a sentence such as
// "-hello world", which CLI11 would read as -h).
void check_arguments(const CLI::App& app, const CLI::App& diff, int argc, const char* const* argv) {
  const CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return;
    if (arg == "-" || arg.empty() || arg[0] != '-') {
      if (current == &app && arg == diff.get_name()) current = &diff;
      continue;
    }
    const bool long_form = arg.size() > 2 && arg[1] == '-';
    const std::string name(long_form ? arg.substr(0, arg.find('=')) : arg.substr(0, 2));
    const CLI::Option* opt = nullptr;
    for (const CLI::Option* o : current->get_options()) {
      if (!o->get_positional() && o->check_name(name)) opt = o;
    }
    if (opt == nullptr && current == &diff) {
      // The main options do not go with diff.
      for (const CLI::Option* o : app.get_options()) {
        if (!o->get_positional() && o->check_name(name)) {
          throw Error(
              fmt::format("{} does not go with diff: diff compares two JSON traces and "
                          "takes --atol and --rtol",
                          name));
        }
      }
    }
    if (opt == nullptr && long_form) {
      throw Error(fmt::format("unknown option {}{} (see attn-trace --help)", name,
                              closest_option(*current, name)));
    }
    if (opt == nullptr || (!long_form && arg.size() > 2 && opt->get_expected_min() == 0)) {
      // A quoted sentence ("-hello world"), or one word of an unquoted one (… is -5 degrees).
      if (arg.find_first_of(" \t") != std::string_view::npos) {
        throw Error(fmt::format(
            "'{}' is not an option: to trace a sentence that begins with '-', put -- before it: "
            "attn-trace -- '{}'",
            arg, arg));
      }
      throw Error(
          fmt::format("'{}' is not an option: to trace it as a word, put -- before the sentence "
                      "(attn-trace -- WORDS...) or quote the sentence",
                      arg));
    }
    // An option's value is the next argument, unless given as --name=value or -sVALUE.
    const bool value_attached =
        long_form ? arg.find('=') != std::string_view::npos : arg.size() > 2;
    if (opt->get_expected_min() > 0 && !value_attached) ++i;
  }
}

// CLI11's messages in the user's terms.
[[noreturn]] void reword(const CLI::ParseError& e, const CLI::App& diff) {
  const std::string what = e.what();
  if (diff.parsed() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    throw Error("diff needs two JSON traces: attn-trace diff A.json B.json");
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::string extra = what.substr(what.find(':') + 2);
    if (diff.parsed()) {
      throw Error(
          fmt::format("diff compares two JSON traces: '{}' is one argument too many", extra));
    }
    throw Error(fmt::format("'{}' was not expected (see attn-trace --help)", extra));
  }
  // "--seed: 1 required N:0..2^64-1 missing": an option given without its value.
  if (const std::size_t at = what.find(": 1 required ");
      at != std::string::npos && what.ends_with(" missing")) {
    throw Error(fmt::format("{} needs a value (see attn-trace --help)", what.substr(0, at)));
  }
  if (const std::size_t at = what.find(" excludes "); at != std::string::npos) {
    throw Error(fmt::format("{} and {} do not go together (see attn-trace --help)",
                            what.substr(0, at), what.substr(at + 10)));
  }
  if (const std::size_t at = what.find(" was given a disallowed flag override");
      at != std::string::npos) {
    throw Error(fmt::format("--{} is a flag and takes no value: give --{} alone",
                            what.substr(0, at), what.substr(0, at)));
  }
  throw Error(what + " (see attn-trace --help)");
}

}  // namespace

void parse(CLI::App& app, Options& options, DiffCommand& diff_command, int argc,
           const char* const* argv) {
  CLI::App* diff = app.get_subcommand("diff");
  check_arguments(app, *diff, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    throw;
  } catch (const CLI::CallForVersion&) {
    throw;
  } catch (const CLI::ParseError& e) {
    reword(e, *diff);
  }
  check_repeats(app);
  check_repeats(*diff);
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() > 0) options.given.push_back(opt->get_name());
  }
  if (diff->parsed()) {
    // --atol and --rtol before diff count as after it; no other option goes with diff.
    for (const std::string& name : options.given) {
      if (name == "--atol" || name == "--rtol") {
        if (diff->get_option(name)->count() > 0) {
          throw Error(
              fmt::format("{}: given 2 times, once is allowed (see attn-trace --help)", name));
        }
        (name == "--atol" ? diff_command.tolerance.atol : diff_command.tolerance.rtol) =
            name == "--atol" ? options.tolerance.atol : options.tolerance.rtol;
      } else {
        throw Error(
            fmt::format("{} does not go with diff: diff compares two JSON traces and "
                        "takes --atol and --rtol",
                        name == "sentence" ? "a sentence" : name));
      }
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
  std::optional<SvgOptions> figures;
  if (o.format == OutputFormat::kSvg) figures = SvgOptions{o.text.precision};
  for (const std::string& name : attn::write_export(trace, dir, o.force, figures)) {
    outcome.out += (dir / name).string() + "\n";
  }
  return outcome;
}

// "I,J" -> (I, J), both >= 1.
std::pair<std::int64_t, std::int64_t> parse_cell(const std::string& text,
                                                 std::string_view option = "--explain") {
  const std::size_t comma = text.find(',');
  std::int64_t i = 0, j = 0;
  auto parse = [](std::string_view part, std::int64_t& v) {
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

// What the options ask of the trace, against its plan: the steps they keep and the tokens they
// name. Run before anything is embedded or computed (TraceConfig::on_plan), so that a mistyped
// id or number on a long input is refused at once, with the error that the trace would give.
void check_against_plan(const Options& o, const PlannedRun& run) {
  if (!o.steps.empty()) require_step_ids(o.steps, planned_step_ids(run.steps));
  const bool cross = run.config.cross.has_value();
  if (o.explain_grad) {
    const auto [i, j] = parse_cell(*o.explain_grad, "--explain-grad");
    check_query_and_key(cross, run.t_q, run.t_k, i, j);
  } else if (o.explain) {
    const auto [i, j] = parse_cell(*o.explain);
    check_query_and_key(cross, run.t_q, run.t_k, i, j);
  } else if (o.query) {
    check_query_and_key(cross, run.t_q, run.t_k, *o.query,
                        o.key.value_or(default_path_key(run.t_k)));
  }
}

ColorMode color_mode(const Options& o) {
  if (o.color == ColorChoice::kNever) return ColorMode::kShade;
  if (o.color == ColorChoice::k256) return ColorMode::k256;
  if (o.color == ColorChoice::k24bit) return ColorMode::kTrueColor;
  if (!o.color_terminal) return ColorMode::kShade;  // auto: piped, or NO_COLOR
  return o.truecolor ? ColorMode::kTrueColor : ColorMode::k256;
}

}  // namespace

namespace {

bool given_option(const Options& o, std::string_view name) {
  return std::find(o.given.begin(), o.given.end(), name) != o.given.end();
}

// The overview alone: shapes from the plan, nothing embedded or computed.
bool outline_only(const Options& o) {
  return o.format == OutputFormat::kOverview && !o.explain && !o.query && !o.export_dir;
}

// The sentences, from one of: the arguments (one sentence, quoted or not; "-" reads standard
// input), -s/--sentence (one batch item each), --batch (a file, a sentence a line) or --file.
std::vector<std::string> read_sentences(const Options& o) {
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
  if (o.file) return {read_sentence_file(*o.file, limit, exact)};
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
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t\v\f") != std::string_view::npos) {
        if (++count <= limit / least) lines.emplace_back(line);
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
    return lines;
  }
  if (!o.sentences.empty()) return o.sentences;
  if (o.words.size() == 1 && o.words[0] == "-") {
    return {read_sentence(STDIN_FILENO, "standard input", limit, exact)};
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
// CPU time limit's files then go unread: on the project's machine they took 0.3-0.4 ms of each
// process's start, and the walkthrough's whole run took 7.0 ms without them and 7.8 with them
// (hyperfine, 600 runs each, medians; docs/design.md, Threads).
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
  check_view_options(o);
  choose_model(o);
  choose_tokenizer(o);
  check_variant_options(o);
  o.sentences = read_sentences(o);
  o.config.x = given(o.x);
  o.config.embedding = given(o.embedding);
  o.config.w_query = given(o.w_query);
  o.config.w_key = given(o.w_key);
  o.config.w_value = given(o.w_value);
  o.config.w_out = given(o.w_out);
  o.config.b_out = given(o.b_out);
  o.config.target = given(o.target);
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
  }
  if (o.d_out) o.config.d_kq = o.config.d_v = *o.d_out;
  o.config.cross = o.cross;
  if (o.config.decode && o.cross) {
    throw Error(
        "--decode and --cross do not go together: decoding caches each new token's own key and "
        "value, and cross-attention takes keys and values from another sentence");
  }
  if (o.key && !o.query) throw Error("--key " + std::to_string(*o.key) + " needs --query");
  if (o.force && !o.export_dir) throw Error("--force goes with --export");
  // Every core the process may use (taskset, a container's CPU set, its CPU time limit), at most
  // --threads' 256. A run too small to split any loop is not worth reading the time limit for.
  if (!o.threads) {
    o.config.threads = std::min(
        256, too_small_for_threads(o.config) ? attn::affinity_cpus() : attn::usable_cpus());
  } else {
    o.config.threads = *o.threads;
  }
  // What the chosen output writes per value, for the memory estimate.
  o.config.output_cost = o.export_dir ? OutputCost{} : output_cost(o.format);
  if (o.explain) parse_cell(*o.explain);
  if (o.explain_grad) parse_cell(*o.explain_grad, "--explain-grad");
  return o.config;
}

std::string time_left(double seconds) {
  constexpr double kMost = 999.0 * 3600.0;  // beyond it, a rate that barely moved says little
  if (!(seconds < kMost)) return "more than 999 h left";
  if (seconds < 59.5) {
    return fmt::format("about {} s left", std::max(1, static_cast<int>(std::lround(seconds))));
  }
  const auto minutes = static_cast<long>(std::lround(seconds / 60.0));
  if (minutes < 60) return fmt::format("about {} min left", minutes);
  return fmt::format("about {} h {:02} min left", minutes / 60, minutes % 60);
}

std::string progress_line(const std::string& what, double elapsed, std::optional<double> left,
                          std::size_t width) {
  const std::string rest = left ? ", " + time_left(*left) : std::string();
  std::string line = fmt::format("attn-trace: {} ({:.1f} s{})", what, elapsed, rest);
  if (width == 0 || line.size() < width) return line;
  if (left) {
    line = fmt::format("attn-trace: {} ({})", what, rest.substr(2));
    if (line.size() >= width) line = fmt::format("{} ({})", what, rest.substr(2));
  }
  if (line.size() >= width) line.resize(width - 1);
  return line;
}

namespace {

// The progress line: after a second, what is being computed and about how long the rest will
// take, at most ten times a second. The time left assumes that the rest of the plan's work
// (planned_work) goes at the rate of the work done since the first step was recorded: what comes
// before it (reading and tokenizing the input, the memory made ready) is done once.
class Progress {
 public:
  // A model's heads are numbered from 0 (layer L, head H), the lesson's from 1 (head h/H).
  // The line fits stderr's terminal, when it is one: a line that wrapped would not be cleared.
  explicit Progress(const TraceConfig& config)
      : heads_(config.heads), layer_(config.model ? std::optional(config.layer) : std::nullopt) {
    winsize size{};
    if (isatty(STDERR_FILENO) && ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0) width_ = size.ws_col;
  }
  void operator()(const Step& s, double done) {
    const auto now = std::chrono::steady_clock::now();
    if (!first_) first_ = {now, done};
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0 || std::chrono::duration<double>(now - shown_).count() < 0.1) return;
    shown_ = now;
    std::string where;
    if (s.batch) where += fmt::format("sentence {}, ", *s.batch + 1);
    if (s.head && layer_) where += fmt::format("layer {}, head {}, ", *layer_, *s.head);
    if (s.head && !layer_) where += fmt::format("head {}/{}, ", *s.head + 1, heads_);
    const std::int64_t rows = s.shape.size() >= 2 ? s.shape[s.shape.size() - 2] : 0;
    const std::string rows_done =
        s.rows_done < rows ? fmt::format("rows {}/{}", s.rows_done, rows) : std::string("done");
    const double since_first = std::chrono::duration<double>(now - first_->first).count();
    const std::optional<double> left =
        done > first_->second && done < 1.0
            ? std::optional(since_first * (1.0 - done) / (done - first_->second))
            : std::nullopt;
    const std::string line =
        progress_line(fmt::format("{}{} {}", where, s.id, rows_done), elapsed, left, width_);
    std::fprintf(stderr, "\r\x1b[K%s", line.c_str());
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
  std::optional<std::int64_t> layer_;
  std::size_t width_ = 0;  // 0: not a terminal, any length
  // When the first step was recorded, and the share of the work then done.
  std::optional<std::pair<std::chrono::steady_clock::time_point, double>> first_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_{};
  bool printed_ = false;
};

// The run's watchers: the options checked against the plan before anything is computed, and
// the progress line, when one is shown.
std::shared_ptr<Progress> watch(const Options& o, TraceConfig& config) {
  config.on_plan = [&o](const PlannedRun& run) { check_against_plan(o, run); };
  auto progress = std::make_shared<Progress>(config);
  if (o.progress == ProgressChoice::kAlways ||
      (o.progress == ProgressChoice::kAuto && o.stderr_terminal)) {
    config.on_record = [progress](const Step& s, double done) { (*progress)(s, done); };
  }
  return progress;
}

// A streamed summary: its head, then the lines and the attention sections made as the steps
// came, with one copy of them, each part freed once it is in.
std::string streamed_summary(const Trace& trace, std::string& lines, std::string& attention) {
  std::string out = summary_head(trace);
  out.reserve(out.size() + lines.size() + attention.size());
  out += lines;
  std::string().swap(lines);
  out += attention;
  std::string().swap(attention);
  return out;
}

}  // namespace

Outcome run(Options& o) {
  const auto start = std::chrono::steady_clock::now();
  TraceConfig config = make_config(o);
  if (outline_only(o)) {
    // Shapes only, from the plan: nothing is embedded or computed, so no memory estimate
    // applies (the overview says what a whole trace would take, against the limit).
    Outcome outcome;
    outcome.out = render_overview(outline_trace(config), o.width);
    return outcome;
  }
  const std::shared_ptr<Progress> progress = watch(o, config);
  // The summary of a plain run reduces each step to a line as soon as it is final, and frees the
  // (T, T) scores head by head: a long input needs one head's scores in memory, not all. A
  // backward pass reads every head's weights again, so it frees only the scores nothing reads.
  const bool stream_summary = o.format == OutputFormat::kSummary && !o.expect && !o.export_dir &&
                              !o.explain && !o.query && !o.explain_grad;
  std::string lines, attention;
  if (stream_summary) {
    config.release_scores = !config.backward;
    config.stream_scores = !config.backward;
    config.release_head_steps = !config.backward;
    config.release_unread = config.backward;
    config.on_step = [&](const Step& s) {
      if (!o.steps.empty() && !step_id_chosen(o.steps, s.id)) return;
      lines += summary_step_line(s, config.threads, &config);
      attention += summary_attention(s, kSummaryQueries, config.threads, &config);
    };
  }
  Trace trace = run_trace(config);
  progress->finish();
  const auto computed = std::chrono::steady_clock::now();
  // The HTML page shows the chosen steps itself: its workings need the whole trace.
  const bool html =
      o.format == OutputFormat::kHtml && !o.explain && !o.query && !o.export_dir && !o.explain_grad;
  if (!o.steps.empty() && !html) select_steps(trace, o.steps);

  Outcome outcome;
  if (o.explain_grad) {
    const auto [i, j] = parse_cell(*o.explain_grad, "--explain-grad");
    outcome.out = render_explain_grad(trace, i, j, o.text);
  } else if (o.explain) {
    const auto [i, j] = parse_cell(*o.explain);
    outcome.out = render_explain(trace, i, j, o.text);
  } else if (o.query) {
    outcome.out =
        render_query_path(trace, *o.query, o.key.value_or(default_path_key(trace)), o.text);
  } else if (o.export_dir) {
    outcome = write_export(trace, o);
  } else if (o.format == OutputFormat::kJson) {
    outcome.out = render_json(trace, o.text.describe);
  } else if (html) {
    outcome.out = render_html(trace, HtmlOptions{o.text.precision, o.steps});
  } else if (o.format == OutputFormat::kCsv) {
    outcome.out = render_csv(trace);
  } else if (o.format == OutputFormat::kMarkdown) {
    outcome.out = render_markdown(trace, o.text);
  } else if (o.format == OutputFormat::kSummary) {
    outcome.out = stream_summary ? streamed_summary(trace, lines, attention)
                                 : render_summary(trace, kSummaryQueries, config.threads);
  } else if (o.format == OutputFormat::kSvg) {
    outcome.out = render_svg(trace, SvgOptions{o.text.precision});
  } else if (o.format == OutputFormat::kHeatmap) {
    if (o.steps.empty()) {
      // ω, the scaled scores and the weights; the masked scores too when there is a mask.
      std::erase_if(trace.steps, [](const Step& s) { return !step_info(s.kind).heatmap; });
    }
    const HeatmapOptions options{color_mode(o), o.text.precision, o.heatmap_form, o.width,
                                 o.text.describe};
    if (o.step && o.interactive) {
      outcome.blocks = render_heatmap_blocks(trace, options);
    } else {
      outcome.out = render_heatmaps(trace, options);
    }
  } else if (o.step && o.interactive) {
    outcome.blocks = render_text_blocks(trace, o.text);
  } else {
    outcome.out = render_text(trace, o.text);
  }
  if (o.expect) {
    TraceDocument run_doc = trace_document(trace, "this run");
    TraceDocument expected = parse_trace_json(read_file(*o.expect), *o.expect);
    if (!o.steps.empty()) {
      // Only the steps this run shows (the HTML page's trace keeps them all for its workings).
      const auto not_shown = [&o](const DocumentStep& s) { return !step_id_chosen(o.steps, s.id); };
      std::erase_if(expected.steps, not_shown);
      std::erase_if(run_doc.steps, not_shown);
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
  Options unused;
  for (const OptionSpec& spec : diff_option_table()) {
    spec.add(diff, unused, command, spec.help)->type_name(spec.value);
  }
  take_last(diff);
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
