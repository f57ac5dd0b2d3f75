#pragma once

// Comparing two traces cell by cell, as `attn-trace diff A.json B.json` and `--expect` do.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "attn/matrix.hpp"
#include "attn/trace.hpp"

namespace attn {

// One step of a trace read back from JSON.
struct DocumentStep {
  std::string id;
  std::optional<int> head;   // 1-based, as the JSON has it
  std::optional<int> batch;  // 1-based
  std::vector<std::string> row_labels, col_labels;
  Matrix values;
};

// A trace read back from render_json's output.
struct TraceDocument {
  std::string source;  // the file name, for the report
  std::vector<DocumentStep> steps;
};

// A trace as a document, as parse_trace_json(render_json(trace)) reads it back: the same steps,
// labels and float32 values, without the text in between. `source` names it in reports.
TraceDocument trace_document(const Trace& trace, const std::string& source);

// Reads a JSON trace. Throws Error naming `source` when the text is not JSON, not an
// attn-trace trace, of another schema version, or a step is malformed (naming the step).
// The text and its document are kept within `memory_limit` bytes (Error beyond, with
// `limit_what`: what the limit is and what to do, and `limit_setting`, the option that raises it).
TraceDocument parse_trace_json(std::string_view text, const std::string& source,
                               std::uint64_t memory_limit = ~std::uint64_t{0},
                               std::string_view limit_what = "",
                               Setting limit_setting = Setting::kNone);

struct DiffOptions {
  double atol = 1e-8;  // absolute tolerance, as numpy.isclose
  double rtol = 1e-5;  // relative tolerance, of the second trace's value
};

struct DiffResult {
  bool equal = true;   // every step in both, same shapes, every cell within tolerance
  std::string report;  // one line per differing cell or step, then a summary line
};

// Compares the steps of `a` and `b` matched by (id, head, batch). Cells a and b are equal when
// |a − b| <= atol + rtol · |b|, or both are nan, or both are the same infinity.
DiffResult diff_traces(const TraceDocument& a, const TraceDocument& b, const DiffOptions& options);

}  // namespace attn
