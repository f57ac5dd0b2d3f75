#pragma once

// The output formats of a trace: which renderer draws it, and what each writes per value (for
// the memory estimate, TraceConfig::output_bytes_per_value).

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

// About how many bytes the format writes per value of the trace: 12 for text, 14 for JSON,
// 60 for CSV (a row per cell, with its labels), 40 for heatmaps (colour escapes), none for the
// summary, which reduces each step to a line, none for the overview, which computes no step, 160
// for an SVG figure (a rectangle and a text element per cell), and 30 for the HTML page (each
// value exact in its data, and in a table cell or a working).
double bytes_per_value(OutputFormat format);

}  // namespace attn
