// The texts made from the option table: the help, docs/cli.md's table, the man page and the
// shell completions.

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "attn/version.hpp"
#include "option_table.hpp"

namespace attn::cli {

namespace {

constexpr std::string_view kSummary =
    "attn-trace: self-attention, step by step, with the numbers PyTorch prints.";
constexpr std::string_view kNoSentence =
    "With no sentence it traces the walkthrough's \"Life is short, eat dessert first\".";
constexpr std::string_view kUsage[] = {
    "attn-trace [OPTIONS] [SENTENCE...]",
    "attn-trace [OPTIONS] -s SENTENCE -s SENTENCE ...",
    "attn-trace [OPTIONS] --batch FILE",
    "attn-trace diff [--atol X] [--rtol X] A.json B.json",
};
constexpr std::string_view kExitCodes =
    "Exit codes: 0 success; 1 a difference found (diff, --expect); 2 invalid input or usage, "
    "or output that could not be written, with one line on stderr.";
constexpr std::string_view kDiffSummary =
    "Compare two JSON traces cell by cell (either may be - for standard input): exit 0 if "
    "equal within tolerance, 1 if not.";

bool positional(const OptionSpec& o) { return o.names.front() != '-'; }

// "-s,--sentence" -> {"-s", "--sentence"}.
std::vector<std::string> names_of(const OptionSpec& o) {
  std::vector<std::string> names;
  std::stringstream in(o.names);
  for (std::string name; std::getline(in, name, ',');) names.push_back(name);
  return names;
}

// "-s, --sentence TEXT", "--causal", "SENTENCE...".
std::string label(const OptionSpec& o) {
  if (positional(o)) return o.value;
  const std::string names = fmt::format("{}", fmt::join(names_of(o), ", "));
  return o.value.empty() ? names : names + " " + o.value;
}

// The help's note after an option's text: its values and its default.
std::string annotation(const OptionSpec& o) {
  if (positional(o) || o.value.empty()) return "";
  std::vector<std::string> parts;
  if (!o.choices.empty()) parts.push_back(fmt::format("one of {}", fmt::join(o.choices, ", ")));
  if (!o.default_text.empty()) parts.push_back("default " + o.default_text);
  return parts.empty() ? "" : fmt::format(" [{}]", fmt::join(parts, "; "));
}

// `text` in lines of at most `width` columns, broken between words (a word longer than a line
// stands alone). Counts bytes: the table's texts are ASCII but for a few symbols.
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t columns = 0;
  auto display = [](std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
  };
  std::stringstream words{std::string(text)};
  for (std::string word; words >> word;) {
    // A word wider than the whole line (torch.set_printoptions(precision=N) at 20 columns) is cut
    // at the width, between characters.
    while (display(word) > width && width > 0) {
      if (!line.empty()) lines.push_back(line), line.clear(), columns = 0;
      std::size_t cut = 0;
      for (std::size_t n = 0; cut < word.size(); ++cut) {
        if ((static_cast<unsigned char>(word[cut]) & 0xC0) != 0x80 && n++ == width) break;
      }
      lines.push_back(word.substr(0, cut));
      word.erase(0, cut);
    }
    const std::size_t w = display(word);
    if (!line.empty() && columns + 1 + w > width) {
      lines.push_back(line);
      line.clear();
      columns = 0;
    }
    if (!line.empty()) line += ' ', ++columns;
    line += word;
    columns += w;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// An option's help: its label, then its text in a column, wrapped.
void add_entry(std::string& out, const std::string& left, std::string_view text,
               std::size_t width) {
  constexpr std::size_t kColumn = 24;
  if (width < kColumn + 20) {  // narrow: the text below the label, indented
    out += (left.size() + 2 <= width ? "  " : "") + left + "\n";
    for (const std::string& line : wrap(text, width - 6)) out += "      " + line + "\n";
    return;
  }
  const std::vector<std::string> lines = wrap(text, width - kColumn);
  std::string head = "  " + left;
  if (head.size() + 2 > kColumn) {
    out += head + "\n";
    head.clear();
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& first = i == 0 ? head : std::string();
    out += first + std::string(kColumn - first.size(), ' ') + lines[i] + "\n";
  }
}

void add_paragraph(std::string& out, std::string_view text, std::size_t width) {
  for (const std::string& line : wrap(text, width)) out += line + "\n";
}

// A usage line, indented by 2, and by 4 where it wraps.
void add_usage(std::string& out, std::string_view usage, std::size_t width) {
  const std::vector<std::string> lines = wrap(usage, width - 4);
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "  " : "    ") + lines[i] + "\n";
}

std::string roff(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (c >= 0x80) {
      // A character past ASCII, by its code point: \[u00D7] for ×.
      const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
      char32_t point = c & (0x3F >> extra);
      for (int k = 0; k < extra && i + 1 < text.size(); ++k) {
        point = (point << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F);
      }
      out += fmt::format("\\[u{:04X}]", static_cast<std::uint32_t>(point));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

// Every option of the main command and diff, as one list.
std::vector<const OptionSpec*> all_options(bool with_positional) {
  std::vector<const OptionSpec*> all;
  for (const OptionSection& section : option_table()) {
    for (const OptionSpec& o : section.options) {
      if (with_positional || !positional(o)) all.push_back(&o);
    }
  }
  return all;
}

std::string words_of(const std::vector<std::string>& v) {
  return fmt::format("{}", fmt::join(v, " "));
}

std::string single_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string bash_completion() {
  std::vector<std::string> options, files, folders, valued;
  std::string cases;
  for (const OptionSpec* o : all_options(false)) {
    for (const std::string& n : names_of(*o)) options.push_back(n);
    if (o->value.empty()) continue;
    const std::string pattern = fmt::format("{}", fmt::join(names_of(*o), "|"));
    if (!o->choices.empty()) {
      cases += fmt::format("    {}) COMPREPLY=($(compgen -W {} -- \"$cur\")); return ;;\n", pattern,
                           single_quoted(words_of(o->choices)));
    } else if (o->takes_file) {
      (o->value == "DIR" ? folders : files).push_back(pattern);
    } else {
      valued.push_back(pattern);
    }
  }
  std::string out = fmt::format(
      "# bash completion for attn-trace {}, made from its option table\n"
      "_attn_trace() {{\n"
      "  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} word\n"
      "  for word in \"${{COMP_WORDS[@]:1:COMP_CWORD-1}}\"; do\n"
      "    if [ \"$word\" = diff ]; then\n"
      "      case $prev in --atol|--rtol) return ;; esac\n"
      "      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '--atol --rtol --help' -- "
      "\"$cur\"));\n"
      "      else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "      return\n"
      "    fi\n"
      "  done\n"
      "  case $prev in\n",
      kVersion);
  out += cases;
  out += fmt::format("    {}) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n",
                     fmt::join(files, "|"));
  out += fmt::format("    {}) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n",
                     fmt::join(folders, "|"));
  out += fmt::format("    {}) return ;;\n", fmt::join(valued, "|"));
  out += fmt::format(
      "  esac\n"
      "  if [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W '{} --help --version' -- \"$cur\"))\n"
      "  elif [ \"$COMP_CWORD\" = 1 ]; then\n"
      "    COMPREPLY=($(compgen -W 'diff' -- \"$cur\"))\n"
      "  fi\n"
      "}}\n"
      "complete -F _attn_trace attn-trace\n",
      words_of(options));
  return out;
}

// A zsh _arguments description: no brackets or colons.
std::string zsh_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '[') {
      out += '(';
    } else if (c == ']') {
      out += ')';
    } else if (c == ':') {
      out += "\\:";
    } else {
      out += c;
    }
  }
  return out;
}

std::string zsh_completion() {
  std::string out = fmt::format(
      "#compdef attn-trace\n"
      "# zsh completion for attn-trace {}, made from its option table\n"
      "if (( CURRENT > 2 )) && [[ ${{words[2]}} == diff ]]; then\n"
      "  _arguments '--atol[absolute tolerance]:X:' '--rtol[relative tolerance]:X:' "
      "'1:first trace:_files' '2:second trace:_files'\n"
      "  return\n"
      "fi\n"
      "_arguments -s \\\n",
      kVersion);
  for (const OptionSpec* o : all_options(false)) {
    const std::string first_line = wrap(o->help, 1000).front();
    for (const std::string& n : names_of(*o)) {
      std::string action;
      if (!o->value.empty()) {
        action = !o->choices.empty() ? fmt::format(":{}:({})", o->value, words_of(o->choices))
                 : o->takes_file
                     ? fmt::format(":{}:{}", o->value, o->value == "DIR" ? "_files -/" : "_files")
                     : fmt::format(":{}:", o->value);
      }
      const bool repeatable = n == "-s" || n == "--sentence" || n == "--steps";
      out += "  " +
             single_quoted(fmt::format("{}{}[{}]{}", repeatable ? "*" : "", n, zsh_text(first_line),
                                       action)) +
             " \\\n";
    }
  }
  out += "  '(- *)--help[print the help]' '(- *)--version[print the version]' \\\n";
  out += "  '1:: :(diff)' '*:sentence:'\n";
  return out;
}

std::string fish_completion() {
  std::string out = fmt::format(
      "# fish completion for attn-trace {}, made from its option table\n"
      "complete -c attn-trace -n __fish_use_subcommand -f -a diff -d {}\n"
      "complete -c attn-trace -n '__fish_seen_subcommand_from diff' -l atol -x -d 'absolute "
      "tolerance'\n"
      "complete -c attn-trace -n '__fish_seen_subcommand_from diff' -l rtol -x -d 'relative "
      "tolerance'\n"
      "complete -c attn-trace -l help -d 'print the help'\n"
      "complete -c attn-trace -l version -d 'print the version'\n",
      kVersion, single_quoted("compare two JSON traces"));
  for (const OptionSpec* o : all_options(false)) {
    std::string line = "complete -c attn-trace -n 'not __fish_seen_subcommand_from diff'";
    for (const std::string& n : names_of(*o)) {
      line += n.size() == 2 ? " -s " + n.substr(1) : " -l " + n.substr(2);
    }
    if (!o->value.empty()) {
      if (!o->choices.empty()) {
        line += " -x -a " + single_quoted(words_of(o->choices));
      } else {
        line += o->takes_file ? " -r -F" : " -x";
      }
    }
    out += line + " -d " + single_quoted(wrap(o->help, 1000).front()) + "\n";
  }
  return out;
}

// One option of the man page: its label in bold, then its help.
std::string man_entry(const OptionSpec& o) {
  return ".TP\n.B \"" + roff(label(o)) + "\"\n" + roff(o.help + annotation(o)) + "\n";
}

}  // namespace

std::string help_text(std::size_t width) {
  width = std::max<std::size_t>(width, 20);  // a terminal narrower than 20 columns: 20
  std::string out;
  add_paragraph(out, kSummary, width);
  add_paragraph(out, kNoSentence, width);
  out += "\nUsage:\n";
  for (std::string_view usage : kUsage) add_usage(out, usage, width);
  for (const OptionSection& section : option_table()) {
    out += "\n" + section.title + ":\n";
    for (const OptionSpec& o : section.options) {
      add_entry(out, label(o), o.help + annotation(o), width);
    }
  }
  out += "\nOther:\n";
  add_entry(out, "-h, --help", "Print this help and exit", width);
  add_entry(out, "--version", "Print the version and exit", width);
  out += "\n";
  add_paragraph(out, kExitCodes, width);
  add_paragraph(out, "Documentation: man attn-trace, and docs/ beside the source.", width);
  return out;
}

std::string diff_help_text(std::size_t width) {
  width = std::max<std::size_t>(width, 20);  // a terminal narrower than 20 columns: 20
  std::string out;
  add_paragraph(out, kDiffSummary, width);
  out += "\nUsage:\n";
  add_usage(out, kUsage[3], width);
  out += "\nOptions:\n";
  for (const OptionSpec& o : diff_option_table()) {
    add_entry(out, label(o), o.help + annotation(o), width);
  }
  add_entry(out, "-h, --help", "Print this help and exit", width);
  return out;
}

std::string option_markdown() {
  std::string out = "| option | default | allowed | meaning |\n|---|---|---|---|\n";
  for (const OptionSpec* o : all_options(true)) {
    std::vector<std::string> shown;
    for (const std::string& n : names_of(*o)) shown.push_back(n);
    if (!o->value.empty() && !positional(*o)) shown.back() += " " + o->value;
    std::string names;
    for (const std::string& s : shown) names += (names.empty() ? "`" : ", `") + s + "`";
    if (positional(*o)) names = "`" + o->value + "`";
    const bool code = !o->choices.empty() || positional(*o) || o->names == "--max-memory";
    const std::string def = o->default_text.empty() ? "—"
                            : code                  ? "`" + o->default_text + "`"
                                                    : o->default_text;
    const std::string meaning = o->meaning.empty() ? o->help : o->meaning;
    out += fmt::format("| {} | {} | {} | {} |\n", names, def, o->allowed, meaning);
  }
  out += "| `--help` | | | print the help and exit 0 |\n";
  out += "| `--version` | | | print `attn-trace VERSION` and exit 0 |\n";
  return out;
}

std::string man_page() {
  std::string out = fmt::format(
      ".TH ATTN\\-TRACE 1 \"\" \"attn-trace {}\" \"User Commands\"\n"
      ".SH NAME\n"
      "attn\\-trace \\- self\\-attention, step by step, with the numbers PyTorch prints\n"
      ".SH SYNOPSIS\n",
      kVersion);
  for (std::string_view usage : kUsage) out += ".B \"" + roff(usage) + "\"\n.br\n";
  out +=
      ".SH DESCRIPTION\n"
      "\\fBattn\\-trace\\fR computes scaled dot\\-product attention for a sentence and prints "
      "every step: the dictionary, the token ids, the embeddings, the weights, the queries, keys "
      "and values, the scores, the masks, the softmax weights and the context vectors, with the "
      "numbers PyTorch prints for the same seed.\n" +
      roff(kNoSentence) + "\n";
  for (const OptionSection& section : option_table()) {
    out += ".SH " + roff(section.title) + "\n";
    for (const OptionSpec& o : section.options) {
      out += man_entry(o);
    }
  }
  out +=
      ".SH OTHER\n.TP\n.B \\-h, \\-\\-help\nPrint the help and exit.\n"
      ".TP\n.B \\-\\-version\nPrint the version and exit.\n";
  out += ".SH DIFF\n" + roff(kDiffSummary) + "\n";
  for (const OptionSpec& o : diff_option_table()) {
    out += man_entry(o);
  }
  out += ".SH EXIT STATUS\n" + roff(kExitCodes) + "\n";
  out +=
      ".SH ENVIRONMENT\n"
      ".TP\n.B NO_COLOR\nWhen set, heatmaps are shaded, not coloured.\n"
      ".TP\n.B TERM\n\\fBdumb\\fR: no colour.\n"
      ".TP\n.B COLORTERM\n\\fBtruecolor\\fR or \\fB24bit\\fR: heatmaps in 24\\-bit colour.\n"
      ".SH SEE ALSO\n"
      "The tutorial, the command\\-line reference and the formats, in "
      "/usr/share/doc/attn\\-trace.\n";
  return out;
}

std::string completion_script(std::string_view shell) {
  if (shell == "bash") return bash_completion();
  if (shell == "zsh") return zsh_completion();
  if (shell == "fish") return fish_completion();
  return "";
}

}  // namespace attn::cli
