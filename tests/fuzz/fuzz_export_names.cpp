// Fuzzes the export's plan: the file names and the whole tensors of export_plan, with the .npy
// bytes and the manifest made from it. The input describes a made-up trace of tiny steps:
//
//   byte 0: sentences B (1..4); byte 1: heads H (1..4); byte 2: bit 0 the split form (whose
//   heads are one tensor's dimension H), then records of 3 bytes: the step's id (one of the
//   trace's ids), flags (bit 0 per sentence, bit 1 per head, bit 2 a vector, bit 3 leave out
//   the last slice, bit 4 the same id as the record before), and how many times the record
//   repeats (1..64), so that counts past 999 and 9999 are reached.
//
// Checks: every name distinct, a plain file name (no '/', at most 255 bytes, starting with a
// digit, ending in .npy); the names sort in the plan's order, and each step is one slice, in
// step order; a whole tensor comes before its slices, and each of its slices names it; each
// file's bytes are a .npy header and its values (2-D and 1-D files read back bit for bit); the
// manifest is JSON listing every file in order.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/io.hpp"
#include "attn/render_json.hpp"

namespace {

constexpr std::array<std::string_view, 16> kIds = {
    "embeddings",   "w_query",         "w_key",
    "w_value",      "queries",         "keys",
    "values",       "omega",           "mask",
    "masked_omega", "scaled_scores",   "attention_weights",
    "row_max",      "context_vectors", "context_concat",
    "b_out"};
constexpr std::size_t kMaxSteps = 12000;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

attn::Trace trace_of(const std::uint8_t* data, std::size_t size) {
  attn::Trace trace;
  if (size < 3) return trace;
  const int batch = 1 + data[0] % 4;
  const int heads = 1 + data[1] % 4;
  const bool split = (data[2] & 1) != 0;
  float value = 0.0f;
  std::string_view id = kIds[0];
  for (std::size_t at = 3; at + 3 <= size; at += 3) {
    const std::uint8_t flags = data[at + 1];
    if ((flags & 16) == 0) id = kIds[data[at] % kIds.size()];
    const bool per_sentence = (flags & 1) != 0 && batch > 1;
    const bool per_head = (flags & 2) != 0 && heads > 1;
    const bool vector = (flags & 4) != 0;
    const bool leave_one_out = (flags & 8) != 0;
    const int repeats = 1 + data[at + 2] % 64;
    for (int r = 0; r < repeats; ++r) {
      const int bs = per_sentence ? batch : 1;
      const int hs = per_head ? heads : 1;
      for (int b = 0; b < bs; ++b) {
        for (int h = 0; h < hs; ++h) {
          if (leave_one_out && b == bs - 1 && h == hs - 1 && bs * hs > 1) continue;
          if (trace.steps.size() == kMaxSteps) return trace;
          attn::Step s;
          s.id = std::string(id);
          if (per_sentence) {
            s.batch = b;
            s.shape_names.push_back("B");
            s.shape.push_back(batch);
          }
          if (per_head) {
            s.head = h;
            if (split) {
              s.shape_names.push_back("H");
              s.shape.push_back(heads);
            }
          }
          const Eigen::Index rows = vector ? 1 : 2;
          s.values = attn::Matrix(rows, 3);
          for (Eigen::Index i = 0; i < s.values.size(); ++i) s.values.data()[i] = value++;
          if (vector) {
            s.shape_names.push_back("d_out");
          } else {
            s.shape_names.insert(s.shape_names.end(), {"T", "d"});
            s.shape.push_back(rows);
          }
          s.shape.push_back(3);
          trace.steps.push_back(std::move(s));
        }
      }
    }
  }
  return trace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const attn::Trace trace = trace_of(data, size);
  const std::vector<attn::ExportEntry> plan = attn::export_plan(trace);

  std::vector<std::string> names;
  std::size_t next_step = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const attn::ExportEntry& e = plan[i];
    const std::string& n = e.name;
    check(!n.empty() && n.size() <= 255 && n.find('/') == std::string::npos &&
          n.find('\0') == std::string::npos && n.front() >= '0' && n.front() <= '9' &&
          n.ends_with(".npy"));
    names.push_back(n);
    check(!e.steps.empty());
    if (e.steps.size() == 1) {
      check(e.steps[0] == next_step++);  // each step one slice, in step order
      if (!e.whole_file.empty()) {
        check(!e.whole);
        const auto whole = std::find_if(plan.begin(), plan.begin() + static_cast<long>(i),
                                        [&](const attn::ExportEntry& w) {
                                          return w.name == e.whole_file && w.steps.size() > 1;
                                        });
        check(whole != plan.begin() + static_cast<long>(i));
        check(std::find(whole->steps.begin(), whole->steps.end(), e.steps[0]) !=
              whole->steps.end());
      }
    } else {
      check(e.whole && e.whole_file.empty());
    }
    // The bytes: a header, then every value of the entry's steps in order.
    const std::string bytes = attn::export_npy(trace, e);
    std::size_t values = 0;
    for (std::size_t s : e.steps) values += static_cast<std::size_t>(trace.steps[s].values.size());
    std::size_t product = 1;
    for (std::int64_t d : e.shape) product *= static_cast<std::size_t>(d);
    check(product == values);
    check(bytes.size() >= 128 && bytes.compare(0, 6, "\x93NUMPY") == 0 &&
          (bytes.size() - 4 * values) % 64 == 0);
    const float* first = &trace.steps[e.steps[0]].values.data()[0];
    check(std::memcmp(bytes.data() + bytes.size() - 4 * values, first, 4) == 0);
    if (e.shape.size() <= 2) {  // parse_npy reads 1-D and 2-D arrays: every value, in order
      const attn::LoadedMatrix back = attn::parse_npy(bytes, n);
      check(back.values.rows() == (e.shape.size() == 2 ? e.shape[0] : 1) &&
            back.values.cols() == e.shape.back());
      std::size_t at = 0;
      for (std::size_t s : e.steps) {
        const attn::Matrix& m = trace.steps[s].values;
        const std::size_t bytes_of_step = 4 * static_cast<std::size_t>(m.size());
        check(std::memcmp(back.values.data() + at, m.data(), bytes_of_step) == 0);
        at += static_cast<std::size_t>(m.size());
      }
    }
  }
  check(next_step == trace.steps.size());
  check(std::is_sorted(names.begin(), names.end()));
  check(std::adjacent_find(names.begin(), names.end()) == names.end());

  const nlohmann::json manifest = nlohmann::json::parse(attn::render_manifest(trace, plan));
  check(manifest.at("files").size() == plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    check(manifest["files"][i].at("file") == plan[i].name);
  }
  return 0;
}
