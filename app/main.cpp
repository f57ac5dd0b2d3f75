// attn-trace: transformer self-attention, computed in the open.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>

#include "attn/error.hpp"
#include "cli.hpp"

namespace {

int fail(const std::string& message) {
  std::cerr << "attn-trace: error: " << message << '\n';
  return attn::cli::kExitInvalid;
}

bool set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// --step on a terminal: each block, then a prompt; Enter goes on, q (or end of input) quits.
void print_paused(const std::vector<std::string>& blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::fwrite(blocks[i].data(), 1, blocks[i].size(), stdout);
    if (i + 1 == blocks.size()) break;
    std::fputs("-- Enter: next step, q: quit --", stdout);
    std::fflush(stdout);
    std::string answer;
    const bool more = static_cast<bool>(std::getline(std::cin, answer));
    std::fputs("\x1b[1A\x1b[2K", stdout);  // the prompt's line, cleared
    if (!more || answer == "q" || answer == "Q") break;
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app;
  attn::cli::Options options;
  attn::cli::DiffCommand diff_command;
  CLI::App* diff = attn::cli::add_commands(app, options, diff_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see attn-trace --help)");
  }

  // What the terminal can do, read here: the library never reads the environment.
  options.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  options.color_terminal = isatty(STDOUT_FILENO) && !set("NO_COLOR");
  const char* colorterm = std::getenv("COLORTERM");
  options.truecolor = colorterm != nullptr && (std::string_view(colorterm) == "truecolor" ||
                                               std::string_view(colorterm) == "24bit");

  attn::cli::Outcome outcome;
  try {
    attn::cli::check_repeats(app);
    attn::cli::check_repeats(*diff);
    outcome = diff->parsed() ? attn::cli::run_diff(diff_command) : attn::cli::run(options);
  } catch (const attn::Error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory: choose smaller dimensions or a shorter sentence");
  }
  if (!outcome.blocks.empty()) print_paused(outcome.blocks);
  std::fwrite(outcome.out.data(), 1, outcome.out.size(), stdout);
  if (std::fflush(stdout) != 0) return fail("could not write the output");
  std::cerr << outcome.err;
  return outcome.code;
}
