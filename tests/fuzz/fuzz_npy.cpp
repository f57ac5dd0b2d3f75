// Fuzzes attn::parse_npy: the bytes are a .npy file (numpy.save's format, versions 1.0 to 3.0). A
// parser may refuse any input with attn::Error; what it accepts must be a non-empty matrix of
// finite values that round-trips through npy_bytes (fuzz_matrix_check.hpp).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "fuzz_matrix_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  attn::LoadedMatrix loaded;
  try {
    loaded = attn::parse_npy(bytes, "fuzz.npy");
  } catch (const attn::Error&) {
    return 0;  // refused, with a message: the documented outcome for bad input
  }
  attn::fuzz::check_loaded_matrix(loaded);
  return 0;
}
