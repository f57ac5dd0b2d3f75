#pragma once

// The trace as one JSON document, for scripts: every value round-trips to the same float32.
// docs/formats.md documents the schema with an example made by the binary.

#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

// The JSON schema's version: it changes when a field changes meaning or goes away.
inline constexpr int kJsonSchemaVersion = 1;

// {"tool", "version", "schema_version", "settings", "dictionary", "inputs", "cross", "steps"}.
// Each step: id, title, equation, head and batch (1-based, or null), shape (the values' [rows,
// cols]), tensor_shape ({names, sizes} of the whole tensor), row_labels, col_labels, note,
// values (rows of numbers, each the shortest decimal that reads back as the same float32;
// "nan", "inf" and "-inf" as strings).
std::string render_json(const Trace& trace);

// The manifest of an export: {"tool", "version", "schema_version", "settings", "files"}, one
// entry per step naming its file and describing the step as render_json does, without values.
// Requires: files.size() == trace.steps.size().
std::string render_manifest(const Trace& trace, const std::vector<std::string>& files);

// A float32 as the shortest decimal that reads back as the same float ("0.33737019", "-0",
// "1e-05"); non-finite values as "nan", "inf", "-inf".
std::string float_text(float value);

}  // namespace attn
