#pragma once

// The command line: options -> a TraceConfig -> the library -> stdout.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/diff.hpp"
#include "attn/error.hpp"
#include "attn/names.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn::cli {

// Exit codes, as docs/cli.md documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitDifferent = 1;  // diff or --expect found a difference
inline constexpr int kExitInvalid = 2;    // invalid input or usage, or output not written

// What a run prints and returns.
struct Outcome {
  std::string out;                  // for stdout
  std::vector<std::string> parts;   // for stdout before `out`, one after another: a long trace's
                                    // steps, not joined into one more copy of the whole
  std::vector<std::string> blocks;  // --step: the text in steps, when stdout may pause
  std::string err;                  // for stderr (a report, not an error)
  int code = kExitOk;
  std::string exported;  // --export: the folder now holding the export, which `out` lists
};

// The views and modes that only the command line has.
enum class ColorChoice { kAuto, kNever, k256, k24bit };
enum class ProgressChoice { kAuto, kAlways, kNever };
enum class TokenizerChoice { kWords, kGpt2 };  // --tokenizer

struct Options {
  std::vector<std::string> words;      // the positional arguments: one sentence, quoted or not
  std::vector<std::string> sentences;  // -s/--sentence: one batch item each
  std::optional<std::string> batch;    // --batch FILE: one sentence per line ("-": stdin)
  std::optional<std::int64_t> d_out;   // sets d_kq and d_v
  std::optional<std::string> cross;    // the key and value sentence
  TraceConfig config;
  TextOptions text;
  std::optional<std::int64_t> query;  // 1-based
  std::optional<std::int64_t> key;    // 1-based; the key of the written-out dot product
  OutputFormat format = OutputFormat::kText;
  std::optional<std::string> file;                  // the sentence, from a file
  std::optional<int> threads;                       // default: every core the process may use
  bool timings = false;                             // each step's time on stderr
  ProgressChoice progress = ProgressChoice::kAuto;  // kAuto: when stderr is a terminal
  bool stderr_terminal = false;                     // stderr is a terminal (set by main)
  ColorChoice color = ColorChoice::kAuto;           // heatmaps
  HeatmapForm heatmap_form = HeatmapForm::kAuto;    // heatmaps: values, blocks, or auto
  std::optional<std::string> explain;               // "I,J": one attention weight explained
  bool step = false;                                // pause after each step on a terminal
  bool interactive = false;                         // stdin and stdout are terminals (set by main)
  bool color_terminal = false;                      // stdout is a terminal and NO_COLOR is not set
  bool truecolor = false;                           // COLORTERM says 24-bit colour works
  std::size_t width = 80;  // columns to fit: COLUMNS, else the terminal's, else 80 (set by main)
  std::vector<std::string> steps;  // --steps: ids to keep
  std::optional<std::string> export_dir;
  bool force = false;
  std::optional<std::string> expect;  // a JSON trace to compare the run with
  DiffOptions tolerance;
  std::vector<std::string> given;  // the long names of the options given (set by parse)
  // Bring your own numbers: matrix files.
  std::optional<std::string> x, embedding, w_query, w_key, w_value, w_out, b_out;
  // The backward pass: the mse loss's target file; one cell of dL/dω explained ("I,J").
  std::optional<std::string> target, explain_grad;
  TokenizerChoice tokenizer = TokenizerChoice::kWords;  // the walkthrough's words, or GPT-2's
  // A GPT-2 checkpoint (model.safetensors), and its head count where it has no config.json.
  std::optional<std::string> model;
  std::optional<std::int64_t> n_head;
};

// `attn-trace diff A.json B.json`.
struct DiffCommand {
  std::string a, b;
  DiffOptions tolerance;
};

// Parses the command line into `app` (made by add_commands): every argument checked, in the
// user's terms, before CLI11 sees it (an option's closest spelling suggested, a sentence that
// begins with '-' sent behind `--`), CLI11's own errors reworded, no option given twice, the
// options before `diff` applied to it or refused, and `options.given` set. Throws attn::Error
// for a usage error, and lets CLI::CallForHelp and CLI::CallForVersion through.
void parse(CLI::App& app, Options& options, DiffCommand& diff_command, int argc,
           const char* const* argv);

// How the command line changes a setting that a library error names: " with --max-memory".
std::string remedy(Setting setting);

// Adds every option of the tool to `app`, writing into `options`; with `named`, only the
// positional arguments and the options whose short or long name is in it.
void add_options(CLI::App& app, Options& options,
                 const std::vector<std::string_view>* named = nullptr);

// parse() on an app with only the options that the arguments name, where it succeeds: making
// every option is most of a start. Returns false, with `options` as they were, where the
// arguments hold "diff", --help, -h or --version, or where the parse fails: the caller then
// parses with every option (add_commands), for the same error. The options named are all there,
// so CLI11 reads each argument as it does with every option.
bool parse_named(Options& options, int argc, const char* const* argv);

// Refuses an option given more than once. Throws attn::Error naming it.
void check_repeats(const CLI::App& app);

// The parsed options as a TraceConfig: matrix files loaded, names parsed, combinations checked
// (not yet resolve()d). Throws attn::Error for bad input.
TraceConfig make_config(Options& options);

// Whether the run shows the overview alone: its shapes from the plan, nothing embedded or
// computed.
bool outline_only(const Options& options);

// "I,J" -> (I, J), the cell that --explain (or `option`) names, both at least 1. Throws
// attn::Error naming `option` for anything else.
std::pair<std::int64_t, std::int64_t> parse_cell(const std::string& text,
                                                 std::string_view option = "--explain");

// Runs the parsed options. Throws attn::Error for bad input.
Outcome run(Options& options);

// The progress line's estimate of the time left: "about 12 s left" (at least 1 s), "about 3 min
// left" from a minute on, "about 2 h 05 min left" from an hour on, rounded to the nearest unit;
// "more than 999 h left" from 999 hours on (and for an infinity or nan).
std::string time_left(double seconds);

// The progress line, without the control characters around it: "attn-trace: WHAT (E s, about L
// left)" (E the seconds elapsed, L the time left if known). Fitted to `width` columns (0: any)
// when longer: the time left without the time elapsed, then without "attn-trace: ", then cut to
// width - 1 columns, so that the terminal never wraps it. WHAT is ASCII.
std::string progress_line(const std::string& what, double elapsed, std::optional<double> left,
                          std::size_t width);

// The whole command line on `app`: its description, --version, the footer, every option
// (add_options) and the diff subcommand (add_diff_options), which it returns.
CLI::App* add_commands(CLI::App& app, Options& options, DiffCommand& diff_command);

// Adds the diff subcommand's options to `diff`.
void add_diff_options(CLI::App& diff, DiffCommand& command);

// Compares the two traces: exit 0 when equal within tolerance, 1 when different. Throws
// attn::Error when a file is unreadable or not a trace.
Outcome run_diff(const DiffCommand& command);

}  // namespace attn::cli

namespace attn {
template <>
std::span<const EnumName<cli::ColorChoice>> names_of<cli::ColorChoice>();
template <>
std::span<const EnumName<cli::ProgressChoice>> names_of<cli::ProgressChoice>();
template <>
std::span<const EnumName<HeatmapForm>> names_of<HeatmapForm>();
template <>
std::span<const EnumName<cli::TokenizerChoice>> names_of<cli::TokenizerChoice>();
}  // namespace attn
