// Private to export_folder.cpp and export_target.cpp: --export's target folder, and what DIR is.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace attn::export_detail {

// strerror's text for an errno value.
std::string errno_text(int error);

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// DIR as given (for messages), its parent folder and its name there.
struct Target {
  std::string shown;
  std::filesystem::path parent;
  std::string name;
};

// DIR's target: its parent ("." for a bare name) and its name there. Throws Error when DIR's
// last part is /, . or .., which name no folder of their own.
Target target_of(const std::filesystem::path& dir);

// The names in a folder, without "." and "..". Throws Error naming `shown`.
std::vector<std::string> folder_entries(int fd, const std::string& shown);

// What DIR is: missing, an empty folder, or an export of attn-trace's.
enum class Found { kMissing, kEmpty, kExport };

struct Inspection {
  Found found = Found::kMissing;
  mode_t mode = 0;  // DIR's permissions, when it exists
};

// What DIR is, read again while it changes (another export swapping it) up to 100 times. Throws
// Error when it is nothing write_export may replace: a link, a file, a folder that holds other
// files, or (without `force`) an earlier export.
Inspection inspect(int parent_fd, const Target& t, bool force);

}  // namespace attn::export_detail
