#pragma once

// The command line: options -> a TraceConfig -> the library -> stdout.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/render_text.hpp"
#include "attn/trace.hpp"

namespace attn::cli {

// Exit codes, as docs/cli.md documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 2;  // invalid input or usage

struct Options {
  std::vector<std::string> sentences;  // the positional arguments: one sentence each
  std::optional<std::int64_t> d_out;   // sets d_kq and d_v
  std::optional<std::string> cross;    // the key and value sentence
  TraceConfig config;
  TextOptions text;
  std::string kernel = "avx2";
  std::string init = "rand";
  std::string multihead = "wrapper";
  std::string masked_rows = "nan";
  std::optional<std::int64_t> query;  // 1-based
  std::optional<std::int64_t> key;    // 1-based; the key of the written-out dot product
};

// Adds every option of the tool to `app`, writing into `options`.
void add_options(CLI::App& app, Options& options);

// Refuses an option given more than once. Throws attn::Error naming it.
void check_repeats(const CLI::App& app);

// Runs the parsed options and returns the text to print. Throws attn::Error for bad input.
std::string run(Options& options);

}  // namespace attn::cli
