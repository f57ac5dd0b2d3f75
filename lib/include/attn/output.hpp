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
// output is held whole until it is written, so that an error leaves no half-written output.
struct OutputCost {
  double per_value = 0.0;  // bytes per value of the trace
  double per_step = 0.0;   // a step's heading, shape, equation and notes
  // Times each row's or key column's label (a token) is written per step; a CSV writes the row's
  // and the column's label in every cell instead (labels_per_cell).
  double label_copies = 0.0;
  bool labels_per_cell = false;
};

// Per value: 12 bytes for text, 14 for JSON, 60 for CSV (a row per cell, with its labels), 40
// for heatmaps (colour escapes), none for the summary, which reduces each step to a line, none
// for the overview, which computes no step, 160 for an SVG figure (a rectangle and a text
// element per cell), and 30 for the HTML page (each value exact in its data, and in a table cell
// or a working). Per step, measured as the peak memory of batches of short sentences beyond the
// steps' own: 448 bytes for the summary (its line), 832 for text, 448 for Markdown, 1 KiB for
// JSON, 384 for heatmaps, 6.5 KiB for the HTML page (a section, and its copies as the page is
// put together), 128 for CSV. Copies of each label, measured on one word of 5 MB: 1.5 for the
// summary (some of the attention's rows), 5 for text, 3 for JSON, Markdown and CSV (besides
// the CSV's label in every cell), 2 for heatmaps and SVG, 6 for the HTML page. An output string
// grows by doubling, and a step is rendered before it is appended, so a label written once is
// held more than once at the peak.
OutputCost output_cost(OutputFormat format);

}  // namespace attn
