#pragma once

// The progress line of a long run on stderr (--progress): what is being computed, and about how
// long the rest will take.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "attn/trace.hpp"

namespace attn::cli {

// The progress line: after a second, what is being computed and about how long the rest will
// take, at most ten times a second. The time left assumes that the rest of the plan's work
// (planned_work) goes at the rate of the work done since the first step was recorded: what comes
// before it (reading and tokenizing the input, the memory made ready) is done once.
class Progress {
 public:
  // A model's heads are numbered from 0 (layer L, head H), the lesson's from 1 (head h/H).
  // The line fits stderr's terminal, when it is one: a line that wrapped would not be cleared.
  explicit Progress(const TraceConfig& config);
  // Step `s` recorded, with the share `done` of the plan's work (0 to 1) done.
  void operator()(const Step& s, double done);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // An error that ends the run early must not be written after the progress line.
  ~Progress() { finish(); }
  // Clears the line, if one is shown.
  void finish();

 private:
  std::int64_t heads_;
  std::optional<std::int64_t> layer_;
  std::size_t width_ = 0;  // 0: not a terminal, any length
  // When the first step was recorded, and the share of the work then done.
  std::optional<std::pair<std::chrono::steady_clock::time_point, double>> first_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_{};
  bool printed_ = false;
};

}  // namespace attn::cli
