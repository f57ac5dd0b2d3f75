#pragma once

// The trace as one JSON document, for scripts: every value round-trips to the same float32.
// docs/formats.md documents the schema with an example made by the binary.

#include <string>
#include <vector>

#include "attn/export.hpp"
#include "attn/trace.hpp"

namespace attn {

// The JSON schema's version: it changes when a field changes meaning or goes away.
inline constexpr int kJsonSchemaVersion = 1;

// {"tool", "version", "schema_version", "settings", "dictionary", "inputs", "cross", "steps"}.
// Each step: id, title, equation, head and batch (1-based, or null), shape (the values' [rows,
// cols]), tensor_shape ({names, sizes} of the whole tensor), row_labels, col_labels, note,
// values (rows of numbers, each the shortest decimal that reads back as the same float32;
// "nan", "inf" and "-inf" as strings). With `describe` (--describe), each step also has
// "description", before its values: what it computes and why, as text shows it.
std::string render_json(const Trace& trace, bool describe = false);
// The same text in parts of about a MiB, one after another (a long trace's is not held twice).
std::vector<std::string> render_json_parts(const Trace& trace, bool describe = false);

// The manifest of an export: everything a script needs besides the .npy files. {"tool",
// "version", "schema_version", "settings", "dictionary", "inputs", "cross"} as render_json has
// them, then "files": one entry per file of `files`, in order: "file" (its name), "dtype"
// ("<f4"), "array_shape" (the array's shape in the file), "whole" (true when the file holds the
// step's whole tensor), "whole_file" (for a slice of a tensor of several slices: the whole
// tensor's file, else null), "figure" (only in an export with figures, --format svg: the file
// of the slice's SVG figure), then the step as render_json describes it, without values. The
// entry of a whole tensor of several slices has "slices" (their files, in the tensor's order)
// and the step's id, title, equation, head, batch, tensor_shape and note, but no slice's
// "shape" or labels. Requires: every entry's steps are steps of `trace` (export_plan).
std::string render_manifest(const Trace& trace, const std::vector<ExportEntry>& files);

// A float32 as the shortest decimal that reads back as the same float ("0.33737019", "0",
// "1e-05"), a negative zero as "-0.0" (which a reader that tells integers from decimals keeps
// negative); non-finite values as "nan", "inf", "-inf".
std::string float_text(float value);

}  // namespace attn
