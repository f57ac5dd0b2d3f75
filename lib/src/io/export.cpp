// --export's files: their names, the whole tensors beside the slices, and their .npy bytes.
// Writing them to a folder as one set is export_folder.cpp.
#include "attn/export.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <map>
#include <tuple>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "attn/render_json.hpp"

namespace attn {

namespace {

// The leading dimensions of a step's tensor that its slices run over: "B" and "H", which the
// trace puts first. The rest are the slice's own (two, or one for a vector).
std::size_t slice_dims(const Step& s) {
  std::size_t n = 0;
  while (n < s.shape_names.size() && (s.shape_names[n] == "B" || s.shape_names[n] == "H")) ++n;
  return n;
}

bool has_dim(const Step& s, std::string_view name) {
  for (std::size_t i = 0; i < slice_dims(s); ++i) {
    if (s.shape_names[i] == name) return true;
  }
  return false;
}

// The slice's place in its whole tensor: row-major over the leading dimensions (B, then H).
std::int64_t slice_position(const Step& s) {
  std::int64_t position = 0;
  for (std::size_t i = 0; i < slice_dims(s); ++i) {
    const std::optional<int> index = s.shape_names[i] == "B" ? s.batch : s.head;
    position = position * s.shape[i] + index.value_or(0);
  }
  return position;
}

std::int64_t slice_count(const Step& s) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < slice_dims(s); ++i) n *= s.shape[i];
  return n;
}

// A slice's own shape in its file: (rows, cols), or (cols,) for a vector.
std::vector<std::int64_t> slice_shape(const Step& s) {
  if (s.shape_names.size() - slice_dims(s) == 1) return {s.values.cols()};
  return {s.values.rows(), s.values.cols()};
}

// Appends the float32 values little-endian, as x86 holds them.
void append_values(std::string& out, const Matrix& m) {
  static_assert(std::endian::native == std::endian::little, ".npy '<f4' is little-endian");
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(m.size());
  const std::size_t at = out.size();
  out.resize(at + bytes);
  if (bytes != 0) std::memcpy(out.data() + at, m.data(), bytes);
}

}  // namespace

std::string export_file_name(std::size_t number, std::size_t count, std::string_view id,
                             std::optional<int> head, std::optional<int> batch,
                             std::optional<std::int64_t> layer) {
  const std::size_t digits = std::max<std::size_t>(2, std::to_string(count).size());
  std::string name = fmt::format("{:0{}}_{}", number, digits, id);
  if (head && layer) name += fmt::format("_layer{}_head{}", *layer, *head);
  if (head && !layer) name += fmt::format("_head{}", *head + 1);
  if (batch) name += fmt::format("_sentence{}", *batch + 1);
  return name + ".npy";
}

std::vector<ExportEntry> export_plan(const Trace& trace, bool figures) {
  const std::size_t count = trace.steps.size();
  const std::optional<std::int64_t> layer =
      trace.config.model ? std::optional(trace.config.layer) : std::nullopt;
  // Slices of one tensor: the same id, and the same head and sentence where the tensor's
  // dimensions do not hold them (the wrapper form's heads are separate tensors).
  struct Group {
    std::vector<std::size_t> members;  // in step order
    std::vector<std::size_t> ordered;  // in the tensor's order, when it is complete
    std::string whole_name;            // when it is complete: several slices, each there once
  };
  using Key = std::tuple<std::string, int, int>;
  std::map<Key, Group> groups;
  std::vector<Group*> group_of(count);
  for (std::size_t i = 0; i < count; ++i) {
    const Step& s = trace.steps[i];
    const Key key{s.id, has_dim(s, "H") ? -1 : s.head.value_or(-1),
                  has_dim(s, "B") ? -1 : s.batch.value_or(-1)};
    group_of[i] = &groups[key];
    group_of[i]->members.push_back(i);
  }
  for (auto& [key, g] : groups) {
    const Step& s = trace.steps[g.members.front()];
    const std::size_t n = g.members.size();
    bool complete = n > 1 && static_cast<std::int64_t>(n) == slice_count(s);
    std::vector<std::size_t> ordered(n, count);
    for (std::size_t j = 0; complete && j < n; ++j) {
      const Step& t = trace.steps[g.members[j]];
      const std::int64_t position = slice_position(t);
      complete = t.shape == s.shape && t.shape_names == s.shape_names &&
                 t.values.rows() == s.values.rows() && t.values.cols() == s.values.cols() &&
                 position >= 0 && position < static_cast<std::int64_t>(n) &&
                 ordered[static_cast<std::size_t>(position)] == count;
      if (complete) ordered[static_cast<std::size_t>(position)] = g.members[j];
    }
    if (!complete) continue;
    g.ordered = std::move(ordered);
    g.whole_name = export_file_name(g.members.front() + 1, count, s.id,
                                    has_dim(s, "H") ? std::nullopt : s.head,
                                    has_dim(s, "B") ? std::nullopt : s.batch, layer);
  }

  std::vector<ExportEntry> plan;
  for (std::size_t i = 0; i < count; ++i) {
    const Step& s = trace.steps[i];
    const Group& g = *group_of[i];
    ExportEntry slice{export_file_name(i + 1, count, s.id, s.head, s.batch, layer),
                      {i},
                      slice_shape(s),
                      true,
                      "",
                      ""};
    if (!g.whole_name.empty()) {
      // The whole tensor just before its first slice, whose number it shares.
      if (g.members.front() == i) plan.push_back({g.whole_name, g.ordered, s.shape, true, "", ""});
      slice.whole = false;
      slice.whole_file = g.whole_name;
    } else {
      slice.whole = g.members.size() == 1 && slice_count(s) == 1;
    }
    if (figures) slice.figure = slice.name.substr(0, slice.name.size() - 4) + ".svg";
    plan.push_back(std::move(slice));
  }
  return plan;
}

std::string export_npy_header(const ExportEntry& entry) { return npy_header(entry.shape); }

std::string export_npy(const Trace& trace, const ExportEntry& entry) {
  std::string out = npy_header(entry.shape);
  std::size_t values = 0;
  for (std::size_t i : entry.steps)
    values += static_cast<std::size_t>(trace.steps.at(i).values.size());
  out.reserve(out.size() + sizeof(float) * values);
  for (std::size_t i : entry.steps) append_values(out, trace.steps.at(i).values);
  return out;
}

std::vector<ExportFile> export_files(const Trace& trace, const std::optional<SvgOptions>& figures) {
  const std::vector<ExportEntry> plan = export_plan(trace, figures.has_value());
  std::vector<ExportFile> files;
  for (const ExportEntry& e : plan) {
    files.push_back({e.name, export_npy(trace, e)});
    if (!e.figure.empty()) files.push_back({e.figure, render_svg(trace, e.steps, *figures)});
  }
  files.push_back({"manifest.json", render_manifest(trace, plan)});
  return files;
}

}  // namespace attn
