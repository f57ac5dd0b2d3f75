// Fuzzes the command line up to the run: the input is split at each NUL byte into arguments
// (at most 32), and they go through what app/main.cpp does before it runs anything: cli::parse
// with every option and the diff subcommand, then make_config and resolve. cli::parse_named, the
// read with only the options named, must agree with cli::parse wherever it succeeds.
// run_trace is not called: this target is about options, their validators and their
// combinations, not about the arithmetic.
//
// make_config reads the files that options name, and "-" reads standard input. Inputs with an
// argument "-" or any '/' are skipped, and the process works in a fresh empty folder, so every
// file name refers to nothing (except "." and "..", folders, which read_file refuses).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "../support/options_fingerprint.hpp"
#include "attn/error.hpp"
#include "attn/trace.hpp"
#include "cli.hpp"

namespace {

constexpr std::size_t kMaxArguments = 32;

std::string& work_dir() {
  static std::string dir;
  return dir;
}

void remove_work_dir() {
  if (!work_dir().empty()) ::rmdir(work_dir().c_str());
}

// The arguments: the input split at every NUL byte ("" gives no argument, "a\0" gives "a" and
// ""). Empty when there are more than kMaxArguments or one that could name an existing file.
std::vector<std::string> arguments_of(std::string_view input) {
  std::vector<std::string> args;
  if (input.empty()) return args;
  std::size_t start = 0;
  while (true) {
    const std::size_t nul = input.find('\0', start);
    args.emplace_back(input.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return args;
}

bool skipped(const std::vector<std::string>& args) {
  if (args.size() > kMaxArguments) return true;
  for (const std::string& a : args) {
    if (a == "-" || a.find('/') != std::string::npos) return true;  // stdin, or a real path
  }
  return false;
}

}  // namespace

// Once, before any input (and before libFuzzer reads its corpus: give it absolute paths).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "attn-fuzz-options-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr || ::chdir(pattern.c_str()) != 0) {
    std::perror("fuzz_options: cannot make and enter an empty temporary folder");
    std::abort();
  }
  work_dir() = pattern;
  std::atexit(remove_work_dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args =
      arguments_of(std::string_view(reinterpret_cast<const char*>(data), size));
  if (skipped(args)) return 0;
  std::vector<const char*> argv{"attn-trace"};  // (1 + args,)
  for (const std::string& a : args) argv.push_back(a.c_str());

  // main reads the command line with only the options it names where that succeeds
  // (cli::parse_named), and with every option where it does not: where the first succeeds, the
  // second must read the same options.
  attn::cli::Options named;
  const bool named_read = attn::cli::parse_named(named, static_cast<int>(argv.size()), argv.data());

  CLI::App app;
  attn::cli::Options options;
  attn::cli::DiffCommand diff_command;
  attn::cli::add_commands(app, options, diff_command);

  try {
    attn::cli::parse(app, options, diff_command, static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    if (named_read) __builtin_trap();
    return 0;  // --help or --version: main prints it and exits
  } catch (const attn::Error&) {
    if (named_read) __builtin_trap();
    return 0;  // a usage error: refused with a one-line message, exit code 2
  }
  if (named_read &&
      attn::test::options_fingerprint(named) != attn::test::options_fingerprint(options)) {
    __builtin_trap();
  }
  try {
    // main runs run_diff when diff was given; make_config reads none of diff's files, so it is
    // exercised with the options given before the subcommand too.
    const attn::TraceConfig config = attn::cli::make_config(options);
    const attn::TraceConfig resolved = attn::resolve(config);
    if (resolved.heads < 1 || resolved.d_in < 1 || resolved.d_kq < 1 || resolved.d_v < 1) {
      __builtin_trap();  // resolve() promises every setting in its range
    }
  } catch (const attn::Error&) {
    return 0;  // refused with a one-line message, exit code 2
  }
  return 0;
}
