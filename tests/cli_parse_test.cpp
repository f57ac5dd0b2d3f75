// The command line read with only the options it names (cli::parse_named, app/cli.hpp) against
// the same command line read with every option (cli::add_commands and cli::parse).

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "cli.hpp"
#include "support/options_fingerprint.hpp"

namespace {

std::vector<const char*> argv_of(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"attn-trace"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return argv;
}

// The options as the full parse reads them, or the error it gives ("help", "version").
std::string full_parse(const std::vector<std::string>& args) {
  const std::vector<const char*> argv = argv_of(args);
  CLI::App app;
  attn::cli::Options options;
  attn::cli::DiffCommand diff_command;
  attn::cli::add_commands(app, options, diff_command);
  try {
    attn::cli::parse(app, options, diff_command, static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    return "help";
  } catch (const CLI::CallForVersion&) {
    return "version";
  } catch (const attn::Error& e) {
    return std::string("error: ") + e.what();
  }
  return attn::test::options_fingerprint(options);
}

// The options as parse_named reads them, or "full" where it leaves them to the full parse.
std::string named_parse(const std::vector<std::string>& args) {
  const std::vector<const char*> argv = argv_of(args);
  attn::cli::Options options;
  options.width = 33;  // set by main before: kept
  if (!attn::cli::parse_named(options, static_cast<int>(argv.size()), argv.data())) {
    CHECK(attn::test::options_fingerprint(options) ==
          attn::test::options_fingerprint(attn::cli::Options()));
    return "full";
  }
  CHECK(options.width == 33);
  return attn::test::options_fingerprint(options);
}

}  // namespace

TEST_CASE("the command line read with only the options it names is read as with every option") {
  const std::vector<std::vector<std::string>> lines = {
      {},
      {"Life", "is", "short"},
      {"--heads", "2", "--d-in", "16", "--format", "summary", "a", "b"},
      {"--seed=5", "--causal", "--steps", "omega,keys", "--steps", "queries", "x"},
      {"-s", "a b", "-s", "c d e", "--threads", "2"},
      {"-sa b", "--sentence=c d"},
      {"--cross", "key words", "--rope", "--rope-theta", "100", "--rope-pairs", "interleaved"},
      {"--kv-heads", "1", "--heads", "2", "--multihead", "split", "--window", "2", "--decode"},
      {"--backward", "--loss", "mse", "--lr", "0.5", "--precision", "2", "--describe"},
      {"--matmul", "blocked", "--max-memory", "1G", "--timings", "--progress", "never"},
      {"--torch-kernel", "default", "--init", "linear", "--masked-rows", "zero", "--causal"},
      {"--format", "heatmap", "--color", "256", "--heatmap-form", "blocks", "--softmax-steps"},
      {"--query", "2", "--key", "1", "--online-softmax", "2"},
      {"--explain", "1,2", "--steps", "omega"},
      {"--atol", "1e-3", "--rtol", "0", "--vocab-size", "10", "--d-kq", "3", "--d-v", "2"},
      {"--d-out", "3", "--", "-x", "diff"},
      {"--steps", "omega", "--steps", "keys", "--", "--heads"},
      {"--cross", "-5 degrees"},  // a value that begins with '-'
  };
  for (const std::vector<std::string>& args : lines) {
    CAPTURE(fmt::format("{}", args));
    const std::string named = named_parse(args);
    CHECK(named != "full");
    CHECK(named == full_parse(args));
  }
}

TEST_CASE("what the named options cannot read is left to the full parse, the options untouched") {
  const std::vector<std::vector<std::string>> lines = {
      {"diff", "a.json", "b.json"},  // the subcommand
      {"Life", "diff"},              // a word "diff": the full parse decides
      {"--help"},
      {"-h"},
      {"--version"},                         // the full app's help and version
      {"--casual"},                          // unknown: the closest name of them all
      {"--seed", "1", "--seed", "2"},        // given twice
      {"--heads", "0"},                      // out of range
      {"--heads"},                           // no value
      {"--causal=1"},                        // a flag with a value
      {"-5"},                                // a sentence that begins with '-'
      {"--query", "1", "--explain", "1,2"},  // options that do not go together
      {"--steps", ",omega"},                 // an empty item
      {"--seed="},                           // an empty value
  };
  for (const std::vector<std::string>& args : lines) {
    CAPTURE(fmt::format("{}", args));
    CHECK(named_parse(args) == "full");
  }
}
