// The command line read: the options added to CLI11 from the option table, the arguments checked
// in the user's terms before CLI11 reads them, and CLI11's own messages reworded.

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/version.hpp"
#include "cli.hpp"
#include "option_table.hpp"

namespace attn::cli {

namespace {

// The options of `app` (a CLI::App, const or not) and then of its option groups (the sections after
// the first, add_options), each in the order added: the option table's order.
template <typename App>
auto all_options(App& app) {
  auto all = app.get_options();
  for (App* group : app.get_subcommands([](App* s) { return s->get_name().empty(); })) {
    const auto more = group->get_options();
    all.insert(all.end(), more.begin(), more.end());
  }
  return all;
}

// Options given twice are refused by check_repeats, after CLI11 has taken them all; a flag
// takes no value (CLI11 would read --causal=3 as true).
void take_last(CLI::App& app) {
  for (CLI::Option* opt : all_options(app)) {
    if (opt->get_positional()) continue;
    const std::string& name = opt->get_name();
    if (name != "--steps" && name != "--sentence") {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    if (opt->get_expected_min() == 0) opt->disable_flag_override();
  }
}

}  // namespace

namespace {

// Whether `spec` is a positional argument, or an option with one of its names in `named`.
bool spec_named(const OptionSpec& spec, const std::vector<std::string_view>& named) {
  if (spec.names.empty() || spec.names.front() != '-') return true;
  const std::string_view names = spec.names;
  for (std::size_t from = 0; from <= names.size();) {
    const std::size_t comma = std::min(names.find(',', from), names.size());
    if (std::find(named.begin(), named.end(), names.substr(from, comma - from)) != named.end()) {
      return true;
    }
    from = comma + 1;
  }
  return false;
}

}  // namespace

void add_options(CLI::App& app, Options& o, const std::vector<std::string_view>* named) {
  DiffCommand unused;
  // Each option by its long name, for the exclusions (CLI11's get_option compares every name
  // of every option: a tenth of the walkthrough's run, for 38 look-ups).
  std::vector<std::pair<std::string_view, CLI::Option*>> by_name;
  // The first section (the sentence, with the positional argument) in the app itself, each other
  // in an option group of its own: CLI11 2.1 checks a new option's names against every earlier
  // one's of its app, copying its name lists each time, and with every option in one app that
  // was 30 % of the walkthrough's instructions. The groups are read as the app's own options.
  bool first = true;
  for (const OptionSection& section : option_table()) {
    CLI::App* into = first ? &app : nullptr;
    first = false;
    for (const OptionSpec& spec : section.options) {
      if (named != nullptr && !spec_named(spec, *named)) continue;
      if (into == nullptr) into = app.add_option_group(section.title);
      CLI::Option* opt = spec.add(*into, o, unused, spec.help);
      if (!spec.value.empty() && spec.names.front() == '-') opt->type_name(spec.value);
      const std::size_t comma = spec.names.rfind(',');
      by_name.emplace_back(
          std::string_view(spec.names).substr(comma == std::string::npos ? 0 : comma + 1), opt);
    }
  }
  auto option = [&by_name, named](std::string_view name) -> CLI::Option* {
    for (const auto& [n, opt] : by_name) {
      if (n == name) return opt;
    }
    if (named != nullptr) return nullptr;  // not given
    throw std::logic_error("the option table has no " + std::string(name));
  };
  for (const auto& [a, b] : exclusive_options()) {
    CLI::Option* first_option = option(a);
    CLI::Option* second_option = option(b);
    if (first_option != nullptr && second_option != nullptr) {
      first_option->excludes(second_option);
    }
  }
  take_last(app);
}

void check_repeats(const CLI::App& app) {
  // Subcommand options are checked on their own App.
  for (const CLI::Option* opt : all_options(app)) {
    // --steps takes a list, and -s/--sentence a batch: both may be given more than once.
    if (!opt->get_positional() && opt->get_name() != "--steps" && opt->get_name() != "--sentence" &&
        opt->count() > 1) {
      throw Error(fmt::format("{}: given {} times, once is allowed (see attn-trace --help)",
                              opt->get_name(), opt->count()));
    }
  }
}

namespace {

// The option an argument that begins with '-' names: "--seed" of "--seed=5", "-s" of "-sHello".
std::string_view option_name(std::string_view arg) {
  const bool long_form = arg.size() > 2 && arg[1] == '-';
  return long_form ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
}

// The Levenshtein distance between two option names.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "--casual" -> " (did you mean --causal?)", when an option of `app` is close enough.
std::string closest_option(const CLI::App& app, std::string_view name) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const CLI::Option* opt : all_options(app)) {
    for (const std::string& long_name : opt->get_lnames()) {
      const std::string candidate = "--" + long_name;
      std::size_t d = edit_distance(name, candidate);
      // A prefix of an option is a likely typo too: --head for --heads.
      if (candidate.rfind(name, 0) == 0 && name.size() >= 4) d = std::min<std::size_t>(d, 1);
      if (d < best_distance) best_distance = d, best = candidate;
    }
  }
  return best.empty() ? "" : fmt::format(": did you mean {}?", best);
}

// What the user gave, checked in their terms before CLI11 reads it: an unknown option (with the
// closest spelling), and an argument that begins with '-' but is no option (a sentence such as
// "-hello world", which CLI11 would read as -h). Returns the sentence's arguments (the main
// command's positional ones) as given: CLI11 reads a vector's value in brackets as a list, so
// that "[x]" would become the word x, "[a,b]" two arguments and "[]" none. Only a first
// positional argument "diff" is the subcommand: the indices of later ones, words of the sentence,
// go to `diff_words`.
std::vector<std::string> check_arguments(const CLI::App& app, const CLI::App& diff, int argc,
                                         const char* const* argv, std::vector<int>& diff_words) {
  const CLI::App* current = &app;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      if (current == &app) words.insert(words.end(), argv + i + 1, argv + argc);
      return words;
    }
    if (arg == "-" || arg.empty() || arg[0] != '-') {
      if (current == &app && arg == diff.get_name() && words.empty()) {
        current = &diff;
      } else if (current == &app) {
        if (arg == diff.get_name()) diff_words.push_back(i);
        words.emplace_back(arg);
      }
      continue;
    }
    const bool long_form = arg.size() > 2 && arg[1] == '-';
    const std::string name(option_name(arg));
    const CLI::Option* opt = nullptr;
    for (const CLI::Option* o : all_options(*current)) {
      if (!o->get_positional() && o->check_name(name)) opt = o;
    }
    if (opt == nullptr && current == &diff) {
      // The main options do not go with diff.
      for (const CLI::Option* o : all_options(app)) {
        if (!o->get_positional() && o->check_name(name)) {
          throw Error(
              fmt::format("{} does not go with diff: diff compares two JSON traces and "
                          "takes --atol and --rtol",
                          name));
        }
      }
    }
    if (opt == nullptr && long_form) {
      throw Error(fmt::format("unknown option {}{} (see attn-trace --help)", name,
                              closest_option(*current, name)));
    }
    if (opt == nullptr || (!long_form && arg.size() > 2 && opt->get_expected_min() == 0)) {
      // A quoted sentence ("-hello world"), or one word of an unquoted one (… is -5 degrees).
      if (arg.find_first_of(" \t") != std::string_view::npos) {
        throw Error(fmt::format(
            "'{}' is not an option: to trace a sentence that begins with '-', put -- before it: "
            "attn-trace -- '{}'",
            arg, arg));
      }
      throw Error(
          fmt::format("'{}' is not an option: to trace it as a word, put -- before the sentence "
                      "(attn-trace -- WORDS...) or quote the sentence",
                      arg));
    }
    // An option's value is the next argument, unless given as --name=value or -sVALUE.
    const bool value_attached =
        long_form ? arg.find('=') != std::string_view::npos : arg.size() > 2;
    // CLI11 reads --seed= as --seed, and takes the next argument for its value.
    if (opt->get_expected_min() > 0 && opt->get_delimiter() == '\0' && long_form &&
        value_attached && arg.ends_with('=')) {
      throw Error(
          fmt::format("{}: the value after '=' is empty: give {}=VALUE or {} VALUE (see "
                      "attn-trace --help)",
                      name, name, name));
    }
    // A flag takes no value, not even an empty one (CLI11 reads --causal= as --causal).
    if (opt->get_expected_max() == 0 && long_form && value_attached) {
      throw Error(fmt::format("{} is a flag and takes no value: give {} alone", name, name));
    }
    // A list's items are joined by commas, with or without spaces after them: an empty one
    // (",omega", "a,,b", "a, ,b") names nothing, and CLI11 would drop it unseen.
    if (opt->get_delimiter() != '\0' && opt->get_expected_min() > 0 &&
        (value_attached || i + 1 < argc)) {
      const std::string_view value =
          value_attached ? (long_form ? arg.substr(arg.find('=') + 1) : arg.substr(2))
                         : std::string_view(argv[i + 1]);
      const auto blank = [](std::string_view item) {
        return item.find_first_not_of(" \t") == std::string_view::npos;
      };
      if (blank(value)) {
        throw Error(fmt::format(
            "{}: the value is empty: give one or more items joined by commas, like omega,keys",
            name));
      }
      for (std::size_t from = 0;;) {
        const std::size_t comma = value.find(opt->get_delimiter(), from);
        if (blank(value.substr(from, comma == std::string_view::npos ? comma : comma - from))) {
          throw Error(
              fmt::format("{}: '{}' has an empty item: join the items with single commas, "
                          "like omega,keys",
                          name, value));
        }
        if (comma == std::string_view::npos) break;
        from = comma + 1;
      }
    }
    if (opt->get_expected_min() > 0 && !value_attached) ++i;
  }
  return words;
}

// CLI11's messages in the user's terms.
[[noreturn]] void reword(const CLI::ParseError& e, const CLI::App& diff) {
  const std::string what = e.what();
  if (diff.parsed() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    throw Error("diff needs two JSON traces: attn-trace diff A.json B.json");
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::string extra = what.substr(what.find(':') + 2);
    if (diff.parsed()) {
      throw Error(
          fmt::format("diff compares two JSON traces: '{}' is one argument too many", extra));
    }
    throw Error(fmt::format("'{}' was not expected (see attn-trace --help)", extra));
  }
  // "--seed: 1 required N:0..2^64-1 missing": an option given without its value.
  if (const std::size_t at = what.find(": 1 required ");
      at != std::string::npos && what.ends_with(" missing")) {
    throw Error(fmt::format("{} needs a value (see attn-trace --help)", what.substr(0, at)));
  }
  if (const std::size_t at = what.find(" excludes "); at != std::string::npos) {
    throw Error(fmt::format("{} and {} do not go together (see attn-trace --help)",
                            what.substr(0, at), what.substr(at + 10)));
  }
  if (const std::size_t at = what.find(" was given a disallowed flag override");
      at != std::string::npos) {
    throw Error(fmt::format("--{} is a flag and takes no value: give --{} alone",
                            what.substr(0, at), what.substr(0, at)));
  }
  throw Error(what + " (see attn-trace --help)");
}

}  // namespace

void parse(CLI::App& app, Options& options, DiffCommand& diff_command, int argc,
           const char* const* argv) {
  CLI::App* diff = app.get_subcommand("diff");
  std::vector<int> diff_words;
  std::vector<std::string> words = check_arguments(app, *diff, argc, argv, diff_words);
  // A sentence's word "diff" (the sentence's words are the pre-scan's) is not the subcommand.
  std::vector<const char*> args(argv, argv + argc);
  for (const int i : diff_words) args[static_cast<std::size_t>(i)] = "word";
  try {
    app.parse(argc, args.data());
  } catch (const CLI::CallForHelp&) {
    throw;
  } catch (const CLI::CallForVersion&) {
    throw;
  } catch (const CLI::ParseError& e) {
    reword(e, *diff);
  }
  check_repeats(app);
  check_repeats(*diff);
  if (!words.empty()) options.words = std::move(words);
  for (const CLI::Option* opt : all_options(app)) {
    if (opt->count() > 0) options.given.push_back(opt->get_name());
  }
  if (diff->parsed()) {
    // --atol and --rtol before diff count as after it; no other option goes with diff.
    for (const std::string& name : options.given) {
      if (name == "--atol" || name == "--rtol") {
        if (diff->get_option(name)->count() > 0) {
          throw Error(
              fmt::format("{}: given 2 times, once is allowed (see attn-trace --help)", name));
        }
        (name == "--atol" ? diff_command.tolerance.atol : diff_command.tolerance.rtol) =
            name == "--atol" ? options.tolerance.atol : options.tolerance.rtol;
      } else {
        throw Error(
            fmt::format("{} does not go with diff: diff compares two JSON traces and "
                        "takes --atol and --rtol",
                        name == "sentence" ? "a sentence" : name));
      }
    }
  }
}

bool parse_named(Options& options, int argc, const char* const* argv) {
  std::vector<std::string_view> named;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "diff" || arg == "-h" || arg == "--help" || arg == "--version") return false;
    if (arg.size() > 1 && arg[0] == '-') named.push_back(option_name(arg));
  }
  Options parsed = options;
  try {
    CLI::App app;
    add_options(app, parsed, &named);
    app.add_subcommand("diff");  // parse() asks for it; no argument names it
    DiffCommand unused;
    parse(app, parsed, unused, argc, argv);
  } catch (const std::exception&) {
    return false;
  }
  options = std::move(parsed);
  return true;
}

CLI::App* add_commands(CLI::App& app, Options& options, DiffCommand& diff_command) {
  app.name("attn-trace");
  app.description(
      "attn-trace: self-attention, step by step, with the numbers PyTorch prints.\n"
      "With no sentence it traces the walkthrough's \"Life is short, eat dessert first\".");
  app.set_version_flag("--version", std::string("attn-trace ") + kVersion);
  app.footer(
      "Exit codes: 0 success, 1 a difference found (diff, --expect), 2 invalid input or usage\n"
      "(one line on stderr). Documentation: docs/cli.md and docs/tutorial.md.");
  add_options(app, options);
  CLI::App* diff = app.add_subcommand(
      "diff",
      "Compare two JSON traces cell by cell (either may be - for standard input): exit 0 if equal "
      "within tolerance, 1 if not");
  add_diff_options(*diff, diff_command);
  return diff;
}

void add_diff_options(CLI::App& diff, DiffCommand& command) {
  diff.add_option("a", command.a, "The first trace (JSON, from --format json)")
      ->type_name("FILE")
      ->required();
  diff.add_option("b", command.b, "The second trace; tolerances are relative to it")
      ->type_name("FILE")
      ->required();
  Options unused;
  for (const OptionSpec& spec : diff_option_table()) {
    spec.add(diff, unused, command, spec.help)->type_name(spec.value);
  }
  take_last(diff);
}

}  // namespace attn::cli
