#include "attn/tensor_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"

namespace attn {

namespace {

constexpr int kLineWidth = 80;                   // torch's PRINT_OPTS.linewidth
constexpr std::string_view kPrefix = "tensor(";  // its width is the indent of every row

// "-0.0000" -> "0.0000": a sign on a printed zero carries no information for a reader.
std::string drop_negative_zero(std::string s) {
  if (!s.empty() && s[0] == '-' && s.find_first_not_of("0.", 1) == s.find_first_of("eE", 1)) {
    s.erase(0, 1);
  }
  return s;
}

}  // namespace

TensorFormatter::TensorFormatter(const float* values, Eigen::Index count, int precision)
    : precision_(precision) {
  if (precision < 0 || precision > 8) {
    throw Error("precision " + std::to_string(precision) + " is out of range: allowed 0..8");
  }
  // The decision rules of torch's _Formatter, on the finite nonzero values.
  double min_abs = INFINITY, max_abs = 0.0;
  bool any = false;
  for (Eigen::Index i = 0; i < count; ++i) {
    const double v = values[i];
    if (!std::isfinite(v) || v == 0.0) continue;
    any = true;
    min_abs = std::min(min_abs, std::fabs(v));
    max_abs = std::max(max_abs, std::fabs(v));
    if (v != std::ceil(v)) int_mode_ = false;
  }
  if (!any) {
    // No finite nonzero value: torch keeps int mode and width 1 before padding the rest.
    for (Eigen::Index i = 0; i < count; ++i) {
      width_ = std::max(width_, static_cast<int>(format_unpadded(values[i]).size()));
    }
    return;
  }
  if (int_mode_) {
    sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
  } else {
    sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8 || min_abs < 1.0e-4;
  }
  for (Eigen::Index i = 0; i < count; ++i) {
    width_ = std::max(width_, static_cast<int>(format_unpadded(values[i]).size()));
  }
}

std::string TensorFormatter::format_unpadded(float value) const {
  const double v = value;
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (sci_mode_) return drop_negative_zero(fmt::format("{:.{}e}", v, precision_));
  if (int_mode_) return drop_negative_zero(fmt::format("{:.0f}", v)) + ".";
  return drop_negative_zero(fmt::format("{:.{}f}", v, precision_));
}

std::string TensorFormatter::format(float value) const {
  std::string s = format_unpadded(value);
  if (static_cast<int>(s.size()) < width_)
    s.insert(0, static_cast<std::size_t>(width_) - s.size(), ' ');
  return s;
}

std::vector<std::string> format_tensor_rows(const Matrix& m, int precision, bool as_vector) {
  const TensorFormatter f(m.data(), m.size(), precision);
  const bool vector = as_vector && m.rows() == 1;
  // A vector's elements start after "tensor([", a matrix's after "tensor([[".
  const int indent = static_cast<int>(kPrefix.size()) + (vector ? 0 : 1);
  const int per_line = std::max(1, (kLineWidth - indent) / (f.width() + 2));
  const std::string open = vector ? "tensor([" : "tensor([[";
  const std::string row_indent(static_cast<std::size_t>(indent), ' ');

  std::vector<std::string> rows;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    std::string line = i == 0 ? open : std::string(kPrefix.size() + 1, ' ') + "[";
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (j > 0) line += (j % per_line == 0) ? ",\n" + row_indent + " " : ", ";
      line += f.format(m(i, j));
    }
    line += "]";
    line += i + 1 < m.rows() ? "," : (vector ? ")" : "])");
    rows.push_back(std::move(line));
  }
  if (m.rows() == 0) rows.push_back(vector ? "tensor([])" : "tensor([])");
  return rows;
}

std::string format_tensor(const Matrix& m, int precision, bool as_vector) {
  std::string out;
  for (const std::string& row : format_tensor_rows(m, precision, as_vector)) {
    if (!out.empty()) out += '\n';
    out += row;
  }
  return out;
}

}  // namespace attn
