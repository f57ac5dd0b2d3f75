// Fuzzes attn::parse_trace_json, the reader of `diff` and `--expect`: any text is either
// refused with attn::Error or read as a trace, and a trace read is equal to itself under
// diff_traces (nan equals nan there, and the same infinity equals itself).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "attn/diff.hpp"
#include "attn/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attn::TraceDocument doc;
  try {
    doc = attn::parse_trace_json(text, "fuzz.json");
  } catch (const attn::Error&) {
    return 0;  // not JSON, not a trace, another schema, or a malformed step: refused
  }
  const attn::DiffResult self = attn::diff_traces(doc, doc, {});
  if (!self.equal) {
    std::fputs(self.report.c_str(), stderr);  // what differed, for the finding's report
    __builtin_trap();
  }
  return 0;
}
