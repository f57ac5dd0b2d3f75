#pragma once

// The parts the option table (option_table.cpp) is made of: the validators that read a value as
// the tool means it, the builders of an OptionSpec, and the table's sections.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/names.hpp"
#include "cli.hpp"
#include "option_table.hpp"

namespace attn::cli {

// A validator that accepts a decimal integer in [lo, hi], says what it wanted otherwise, and
// passes the number on in plain decimal (CLI11 would read 0123 as octal and refuse 09).
template <typename Int>
CLI::Validator integer_in(Int lo, Int hi, const std::string& range, const std::string& note = "") {
  const std::string allowed = range + note;
  return CLI::Validator(
      [lo, hi, allowed](std::string& text) -> std::string {
        const std::size_t digits_from = (!text.empty() && text[0] == '-') ? 1 : 0;
        const bool is_integer =
            text.size() > digits_from &&
            text.find_first_not_of("0123456789", digits_from) == std::string::npos;
        if (!is_integer) return fmt::format("'{}' is not an integer; allowed: {}", text, allowed);
        // −0 is 0, as Python's int('-0') reads it; from_chars of an unsigned type refuses it.
        const bool minus_zero =
            digits_from == 1 && text.find_first_not_of('0', 1) == std::string::npos;
        Int value{};
        const auto [ptr, ec] = minus_zero
                                   ? std::from_chars_result{text.data() + text.size(), std::errc()}
                                   : std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || value < lo || value > hi) {
          return fmt::format("{} is out of range; allowed: {}", text, allowed);
        }
        text = fmt::format("{}", value);
        return {};
      },
      range);
}

// A width (d_in, d_kq, d_v, d_out): 1 .. kMaxDimension.
CLI::Validator dimension();
// A token's number, from 1.
CLI::Validator token_number();
// A tolerance: a finite number >= 0 (one below the smallest double is 0).
CLI::Validator tolerance();
// A size in bytes: digits and at most one of K, M, G, T (powers of 1024), passed on as bytes.
CLI::Validator size_value();
// A learning rate: a number > 0 whose float32, the η of the step, is > 0 and finite.
CLI::Validator learning_rate();

// `a`, `b`, `c`: an enum option's values, for docs/cli.md.
std::string choices_text(const std::vector<std::string>& choices);

// Checks that a value is one of an enum's names ("'fast' is not one of auto, reference,
// blocked") and passes on its number, which CLI11 converts into the enum.
template <typename Enum>
CLI::Validator enum_names() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<Enum> value = value_named<Enum>(text);
        if (!value) {
          return fmt::format("'{}' is not one of {}", text, fmt::join(all_names<Enum>(), ", "));
        }
        text = std::to_string(static_cast<int>(*value));
        return {};
      },
      "");
}

// An option that takes a number, written into `field` of the options once `validator` passed.
template <typename Field>
OptionSpec number(std::string name, std::string default_text, std::string allowed, std::string help,
                  std::string meaning, Field field, CLI::Validator validator) {
  OptionSpec spec{name,
                  "N",
                  std::move(default_text),
                  std::move(allowed),
                  std::move(help),
                  std::move(meaning),
                  {},
                  false,
                  nullptr};
  spec.add = [name, field, validator](CLI::App& app, Options& o, DiffCommand&,
                                      const std::string& text) {
    return app.add_option(name, field(o), text)->transform(validator);
  };
  return spec;
}

// An option whose value is one of an enum's names, written into `field` of the options.
template <typename Enum, typename Field>
OptionSpec choice(std::string names, std::string value, Enum default_value, std::string help,
                  std::string meaning, Field field) {
  OptionSpec spec{std::move(names),
                  std::move(value),
                  std::string(name_of(default_value)),
                  "",
                  std::move(help),
                  std::move(meaning),
                  all_names<Enum>(),
                  false,
                  nullptr};
  spec.allowed = choices_text(spec.choices);
  const std::string name = spec.names;
  spec.add = [name, field](CLI::App& app, Options& o, DiffCommand&, const std::string& text) {
    return app.add_option(name, field(o), text)->transform(enum_names<Enum>());
  };
  return spec;
}

// A file the run reads, into `field` of the options.
OptionSpec file_option(std::string name, std::string help, std::string allowed,
                       std::optional<std::string> Options::*field, std::string value = "FILE");

// A flag: on when given.
OptionSpec flag(std::string name, std::string help, std::string meaning,
                std::function<bool&(Options&)> field);

// The sections, in the help's order: option_table.cpp's and option_sections.cpp's.
std::vector<OptionSpec> sentence_options();
std::vector<OptionSpec> model_options();
std::vector<OptionSpec> checkpoint_options();
std::vector<OptionSpec> view_options();
std::vector<OptionSpec> script_options();
std::vector<OptionSpec> own_number_options();
std::vector<OptionSpec> speed_options();
std::vector<OptionSpec> gradient_options();

}  // namespace attn::cli
