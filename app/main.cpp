// attn-trace: transformer self-attention, computed in the open.

#include <malloc.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <string_view>

#include "attn/error.hpp"
#include "attn/matrix.hpp"
#include "cli.hpp"
#include "option_table.hpp"

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

// Makes `bytes` of heap ready before a run of 2 MiB or more: allocated, asked for 2 MiB pages,
// faulted in with one call (MADV_POPULATE_WRITE, Linux 5.14) where the system allows, and freed
// back to the heap, which keeps it (see main). The run's matrices then take memory that is already
// there instead of taking a page fault per 4 KiB. Best effort: a refusal changes nothing but speed;
// and never more than half the memory the system has free, since the estimate is an upper bound.
void prepare_heap(double bytes) {
  constexpr double kWorthIt = 2.0 * (1 << 20);
  const double free_bytes =
      static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (free_bytes > 0.0) bytes = std::min(bytes, free_bytes / 2.0);
  if (bytes < kWorthIt) return;
  const auto size = static_cast<std::size_t>(bytes);
  void* p = std::malloc(size);
  if (p == nullptr) return;
  attn::advise_huge_pages(p, size);
#if defined(MADV_POPULATE_WRITE)
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(p) + size) & ~(page - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#endif
  std::free(p);
}

}  // namespace

int main(int argc, char** argv) {
  // Large matrices from the heap rather than from fresh mmap()s, and the heap kept: a long
  // input's (T, T) steps then reuse the memory of the heads before them instead of faulting in
  // (and the kernel zeroing) new pages for every one.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());

  CLI::App app;
  attn::cli::Options options;
  options.config.on_memory_estimate = prepare_heap;
  attn::cli::DiffCommand diff_command;
  const CLI::App* diff = attn::cli::add_commands(app, options, diff_command);

  try {
    attn::cli::parse(app, options, diff_command, argc, argv);
  } catch (const CLI::CallForHelp&) {
    // Wrapped to the terminal's width; 80 columns when piped.
    winsize size{};
    const std::size_t width =
        isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0
            ? size.ws_col
            : 80;
    const std::string help = diff->parsed() ? attn::cli::diff_help_text(width)
                                            : attn::cli::help_text(width);
    std::fwrite(help.data(), 1, help.size(), stdout);
    return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : fail("cannot write the help");
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const attn::Error& e) {
    return fail(e.what());
  }

  // What the terminal can do, read here: the library never reads the environment.
  options.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  options.stderr_terminal = isatty(STDERR_FILENO);
  // A dumb terminal draws no escape sequences, whatever COLORTERM says.
  const char* term = std::getenv("TERM");
  const bool dumb = term != nullptr && std::string_view(term) == "dumb";
  options.color_terminal = isatty(STDOUT_FILENO) && !set("NO_COLOR") && !dumb;
  const char* colorterm = std::getenv("COLORTERM");
  options.truecolor = colorterm != nullptr && (std::string_view(colorterm) == "truecolor" ||
                                               std::string_view(colorterm) == "24bit");

  attn::cli::Outcome outcome;
  try {
    outcome = diff->parsed() ? attn::cli::run_diff(diff_command) : attn::cli::run(options);
  } catch (const attn::Error& e) {
    return fail(e.what() + attn::cli::remedy(e.setting()));
  } catch (const std::bad_alloc&) {
    return fail("out of memory: choose smaller dimensions or a shorter sentence");
  }
  if (!outcome.blocks.empty()) print_paused(outcome.blocks);
  std::fwrite(outcome.out.data(), 1, outcome.out.size(), stdout);
  if (std::fflush(stdout) != 0) return fail("could not write the output");
  std::cerr << outcome.err;
  return outcome.code;
}
