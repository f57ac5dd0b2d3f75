#include "render_query_decode.hpp"

#include <fmt/format.h>

#include "attn/describe.hpp"
#include "attn/explain.hpp"
#include "attn/steps.hpp"
#include "render_common.hpp"

namespace attn::render_detail {

namespace {

// "0: the same bits", or the difference and why it is not 0.
std::string difference_text(float worst) {
  if (worst == 0.0f) return "0: the same bits";
  return fmt::format("{:.1e}: float32 rounding, the terms added in another order", worst);
}

// One step's part of the path: "equation: title" (the catalogue's title: the section names the
// token), its note (`note`: one that speaks of this row too), its description with --describe,
// then its values: row `row` of a (T, ·) step, or (`whole`) a per-token step's matrix, labelled
// by rows.
void append_step(std::string& out, const Step& s, Eigen::Index row, bool whole, bool note,
                 const TextOptions& options, EscapeStyle bare) {
  std::string heading = fmt::format("{}: {}", s.equation, step_info(s.kind).title);
  if (!s.col_labels.empty()) {
    // A decoded token's row is against the cache's keys; the online softmax's columns are tiles.
    const bool keys = s.kind == StepKind::kDecodeScores || s.kind == StepKind::kDecodeWeights;
    heading += fmt::format("; columns: {}{}", keys ? "keys " : "",
                           fmt::join(escaped(s.col_labels, bare), ", "));
  }
  out += '\n';
  out += wrapped_line(heading);
  if (note && !s.note.empty()) out += wrapped_line("  " + s.note, "  ");
  if (options.describe) out += wrapped_line(fmt::format("  ({})", describe_step(s.kind)), "   ");
  if (whole) {
    append_labelled_tensor(out, s.values, s.row_labels, options.precision, false, bare);
  } else {
    out += vector_text(s.values, row, options.precision) + "\n";
  }
}

}  // namespace

void append_decoded_path(std::string& out, const Trace& trace, std::optional<int> head,
                         std::optional<int> batch, Eigen::Index qi, const TextOptions& options) {
  const DecodedToken d = decoded_token(trace, head, batch, qi);
  const std::int64_t t = qi + 1;
  const EscapeStyle bare = label_escapes(trace.config).bare;
  out += '\n';
  out += wrapped_line(fmt::format(
      "token {} decoded with a KV cache (--decode): at t = {} it computes its own q, k and v, "
      "appends k and v to the cache, which then holds {}, and attends to the cache with one row "
      "of scores",
      t, t,
      d.first == qi ? fmt::format("token {}", t) : fmt::format("tokens {}–{}", d.first + 1, t)));
  for (const Step* s : {d.query, d.key, d.value})
    append_step(out, *s, 0, false, true, options, bare);
  for (const Step* s : {d.key_cache, d.value_cache}) {
    append_step(out, *s, 0, true, true, options, bare);
  }
  for (const Step* s : {d.scores, d.weights, d.context}) {
    append_step(out, *s, 0, false, true, options, bare);
  }
  out +=
      wrapped_line(fmt::format("z_t against {} above, the full computation's row: the largest "
                               "difference is {}",
                               sup("z", t), difference_text(d.difference)));
}

void append_online_path(std::string& out, const Trace& trace, std::optional<int> head,
                        std::optional<int> batch, Eigen::Index qi, const TextOptions& options) {
  const TraceConfig& c = trace.config;
  const std::int64_t i = qi + 1;
  const OnlineRowCheck check = online_row_check(trace, head, batch, qi);
  const EscapeStyle bare = label_escapes(trace.config).bare;
  out += '\n';
  out += wrapped_line(fmt::format(
      "FlashAttention's online softmax of row {} (--online-softmax {}): the keys in tiles of {}, "
      "keeping only a running max m, a running sum ℓ and a running output O",
      i, c.online_softmax, c.online_softmax));
  if (!check.skipped.empty()) {
    std::vector<std::string> tiles;
    for (const Eigen::Index n : check.skipped) tiles.push_back(std::to_string(n + 1));
    out += wrapped_line(fmt::format(
        "{} {} {} wholly masked for this row and skipped: m and ℓ carry over, and c shows 1",
        tiles.size() == 1 ? "tile" : "tiles", fmt::join(tiles, ", "),
        tiles.size() == 1 ? "is" : "are"));
  }
  // The steps' notes count skipped tiles over every row, or compare every row: not this row's.
  for (const StepKind kind : {StepKind::kOnlineMax, StepKind::kOnlineRescale, StepKind::kOnlineSum,
                              StepKind::kOnlineOutput, StepKind::kOnlineContext}) {
    append_step(out, trace.step(kind, head, batch), qi, false, false, options, bare);
  }
  out +=
      wrapped_line(fmt::format("Z{} against {} above, the ordinary softmax's row: the largest "
                               "difference is {}",
                               subscript(i), sup("z", i), difference_text(check.difference)));
}

}  // namespace attn::render_detail
