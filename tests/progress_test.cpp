// The progress line's estimate of the time left (app/cli.hpp).

#include <doctest/doctest.h>

#include <limits>

#include "cli.hpp"

TEST_CASE("the time left is rounded to seconds, then minutes, then hours and minutes") {
  using attn::cli::time_left;
  CHECK(time_left(0.2) == "about 1 s left");
  CHECK(time_left(1.4) == "about 1 s left");
  CHECK(time_left(12.6) == "about 13 s left");
  CHECK(time_left(59.4) == "about 59 s left");
  CHECK(time_left(59.5) == "about 1 min left");
  CHECK(time_left(150.0) == "about 3 min left");  // 2.5 minutes, rounded away from zero
  CHECK(time_left(3569.0) == "about 59 min left");
  CHECK(time_left(3570.0) == "about 1 h 00 min left");
  CHECK(time_left(7500.0) == "about 2 h 05 min left");
  CHECK(time_left(100.0 * 3600) == "about 100 h 00 min left");
  CHECK(time_left(998.9 * 3600) == "about 998 h 54 min left");
  CHECK(time_left(999.0 * 3600) == "more than 999 h left");
  CHECK(time_left(1e300) == "more than 999 h left");
  CHECK(time_left(std::numeric_limits<double>::infinity()) == "more than 999 h left");
  CHECK(time_left(std::numeric_limits<double>::quiet_NaN()) == "more than 999 h left");
}

TEST_CASE("the progress line fits the terminal: the time left kept before the time and the name") {
  using attn::cli::progress_line;
  const std::string what = "head 3/8, omega rows 96/16384";
  CHECK(progress_line(what, 12.34, 75.0, 0) ==
        "attn-trace: head 3/8, omega rows 96/16384 (12.3 s, about 1 min left)");
  CHECK(progress_line(what, 12.34, std::nullopt, 0) ==
        "attn-trace: head 3/8, omega rows 96/16384 (12.3 s)");
  // 68 columns: fits 69 and more (a column is left free, so that the terminal never wraps).
  CHECK(progress_line(what, 12.34, 75.0, 69).size() == 68);
  CHECK(progress_line(what, 12.34, 75.0, 68) ==
        "attn-trace: head 3/8, omega rows 96/16384 (about 1 min left)");
  CHECK(progress_line(what, 12.34, 75.0, 61) ==
        "attn-trace: head 3/8, omega rows 96/16384 (about 1 min left)");
  // 48 columns without "attn-trace: ".
  CHECK(progress_line(what, 12.34, 75.0, 60) == "head 3/8, omega rows 96/16384 (about 1 min left)");
  CHECK(progress_line(what, 12.34, 75.0, 49).size() == 48);
  CHECK(progress_line(what, 12.34, 75.0, 48) == "head 3/8, omega rows 96/16384 (about 1 min left");
  CHECK(progress_line(what, 12.34, 75.0, 40) == "head 3/8, omega rows 96/16384 (about 1 ");
  CHECK(progress_line(what, 12.34, std::nullopt, 40) == "attn-trace: head 3/8, omega rows 96/163");
  CHECK(progress_line(what, 12.34, 75.0, 1).empty());
  CHECK(progress_line(what, 12.34, std::nullopt, 1).empty());
}
