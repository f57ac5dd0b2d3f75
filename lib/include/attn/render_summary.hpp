#pragma once

// A trace for long inputs, without walls of numbers: shapes, statistics and checksums per step,
// and the most-attended tokens of the first queries.

#include <cstdint>
#include <string>

#include "attn/statistics.hpp"
#include "attn/trace.hpp"

namespace attn {

// One line per step — id, head and sentence, shape, min, max, mean (of the finite values), the
// number of non-finite values, and the XXH3-64 checksum of its float32 bits, which is the same on
// every machine — then for each attention_weights step the largest row-sum residual
// |Σ_j A_ij − 1| and, for the first `queries` query tokens, their three most-attended keys.
// The statistics are computed on up to `threads` threads; the text is the same for any count.
std::string render_summary(const Trace& trace, std::int64_t queries = 5, int threads = 1);

// render_summary in parts, for a caller that sees the steps one at a time (TraceConfig::on_step)
// and may free them: render_summary is summary_head, then summary_step_line of every step, then
// summary_attention of every step.
std::string summary_head(const Trace& trace);  // the settings, the tokens, the column names
// `config`: the trace's, which numbers a model's heads from 0.
std::string summary_step_line(const Step& step, int threads = 1,
                              const TraceConfig* config = nullptr);
// For an attention_weights step: the row-sum residual and the first queries' most-attended keys;
// empty for any other step.
std::string summary_attention(const Step& step, std::int64_t queries = 5, int threads = 1,
                              const TraceConfig* config = nullptr);

// --timings: each step's wall time (Step::seconds) and, for the matrix products, their GFLOP/s,
// then the products' total, all steps, the output (`output_seconds`) and the whole run
// (`total_seconds`). A report for stderr, headed "attn-trace: timings:".
std::string render_timings(const Trace& trace, double total_seconds, double output_seconds);

}  // namespace attn
