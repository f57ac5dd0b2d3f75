// Matrices in CSV: parse_csv.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using namespace io_detail;  // the helpers the .npy, text and file parts share

}  // namespace

// ---- CSV --------------------------------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits one line at its commas. A field may be quoted ("a, b"), with "" for a quote inside; the
// quotes only group, the content counts as a field like any other. Spaces around fields are
// dropped.
std::vector<std::string> split_fields(std::string_view line, std::size_t line_no,
                                      const std::string& source) {
  std::vector<std::string> fields;
  std::size_t pos = 0;
  while (true) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    if (pos < line.size() && line[pos] == '"') {
      std::string field;
      for (++pos;; ++pos) {
        if (pos == line.size()) {
          throw Error(fmt::format("{}: line {} has a quoted field without its closing quote",
                                  source, line_no));
        }
        if (line[pos] == '"') {
          if (pos + 1 < line.size() && line[pos + 1] == '"') {
            ++pos;
          } else {
            break;
          }
        }
        field += line[pos];
      }
      ++pos;
      while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
      if (pos < line.size() && line[pos] != ',') {
        throw Error(fmt::format("{}: line {}, column {} has text after its closing quote", source,
                                line_no, fields.size() + 1));
      }
      fields.push_back(std::move(field));
    } else {
      const std::size_t comma = std::min(line.find(',', pos), line.size());
      fields.emplace_back(trim(line.substr(pos, comma - pos)));
      pos = comma;
    }
    if (pos == line.size()) return fields;
    ++pos;  // the comma
  }
}

bool is_number(const std::string& field) {
  float ignored = 0.0f;
  return parse_float(field, ignored) != FloatText::kNotANumber;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The field with the number signs of typeset and East Asian text as ASCII: U+2212 MINUS SIGN
// (typeset text's −1.5), and the fullwidth digits, signs, point and e (an input method's
// －１．５); empty when it holds none of them.
std::string ascii_number_forms(std::string_view f) {
  std::string out;
  bool changed = false;
  for (std::size_t i = 0; i < f.size();) {
    char32_t cp = 0;
    const std::size_t len = decode_utf8(f, i, cp);
    if (len == 0) return {};
    if (cp == U'\u2212' || cp == U'\uff0d') {
      out += '-';
    } else if (cp == U'\uff0b') {
      out += '+';
    } else if (cp == U'\uff0e') {
      out += '.';
    } else if (cp >= U'\uff10' && cp <= U'\uff19') {
      out += static_cast<char>('0' + (cp - U'\uff10'));
    } else if (cp == U'\uff45' || cp == U'\uff25') {
      out += 'e';
    } else {
      out.append(f.substr(i, len));
      i += len;
      continue;
    }
    changed = true;
    i += len;
  }
  return changed ? out : std::string();
}

// A number in a syntax other than the one parse_float reads: hexadecimal (0x10, 0x1p3, -0X1.8P1),
// digits grouped by '_', spaces, commas or apostrophes (1_000, 1 000, 1,000.5, 1'000, 1,5), or
// a number with U+2212's minus or fullwidth digits (−1.5, １２). Such a field in the first column
// would otherwise be taken for a row label.
bool looks_like_number(std::string_view f) {
  if (const std::string ascii = ascii_number_forms(f); !ascii.empty()) {
    return is_number(ascii) || looks_like_number(ascii);
  }
  if (!f.empty() && (f.front() == '+' || f.front() == '-')) f.remove_prefix(1);
  std::size_t i = 0;
  auto digits = [&](auto is_digit_of) {  // how many digits were read
    const std::size_t start = i;
    while (i < f.size() && is_digit_of(f[i])) ++i;
    return i - start;
  };
  auto exponent = [&](char lower, auto is_digit_of) {  // absent, or complete
    if (i == f.size() || (f[i] != lower && f[i] != lower - 'a' + 'A')) return true;
    ++i;
    if (i < f.size() && (f[i] == '+' || f[i] == '-')) ++i;
    return digits(is_digit_of) > 0;
  };
  if (f.size() > 2 && f[0] == '0' && (f[1] == 'x' || f[1] == 'X')) {
    i = 2;
    std::size_t n = 0;
    while (i < f.size() && (is_hex_digit(f[i]) || f[i] == '_' || f[i] == '.')) {
      n += is_hex_digit(f[i]) ? 1 : 0;
      ++i;
    }
    return n > 0 && exponent('p', is_digit) && i == f.size();
  }
  // Groups of digits with separators between them, a fraction, an exponent.
  bool separated = false;
  auto grouped = [&] {
    std::size_t n = digits(is_digit);
    while (n > 0 && i + 1 < f.size() && std::strchr("_ ,'", f[i]) != nullptr &&
           is_digit(f[i + 1])) {
      ++i;
      separated = true;
      n = digits(is_digit);
    }
    return n;
  };
  const std::size_t whole = grouped();
  std::size_t fraction = 0;
  if (i < f.size() && f[i] == '.') {
    ++i;
    fraction = grouped();
  }
  return separated && whole + fraction > 0 && exponent('e', is_digit) && i == f.size();
}

// A character that does not show: white space (Python's str.isspace(), beyond the ASCII spaces
// that trim() drops), and the invisible format characters (soft hyphen, zero-width space and
// joiners, direction marks, word joiner and the invisible operators, byte order mark).
bool invisible(char32_t c) {
  return is_space(c) || c == 0xAD || c == 0x180E || (c >= 0x200B && c <= 0x200F) ||
         (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF;
}

// The field without the characters that do not show at its ends, and the first of them; nullopt
// when it has none there.
std::optional<std::pair<std::string_view, char32_t>> visible_part(std::string_view f) {
  std::optional<char32_t> first;
  std::size_t begin = 0;
  std::size_t end = f.size();
  for (char32_t c = 0; begin < f.size();) {
    const std::size_t len = decode_utf8(f, begin, c);
    if (len == 0 || !invisible(c)) break;
    if (!first) first = c;
    begin += len;
  }
  // From the end: the start of each character, by its first byte.
  while (end > begin) {
    std::size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(f[start]) & 0xC0) == 0x80) --start;
    char32_t c = 0;
    const std::size_t len = decode_utf8(f, start, c);
    if (len != end - start || !invisible(c)) break;
    if (!first) first = c;
    end = start;
  }
  if (!first) return std::nullopt;
  return std::pair{trim(f.substr(begin, end - begin)), *first};
}

// Throws the Error for a value field that parse_float did not read (`parsed`), at `where`
// ("m.csv: line 2, column 3").
[[noreturn]] void refuse_value(const std::string& field, FloatText parsed,
                               const std::string& where) {
  if (parsed == FloatText::kTooLarge) {
    throw Error(fmt::format("{} ({}) is too large for float32: values must be finite", where,
                            printable(field)));
  }
  if (field.empty()) throw Error(fmt::format("{} is empty: expected a number", where));
  if (const std::string ascii = ascii_number_forms(field); !ascii.empty() && is_number(ascii)) {
    throw Error(
        fmt::format("{}: {} is not a number as written: write it with ASCII digits and '-' ({})",
                    where, excerpt(field), ascii));
  }
  throw Error(fmt::format("{}: {} is not a number", where, excerpt(field)));
}

}  // namespace

LoadedMatrix parse_csv(std::string_view text, const std::string& source) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  // UTF-16 (or UTF-32) would otherwise be read as one field of bytes and NULs.
  if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF")) {
    throw Error(fmt::format(
        "{}: line 1: the file starts with a UTF-16 byte order mark ({}): CSV files must be UTF-8 "
        "text",
        source, text[0] == '\xFF' ? "FF FE" : "FE FF"));
  }
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error(
        fmt::format("{}: line {} has a NUL byte (is the file UTF-16?): CSV files must be "
                    "UTF-8 text",
                    source, line_of(text, nul)));
  }

  // The rows, with their line numbers, split into fields.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> line_numbers;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t newline = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line_no;
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::string_view content = trim(line);
    if (content.empty() || content.starts_with('#')) continue;
    rows.push_back(split_fields(line, line_no, source));
    line_numbers.push_back(line_no);
    if (rows.back().size() != rows.front().size()) {
      throw Error(fmt::format(
          "{}: line {} has {}, line {} has {}: all rows must have the same length", source, line_no,
          count(rows.back().size(), "field"), line_numbers.front(), rows.front().size()));
    }
  }
  if (rows.empty()) throw Error(source + " has no values: a matrix needs at least one value");

  // Row labels: the first field, when it is not a number in any row (and values follow it).
  const bool labelled = rows.front().size() > 1 &&
                        std::none_of(rows.begin(), rows.end(),
                                     [](const auto& fields) { return is_number(fields.front()); });
  const std::size_t first = labelled ? 1 : 0;

  LoadedMatrix out;
  out.values.resize(static_cast<Eigen::Index>(rows.size()),
                    static_cast<Eigen::Index>(rows.front().size() - first));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (labelled) {
      const std::string& label = rows[r].front();
      if (const std::size_t bad = invalid_utf8_offset(label); bad != std::string::npos) {
        throw Error(fmt::format(
            "{}: line {}, column 1: the row label is not valid UTF-8 (byte {}): labels must be "
            "UTF-8 text",
            source, line_numbers[r], bad));
      }
      if (const auto visible = visible_part(label);
          visible && !visible->first.empty() &&
          (is_number(std::string(visible->first)) || looks_like_number(visible->first))) {
        throw Error(fmt::format(
            "{}: line {}, column 1: {} is a number beside a character that does not show "
            "(U+{:04X}), and would be taken for a row label: remove that character",
            source, line_numbers[r],
            fmt::format("'{}'", escape_controls(label, EscapeStyle::kStrRepr)),
            static_cast<std::uint32_t>(visible->second)));
      }
      if (looks_like_number(label)) {
        throw Error(fmt::format(
            "{}: line {}, column 1: {} looks like a number, but not one this reader knows, and "
            "would be taken for a row label: write numbers like 8, -1.5 or 1e3 (ASCII digits and "
            "'-'; no hex; no '_', spaces or commas between digits)",
            source, line_numbers[r], excerpt(label)));
      }
      out.row_labels.push_back(label);
    }
    for (std::size_t c = first; c < rows[r].size(); ++c) {
      const std::string& field = rows[r][c];
      float& value = out.values(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c - first));
      const FloatText parsed = parse_float(field, value);
      if (parsed != FloatText::kOk) {
        refuse_value(field, parsed,
                     fmt::format("{}: line {}, column {}", source, line_numbers[r], c + 1));
      }
    }
  }
  check_finite(out.values, source, [&](Eigen::Index r, Eigen::Index c) {
    return fmt::format("line {}, column {}", line_numbers[static_cast<std::size_t>(r)],
                       static_cast<std::size_t>(c) + first + 1);
  });
  return out;
}

}  // namespace attn
