// Private to lib/src/io_*.cpp: the helpers that reading .npy, CSV and JSON files share.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

#include "attn/error.hpp"
#include "attn/matrix.hpp"

namespace attn::io_detail {

// "row 2, column 3": 1-based, as a person counts.
inline std::string cell(Eigen::Index r, Eigen::Index c) {
  return fmt::format("row {}, column {}", r + 1, c + 1);
}

// Text from a file, shortened and with control characters as '?', for a one-line message.
inline std::string printable(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7F) ? '?' : text[i];
  }
  if (text.size() > kMax) out += "...";
  return out;
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
