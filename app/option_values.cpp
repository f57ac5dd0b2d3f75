// The validators and builders of option_parts.hpp that are not templates.

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "attn/trace.hpp"
#include "option_parts.hpp"

namespace attn::cli {

CLI::Validator dimension() {
  return integer_in<std::int64_t>(1, kMaxDimension, fmt::format("1..{}", kMaxDimension),
                                  " (wider is not sensible for a trace)");
}

CLI::Validator token_number() {
  return integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T");
}

// A tolerance: a finite number >= 0.
CLI::Validator tolerance() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        // Below the smallest double (1e-400): no two float32 values differ by so little, so it is
        // the tolerance 0. std::from_chars says out of range both ways; strtod tells which.
        if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size() &&
            !text.starts_with('-') && std::strtod(text.c_str(), nullptr) == 0.0) {
          return {};
        }
        if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0) ||
            !std::isfinite(v)) {
          return fmt::format("'{}' is not a tolerance; allowed: a number >= 0", text);
        }
        return {};
      },
      "NUMBER >= 0");
}

// A size in bytes, as CLI11's AsSizeValue reads it (4G, 512M, 100000; K, M, G, T are powers of
// 1024, in either case), passed on as the number of bytes; refused with the tool's own words.
CLI::Validator size_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // Digits and at most one suffix, nothing else: AsSizeValue would read -5G as a number
        // of its own, wrapped around, and take +4G, '4 G', 4GB and 4GiB as 4G (a GB is 10^9).
        const std::size_t end = text.find_first_not_of("0123456789");
        if (end == 0 || (end != std::string::npos &&
                         (end + 1 != text.size() || std::string_view("KMGTkmgt").find(text[end]) ==
                                                        std::string_view::npos))) {
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        // Decimal, always: AsSizeValue would read 0100 as octal.
        std::string bytes = text;
        const std::size_t digits = bytes.find_first_not_of("0123456789");
        const std::size_t zeros = bytes.find_first_not_of('0');
        if (zeros != std::string::npos && zeros > 0 &&
            zeros < (digits == std::string::npos ? bytes.size() : digits)) {
          bytes.erase(0, zeros);
        } else if (zeros == std::string::npos && bytes.size() > 1) {
          bytes = "0";
        } else if (zeros != std::string::npos && zeros > 0 && zeros == digits) {
          bytes.erase(0, zeros - 1);  // 00K: the number is 0
        }
        try {
          const std::string error = CLI::AsSizeValue(false)(bytes);
          if (!error.empty()) throw CLI::ValidationError(error);
        } catch (const CLI::ValidationError& e) {
          if (std::string_view(e.what()).find("overflow") != std::string_view::npos ||
              std::string_view(e.what()).find("multiplied") != std::string_view::npos) {
            return fmt::format("'{}' is too large: a size is at most 2^63 - 1 bytes", text);
          }
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        std::uint64_t value = 0;
        const auto [ptr, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), value);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && value >> 63 != 0)) {
          return fmt::format("'{}' is too large: a size is at most 2^63 - 1 bytes", text);
        }
        if (ec != std::errc() || value == 0) {
          return fmt::format(
              "'{}' is not a size: give a number of bytes, or with K, M, G or T, like 4G", text);
        }
        text = bytes;
        return {};
      },
      "SIZE");
}

// A learning rate: a number > 0 whose float32, the η of the step, is > 0 and finite.
CLI::Validator learning_rate() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr const char* kAllowed =
            "allowed: a number > 0 that float32 holds, 1.4e-45 to 3.4e38";
        double v = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        const bool whole = ptr == text.data() + text.size();
        if (ec == std::errc::result_out_of_range && whole) {
          // Beyond double: ±HUGE_VAL, or a positive number too small for it (float32's 0 too).
          v = std::strtod(text.c_str(), nullptr);
          if (v == 0 && text[0] != '-') v = std::numeric_limits<double>::denorm_min();
        } else if (ec != std::errc() || !whole || !std::isfinite(v)) {
          return fmt::format("'{}' is not a learning rate; {}", text, kAllowed);
        }
        if (!(v > 0)) return fmt::format("'{}' is not a learning rate; {}", text, kAllowed);
        const auto eta = static_cast<float>(v);
        if (eta == 0.0f) {
          return fmt::format("'{}' is too small a learning rate: float32 rounds it to 0; {}", text,
                             kAllowed);
        }
        if (!std::isfinite(eta)) {
          return fmt::format("'{}' is too large a learning rate: float32 cannot hold it; {}", text,
                             kAllowed);
        }
        return {};
      },
      "NUMBER > 0");
}

std::string choices_text(const std::vector<std::string>& choices) {
  return fmt::format("`{}`", fmt::join(choices, "`, `"));
}

// A file the run reads.
OptionSpec file_option(std::string name, std::string help, std::string allowed,
                       std::optional<std::string> Options::*field, std::string value) {
  OptionSpec spec{name, std::move(value), "", std::move(allowed), std::move(help), "", {},
                  true, nullptr};
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_option(name, o.*field, text);
  };
  return spec;
}

// A flag: on when given.
OptionSpec flag(std::string name, std::string help, std::string meaning,
                std::function<bool&(Options&)> field) {
  OptionSpec spec{name, "", "off", "", std::move(help), std::move(meaning), {}, false, nullptr};
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_flag(name, field(o), text);
  };
  return spec;
}

}  // namespace attn::cli
