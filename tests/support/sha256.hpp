#pragma once

// SHA-256 (FIPS 180-4), for the references' digests of whole tables: small enough to keep here
// rather than link a cryptography library into the tests for it.

#include <cstddef>
#include <string>

namespace attn::test {

// The digest of `size` bytes, as 64 lowercase hex digits.
std::string sha256_hex(const void* data, std::size_t size);

}  // namespace attn::test
