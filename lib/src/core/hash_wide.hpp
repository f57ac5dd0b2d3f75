#pragma once

// XXH3-64 compiled for wider vectors. xxHash chooses its vector code when it is compiled, so each
// width is a file of its own, built with -mavx2 or -mavx512f (hash_avx2.cpp, hash_avx512.cpp),
// that includes nothing but xxHash (inline, so nothing in it is shared with other files). The
// hash is xxHash's definition, the same on every path; the state is xxHash's XXH3_state_t, whose
// layout does not depend on the vector width. Call a width's functions only on a CPU that has it.

#include <cstddef>
#include <cstdint>

namespace attn::hash_avx2 {
std::uint64_t xxh3_64(const void* data, std::size_t bytes);
void xxh3_update(void* state, const void* data, std::size_t bytes);  // state: XXH3_state_t
}  // namespace attn::hash_avx2

namespace attn::hash_avx512 {
std::uint64_t xxh3_64(const void* data, std::size_t bytes);
void xxh3_update(void* state, const void* data, std::size_t bytes);  // state: XXH3_state_t
}  // namespace attn::hash_avx512
