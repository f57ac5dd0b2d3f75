#pragma once

// The command line's checks of today's attention variants (--rope, --kv-heads, --window):
// every combination that makes no sense, refused with an error that names both options.

#include "cli.hpp"

namespace attn::cli {

// Throws Error naming both options of a combination that makes no sense.
void check_variant_options(const Options& o);

}  // namespace attn::cli
