#include "variant_options.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attn::cli {

namespace {

bool given(const Options& o, std::string_view name) {
  return std::find(o.given.begin(), o.given.end(), name) != o.given.end();
}

}  // namespace

void check_variant_options(const Options& o) {
  for (const char* name : {"--rope-theta", "--rope-pairs"}) {
    if (given(o, name) && !o.config.rope) {
      throw Error(fmt::format("{} sets the rotary embeddings: it goes with --rope", name));
    }
  }
  // Kept whatever the lengths, so that a script's batch of equal lengths is not refused.
  const bool window_past_the_end = o.cross && o.config.window > 0;
  if (given(o, "--masked-rows") && o.sentences.empty() && !o.batch && !window_past_the_end) {
    throw Error(
        "--masked-rows sets the weights of a row whose every key is masked, which only a padded "
        "batch (the <pad> queries of -s or --batch sentences of different lengths) or a --window "
        "past the --cross sentence's end has: this run has none");
  }
  if (o.config.rope && o.cross) {
    throw Error(
        "--rope turns each token by its position in its own sentence: it does not go with "
        "--cross, whose two sentences share no positions");
  }
  if (!given(o, "--kv-heads")) return;
  const std::int64_t kv = o.config.kv_heads, heads = o.config.heads;
  if (o.config.multihead != MultiheadForm::kSplit) {
    throw Error(fmt::format(
        "--kv-heads shares the K and V of the split form's heads: it needs --multihead split "
        "(the wrapper form's heads each have their own)"));
  }
  if (kv > heads || heads % kv != 0) {
    throw Error(fmt::format(
        "--kv-heads {} does not divide --heads {}: each K/V head serves the same number of "
        "query heads",
        kv, heads));
  }
}

}  // namespace attn::cli
