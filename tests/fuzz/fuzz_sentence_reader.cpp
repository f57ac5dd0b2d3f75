// Fuzzes attn::read_sentence on bytes as standard input or a file gives them (a byte order mark,
// newlines, anything): through a pipe and through a file in memory (memfd), under a limit just
// below the input's size, at it, and far above it. Under the limit, the sentence must be the
// bytes without a leading UTF-8 byte order mark and without the final '\n' and '\r'; over it,
// the refusal is the documented one. The sentence then goes to tokenize, as the command line
// does.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "attn/tokenizer.hpp"

namespace {

// What read_sentence must return for `bytes`.
std::string expected_sentence(std::string_view bytes) {
  if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) bytes.remove_suffix(1);
  return std::string(bytes);
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads `fd` with the limit `max_memory` and checks the outcome against the bytes.
void check(int fd, std::string_view bytes, std::uint64_t max_memory) {
  std::string sentence;
  try {
    sentence = attn::read_sentence(fd, "fuzz input", max_memory);
  } catch (const attn::Error& e) {
    // Refused only when there are more bytes than the limit, and then with the message.
    if (bytes.size() <= attn::sentence_byte_limit(max_memory)) __builtin_trap();
    if (std::string_view(e.what()).find("fuzz input: the sentence is longer than ") != 0) {
      __builtin_trap();
    }
    return;
  }
  if (bytes.size() > attn::sentence_byte_limit(max_memory)) __builtin_trap();
  if (sentence != expected_sentence(bytes)) __builtin_trap();
  try {
    (void)attn::tokenize(sentence);
  } catch (const attn::Error&) {
    // invalid UTF-8 or a control character, refused with its byte offset
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::uint64_t limits[] = {size > 1 ? size - 1 : 1, size > 0 ? size : 1, 1 << 20};
  for (const std::uint64_t max_memory : limits) {
    // A pipe, as `attn-trace - < file` or `... | attn-trace -` gives; its buffer holds 64 KiB.
    if (size <= 65536) {
      int fds[2];
      if (::pipe(fds) != 0) __builtin_trap();
      if (!write_all(fds[1], bytes)) __builtin_trap();
      ::close(fds[1]);
      check(fds[0], bytes, max_memory);
      ::close(fds[0]);
    }
    // A file, as --file gives (a memfd is a regular file: its size is known before reading).
    const int file = ::memfd_create("fuzz_sentence", MFD_CLOEXEC);
    if (file < 0) __builtin_trap();
    if (!write_all(file, bytes) || ::lseek(file, 0, SEEK_SET) != 0) __builtin_trap();
    check(file, bytes, max_memory);
    ::close(file);
  }
  return 0;
}
