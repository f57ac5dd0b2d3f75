#include "attn/export.hpp"

#include <fmt/format.h>

#include "attn/io.hpp"
#include "attn/render_json.hpp"

namespace attn {

std::vector<ExportFile> export_files(const Trace& trace) {
  std::vector<ExportFile> files;
  std::vector<std::string> names;
  const int digits = trace.steps.size() >= 100 ? 3 : 2;
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const Step& s = trace.steps[i];
    std::string name = fmt::format("{:0{}}_{}", i + 1, digits, s.id);
    if (s.head) name += fmt::format("_head{}", *s.head + 1);
    if (s.batch) name += fmt::format("_sentence{}", *s.batch + 1);
    name += ".npy";
    names.push_back(name);
    files.push_back({name, npy_bytes(s.values, s.shape_names.size() == 1)});
  }
  files.push_back({"manifest.json", render_manifest(trace, names)});
  return files;
}

}  // namespace attn
