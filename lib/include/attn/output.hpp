#pragma once

// The output formats of a trace: which renderer draws it, and what each writes per value (for
// the memory estimate, TraceConfig::output_cost).

namespace attn {

enum class OutputFormat {
  kText,      // PyTorch's printing (render_text)
  kJson,      // every value exact (render_json)
  kCsv,       // a row per cell (render_csv)
  kMarkdown,  // tables for handouts (render_markdown)
  kHeatmap,   // coloured grids (render_heatmaps)
  kSummary,   // statistics and checksums per step (render_summary), streamed
  kOverview,  // the pipeline's matrices and shapes on one screen (render_overview), not computed
  kSvg,       // one step as a standalone figure (render_svg)
  kHtml,      // a self-contained lesson page (render_html)
};

// About what a format writes, for the memory estimate (TraceConfig::output_cost): the run's
// output is held whole until it is written, so that an error leaves no half-written output (in
// parts of about a MiB for text, JSON, CSV, Markdown and heatmaps, never joined into one copy).
struct OutputCost {
  double per_value = 0.0;  // bytes per value of the trace
  // Bytes per value of the largest step written, where the run writes the chosen steps (--steps):
  // a whole trace's per_value counts the working copies of one step among many. 0: per_value.
  double per_value_alone = 0.0;
  double per_step = 0.0;  // a step's heading, shape, equation and notes
  // Times each row's or key column's label (a token) is written per step; a CSV writes the row's
  // and the column's label in every cell instead (labels_per_cell).
  double label_copies = 0.0;
  bool labels_per_cell = false;
  // A format that draws a figure at a time (SVG): bytes per value of the largest figure, its text
  // held until written. A figure is every slice of one step (figure_of_step: --format svg's one
  // figure), or one slice (an export's figure beside each slice's file).
  double per_figure_value = 0.0;
  bool figure_of_step = false;
};

// Per value, the peak memory of whole runs beyond the values' own 4 bytes, measured for each
// format on runs of 400 to 1,500 tokens, one to four heads, causal and not, with the backward
// pass and without (peak RSS, the largest per value, and a tenth more): text 30 bytes and 1.5
// more for each decimal of `precision` (the steps' text, held until written, and the copies of
// a step's text as it grows), Markdown 26 and 1.5 a decimal, JSON 30, CSV 60 (a row per cell,
// with its labels), heatmaps 18 (colour escapes, a heatmap at a time), the HTML page 80 (each value
// exact in its data, and in a table cell or a working, and the page put together from its parts),
// none for the summary, which reduces each step to a line, and none for the overview, which
// computes no step. A run that writes one large step (--steps) holds it two or three times as it
// is written (each value's text, the rows, the step's text): one (T, T) step alone, at 1,024 to
// 3,000 tokens, measured 21 bytes a value at precision 0, 42–50 at 4 and 55 at 8 as text, and
// 33–35 as a heatmap; they count, for the largest step written, 45 and 3 more a decimal, and 40. An
// SVG figure is written in parts as it is drawn, one figure at a time: 125 bytes per value of the
// largest figure (a rectangle per cell: 74–75 bytes a cell in figures of 600 to 2,000 tokens, 113
// for a cell that is −inf or nan, drawn with a border; and a tenth more), none for the others. Per
// step, measured as the peak memory of batches of short sentences beyond the steps' own: 448 bytes
// for the summary (its line), 832 for text, 448 for Markdown, 1 KiB for JSON, 384 for heatmaps, 6.5
// KiB for the HTML page (a section, and its copies as the page is put together), 128 for CSV.
// Copies of each label, measured on one word of 5 MB: 1.5 for the summary (some of the
// attention's rows), 5 for text, 3 for JSON, Markdown and CSV (besides the CSV's label in every
// cell), 2 for heatmaps and SVG, 6 for the HTML page.
OutputCost output_cost(OutputFormat format, int precision = 4);

// What an export holds beyond the trace's values (its .npy files are written from them): its
// manifest, whole, and with `figures` an SVG figure of each slice, one at a time.
OutputCost export_cost(bool figures);

}  // namespace attn
