#include "attn/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/render_json.hpp"
#include "attn/tokenizer.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using nlohmann::json;

// A value for a message: a number or a string as JSON writes it (with every character that is not
// ASCII escaped when it holds a C1 control, which JSON may leave raw); an array or an object by
// its kind (dump() recurses, and a deeply nested array would overflow the stack).
std::string brief(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string text = v.dump();
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (text[i] == '\xC2' && next >= 0x80 && next <= 0x9F) {  // U+0080 to U+009F
      return v.dump(-1, ' ', /*ensure_ascii=*/true);
    }
  }
  return text;
}

// A value of the trace as float32. Numbers were rounded from their text to float32 as they were
// read; one beyond float32's range (1e39, 1e300) is refused, never taken for an infinity, which
// a trace writes as "inf" or "-inf".
float cell_value(const json& v, Eigen::Index r, Eigen::Index c) {
  if (v.is_number()) {
    const auto d = v.get<double>();
    if (!(std::fabs(d) <= FLT_MAX)) {
      throw Error(fmt::format(
          "row {}, column {}: {} is beyond float32's range: a trace holds float32 values, and "
          "writes an infinity as \"inf\" or \"-inf\"",
          r + 1, c + 1, brief(v)));
    }
    return static_cast<float>(d);
  }
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
  }
  throw Error(fmt::format("{} is not a number", brief(v)));
}

// A step's key, which it must have.
const json& field(const json& s, const char* key) {
  const auto it = s.find(key);
  if (it == s.end()) throw Error(fmt::format("it has no \"{}\"", key));
  return *it;
}

// A whole number from `least` to int's largest (get<int> would convert any double, which is
// undefined behaviour out of int's range), or nullopt if it is not one.
std::optional<int> whole_number(const json& v, int least) {
  const double d = v.is_number() ? v.get<double>() : std::nan("");
  if (!(d >= least && d <= std::numeric_limits<int>::max()) || d != std::floor(d)) {
    return std::nullopt;
  }
  return static_cast<int>(d);
}

// A step's "head" (numbered from 1, or from 0 in a model's trace) or "batch" (from 1): null, or
// a whole number.
std::optional<int> index_of(const json& s, const char* key, int least) {
  const json& v = field(s, key);
  if (v.is_null()) return std::nullopt;
  const std::optional<int> n = whole_number(v, least);
  if (!n) {
    throw Error(fmt::format("\"{}\" is {}: it must be null or a whole number from {}", key,
                            brief(v), least));
  }
  return n;
}

// A step's row or column labels: an array of strings (none if the key is absent).
std::vector<std::string> labels_of(const json& s, const char* key) {
  const auto it = s.find(key);
  if (it == s.end()) return {};
  if (!it->is_array() ||
      !std::all_of(it->begin(), it->end(), [](const json& l) { return l.is_string(); })) {
    throw Error(fmt::format("\"{}\" is {}: it must be an array of strings", key, brief(*it)));
  }
  return it->get<std::vector<std::string>>();
}

// A step's values, (rows, cols), and its "shape", which must say the same.
Matrix values_of(const json& s) {
  const json& values = field(s, "values");
  if (!values.is_array()) {
    throw Error(fmt::format("\"values\" is {}: it must be an array of rows", brief(values)));
  }
  const auto rows = static_cast<Eigen::Index>(values.size());
  Eigen::Index cols = 0;
  for (Eigen::Index r = 0; r < rows; ++r) {
    const json& row = values[static_cast<std::size_t>(r)];
    if (!row.is_array()) {
      throw Error(fmt::format("row {} is {}: a row is an array of values", r + 1, brief(row)));
    }
    if (r == 0) cols = static_cast<Eigen::Index>(row.size());
    for (const json& value : row) {
      if (value.is_array() || value.is_object()) {
        throw Error(
            fmt::format("row {} holds {}: a row is an array of numbers", r + 1, brief(value)));
      }
    }
    if (static_cast<Eigen::Index>(row.size()) != cols) {
      throw Error(
          fmt::format("row {} has {} value{} where row 1 has {}: the rows of a "
                      "step have one length",
                      r + 1, row.size(), row.size() == 1 ? "" : "s", cols));
    }
  }
  if (const auto shape = s.find("shape"); shape != s.end()) {
    const bool pair = shape->is_array() && shape->size() == 2 && whole_number((*shape)[0], 0) &&
                      whole_number((*shape)[1], 0);
    if (!pair || (*shape)[0] != rows || (rows > 0 && (*shape)[1] != cols)) {
      // A short array of numbers as the trace writes a shape, "[6, 7]"; anything else by kind.
      const bool flat =
          shape->is_array() && shape->size() <= 8 &&
          std::all_of(shape->begin(), shape->end(), [](const json& d) { return d.is_number(); });
      std::string shown = brief(*shape);
      if (flat) {
        std::vector<std::string> sizes;
        for (const json& d : *shape) sizes.push_back(d.dump());
        shown = fmt::format("[{}]", fmt::join(sizes, ", "));
      }
      throw Error(fmt::format("\"shape\" is {} but its values are {} row{} of {}: they must agree",
                              shown, rows, rows == 1 ? "" : "s", cols));
    }
  }
  Matrix m(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const json& row = values[static_cast<std::size_t>(r)];
    for (Eigen::Index c = 0; c < cols; ++c)
      m(r, c) = cell_value(row[static_cast<std::size_t>(c)], r, c);
  }
  return m;
}

// Text from a trace, as the report shows it: control characters escaped (escape_controls).
std::string where(const DocumentStep& s) {
  std::string w = escape_controls(s.id);
  if (s.head || s.batch) {
    w += " (";
    if (s.head) w += fmt::format("head {}", *s.head);
    if (s.head && s.batch) w += ", ";
    if (s.batch) w += fmt::format("sentence {}", *s.batch);
    w += ")";
  }
  return w;
}

// A label in double quotes, as JSON would quote it but with control characters escaped as
// everywhere else in the tool's text (\x1b, not \u001b).
std::string quote_escaped(std::string_view text) {
  std::string out;
  for (const char c : escape_controls(text)) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string label(const std::vector<std::string>& labels, Eigen::Index i) {
  return i < static_cast<Eigen::Index>(labels.size())
             ? fmt::format(" \"{}\"", quote_escaped(labels[static_cast<std::size_t>(i)]))
             : std::string();
}

bool close(float a, float b, const DiffOptions& o) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(static_cast<double>(a) - b) <=
         o.atol + o.rtol * std::fabs(static_cast<double>(b));
}

std::string number(float v) {
  return std::isfinite(v) ? fmt::format("{:.9g}", v)
                          : (std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
}

}  // namespace

TraceDocument parse_trace_json(std::string_view text, const std::string& source,
                               std::uint64_t memory_limit, std::string_view limit_what,
                               Setting limit_setting) {
  // Numbers are rounded from their text to float32, as diff compares them; a key given twice
  // in one object is refused with its line (nlohmann's parser would keep the last one).
  json doc;
  const io_detail::JsonDocument parsed =
      io_detail::parse_json_float32(text, source, doc, {memory_limit, limit_what, limit_setting});
  if (!parsed.ok) {
    // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 20: ...",
    // from the line on.
    std::string located = parsed.error_what;
    const std::size_t at = located.find("parse error at ");
    located = at == std::string::npos ? parsed.error_text : located.substr(at + 15);
    throw Error(fmt::format("{} is not JSON: {}", source, located));
  }
  // Compared as JSON values, never converted: "tool" or "schema_version" may be of any type.
  if (!doc.is_object() || !doc.contains("tool") || doc.at("tool") != "attn-trace" ||
      !doc.contains("steps")) {
    throw Error(
        fmt::format("{} is not an attn-trace trace: it has no \"tool\": \"attn-trace\" "
                    "and \"steps\"",
                    source));
  }
  const auto version = doc.find("schema_version");
  if (version == doc.end() || *version != kJsonSchemaVersion) {
    throw Error(fmt::format("{} has schema version {}: this attn-trace reads version {}", source,
                            version == doc.end() ? "null" : brief(*version), kJsonSchemaVersion));
  }
  TraceDocument out;
  out.source = source;
  const json& steps = doc.at("steps");
  if (!steps.is_array()) {
    throw Error(fmt::format("{} is not a valid trace: \"steps\" is {}, not an array", source,
                            brief(steps)));
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const json& s = steps[i];
    try {
      if (!s.is_object()) throw Error(fmt::format("it is {}, not an object", brief(s)));
      DocumentStep step;
      const json& id = field(s, "id");
      if (!id.is_string()) {
        throw Error(fmt::format("\"id\" is {}: it must be a string", brief(id)));
      }
      step.id = id.get<std::string>();
      step.head = index_of(s, "head", 0);
      step.batch = index_of(s, "batch", 1);
      // diff matches steps by (id, head, batch): a second one would be compared with the first.
      for (const DocumentStep& seen : out.steps) {
        if (seen.id == step.id && seen.head == step.head && seen.batch == step.batch) {
          throw Error(
              fmt::format("the step {} appears twice: a trace has each step once per "
                          "head and sentence",
                          where(step)));
        }
      }
      step.row_labels = labels_of(s, "row_labels");
      step.col_labels = labels_of(s, "col_labels");
      step.values = values_of(s);
      // Labels name the rows and the columns: one each, or none.
      const std::pair<const std::vector<std::string>*, Eigen::Index> labelled[] = {
          {&step.row_labels, step.values.rows()}, {&step.col_labels, step.values.cols()}};
      for (const auto& [labels, count] : labelled) {
        if (labels->empty() || static_cast<Eigen::Index>(labels->size()) == count) continue;
        const bool rows = labels == &step.row_labels;
        throw Error(fmt::format("\"{}\" has {} label{} for {} {}{}: one each, or none",
                                rows ? "row_labels" : "col_labels", labels->size(),
                                labels->size() == 1 ? "" : "s", count, rows ? "row" : "column",
                                count == 1 ? "" : "s"));
      }
      out.steps.push_back(std::move(step));
    } catch (const json::exception& e) {
      // "[json.exception.type_error.302] type must be string, but is number": the part after
      // the exception's name.
      std::string what = e.what();
      if (const std::size_t end = what.find("] ");
          what.starts_with("[json.") && end != std::string::npos) {
        what.erase(0, end + 2);
      }
      throw Error(fmt::format("{} is not a valid trace: step {}: {}", source, i + 1, what));
    } catch (const Error& e) {
      throw Error(fmt::format("{} is not a valid trace: step {}: {}", source, i + 1, e.what()));
    }
  }
  return out;
}

TraceDocument trace_document(const Trace& trace, const std::string& source) {
  TraceDocument doc;
  doc.source = source;
  for (const Step& s : trace.steps) {
    doc.steps.push_back(
        {s.id, s.head ? std::optional<int>(head_number(trace.config, *s.head)) : std::nullopt,
         s.batch ? std::optional<int>(*s.batch + 1) : std::nullopt, s.row_labels, s.col_labels,
         s.values});
  }
  return doc;
}

DiffResult diff_traces(const TraceDocument& a, const TraceDocument& b, const DiffOptions& o) {
  DiffResult result;
  std::size_t cells = 0, differing_cells = 0, compared = 0, differing_steps = 0, missing = 0;
  auto find = [](const TraceDocument& doc, const DocumentStep& s) -> const DocumentStep* {
    for (const DocumentStep& t : doc.steps) {
      if (t.id == s.id && t.head == s.head && t.batch == s.batch) return &t;
    }
    return nullptr;
  };
  // The files' names as the report shows them: a name may hold a control character.
  const std::string a_name = escape_controls(a.source), b_name = escape_controls(b.source);
  for (const DocumentStep& sa : a.steps) {
    const DocumentStep* sb = find(b, sa);
    if (!sb) {
      result.report += fmt::format("{}: only in {}\n", where(sa), a_name);
      ++missing;
      continue;
    }
    ++compared;  // a step of both traces
    if (sa.values.rows() != sb->values.rows() || sa.values.cols() != sb->values.cols()) {
      result.report +=
          fmt::format("{}: shape [{}, {}] in {}, [{}, {}] in {}\n", where(sa), sa.values.rows(),
                      sa.values.cols(), a_name, sb->values.rows(), sb->values.cols(), b_name);
      ++differing_steps;
      continue;
    }
    bool step_differs = false;
    for (Eigen::Index r = 0; r < sa.values.rows(); ++r) {
      for (Eigen::Index c = 0; c < sa.values.cols(); ++c) {
        ++cells;
        const float x = sa.values(r, c), y = sb->values(r, c);
        if (close(x, y, o)) continue;
        ++differing_cells;
        step_differs = true;
        result.report +=
            fmt::format("{}: row {}{}, column {}{}: {} vs {}, difference {:.2e}\n", where(sa),
                        r + 1, label(sa.row_labels, r), c + 1, label(sa.col_labels, c), number(x),
                        number(y), static_cast<double>(x) - y);
      }
    }
    if (step_differs) ++differing_steps;
  }
  for (const DocumentStep& sb : b.steps) {
    if (!find(a, sb)) {
      result.report += fmt::format("{}: only in {}\n", where(sb), b_name);
      ++missing;
    }
  }
  result.equal = differing_cells == 0 && differing_steps == 0 && missing == 0;
  // -0 is the tolerance 0 (adding 0.0 makes it +0).
  const std::string tolerance = fmt::format("atol {:g}, rtol {:g}", o.atol + 0.0, o.rtol + 0.0);
  const auto count = [](std::size_t n, std::string_view noun) {
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
  };
  if (result.equal) {
    result.report += fmt::format("equal: {}, {}, all within {}\n", count(a.steps.size(), "step"),
                                 count(cells, "cell"), tolerance);
  } else {
    result.report +=
        fmt::format("different: {} of {} differ, in {} of {}; {} in only one trace ({})\n",
                    differing_cells, count(cells, "cell"), differing_steps, count(compared, "step"),
                    count(missing, "step"), tolerance);
  }
  return result;
}

}  // namespace attn
