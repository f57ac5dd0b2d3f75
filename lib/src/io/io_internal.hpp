// Private to lib/src/io_*.cpp (and diff.cpp, which reads JSON traces the same way): the helpers
// that reading .npy, CSV and JSON files share.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <system_error>

#include "attn/error.hpp"
#include "attn/matrix.hpp"
#include "attn/memory.hpp"
#include "attn/tokenizer.hpp"

namespace attn::io_detail {

// "row 2, column 3": 1-based, as a person counts.
inline std::string cell(Eigen::Index r, Eigen::Index c) {
  return fmt::format("row {}, column {}", r + 1, c + 1);
}

// Text from a file, for a one-line message: its first 40 bytes (never part of a character), with
// control characters, characters that do not show (U+00A0, U+FEFF) and bytes that are not UTF-8
// escaped (escape_controls, as Python's repr() of a str escapes them).
inline std::string printable(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::size_t n = 0;
  char32_t cp = 0;
  while (n < text.size()) {
    const std::size_t len = std::max<std::size_t>(1, decode_utf8(text, n, cp));
    if (n + len > kMax) break;
    n += len;
  }
  std::string out = escape_controls(text.substr(0, n), EscapeStyle::kStrRepr);
  if (n < text.size()) out += "...";
  return out;
}

// Text from a file in double quotes, as printable() shows it, with its quotes escaped: "values".
inline std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  for (const char c : printable(text)) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Formatted, not "'" + ... + "'": GCC 12 warns falsely (-Wrestrict) about that once inlined.
inline std::string excerpt(std::string_view text) { return fmt::format("'{}'", printable(text)); }

// "1 value", "2 values".
inline std::string count(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// The name of a value that is not finite, as numpy prints it.
inline std::string not_finite_name(double v) {
  if (std::isnan(v)) return "nan";
  return v < 0 ? "-inf" : "inf";
}

enum class FloatText { kOk, kNotANumber, kTooLarge };

// Parses the whole of `text` as a float32, correctly rounded and independent of the locale; a
// leading '+' is allowed. Values below the smallest subnormal round to ±0, as numpy.float32 does.
inline FloatText parse_float(std::string_view text, float& out) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  if (ptr != end || text.empty()) return FloatText::kNotANumber;
  if (ec == std::errc()) return FloatText::kOk;
  if (ec != std::errc::result_out_of_range) return FloatText::kNotANumber;
  // from_chars says out of range for overflow and underflow alike, and leaves `out` unchanged:
  // a double (or, beyond its range too, the exponent's sign) tells which one it was.
  double d = 0.0;
  const bool negative = text[0] == '-';
  bool tiny;
  if (std::from_chars(text.data(), end, d).ec == std::errc()) {
    tiny = std::fabs(d) < 1.0;
  } else {
    const std::size_t e = text.find_first_of("eE");
    tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
  }
  if (!tiny) return FloatText::kTooLarge;
  out = negative ? -0.0f : 0.0f;
  return FloatText::kOk;
}

// The line (from 1) of the byte at `offset` of `text`.
inline std::size_t line_of(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

// A JSON document read as nlohmann's parser reads it, with two differences: each number with a
// fraction or an exponent is rounded from its text straight to float32 (through a double it
// could be rounded twice; one too large for float32 keeps its double value, for a message), and
// a key that appears twice in one object is an error (nlohmann would keep the last one).
struct JsonMemoryLimit {
  std::uint64_t bytes = ~std::uint64_t{0};
  std::string_view what;  // what the limit is and what to do: "the memory limit: ..."
  Setting setting = Setting::kMaxMemory;  // the option that raises it
};
struct JsonDocument {
  bool ok = false;             // false: not JSON; the error_ fields say why
  std::size_t error_byte = 0;  // where the parser stopped
  std::string error_text;      // "syntax error while parsing value - ...", short
  std::string error_what;      // nlohmann's whole message
};
// Parses `text` into `out`. Returns the outcome; throws Error naming `source` and the line for a
// duplicate key: "m.json: line 3: the key \"values\" appears twice in one object: each key may
// be given once".
// Throws Error when the text and the document would take more than `memory_limit` bytes:
// "SOURCE: reading it as JSON needs more than 100.0 MiB (about 32 bytes a value), WHAT".
JsonDocument parse_json_float32(std::string_view text, const std::string& source,
                                nlohmann::json& out, JsonMemoryLimit memory_limit);
// The same with the numbers as nlohmann's parser reads them (a fraction or an exponent as a
// double): for JSON that is not a matrix, such as a checkpoint's header and its config.json.
JsonDocument parse_json_unique_keys(std::string_view text, const std::string& source,
                                    nlohmann::json& out);

// Checks that every value is finite; `where` names a cell the way the format counts.
template <class Where>
void check_finite(const Matrix& m, const std::string& source, Where where) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (!std::isfinite(m(r, c))) {
        throw Error(fmt::format("{}: {} is {}: values must be finite", source, where(r, c),
                                not_finite_name(m(r, c))));
      }
    }
  }
}

}  // namespace attn::io_detail
