#include "attn/tensor_format.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attn/error.hpp"

namespace attn {

namespace {

constexpr int kLineWidth = 80;                   // torch's PRINT_OPTS.linewidth
constexpr std::string_view kPrefix = "tensor(";  // its width is the indent of every row

// One element's text, written into out (at least kMaxElement bytes) without a heap allocation or a
// format string parsed at run time: a tensor of millions of elements (a GPT-2 weight) prints in a
// fraction of a second. Returns the length.
constexpr std::size_t kMaxElement = 64;

template <int P>
std::size_t write_number(char* out, double v, bool sci, bool int_mode) {
  char* end;
  if (sci) {
    end = fmt::format_to(out, FMT_COMPILE("{:.{}e}"), v, P);
  } else if (int_mode) {
    end = fmt::format_to(out, FMT_COMPILE("{:.0f}"), v);
    *end++ = '.';
  } else {
    end = fmt::format_to(out, FMT_COMPILE("{:.{}f}"), v, P);
  }
  return static_cast<std::size_t>(end - out);
}

std::size_t write_element(char* out, float value, int precision, bool sci, bool int_mode) {
  const double v = value;
  if (std::isnan(v)) return std::memcpy(out, "nan", 3), 3;
  if (std::isinf(v)) {
    if (v > 0) return std::memcpy(out, "inf", 3), 3;
    return std::memcpy(out, "-inf", 4), 4;
  }
  using Writer = std::size_t (*)(char*, double, bool, bool);
  static constexpr Writer kWriters[] = {write_number<0>, write_number<1>, write_number<2>,
                                        write_number<3>, write_number<4>, write_number<5>,
                                        write_number<6>, write_number<7>, write_number<8>};
  std::size_t n = kWriters[precision](out, v, sci, int_mode);
  if (n > 0 && out[0] == '-') {
    // "-0.0000" -> "0.0000": a sign on a printed zero carries no information for a reader.
    std::size_t i = 1;
    while (i < n && (out[i] == '0' || out[i] == '.')) ++i;
    if (i == n || out[i] == 'e' || out[i] == 'E') {
      std::memmove(out, out + 1, n - 1);
      --n;
    }
  }
  return n;
}

}  // namespace

TensorFormatter::TensorFormatter(const float* values, Eigen::Index count, int precision)
    : TensorFormatter(values, count, precision, /*measure=*/true) {}

TensorFormatter::TensorFormatter(const float* values, Eigen::Index count, int precision,
                                 bool measure)
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
    if (!measure) return;
    for (Eigen::Index i = 0; i < count; ++i) {
      char buf[kMaxElement];
      width_ = std::max(width_, static_cast<int>(write(buf, values[i])));
    }
    return;
  }
  if (int_mode_) {
    sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
  } else {
    sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8 || min_abs < 1.0e-4;
  }
  if (!measure) return;
  for (Eigen::Index i = 0; i < count; ++i) {
    width_ = std::max(width_, static_cast<int>(format_unpadded(values[i]).size()));
  }
}

std::string TensorFormatter::format_unpadded(float value) const {
  char buf[kMaxElement];
  return std::string(buf, write(buf, value));
}

std::string TensorFormatter::format(float value) const {
  std::string s = format_unpadded(value);
  if (static_cast<int>(s.size()) < width_)
    s.insert(0, static_cast<std::size_t>(width_) - s.size(), ' ');
  return s;
}

std::size_t TensorFormatter::write(char* out, float value) const {
  return write_element(out, value, precision_, sci_mode_, int_mode_);
}

std::vector<std::string> format_tensor_rows(const Matrix& m, int precision, bool as_vector) {
  // The formatter's choices, then every element written once: its text kept in an arena (its
  // length in a byte: at most kMaxElement), the widest setting the width (as the formatter's own
  // measuring would). The rows then take the elements in the same order, row-major.
  const TensorFormatter f(m.data(), m.size(), precision, /*measure=*/false);
  const std::size_t count = static_cast<std::size_t>(m.size());
  std::string arena;
  std::vector<std::uint8_t> length(count);
  arena.reserve(count * 12);
  int width = 1;
  char buf[kMaxElement];
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t n = f.write(buf, m.data()[k]);
    length[k] = static_cast<std::uint8_t>(n);
    arena.append(buf, n);
    width = std::max(width, static_cast<int>(n));
  }
  std::size_t at = 0, next = 0;  // the next element's text and index
  const auto element = [&] {
    const std::string_view e(arena.data() + at, length[next]);
    at += length[next++];
    return e;
  };

  const bool vector = as_vector && m.rows() == 1;
  // A vector's elements start after "tensor([", a matrix's after "tensor([[".
  const int indent = static_cast<int>(kPrefix.size()) + (vector ? 0 : 1);
  const int per_line = std::max(1, (kLineWidth - indent) / (width + 2));
  const std::string open = vector ? "tensor([" : "tensor([[";
  const std::string wrap = ",\n" + std::string(static_cast<std::size_t>(indent) + 1, ' ');

  std::vector<std::string> rows;
  rows.reserve(static_cast<std::size_t>(m.rows()));
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    std::string line = i == 0 ? open : std::string(kPrefix.size() + 1, ' ') + "[";
    const auto cols = static_cast<std::size_t>(m.cols());
    line.reserve(line.size() + cols * (static_cast<std::size_t>(width) + 2) +
                 cols / static_cast<std::size_t>(per_line) * wrap.size() + 4);
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (j > 0) line += (j % per_line == 0) ? std::string_view(wrap) : std::string_view(", ");
      const std::string_view e = element();
      line.append(static_cast<std::size_t>(width) - e.size(), ' ');
      line += e;
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
