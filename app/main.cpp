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
      "Exit codes: 0 success, 2 invalid input or usage (one line on stderr).\n"
      "Documentation: docs/cli.md and docs/tutorial.md.");
  attn::cli::Options options;
  attn::cli::add_options(app, options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see attn-trace --help)");
  }

  std::string out;
  try {
    attn::cli::check_repeats(app);
    out = attn::cli::run(options);
  } catch (const attn::Error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory: choose smaller dimensions or a shorter sentence");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) return fail("could not write the output");
  return attn::cli::kExitOk;
}
