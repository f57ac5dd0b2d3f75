// attn-trace: transformer self-attention, computed in the open.

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/matrix.hpp"
#include "attn/memory.hpp"
#include "attn/simd.hpp"
#include "attn/tokenizer.hpp"
#include "cli.hpp"
#include "option_table.hpp"
#include "step_pager.hpp"

namespace {

using attn::cli::write_all;

// The one line on stderr. A file name or a value from the command line may hold a newline,
// which would split the line, or an escape sequence, which the terminal would obey: the message's
// control characters and bytes that are not UTF-8 are written as \xNN (escape_controls).
int fail(const std::string& message) {
  std::cerr << "attn-trace: error: " << attn::escape_controls(message, attn::EscapeStyle::kMessage)
            << '\n';
  return attn::cli::kExitInvalid;
}

bool set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// The columns that output should fit: COLUMNS when it is a number from 20 to 1000, else the
// terminal's width, else 80 (piped).
std::size_t terminal_width() {
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(columns, &end, 10);
    if (errno == 0 && end != columns && *end == '\0' && n >= 20 && n <= 1000) {
      return static_cast<std::size_t>(n);
    }
  }
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return 80;
}

// A write to standard output failed with `error`: one line, exit code 2. After an export, the
// line says that the export itself is in place: only its list of files was lost.
int output_failed(int error, const std::string& exported = {}) {
  std::string message = "cannot write the output: " + std::generic_category().message(error);
  if (!exported.empty()) {
    message += " (the export in ";
    message += exported;
    message += " is complete: only its list of files was not written)";
  }
  return fail(message);
}

// SIGINT, SIGTERM or SIGHUP while exporting: the staging folder is removed, then the signal
// does what it would have done (see attn::export_interrupted). Async-signal-safe.
extern "C" void on_signal(int signal) {
  const int saved = errno;
  if (attn::export_interrupted(signal)) {
    ::signal(signal, SIG_DFL);
    ::raise(signal);  // delivered when this handler returns
  }
  errno = saved;
}

void install_signal_handlers() {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(signal, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;  // nohup
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::keep_heap();

  CLI::App app;
  attn::cli::Options options;
  options.config.on_memory_estimate = attn::prepare_heap;
  attn::cli::DiffCommand diff_command;
  const CLI::App* diff = nullptr;  // every option and diff, made where parse_named cannot do

  // A file larger than `ulimit -f` allows is a write that fails (EFBIG), reported like any other,
  // not a signal that ends the process with half a file.
  ::signal(SIGXFSZ, SIG_IGN);

  // --help and --version print through std::cout: checked like any output.
  auto printed = [](int code) {
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      return output_failed(errno != 0 ? errno : EIO);
    }
    return code;
  };
  try {
    if (!attn::cli::parse_named(options, argc, argv)) {
      diff = attn::cli::add_commands(app, options, diff_command);
      attn::cli::parse(app, options, diff_command, argc, argv);
    }
  } catch (const CLI::CallForHelp&) {
    const std::size_t width = terminal_width();
    const std::string help = diff != nullptr && diff->parsed() ? attn::cli::diff_help_text(width)
                                                               : attn::cli::help_text(width);
    return write_all(STDOUT_FILENO, help) ? attn::cli::kExitOk : output_failed(errno);
  } catch (const CLI::CallForVersion& e) {
    errno = 0;
    return printed(app.exit(e));
  } catch (const attn::Error& e) {
    return fail(e.what());
  }

  // ATTN_ISA=avx512|avx2|plain: the instruction set of the vectorised code, to measure each path
  // on one CPU. Every path gives the same bits.
  if (const char* isa = std::getenv("ATTN_ISA"); isa != nullptr && *isa != '\0') {
    const std::string shown = isa;  // fail() escapes the message's control characters
    const std::optional<attn::Isa> chosen = attn::isa_named(isa);
    if (!chosen) return fail("ATTN_ISA=" + shown + ": allowed avx512, avx2, plain");
    if (*chosen > attn::cpu_isa()) {
      return fail("ATTN_ISA=" + shown + ": this CPU has no " + shown + " (its best is " +
                  std::string(attn::isa_name(attn::cpu_isa())) + ")");
    }
    attn::limit_isa(*chosen);
  }

  // What the terminal can do, read here: the library never reads the environment.
  options.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  options.width = terminal_width();
  options.stderr_terminal = isatty(STDERR_FILENO);
  // A dumb terminal draws no escape sequences, whatever COLORTERM says.
  const char* term = std::getenv("TERM");
  const bool dumb = term != nullptr && std::string_view(term) == "dumb";
  options.color_terminal = isatty(STDOUT_FILENO) && !set("NO_COLOR") && !dumb;
  const char* colorterm = std::getenv("COLORTERM");
  options.truecolor = colorterm != nullptr && (std::string_view(colorterm) == "truecolor" ||
                                               std::string_view(colorterm) == "24bit");

  if (options.export_dir) install_signal_handlers();

  attn::cli::Outcome outcome;
  try {
    outcome = diff != nullptr && diff->parsed() ? attn::cli::run_diff(diff_command)
                                                : attn::cli::run(options);
  } catch (const attn::Error& e) {
    return fail(e.what() + attn::cli::remedy(e.setting()));
  } catch (const std::bad_alloc&) {
    return fail("out of memory: choose smaller dimensions or a shorter sentence");
  }
  // Every write is checked: a full disk, a file over `ulimit -f`, a closed pipe (with SIGPIPE
  // ignored) end with one line and exit code 2, never with exit 0 and half an output.
  // --step on a terminal: the pager (step_pager.hpp) restores the terminal on every way out.
  if (!attn::cli::page_steps(outcome.blocks, STDIN_FILENO, STDOUT_FILENO, options.width)) {
    return output_failed(errno);
  }
  for (std::string& part : outcome.parts) {
    if (!write_all(STDOUT_FILENO, part)) return output_failed(errno, outcome.exported);
    std::string().swap(part);  // its memory, for the next part's
  }
  if (!write_all(STDOUT_FILENO, outcome.out)) return output_failed(errno, outcome.exported);
  // The last chance for a delayed write error (NFS, say) to show.
  if (::close(STDOUT_FILENO) != 0 && errno != EINTR && errno != EBADF) {
    return output_failed(errno, outcome.exported);
  }
  // A report that cannot be written to standard error cannot say so either: exit code 2 alone.
  if (!write_all(STDERR_FILENO, outcome.err)) return attn::cli::kExitInvalid;
  return outcome.code;
}
