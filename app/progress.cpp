// The progress line (progress.hpp) and its wording (cli.hpp: time_left, progress_line).

#include "progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "cli.hpp"

namespace attn::cli {

std::string time_left(double seconds) {
  constexpr double kMost = 999.0 * 3600.0;  // beyond it, a rate that barely moved says little
  if (!(seconds < kMost)) return "more than 999 h left";
  if (seconds < 59.5) {
    return fmt::format("about {} s left", std::max(1, static_cast<int>(std::lround(seconds))));
  }
  const auto minutes = static_cast<long>(std::lround(seconds / 60.0));
  if (minutes < 60) return fmt::format("about {} min left", minutes);
  return fmt::format("about {} h {:02} min left", minutes / 60, minutes % 60);
}

std::string progress_line(const std::string& what, double elapsed, std::optional<double> left,
                          std::size_t width) {
  const std::string rest = left ? ", " + time_left(*left) : std::string();
  std::string line = fmt::format("attn-trace: {} ({:.1f} s{})", what, elapsed, rest);
  if (width == 0 || line.size() < width) return line;
  if (left) {
    line = fmt::format("attn-trace: {} ({})", what, rest.substr(2));
    if (line.size() >= width) line = fmt::format("{} ({})", what, rest.substr(2));
  }
  if (line.size() >= width) line.resize(width - 1);
  return line;
}

Progress::Progress(const TraceConfig& config)
    : heads_(config.heads), layer_(config.model ? std::optional(config.layer) : std::nullopt) {
  winsize size{};
  if (isatty(STDERR_FILENO) && ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0) width_ = size.ws_col;
}

void Progress::operator()(const Step& s, double done) {
  const auto now = std::chrono::steady_clock::now();
  if (!first_) first_ = {now, done};
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 1.0 || std::chrono::duration<double>(now - shown_).count() < 0.1) return;
  shown_ = now;
  std::string where;
  if (s.batch) where += fmt::format("sentence {}, ", *s.batch + 1);
  if (s.head && layer_) where += fmt::format("layer {}, head {}, ", *layer_, *s.head);
  if (s.head && !layer_) where += fmt::format("head {}/{}, ", *s.head + 1, heads_);
  const std::int64_t rows = s.shape.size() >= 2 ? s.shape[s.shape.size() - 2] : 0;
  const std::string rows_done =
      s.rows_done < rows ? fmt::format("rows {}/{}", s.rows_done, rows) : std::string("done");
  const double since_first = std::chrono::duration<double>(now - first_->first).count();
  const std::optional<double> left =
      done > first_->second && done < 1.0
          ? std::optional(since_first * (1.0 - done) / (done - first_->second))
          : std::nullopt;
  const std::string line =
      progress_line(fmt::format("{}{} {}", where, s.id, rows_done), elapsed, left, width_);
  std::fprintf(stderr, "\r\x1b[K%s", line.c_str());
  std::fflush(stderr);
  printed_ = true;
}

void Progress::finish() {
  if (printed_) std::fputs("\r\x1b[K", stderr);
  printed_ = false;
}

}  // namespace attn::cli
