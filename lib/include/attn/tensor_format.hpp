#pragma once

// Printing a matrix the way PyTorch prints a tensor (torch/_tensor_str.py, default options but
// the precision): one width for every element, fixed or scientific notation chosen from the
// values, integer mode for all-integer tensors, rows wrapped at 80 columns.

#include <string>
#include <vector>

#include "attn/matrix.hpp"

namespace attn {

// How the elements of one tensor are written: chosen once from all its values.
class TensorFormatter {
 public:
  // Requires: precision in 0..8.
  TensorFormatter(const float* values, Eigen::Index count, int precision);

  // One element, padded on the left to width(). A value that rounds to zero prints without a
  // sign ("0.0000", never "-0.0000"), so that traces diff cleanly.
  std::string format(float value) const;
  int width() const { return width_; }

  // The unpadded text of one element, written into out (64 bytes or more) with no allocation.
  // Returns its length.
  std::size_t write(char* out, float value) const;

  // The choices alone, without measuring the width (width() is then 1): for a caller that writes
  // every element once and measures as it goes.
  TensorFormatter(const float* values, Eigen::Index count, int precision, bool measure);

 private:
  std::string format_unpadded(float value) const;

  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int width_ = 1;
};

// The lines of `tensor([...])` for a matrix, as PyTorch prints a 2-D tensor (or a 1-D tensor
// when as_vector is set and the matrix has one row). One entry per matrix row; a row that is
// wider than 80 columns holds embedded newlines where PyTorch wraps it.
std::vector<std::string> format_tensor_rows(const Matrix& m, int precision, bool as_vector = false);

// The whole `tensor([...])` text, rows joined by newlines.
std::string format_tensor(const Matrix& m, int precision, bool as_vector = false);

}  // namespace attn
