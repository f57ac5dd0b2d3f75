// Matrices in JSON: parse_json_matrix; and JSON read with float32's rounding, or with each key
// once (io_detail).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "attn/memory.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using namespace io_detail;  // the helpers the .npy, text and file parts share

}  // namespace

// ---- JSON -------------------------------------------------------------------------------------

namespace {

using nlohmann::json;

// An input iterator over the text that notes the last byte the parser read, so that an event of
// the SAX parser can be given its line: after a key, that byte is the key's closing quote.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** last_read) : p_(p), last_read_(last_read) {}
  reference operator*() const {
    *last_read_ = p_;
    return *p_;
  }
  TrackingIterator& operator++() {
    ++p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator before = *this;
    ++p_;
    return before;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** last_read_;
};

// Builds the document like nlohmann's own parser, except that, when `float32`, each number with a
// fraction or an exponent is rounded from its text straight to float32: through a double it could
// be rounded twice. A value too large for float32 keeps its double value, for the message. A key
// given twice in one object is refused with its line.
class Float32Builder final : public nlohmann::json_sax<json> {
 public:
  Float32Builder(json& root, std::string_view text, const std::string& source, bool float32,
                 JsonMemoryLimit memory_limit)
      : root_(root),
        text_(text),
        source_(source),
        float32_(float32),
        limit_(memory_limit),
        budget_(memory_limit.bytes > text.size() ? memory_limit.bytes - text.size() : 0) {}

  JsonDocument result;
  const char* last_read = nullptr;  // set by TrackingIterator

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    if (!float32_) return add(v);
    // nlohmann writes the locale's decimal point into `s`; from_chars wants '.'.
    std::string text = s;
    for (char& c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) && std::strchr("eE+-", c) == nullptr) {
        c = '.';
      }
    }
    float f = 0.0f;
    if (parse_float(text, f) == FloatText::kOk) return add(static_cast<double>(f));
    return add(v);
  }
  bool string(string_t& v) override {
    charge(kStringBytes + v.size());
    return add(v);
  }
  bool binary(binary_t&) override { return false; }  // JSON text has no binary values
  bool start_object(std::size_t) override {
    charge(kContainerBytes);
    stack_.push_back(add_value(json::object()));
    return true;
  }
  bool key(string_t& k) override {
    json& object = *stack_.back();
    if (object.contains(k)) {
      const std::size_t at = last_read ? static_cast<std::size_t>(last_read - text_.data()) : 0;
      throw Error(fmt::format(
          "{}: line {}: the key {} appears twice in one object: each key may be given once",
          source_, line_of(text_, at), in_quotes(k)));
    }
    charge(kMemberBytes + k.size());
    member_ = &object[k];
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    charge(kContainerBytes);
    stack_.push_back(add_value(json::array()));
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...":
    // keep what follows the exception's name and the location.
    // The text nlohmann read last is quoted in the message: a byte that is not UTF-8 there
    // (an ill-formed string) is shown escaped.
    result.error_byte = position;
    result.error_what = escape_controls(ex.what());
    result.error_text = result.error_what;
    auto drop_through = [this](std::string_view prefix, std::string_view end) {
      std::string& t = result.error_text;
      const std::size_t at = t.find(end);
      if (t.starts_with(prefix) && at != std::string::npos) t.erase(0, at + end.size());
    };
    drop_through("[json.exception.", "] ");
    drop_through("parse error", ": ");
    // nlohmann quotes the token it read last, whole: a number of a million digits would make a
    // message of a megabyte.
    for (std::string* t : {&result.error_text, &result.error_what}) {
      constexpr std::size_t kMax = 200;
      if (t->size() <= kMax) continue;
      std::size_t cut = kMax;
      while (cut > 0 && (static_cast<unsigned char>((*t)[cut]) & 0xC0) == 0x80) --cut;
      t->resize(cut);
      *t += "...";
    }
    return false;
  }

 private:
  bool add(json v) {
    add_value(std::move(v));
    return true;
  }
  // About the heap a value takes in the document (nlohmann's json is 16 bytes; an array's
  // elements grow by doubling; an array or object is a heap block of its own, an object's member a
  // tree node, a string its own block): the text's bytes and these are kept within the memory
  // limit, so that a file of many small values ("[[0],[0],...]", some 26 bytes of memory a byte)
  // is refused before the kernel ends the process for want of memory.
  static constexpr std::uint64_t kValueBytes = 32, kContainerBytes = 48, kMemberBytes = 80,
                                 kStringBytes = 48;
  void charge(std::uint64_t bytes) {
    used_ += bytes;
    if (used_ > budget_) {
      throw Error(fmt::format("{}: reading it as JSON needs more than {} (about {} bytes a "
                              "value), {}",
                              source_, size_text(limit_.bytes), kValueBytes, limit_.what),
                  limit_.setting);
    }
  }
  json* add_value(json v) {
    charge(kValueBytes);
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
      return &stack_.back()->back();
    }
    *member_ = std::move(v);
    return member_;
  }

  json& root_;
  std::string_view text_;
  const std::string& source_;
  bool float32_;
  JsonMemoryLimit limit_;
  std::uint64_t budget_, used_ = 0;
  std::vector<json*> stack_;  // the open arrays and objects, innermost last
  json* member_ = nullptr;    // the object member the next value goes into
};

}  // namespace

namespace io_detail {

namespace {

JsonDocument parse_json(std::string_view text, const std::string& source, json& out, bool float32,
                        JsonMemoryLimit memory_limit) {
  // nlohmann's lexer takes a NUL byte for the end of the input, and would ignore what follows it;
  // JSON text never holds one (in a string it is written \u0000).
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    const std::size_t line_start = text.rfind('\n', nul);
    const std::size_t column = line_start == std::string_view::npos ? nul + 1 : nul - line_start;
    const auto line =
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n') + 1;
    JsonDocument result;
    result.error_byte = nul + 1;
    result.error_text = "a NUL byte, which JSON text never holds";
    result.error_what =
        fmt::format("parse error at line {}, column {}: {}", line, column, result.error_text);
    return result;
  }
  Float32Builder builder(out, text, source, float32, memory_limit);
  const TrackingIterator first(text.data(), &builder.last_read),
      last(text.data() + text.size(), &builder.last_read);
  builder.result.ok = json::sax_parse(first, last, &builder);
  return builder.result;
}

}  // namespace

JsonDocument parse_json_float32(std::string_view text, const std::string& source, json& out,
                                JsonMemoryLimit memory_limit) {
  return parse_json(text, source, out, true, memory_limit);
}

JsonDocument parse_json_unique_keys(std::string_view text, const std::string& source, json& out) {
  return parse_json(text, source, out, false, {});
}

}  // namespace io_detail

namespace {

std::string json_kind(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

// One value of the matrix: a number that is finite in float32.
float json_value(const json& j, Eigen::Index r, Eigen::Index c, const std::string& source) {
  if (!j.is_number()) {
    throw Error(
        fmt::format("{}: {} is {}: values must be numbers", source, cell(r, c), json_kind(j)));
  }
  const auto v = j.get<double>();
  if (!(std::fabs(v) <= FLT_MAX)) {  // converting it to float would be undefined
    throw Error(fmt::format("{}: {} ({}) is too large for float32: values must be finite", source,
                            cell(r, c), v));
  }
  return static_cast<float>(v);
}

// [[...], ...] or [...] (one row).
Matrix json_values(const json& j, const std::string& source) {
  const auto rows = static_cast<Eigen::Index>(j.size());
  if (rows == 0) throw Error(source + " has no values: a matrix needs at least one value");
  if (!j.front().is_array()) {
    Matrix m(1, rows);  // (1, n)
    for (Eigen::Index c = 0; c < rows; ++c) {
      m(0, c) = json_value(j[static_cast<std::size_t>(c)], 0, c, source);
    }
    return m;
  }
  const auto cols = static_cast<Eigen::Index>(j.front().size());
  for (Eigen::Index r = 0; r < rows; ++r) {
    const json& row = j[static_cast<std::size_t>(r)];
    if (!row.is_array()) {
      throw Error(fmt::format("{}: row {} is {}: rows must be arrays of numbers", source, r + 1,
                              json_kind(row)));
    }
    if (static_cast<Eigen::Index>(row.size()) != cols) {
      throw Error(fmt::format("{}: row {} has {}, row 1 has {}: all rows must have the same length",
                              source, r + 1, count(row.size(), "value"), cols));
    }
  }
  if (cols == 0) throw Error(source + " has no values: a matrix needs at least one value");
  Matrix m(rows, cols);  // (rows, cols)
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (Eigen::Index c = 0; c < cols; ++c) {
      m(r, c) =
          json_value(j[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)], r, c, source);
    }
  }
  return m;
}

}  // namespace

LoadedMatrix parse_json_matrix(std::string_view text, const std::string& source,
                               std::uint64_t memory_limit) {
  json doc;
  const JsonDocument parsed = parse_json_float32(
      text, source, doc,
      {memory_limit,
       "the memory limit: give a smaller file or a .npy one (4 bytes a value), or raise the "
       "limit"});
  if (!parsed.ok) {
    throw Error(fmt::format("{} is not valid JSON (byte {}): {}", source, parsed.error_byte,
                            parsed.error_text));
  }
  LoadedMatrix out;
  if (doc.is_array()) {
    out.values = json_values(doc, source);
    out.vector = doc.empty() || !doc.front().is_array();
    return out;
  }
  if (!doc.is_object()) {
    throw Error(
        fmt::format("{}: the document is {}: allowed are [[...], ...], [...] and "
                    "{{\"values\": [[...], ...], \"labels\": [...]}}",
                    source, json_kind(doc)));
  }
  for (const auto& [key, value] : doc.items()) {
    if (key != "values" && key != "labels") {
      throw Error(fmt::format("{}: key {} is not known: allowed are \"values\" and \"labels\"",
                              source, in_quotes(key)));
    }
  }
  if (!doc.contains("values")) throw Error(source + " has no \"values\": give the matrix there");
  const json& values = doc["values"];
  if (!values.is_array()) {
    throw Error(fmt::format("{}: \"values\" is {}: it must be an array of rows", source,
                            json_kind(values)));
  }
  out.values = json_values(values, source);
  out.vector = values.empty() || !values.front().is_array();
  if (!doc.contains("labels")) return out;
  const json& labels = doc["labels"];
  if (!labels.is_array()) {
    throw Error(fmt::format("{}: \"labels\" is {}: it must be an array of strings", source,
                            json_kind(labels)));
  }
  if (static_cast<Eigen::Index>(labels.size()) != out.values.rows()) {
    throw Error(fmt::format("{} has {} labels for {} rows: give one label per row", source,
                            labels.size(), out.values.rows()));
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!labels[i].is_string()) {
      throw Error(fmt::format("{}: label {} is {}: labels must be strings", source, i + 1,
                              json_kind(labels[i])));
    }
    out.row_labels.push_back(labels[i].get<std::string>());
  }
  return out;
}

}  // namespace attn
