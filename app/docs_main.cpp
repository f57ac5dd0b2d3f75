// attn-trace-docs: writes what the build makes from the option table.
//   attn-trace-docs man FILE | bash FILE | zsh FILE | fish FILE | markdown FILE | help FILE
// FILE "-" is standard output.

#include <cstdio>
#include <string>
#include <string_view>

#include "option_table.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs("usage: attn-trace-docs man|bash|zsh|fish|markdown|help FILE\n", stderr);
    return 2;
  }
  const std::string_view what = argv[1];
  std::string text;
  if (what == "man") {
    text = attn::cli::man_page();
  } else if (what == "markdown") {
    text = attn::cli::option_markdown();
  } else if (what == "help") {
    text = attn::cli::help_text(80);
  } else {
    text = attn::cli::completion_script(what);
  }
  if (text.empty()) {
    std::fprintf(stderr, "attn-trace-docs: unknown output '%s'\n", argv[1]);
    return 2;
  }
  const bool to_stdout = std::string_view(argv[2]) == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::perror(argv[2]);
    return 1;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size() &&
                  std::fflush(out) == 0 && (to_stdout || std::fclose(out) == 0);
  if (!ok) {
    std::perror(argv[2]);
    return 1;
  }
  return 0;
}
