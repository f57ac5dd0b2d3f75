#pragma once

// The HTML lesson page's pieces (render_html.cpp writes the markup, render_html_data.cpp the
// page's data); the template is compiled in from lib/src/render/html/ (html_assets.cpp, written
// at build time by cmake/embed_assets.cmake). Not part of the library's interface.

#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/matrix.hpp"
#include "attn/trace.hpp"

namespace attn::html_detail {

// The template's files, byte for byte.
std::string_view lesson_html();
std::string_view lesson_css();
std::string_view lesson_js();

// Text for HTML: & < > " ' escaped, as the SVG figures escape it (xml_escape).
std::string escape_html(std::string_view s);
// A JSON string literal for the page's <script type="application/json">, with every "<" written
// "\u003c": neither "</script" nor "<!--" (after which "<script" would keep the block from
// ending) can then occur in it, whatever the text.
std::string json_string(std::string_view s);

// The matrices the page's script reads, each once: a shown step too large for a table, and the
// workings' queries, keys, scores, scaled scores, exponentials and weights.
class MatrixPool {
 public:
  // The index of this step's values, added when new.
  int add(const Step& step);
  // A matrix that is no step's (a head's columns of Q in the split form, the exponentials).
  int add(Matrix values);
  // "[{"r":2,"c":3,"v":[...]}, ...]", every float32 as the shortest decimal that reads back as it
  // (nan, inf, -inf as strings).
  std::string json() const;

 private:
  std::map<const Step*, int> by_step_;
  std::vector<const Matrix*> all_;  // into the trace or store_ (a deque: adding moves nothing)
  std::deque<Matrix> store_;
};

// The steps whose cells open a weight's working: ω, the masked and scaled scores, the
// exponentials and the weights.
bool has_working(StepKind kind);

// The workings of every head of every sentence, as the page's data: "[{...}, ...]", and for each
// (head, batch) its index, in the order heads within sentences.
struct Workings {
  std::string json;
  std::map<std::pair<int, int>, int> index;  // (head or -1, batch or -1) -> index
};
Workings workings_json(const Trace& trace, MatrixPool& pool);

}  // namespace attn::html_detail
