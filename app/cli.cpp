#include "cli.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/io.hpp"
#include "attn/memory.hpp"
#include "attn/render_explain.hpp"
#include "attn/render_explain_grad.hpp"
#include "attn/render_heatmap.hpp"
#include "attn/render_html.hpp"
#include "attn/render_json.hpp"
#include "attn/render_overview.hpp"
#include "attn/render_summary.hpp"
#include "attn/render_svg.hpp"
#include "attn/render_table.hpp"
#include "attn/tokenizer.hpp"
#include "progress.hpp"

namespace attn::cli {

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

namespace {

// --export: every file is checked before any is written, and each is written atomically.
Outcome write_export(const Trace& trace, const Options& o) {
  const std::filesystem::path dir = *o.export_dir;
  Outcome outcome;
  std::optional<SvgOptions> figures;
  if (o.format == OutputFormat::kSvg) figures = SvgOptions{o.text.precision};
  // Each path on a line of its own, as an error message shows a path: a control character or a
  // byte that is not UTF-8 in the folder's name as \xNN, so that it cannot drive the terminal or
  // split the line; any other path byte for byte.
  for (const std::string& name : attn::write_export(trace, dir, o.force, figures)) {
    outcome.out += escape_controls((dir / name).string(), EscapeStyle::kMessage) + "\n";
  }
  outcome.exported = dir.string();
  return outcome;
}

// What the options ask of the trace, against its plan: the steps they keep and the tokens they
// name. Run before anything is embedded or computed (TraceConfig::on_plan), so that a mistyped
// id or number on a long input is refused at once, with the error that the trace would give.
void check_against_plan(const Options& o, const PlannedRun& run) {
  if (!o.steps.empty()) require_step_ids(o.steps, planned_step_ids(run.steps));
  if (o.format == OutputFormat::kSvg && !o.export_dir && o.steps.size() == 1) {
    // A decoding step's id without _t<t> picks the step of every token.
    std::vector<std::string> picked;
    for (const std::string& id : planned_step_ids(run.steps)) {
      if (step_id_chosen(o.steps, id)) picked.push_back(id);
    }
    if (picked.size() > 1) {
      throw Error(fmt::format(
          "--format svg draws one step: --steps {} picks {}, {} to {}: choose one, like --steps {}",
          o.steps[0], picked.size(), picked.front(), picked.back(), picked.front()));
    }
  }
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

// The summary of a plain run reduces each step to a line as soon as it is final, and frees the
// (T, T) scores head by head: a long input needs one head's scores in memory, not all. A
// backward pass reads every head's weights again, so it frees only the scores nothing reads.
// The chosen steps' lines and attention sections go to `lines` and `attention`.
void stream_into(const Options& o, TraceConfig& config, std::string& lines,
                 std::string& attention) {
  config.release_scores = !config.backward;
  config.stream_scores = !config.backward;
  config.release_head_steps = !config.backward;
  config.release_unread = config.backward;
  config.on_step = [&o, &config, &lines, &attention](const Step& s) {
    if (!o.steps.empty() && !step_id_chosen(o.steps, s.id)) return;
    lines += summary_step_line(s, config.threads, &config);
    attention += summary_attention(s, kSummaryQueries, config.threads, &config);
  };
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
  // A view of the trace's steps, not --query, --explain or --explain-grad, which read their own.
  const bool steps_view = !o.explain && !o.query && !o.explain_grad;
  // The HTML page shows the chosen steps itself: its workings need the whole trace.
  const bool html = steps_view && o.format == OutputFormat::kHtml && !o.export_dir;
  // The steps after the last one chosen are not computed.
  if (steps_view && !html) config.shown_steps = o.steps;
  const bool stream_summary =
      steps_view && o.format == OutputFormat::kSummary && !o.expect && !o.export_dir;
  std::string lines, attention;
  if (stream_summary) stream_into(o, config, lines, attention);
  Trace trace = run_trace(config);
  progress->finish();
  const auto computed = std::chrono::steady_clock::now();
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
    outcome.parts = render_json_parts(trace, o.text.describe);
  } else if (html) {
    outcome.out = render_html(trace, HtmlOptions{o.text.precision, o.steps});
  } else if (o.format == OutputFormat::kCsv) {
    outcome.parts = render_csv_parts(trace);
  } else if (o.format == OutputFormat::kMarkdown) {
    outcome.parts = render_markdown_parts(trace, o.text);
  } else if (o.format == OutputFormat::kSummary) {
    outcome.out = stream_summary ? streamed_summary(trace, lines, attention)
                                 : render_summary(trace, kSummaryQueries, config.threads);
  } else if (o.format == OutputFormat::kSvg) {
    outcome.parts = render_svg_parts(trace, SvgOptions{o.text.precision});
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
      // render_heatmaps's text, a heatmap at a time: one blank line between two.
      outcome.parts = render_heatmap_blocks(trace, options);
      for (std::size_t i = 1; i < outcome.parts.size(); ++i) outcome.parts[i].insert(0, "\n");
    }
  } else if (o.step && o.interactive) {
    outcome.blocks = render_text_blocks(trace, o.text);
  } else {
    outcome.parts = render_text_blocks(trace, o.text);  // render_text's text, a step at a time
  }
  if (o.expect) {
    TraceDocument run_doc = trace_document(trace, "this run");
    TraceDocument expected = parse_trace_json(
        read_file(*o.expect, o.config.max_memory), *o.expect, o.config.max_memory,
        "the memory limit: give a smaller trace, or raise the limit", Setting::kMaxMemory);
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

Outcome run_diff(const DiffCommand& command) {
  if (command.a == "-" && command.b == "-") {
    throw Error(
        "diff reads one trace from standard input ('-'), not both: give a file for the "
        "other");
  }
  // "-" is standard input, as for a sentence; a file named - is ./-. Two arguments that are not
  // files, neither named .json, are most likely a sentence that begins with the word diff.
  const bool words = !command.a.ends_with(".json") && !command.b.ends_with(".json");
  // The traces' documents within the memory this machine has for them (diff takes no limit of
  // its own): a trace of many small values takes some 30 bytes of memory a byte as a document.
  const std::optional<MachineMemory> machine = machine_memory();
  const std::uint64_t memory = machine ? machine->bytes : ~std::uint64_t{0};
  const std::string_view over = "the memory this machine has available: give a smaller trace";
  auto read = [&](const std::string& path) {
    if (path == "-") {
      return parse_trace_json(read_standard_input(), "standard input", memory, over);
    }
    std::error_code missing;
    if (words && !std::filesystem::exists(path, missing)) {
      throw Error(fmt::format(
          "diff compares two JSON traces, and there is no file {}: to trace a sentence that "
          "begins with the word diff, put -- before it: attn-trace -- diff {} {}",
          path, command.a, command.b));
    }
    return parse_trace_json(read_file(path), path, memory, over);
  };
  const TraceDocument a = read(command.a);
  const TraceDocument b = read(command.b);
  const DiffResult d = diff_traces(a, b, command.tolerance);
  Outcome outcome;
  outcome.out = d.report;
  outcome.code = d.equal ? kExitOk : kExitDifferent;
  return outcome;
}

}  // namespace attn::cli
