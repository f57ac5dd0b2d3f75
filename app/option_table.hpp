#pragma once

// The table of every option: each is defined once, here, and the help text, docs/cli.md's option
// table, the man page and the shell completions are all made from it.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::cli {

struct Options;
struct DiffCommand;

// One option (or the positional sentence) of the command line.
struct OptionSpec {
  std::string names;         // CLI11's form: "--seed", "-s,--sentence", or "sentence" (positional)
  std::string value;         // what it takes, as help shows it ("N", "FILE"); empty for a flag
  std::string default_text;  // as the docs show it; empty when there is none
  std::string allowed;       // what is allowed, for docs/cli.md
  std::string help;          // one or two sentences: --help, the man page, completions
  std::string meaning;       // docs/cli.md's longer text; empty when it is the help text
  std::vector<std::string> choices;  // the values of an enum option, for completions
  bool takes_file = false;           // its value is a file or folder name, for completions
  // Adds the option to a CLI11 app, writing into the options; returns it.
  std::function<CLI::Option*(CLI::App&, Options&, DiffCommand&, const std::string& help)> add;
};

// The sections of the help, each a list of options, in the order shown.
struct OptionSection {
  std::string title;
  std::vector<OptionSpec> options;
};

// The main command's options, and diff's.
const std::vector<OptionSection>& option_table();
const std::vector<OptionSpec>& diff_option_table();

// Pairs of options that do not go together.
const std::vector<std::pair<std::string, std::string>>& exclusive_options();

// The texts made from the table.
std::string help_text(std::size_t width);               // `attn-trace --help`, wrapped at `width`
std::string diff_help_text(std::size_t width);          // `attn-trace diff --help`
std::string option_markdown();                          // docs/cli.md's option table
std::string man_page();                                 // attn-trace.1, in roff
std::string completion_script(std::string_view shell);  // "bash", "zsh" or "fish"

}  // namespace attn::cli
