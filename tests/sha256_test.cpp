// The tests' SHA-256 against FIPS 180-4's examples and a message across several blocks.

#include "support/sha256.hpp"

#include <doctest/doctest.h>

#include <string>

TEST_CASE("sha256 gives the standard's digests") {
  auto digest = [](const std::string& s) { return attn::test::sha256_hex(s.data(), s.size()); };
  CHECK(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(digest(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
