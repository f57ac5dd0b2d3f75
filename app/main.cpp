// attn-trace: transformer self-attention, computed in the open.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>

#include "attn/error.hpp"
#include "attn/version.hpp"
#include "cli.hpp"

namespace {

int fail(const std::string& message) {
  std::cerr << "attn-trace: error: " << message << '\n';
  return attn::cli::kExitInvalid;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "attn-trace: self-attention, step by step, with the numbers PyTorch prints.\n"
      "With no sentence it traces the walkthrough's \"Life is short, eat dessert first\".",
      "attn-trace"};
  app.set_version_flag("--version", std::string("attn-trace ") + attn::kVersion);
  app.footer(
      "Exit codes: 0 success, 1 a difference found (diff, --expect), 2 invalid input or usage\n"
      "(one line on stderr). Documentation: docs/cli.md and docs/tutorial.md.");
  attn::cli::Options options;
  attn::cli::add_options(app, options);
  attn::cli::DiffCommand diff_command;
  CLI::App* diff = app.add_subcommand(
      "diff", "Compare two JSON traces cell by cell: exit 0 if equal within tolerance, 1 if not");
  attn::cli::add_diff_options(*diff, diff_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see attn-trace --help)");
  }

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
  std::fwrite(outcome.out.data(), 1, outcome.out.size(), stdout);
  if (std::fflush(stdout) != 0) return fail("could not write the output");
  std::cerr << outcome.err;
  return outcome.code;
}
