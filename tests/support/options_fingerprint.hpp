#pragma once

// Every field of cli::Options that an option writes, as one line of text: two reads of a command
// line are the same where their fingerprints are (tests/cli_parse_test.cpp, fuzz_options).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>

#include "cli.hpp"

namespace attn::test {

template <typename T>
inline std::string shown(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : "-";
}

// Every field of the options that an option writes, as text.
inline std::string options_fingerprint(const attn::cli::Options& o) {
  const attn::TraceConfig& c = o.config;
  std::string text = fmt::format(
      "words {} sentences {} batch {} d_out {} cross {} file {} threads {} timings {} progress {} "
      "color {} heatmap {} explain {} step {} steps {} export {} force {} expect {} atol {} rtol "
      "{} given {} x {} embedding {} w {} {} {} {} b {} target {} explain_grad {} tokenizer {} "
      "model {} n_head {} query {} key {} precision {} describe {} format {}",
      o.words, o.sentences, shown(o.batch), shown(o.d_out), shown(o.cross), shown(o.file),
      shown(o.threads), o.timings, static_cast<int>(o.progress), static_cast<int>(o.color),
      static_cast<int>(o.heatmap_form), shown(o.explain), o.step, o.steps, shown(o.export_dir),
      o.force, shown(o.expect), o.tolerance.atol, o.tolerance.rtol, o.given, shown(o.x),
      shown(o.embedding), shown(o.w_query), shown(o.w_key), shown(o.w_value), shown(o.w_out),
      shown(o.b_out), shown(o.target), shown(o.explain_grad), static_cast<int>(o.tokenizer),
      shown(o.model), shown(o.n_head), shown(o.query), shown(o.key), o.text.precision,
      o.text.describe, static_cast<int>(o.format));
  text += fmt::format(
      " | seed {} vocab {} d_in {} d_kq {} d_v {} heads {} multihead {} init {} causal {} masked "
      "{} softmax_steps {} matmul {} decode {} online {} rope {} theta {} pairs {} kv {} window "
      "{} layer {} head {} memory {} kernel {} backward {} loss {} lr {}",
      c.seed, c.vocab_size, c.d_in, c.d_kq, c.d_v, c.heads, static_cast<int>(c.multihead),
      static_cast<int>(c.init), c.causal, static_cast<int>(c.masked_rows), c.softmax_steps,
      static_cast<int>(c.matmul), c.decode, c.online_softmax, c.rope, c.rope_theta,
      static_cast<int>(c.rope_pairs), c.kv_heads, c.window, c.layer, shown(c.model_head),
      c.max_memory, static_cast<int>(c.kernel), c.backward, static_cast<int>(c.loss),
      shown(c.learning_rate));
  return text;
}

}  // namespace attn::test
