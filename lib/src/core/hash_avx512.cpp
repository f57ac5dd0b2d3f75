// XXH3-64 built with -mavx512f (hash_wide.hpp): nothing else is compiled here.
// GCC 12's AVX-512 intrinsics start some results from an undefined value (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hash_wide.hpp"

namespace attn::hash_avx512 {

std::uint64_t xxh3_64(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

void xxh3_update(void* state, const void* data, std::size_t bytes) {
  (void)XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, bytes);
}

}  // namespace attn::hash_avx512
