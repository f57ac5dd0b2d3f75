#pragma once

// --export DIR: one NumPy file per step and a manifest naming them.

#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct ExportFile {
  std::string name;   // a file name, no folder
  std::string bytes;  // its content
};

// One .npy per step, float32 in C order, named NN_ID[_headH][_sentenceB].npy (NN its place in
// the trace, from 01; a vector step is 1-D), then manifest.json (render_manifest). Every name
// is distinct.
std::vector<ExportFile> export_files(const Trace& trace);

}  // namespace attn
