// Files: load_matrix picks a parser by extension, read_file reads, write_file_atomic writes.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include "attn/error.hpp"
#include "attn/io.hpp"
#include "io_internal.hpp"

namespace attn {

namespace {

using namespace io_detail;  // the helpers the .npy, text and file parts share

std::string errno_text(int error) { return std::generic_category().message(error); }

// Closes a file descriptor when it goes out of scope, unless released.
struct FdCloser {
  explicit FdCloser(int f = -1) : fd(f) {}
  FdCloser(FdCloser&& other) noexcept : fd(std::exchange(other.fd, -1)) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  FdCloser& operator=(FdCloser&&) = delete;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
  int fd = -1;
};

}  // namespace

LoadedMatrix load_matrix(const std::filesystem::path& path, std::uint64_t memory_limit) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension == ".npy") return parse_npy(read_file(path, memory_limit), path.string());
  if (extension == ".csv") return parse_csv(read_file(path, memory_limit), path.string());
  if (extension == ".json") {
    return parse_json_matrix(read_file(path, memory_limit), path.string(), memory_limit);
  }
  throw Error(fmt::format("{}: the extension {} is not known: allowed are .npy, .csv and .json",
                          path.string(), extension.empty() ? "(none)" : excerpt(extension)));
}

namespace {

enum class ReadOutcome { kAll, kTooLarge };

// Gives `s` room for exactly `n` bytes: std::string::reserve may round up to twice its capacity,
// past the limit a reader keeps to.
void reserve_exactly(std::string& s, std::size_t n) {
  std::string bigger;
  bigger.reserve(n);
  bigger.append(s);
  s.swap(bigger);
}

// Reads `fd` to its end into `out`, unless it holds more than `max_bytes`: then it stops at the
// first read past the limit, or before reading when a regular file is larger, and returns
// kTooLarge. The string grows by doubling but never past max_bytes, so a device that never ends
// (/dev/zero) costs at most max_bytes of memory (and the heap about twice that while it grows).
// Throws the errno of a failed read through `fail`.
template <class Fail>
ReadOutcome read_capped(int fd, std::uint64_t max_bytes, std::string& out, Fail fail) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const off_t at = ::lseek(fd, 0, SEEK_CUR);  // standard input may have been read from
    const auto left = static_cast<std::uint64_t>(st.st_size - std::clamp<off_t>(at, 0, st.st_size));
    if (left > max_bytes) return ReadOutcome::kTooLarge;
    reserve_exactly(out, static_cast<std::size_t>(left));
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking pipe: wait
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n < 0) throw fail(errno);
    if (n == 0) return ReadOutcome::kAll;
    const auto got = static_cast<std::size_t>(n);
    if (got > max_bytes - out.size()) return ReadOutcome::kTooLarge;
    if (out.capacity() - out.size() < got) {
      reserve_exactly(
          out, static_cast<std::size_t>(std::min<std::uint64_t>(
                   std::max<std::uint64_t>(2 * out.capacity(), out.size() + got), max_bytes)));
    }
    out.append(buffer, got);
  }
}

}  // namespace

namespace {

// "PATH: cannot read: REASON"
Error read_error(const std::filesystem::path& path, int error) {
  return Error(fmt::format("{}: cannot read: {}", path.string(), errno_text(error)));
}

// The file at `path`, open for reading; a folder is refused as unreadable.
FdCloser open_file(const std::filesystem::path& path) {
  FdCloser file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) throw read_error(path, errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw read_error(path, errno);
  if (S_ISDIR(st.st_mode)) throw read_error(path, EISDIR);
  return file;
}

}  // namespace

namespace {

// read_capped of `fd`, named `source` in messages: false, and `out` empty (its memory back before
// the caller's message), when it holds more than `max_bytes`.
bool read_within(int fd, const std::string& source, std::uint64_t max_bytes, std::string& out) {
  auto fail = [&](int error) {
    return Error(fmt::format("{}: cannot read: {}", source, errno_text(error)));
  };
  if (read_capped(fd, max_bytes, out, fail) == ReadOutcome::kAll) return true;
  out = std::string();
  return false;
}

// read_file's reading, of an open descriptor named `source` in messages.
std::string read_whole(int fd, const std::string& source, std::uint64_t memory_limit) {
  constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;
  std::string out;
  // A device such as /dev/zero never ends: no input of the tool is anywhere near this size.
  if (!read_within(fd, source, std::min(kMaxFileBytes, memory_limit), out)) {
    if (memory_limit < kMaxFileBytes) {
      throw Error(fmt::format("{} is larger than {}, the memory limit: give a smaller file, or "
                              "raise the limit",
                              source, size_text(memory_limit)),
                  Setting::kMaxMemory);
    }
    throw Error(fmt::format("{} is larger than {} MiB: that is not an input of this tool", source,
                            kMaxFileBytes >> 20));
  }
  return out;
}

}  // namespace

std::string read_file(const std::filesystem::path& path, std::uint64_t memory_limit) {
  const FdCloser file = open_file(path);
  return read_whole(file.fd, path.string(), memory_limit);
}

std::string read_standard_input(std::uint64_t memory_limit) {
  return read_whole(STDIN_FILENO, "standard input", memory_limit);
}

std::uint64_t sentence_byte_limit(std::uint64_t max_memory) {
  return std::min(max_memory, kMaxSentenceBytes);
}

std::string read_sentence(int fd, const std::string& source, std::uint64_t max_memory, bool exact) {
  const std::uint64_t limit = sentence_byte_limit(max_memory);
  std::string text;
  if (!read_within(fd, source, limit, text)) {
    if (limit < kMaxSentenceBytes) {
      throw Error(fmt::format("{}: the sentence is longer than {}, the memory limit: give a "
                              "shorter sentence, or raise the limit",
                              source, size_text(limit)),
                  Setting::kMaxMemory);
    }
    throw Error(
        fmt::format("{}: the sentence is longer than {}: a sentence may have at most "
                    "{}, whatever the memory limit",
                    source, size_text(limit), size_text(limit)));
  }
  // A file's last line ends in a newline, which is not part of the sentence; an editor may add
  // empty lines after it. Trimmed in place: the sentence may be large.
  if (exact) {
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 byte order mark
  return text;
}

std::string read_sentence_file(const std::filesystem::path& path, std::uint64_t max_memory,
                               bool exact) {
  const FdCloser file = open_file(path);
  return read_sentence(file.fd, path.string(), max_memory, exact);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, bool overwrite) {
  const std::string name = path.filename().string();
  auto exists = [&] { return Error(path.string() + " exists: replace it", Setting::kReplace); };
  auto fail = [&](std::string_view step, int error) {
    return Error(fmt::format("{}: cannot write: {}: {}", path.string(), step, errno_text(error)));
  };
  if (name.empty() || name == "." || name == "..") {
    throw Error(path.string() + ": cannot write: the path names a folder, not a file");
  }
  struct stat st {};
  if (!overwrite && ::lstat(path.c_str(), &st) == 0) throw exists();

  // The temporary file: .NAME.tmp-XXXXXX next to the target, so that the rename stays within one
  // file system. Made with O_EXCL rather than mkstemp, whose mode 0600 the file would keep: this
  // way it gets 0666 less the umask, like any file the user creates.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::random_device entropy;
  std::filesystem::path temp;
  FdCloser file;
  for (int attempt = 0; file.fd < 0; ++attempt) {
    constexpr std::string_view kChars =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string suffix;
    for (int i = 0; i < 6; ++i) suffix += kChars[entropy() % kChars.size()];
    temp = dir / ("." + name + ".tmp-" + suffix);
    file.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (file.fd < 0 && (errno != EEXIST || attempt == 100)) {
      throw fail("creating a temporary file", errno);
    }
  }
  // From here on, any failure removes the temporary file.
  struct Remover {
    const std::filesystem::path& temp;
    bool armed = true;
    ~Remover() {
      if (armed) ::unlink(temp.c_str());
    }
  } remover{temp};

  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("writing", errno);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(file.fd) != 0) throw fail("flushing", errno);
  const int fd = std::exchange(file.fd, -1);
  if (::close(fd) != 0) throw fail("closing", errno);

  if (overwrite) {
    if (::rename(temp.c_str(), path.c_str()) != 0) throw fail("renaming", errno);
  } else if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    // Never replace a file that appeared meanwhile. Where the file system cannot rename that way,
    // link() does the same: it fails when the name exists.
    if (errno == EEXIST) throw exists();
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) throw fail("renaming", errno);
    if (::link(temp.c_str(), path.c_str()) != 0) {
      if (errno == EEXIST) throw exists();
      throw fail("linking", errno);
    }
    ::unlink(temp.c_str());
  }
  remover.armed = false;

  // Make the new name durable too; the file is in place already, so this is best effort.
  FdCloser directory{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (directory.fd >= 0) ::fsync(directory.fd);
}

}  // namespace attn
