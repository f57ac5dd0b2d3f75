#include "attn/render_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "attn/describe.hpp"
#include "support/hostile_labels.hpp"

TEST_CASE("CSV: one row per cell, exact values, labels quoted when needed") {
  attn::TraceConfig c;
  c.sentences = {"don't, \"quote\" me"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"omega"});
  const std::string csv = attn::render_csv(trace);
  CHECK(csv.rfind("step,head,batch,row,col,row_label,col_label,value\n", 0) == 0);
  // The comma was dropped by the tokenizer; the quote is doubled inside a quoted field.
  CHECK(csv.find(",\"\"\"quote\"\"\",") != std::string::npos);
  const std::size_t lines = static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n'));
  CHECK(lines == 1 + 3 * 3);
}

TEST_CASE("CSV values are the JSON's exact ones, nan as a word") {
  attn::TraceConfig c;
  c.sentences = {"a b", "c"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"attention_weights"});
  const std::string csv = attn::render_csv(trace);
  CHECK(csv.find("attention_weights,,2,2,1,<pad>,c,nan\n") != std::string::npos);
}

TEST_CASE("Markdown: a heading, the equation and shape, and a labelled table") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"context_vectors"});
  const std::string md = attn::render_markdown(trace, {});
  // The text trace's header first, fenced, so that a handout says what it shows.
  const std::string header =
      "## Self-attention, step by step\n\n~~~text\n"
      "sentence: 'Life is short, eat dessert first'\n"
      "settings: seed 123, vocab-size 50000, d-in 3, d-kq 2, d-v 4, torch-kernel avx2\n\n"
      "dictionary: distinct words in sorted order, numbered from 0\n"
      "{'Life': 0, 'dessert': 1, 'eat': 2, 'first': 3, 'is': 4, 'short': 5}\n\n"
      "token ids: the sentence's 6 words, each by its dictionary id\n"
      "tensor([0, 4, 5, 2, 1, 3])\n~~~\n\n";
  REQUIRE(md.starts_with(header));
  CHECK(md.substr(header.size()) ==
        "### Step 1 of 1: `context_vectors`, context vectors, one row per token\n\n"
        "`Z = A V`, shape [T, d_v] = [6, 4]\n\n"
        "| | 1 | 2 | 3 | 4 |\n"
        "|---|---:|---:|---:|---:|\n"
        "| **Life** | -0.1564 | 0.1028 | -0.0763 | -0.0764 |\n"
        "| **is** | 0.5313 | 1.3607 | 0.7891 | 1.3110 |\n"
        "| **short** | -0.3542 | -0.1234 | -0.2626 | -0.3706 |\n"
        "| **eat** | 0.0071 | 0.3345 | 0.0969 | 0.1998 |\n"
        "| **dessert** | 0.1008 | 0.4780 | 0.2021 | 0.3674 |\n"
        "| **first** | -0.5296 | -0.2799 | -0.4107 | -0.6006 |\n");
}

TEST_CASE("Markdown shows labels from a file escaped, and CSV keeps them as they are, quoted") {
  attn::Trace trace = attn::test::hostile_trace();
  attn::select_steps(trace, {"attention_weights"});
  const std::string md = attn::render_markdown(trace, {});
  CHECK_FALSE(attn::test::has_raw_control(md));
  // The controls escaped, and then Markdown's markup characters ([ and ]) after a backslash.
  CHECK(md.find("| | \\x1b\\[2J\\x1b\\]0;pwned\\x07x | a\\nb\\rc\\x00 | \\x7f\\x9b31m\\\\ |\n") !=
        std::string::npos);
  CHECK(md.find("| **a\\nb\\rc\\x00** |") != std::string::npos);
  // CSV is data: the label's bytes, in quotes where it holds a line break.
  const std::string csv = attn::render_csv(trace);
  const std::vector<std::string> raw = attn::test::hostile_labels();
  CHECK(csv.find("attention_weights,,,1,2," + raw[0] + ",\"" + raw[1] + "\",") !=
        std::string::npos);
}

TEST_CASE("Markdown shows a token as written: its markup characters after a backslash") {
  // <pad> would be read as an HTML tag and hidden, *a* set in italics, `c` as code.
  attn::TraceConfig c;
  c.sentences = {"*a* _b_ `c` x|y [d](e) &amp; $f$ ~~g~~", "h"};
  attn::Trace trace = attn::run_trace(c);
  attn::select_steps(trace, {"attention_weights"});
  const std::string md = attn::render_markdown(trace, {});
  CHECK(md.find("| | \\*a\\* | \\_b\\_ | \\`c\\` | x\\|y | \\[d\\](e) | \\&amp; | \\$f\\$ | "
                "\\~\\~g\\~\\~ |\n") != std::string::npos);
  CHECK(md.find("| | h | \\<pad\\> |") != std::string::npos);
  CHECK(md.find("| **\\<pad\\>** |") != std::string::npos);
}

TEST_CASE("Markdown with --describe: each step's description in italics, under its equation") {
  attn::Trace trace = attn::run_trace({});
  attn::select_steps(trace, {"omega"});
  attn::TextOptions options;
  options.describe = true;
  const std::string md = attn::render_markdown(trace, options);
  // The description in italics, wrapped at 80 columns as prose is.
  const std::size_t at = md.find("`ω = Q Kᵀ`, shape [T, T] = [6, 6]\n\n*");
  REQUIRE(at != std::string::npos);
  std::string paragraph = md.substr(at + md.substr(at).find("\n\n*") + 3);
  paragraph = paragraph.substr(0, paragraph.find("*\n\n| |"));
  CHECK(paragraph.find('\n') != std::string::npos);
  std::replace(paragraph.begin(), paragraph.end(), '\n', ' ');
  CHECK(paragraph == attn::describe_step("omega"));
  // A fence longer than any tildes in the header.
  attn::TraceConfig c;
  c.sentences = {"a ~~~ b"};
  CHECK(attn::render_markdown(attn::run_trace(c), {}).find("\n~~~~text\n") != std::string::npos);
}
