// The .npy format: npy_bytes writes it, parse_npy reads it.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using namespace io_detail;  // the helpers the .npy, text and file parts share

constexpr std::string_view kNpyMagic = "\x93NUMPY";
constexpr std::size_t kNpyAlign = 64;          // numpy >= 1.23 aligns the data to 64 bytes
constexpr std::size_t kGrowthAxisDigits = 21;  // numpy >= 1.23 leaves room to grow shape[0]

template <class U>
U load_le(const char* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= U{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

template <class U>
void store_le(std::string& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::string shape_str(const std::vector<std::uint64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// A Python literal from the header dict: a string, True/False/None, an integer, or a tuple or
// list of these. `raw` is its text, for messages.
struct PyValue {
  enum class Kind { kString, kBool, kNone, kInt, kTuple, kList } kind = Kind::kNone;
  std::string text;            // kString
  bool flag = false;           // kBool
  std::uint64_t number = 0;    // kInt
  std::vector<PyValue> items;  // kTuple, kList
  std::string_view raw;
};

// Reads the header: a Python dict literal with string keys, as numpy.lib.format writes it and
// ast.literal_eval would read it (any key order and spacing, a trailing comma or none).
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::size_t offset, const std::string& source)
      : text_(text), offset_(offset), source_(source) {}

  // The (key, value) pairs in the order of the text.
  std::vector<std::pair<PyValue, PyValue>> parse_dict() {
    std::vector<std::pair<PyValue, PyValue>> items;
    expect('{');
    while (!peek('}')) {
      PyValue key = parse_value();
      if (key.kind != PyValue::Kind::kString) fail_at(key, "a key is not a string");
      expect(':');
      items.emplace_back(std::move(key), parse_value());
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("text after the dictionary");
    return items;
  }

  // Throws Error naming the byte of the file where `value` starts.
  [[noreturn]] void fail_at(const PyValue& value, const std::string& what) const {
    throw_at(static_cast<std::size_t>(value.raw.data() - text_.data()), what);
  }
  [[noreturn]] void fail_missing(std::string_view key) const {
    throw Error(fmt::format("{} has an invalid .npy header: it has no '{}'", source_, key));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw_at(pos_, what); }
  [[noreturn]] void throw_at(std::size_t pos, const std::string& what) const {
    throw Error(
        fmt::format("{} has an invalid .npy header (byte {}): {}", source_, offset_ + pos, what));
  }

  void skip_space() {
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }

  PyValue parse_value() {
    skip_space();
    PyValue v;
    const std::size_t start = pos_;
    if (pos_ == text_.size()) fail("the header ends early");
    const char c = text_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::kString;
      for (++pos_; pos_ < text_.size() && text_[pos_] != c; ++pos_) {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        v.text += text_[pos_];
      }
      if (pos_ == text_.size()) throw_at(start, "a string has no closing quote");
      ++pos_;
    } else if (c == '(' || c == '[') {
      // numpy nests one level (the shape tuple); a bound keeps the recursion off the stack's end.
      if (depth_ == kMaxDepth) fail(fmt::format("values nest deeper than {} levels", kMaxDepth));
      ++depth_;
      const char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::Kind::kTuple : PyValue::Kind::kList;
      ++pos_;
      bool comma = false;  // (n) is n, (n,) a tuple
      while (!peek(close)) {
        v.items.push_back(parse_value());
        comma = peek(',');
        if (!comma) break;
        ++pos_;
      }
      expect(close);
      --depth_;
      if (v.kind == PyValue::Kind::kTuple && v.items.size() == 1 && !comma) {
        PyValue inner = std::move(v.items[0]);
        return inner;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = PyValue::Kind::kInt;
      for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_) {
        const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
        if (v.number > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
          fail("an integer is too large");
        }
        v.number = v.number * 10 + digit;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 wrote 3L
    } else {
      for (const auto& [word, kind, flag] : {std::tuple{"True", PyValue::Kind::kBool, true},
                                             std::tuple{"False", PyValue::Kind::kBool, false},
                                             std::tuple{"None", PyValue::Kind::kNone, false}}) {
        if (text_.substr(pos_).starts_with(word)) {
          v.kind = kind, v.flag = flag;
          pos_ += std::strlen(word);
          v.raw = text_.substr(start, pos_ - start);
          return v;
        }
      }
      fail("expected a string, a number, True, False or a tuple");
    }
    v.raw = text_.substr(start, pos_ - start);
    return v;
  }

  static constexpr int kMaxDepth = 32;  // tuples and lists within each other

  std::string_view text_;
  std::size_t offset_;  // of text_ in the file
  const std::string& source_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // open tuples and lists
};

}  // namespace

std::string npy_header(const std::vector<std::int64_t>& shape) {
  const std::string dims = shape.size() == 1 ? fmt::format("({},)", shape[0])
                                             : fmt::format("({})", fmt::join(shape, ", "));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + dims + ", }";
  // numpy.lib.format: room for shape[0] to grow to 21 digits, then spaces and a newline up to the
  // next multiple of 64 (a whole 64 more when already aligned).
  if (!shape.empty()) header.append(kGrowthAxisDigits - std::to_string(shape[0]).size(), ' ');
  const std::size_t prefix = kNpyMagic.size() + 2 + 2;  // magic, version, header length
  header.append(kNpyAlign - (prefix + header.size() + 1) % kNpyAlign, ' ');
  header += '\n';
  std::string out(kNpyMagic);
  out += '\x01';
  out += '\x00';
  store_le(out, static_cast<std::uint16_t>(header.size()));
  return out + header;
}

std::string npy_bytes(const Matrix& m, bool vector) {
  if (vector && m.rows() != 1) {
    throw Error(fmt::format("npy_bytes: a vector is one row; the matrix has {} rows", m.rows()));
  }
  std::string out = npy_header(vector ? std::vector<std::int64_t>{m.cols()}
                                      : std::vector<std::int64_t>{m.rows(), m.cols()});
  out.reserve(out.size() + 4 * static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    store_le(out, std::bit_cast<std::uint32_t>(m.data()[i]));
  }
  return out;
}

namespace {

// The data of a .npy file: rows * cols little-endian float32 (`f4`) or float64 values, float64
// rounded to float32 as numpy's astype does; a float64 too large for float32 is refused.
Matrix npy_values(std::string_view data, std::uint64_t rows, std::uint64_t cols, bool is_f4,
                  const std::string& source) {
  Matrix out_values;
  out_values.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  float* values = out_values.data();
  for (std::size_t i = 0; i < rows * cols; ++i) {
    if (is_f4) {
      values[i] = std::bit_cast<float>(load_le<std::uint32_t>(data.data() + 4 * i));
      continue;
    }
    // float64 -> float32, rounded to nearest like numpy's astype.
    const auto v = std::bit_cast<double>(load_le<std::uint64_t>(data.data() + 8 * i));
    values[i] = static_cast<float>(v);
    if (std::isfinite(v) && !std::isfinite(values[i])) {
      const auto cols_i = static_cast<Eigen::Index>(cols);
      throw Error(fmt::format(
          "{}: {} ({}) is too large for float32: values must be finite", source,
          cell(static_cast<Eigen::Index>(i) / cols_i, static_cast<Eigen::Index>(i) % cols_i), v));
    }
  }
  return out_values;
}

}  // namespace

LoadedMatrix parse_npy(std::string_view bytes, const std::string& source) {
  if (!bytes.starts_with(kNpyMagic)) {
    throw Error(source + " is not a .npy file: it does not start with \\x93NUMPY");
  }
  if (bytes.size() < kNpyMagic.size() + 2)
    throw Error(source + " is truncated: it ends in the header");
  const auto major = static_cast<unsigned char>(bytes[6]);
  const auto minor = static_cast<unsigned char>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3) {
    throw Error(fmt::format("{} has .npy version {}.{}: allowed are 1.0, 2.0 and 3.0", source,
                            major, minor));
  }
  const std::size_t length_size = major == 1 ? 2 : 4;
  const std::size_t header_start = 8 + length_size;
  if (bytes.size() < header_start) throw Error(source + " is truncated: it ends in the header");
  const std::size_t header_size = major == 1 ? load_le<std::uint32_t>(bytes.data() + 8) & 0xFFFF
                                             : load_le<std::uint32_t>(bytes.data() + 8);
  if (bytes.size() - header_start < header_size) {
    throw Error(source + " is truncated: it ends in the header");
  }

  NpyHeaderParser parser(bytes.substr(header_start, header_size), header_start, source);
  const PyValue* descr = nullptr;
  const PyValue* fortran_order = nullptr;
  const PyValue* shape_value = nullptr;
  const auto items = parser.parse_dict();
  for (const auto& [key, value] : items) {
    const PyValue** slot = key.text == "descr"           ? &descr
                           : key.text == "fortran_order" ? &fortran_order
                           : key.text == "shape"         ? &shape_value
                                                         : nullptr;
    if (slot == nullptr) parser.fail_at(key, "the key " + excerpt(key.text) + " is not known");
    if (*slot != nullptr) parser.fail_at(key, "the key " + excerpt(key.text) + " appears twice");
    *slot = &value;
  }
  if (descr == nullptr) parser.fail_missing("descr");
  if (fortran_order == nullptr) parser.fail_missing("fortran_order");
  if (shape_value == nullptr) parser.fail_missing("shape");

  const bool is_f4 = descr->kind == PyValue::Kind::kString && descr->text == "<f4";
  const bool is_f8 = descr->kind == PyValue::Kind::kString && descr->text == "<f8";
  if (!is_f4 && !is_f8) {
    throw Error(fmt::format(
        "{}: dtype {} is not supported: allowed are '<f4' (float32) and '<f8' (float64)", source,
        printable(descr->raw)));
  }
  if (fortran_order->kind != PyValue::Kind::kBool) {
    parser.fail_at(*fortran_order, "'fortran_order' is not True or False");
  }
  if (fortran_order->flag) {
    throw Error(source + " is in Fortran order: only C order is supported (np.ascontiguousarray)");
  }
  std::vector<std::uint64_t> shape;
  const bool valid_shape =
      shape_value->kind == PyValue::Kind::kTuple &&
      std::all_of(shape_value->items.begin(), shape_value->items.end(),
                  [](const PyValue& d) { return d.kind == PyValue::Kind::kInt; });
  if (!valid_shape) parser.fail_at(*shape_value, "'shape' is not a tuple of integers");
  for (const PyValue& d : shape_value->items) shape.push_back(d.number);
  if (shape.empty() || shape.size() > 2) {
    throw Error(fmt::format("{}: shape {} has {} dimensions: allowed are 1 or 2", source,
                            shape_str(shape), shape.size()));
  }
  const std::uint64_t rows = shape.size() == 2 ? shape[0] : 1;
  const std::uint64_t cols = shape.back();
  if (rows == 0 || cols == 0) {
    throw Error(fmt::format("{}: shape {} is empty: a matrix needs at least one value", source,
                            shape_str(shape)));
  }

  // The data: rows * cols values, nothing more, nothing less.
  const std::size_t item_size = is_f4 ? 4 : 8;
  const std::string_view data = bytes.substr(header_start + header_size);
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const bool fits = rows <= max / cols && rows * cols <= max / item_size;
  const std::string needs = fits ? std::to_string(rows * cols * item_size) : "more";
  if (!fits || data.size() < rows * cols * item_size) {
    throw Error(fmt::format("{} is truncated: shape {} of {} needs {} bytes of data, there are {}",
                            source, shape_str(shape), descr->raw, needs, data.size()));
  }
  if (data.size() > rows * cols * item_size) {
    const std::size_t extra = data.size() - rows * cols * item_size;
    throw Error(fmt::format(
        "{} has {} left over: shape {} of {} needs {} bytes of data, there are {}", source,
        count(extra, "byte"), shape_str(shape), descr->raw, needs, data.size()));
  }

  LoadedMatrix out;
  out.values = npy_values(data, rows, cols, is_f4, source);
  out.vector = shape.size() == 1;
  check_finite(out.values, source, cell);
  return out;
}

}  // namespace attn
