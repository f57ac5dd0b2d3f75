#pragma once

// --export DIR: one NumPy file per step, the whole tensor of each step that has several slices,
// (with --format svg) an SVG figure of each step, and a manifest naming them; written as one
// set, staged beside DIR and swapped in whole.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/render_svg.hpp"
#include "attn/trace.hpp"

namespace attn {

// One file of an export.
struct ExportEntry {
  std::string name;                 // a file name, no folder
  std::vector<std::size_t> steps;   // the trace's steps it holds, in order: one for a slice
  std::vector<std::int64_t> shape;  // the array's shape in the file: (rows, cols), or (cols,)
                                    // for a vector step, or the step's tensor_shape when whole
  bool whole = true;                // the whole tensor of its step (false: one of its slices)
  std::string whole_file;           // for a slice (whole == false): the whole tensor's file
  std::string figure;  // with figures: the slice's SVG figure (its name with .svg), else empty
};

// The name of step number `number` (from 1) of `count`: NN_ID[_headH][_sentenceB].npy, NN
// zero-padded to the digits of `count` and at least 2, so that names sort in step order at any
// count; head and batch 0-based, printed from 1. A model's trace (`layer`) names the layer and
// numbers its heads from 0, as the checkpoint does: NN_ID_layerL_headH.npy.
std::string export_file_name(std::size_t number, std::size_t count, std::string_view id,
                             std::optional<int> head, std::optional<int> batch,
                             std::optional<std::int64_t> layer = std::nullopt);

// The files of an export, in the order of their names, without the manifest. Each step is one
// file, a 2-D slice (1-D for a vector step) named by export_file_name. A step whose tensor has
// several slices (heads of the split form, sentences of a batch) has one more file: the whole
// tensor, shaped as its tensor_shape ([B, H, T, T], ...), named after the step's first slice
// without the head and sentence that its dimensions hold (05_omega.npy beside
// 05_omega_head1.npy, ...). Every name is distinct, at most 255 bytes, and starts with a digit.
// With `figures`, each file of one slice (one step of the trace) names its figure: the same name
// ending in .svg (05_omega_head1.svg); a whole tensor has none (its slices' figures draw it).
std::vector<ExportEntry> export_plan(const Trace& trace, bool figures = false);

// The .npy bytes of one entry: float32 in C order, byte for byte as numpy.save writes them.
std::string export_npy(const Trace& trace, const ExportEntry& entry);

// The header of that file alone (numpy's format 1.0 for '<f4' and entry.shape): the values follow
// it as the steps hold them, little-endian, so a writer can take them from the trace uncopied.
std::string export_npy_header(const ExportEntry& entry);

// A file and its content.
struct ExportFile {
  std::string name;   // a file name, no folder
  std::string bytes;  // its content
};

// Every file of the export with its bytes, in order — each .npy followed by its figure (render_svg
// of its one step) when `figures` is given — then manifest.json (render_manifest).
std::vector<ExportFile> export_files(const Trace& trace,
                                     const std::optional<SvgOptions>& figures = std::nullopt);

// Writes the export of `trace` to the folder `dir`, as one set: every file and the manifest
// go into a new folder beside it (.NAME.tmp-XXXXXX in its parent, which is created if needed),
// which then takes DIR's place in one rename. DIR may be missing or empty; a folder that holds an
// earlier export (manifest.json of attn-trace's, and only the files it lists) is replaced with
// `force` — swapped with the new set in one rename (RENAME_EXCHANGE), the old set then removed.
// With `figures` (--format svg), each slice's SVG figure is written beside its .npy file, in the
// same set. Returns the names written, in export_files' order, manifest.json last.
// Throws Error naming DIR and what is allowed when DIR is something else (a file, a symbolic
// link, a folder that holds other files, an export without `force`), and naming the path and
// the system's reason when a step fails (a full disk, a file too large, no permission, a name
// too long). On any failure, DIR is as it was, and the staging folder and any parent folder
// this call created are removed.
std::vector<std::string> write_export(const Trace& trace, const std::filesystem::path& dir,
                                      bool force,
                                      const std::optional<SvgOptions>& figures = std::nullopt);

// For a signal handler (app/main.cpp installs one for SIGINT, SIGTERM and SIGHUP while
// exporting); async-signal-safe. While write_export stages its files, this removes the staging
// folder and the parent folders it created, and returns true: the handler then ends the process
// with the signal's default action. While it swaps the new set in (a few renames and the old
// set's removal), the signal is held instead and this returns false: write_export raises it
// again once DIR holds the whole new set. With no export under way, it returns true.
bool export_interrupted(int signal) noexcept;

}  // namespace attn
