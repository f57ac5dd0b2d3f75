#pragma once

// What every matrix parser promises when it succeeds, checked by fuzz_npy, fuzz_csv and
// fuzz_json_matrix: a non-empty matrix of finite float32 values, one label per row when there
// are labels, and a matrix that npy_bytes writes and parse_npy reads back bit for bit.

#include <cmath>
#include <cstring>

#include "attn/io.hpp"

namespace attn::fuzz {

inline void check_loaded_matrix(const LoadedMatrix& loaded) {
  const Matrix& m = loaded.values;  // (rows, cols)
  if (m.rows() < 1 || m.cols() < 1) __builtin_trap();
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    if (!std::isfinite(m.data()[i])) __builtin_trap();
  }
  if (!loaded.row_labels.empty() &&
      static_cast<Eigen::Index>(loaded.row_labels.size()) != m.rows()) {
    __builtin_trap();
  }

  // npy_bytes -> parse_npy: the same shape and the same bits (-0.0 and subnormals included).
  auto round_trips = [&m](bool vector) {
    const LoadedMatrix back = parse_npy(npy_bytes(m, vector), "round trip");
    return back.values.rows() == m.rows() && back.values.cols() == m.cols() &&
           back.row_labels.empty() &&
           std::memcmp(back.values.data(), m.data(),
                       sizeof(float) * static_cast<std::size_t>(m.size())) == 0;
  };
  if (!round_trips(false)) __builtin_trap();
  if (m.rows() == 1 && !round_trips(true)) __builtin_trap();
}

}  // namespace attn::fuzz
