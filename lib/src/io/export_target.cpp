// --export's target folder: what DIR is now (missing, empty, an earlier export, or something
// write_export must not replace), read without following links.
#include "export_target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "attn/error.hpp"

namespace attn::export_detail {

namespace {

// The remedy of a refused folder; the caller adds how to replace (Setting::kReplace).
constexpr std::string_view kAllowed = "give a new or empty folder, or an earlier export to replace";

// The whole content of a file of at most `limit` bytes; false (errno set) on failure.
bool read_small(int dir_fd, const char* name, std::size_t limit, std::string& out) {
  Fd f(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) return false;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > limit) {
      errno = EFBIG;
      return false;
    }
  }
}

}  // namespace

std::string errno_text(int error) { return std::generic_category().message(error); }

Target target_of(const std::filesystem::path& dir) {
  std::string text = dir.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  const std::filesystem::path path(text);
  Target t{dir.string(), path.parent_path(), path.filename().string()};
  if (t.parent.empty()) t.parent = ".";
  if (t.name.empty() || t.name == "." || t.name == ".." || t.name == "/") {
    throw Error(fmt::format("cannot export to {}: name the folder itself, not /, . or ..",
                            t.shown.empty() ? "''" : t.shown));
  }
  return t;
}

// The names in a folder, without "." and "..". Throws Error naming `shown`.
std::vector<std::string> folder_entries(int fd, const std::string& shown) {
  const int copy = ::dup(fd);
  DIR* d = copy < 0 ? nullptr : ::fdopendir(copy);
  if (d == nullptr) {
    const int e = errno;
    if (copy >= 0) ::close(copy);
    throw Error(fmt::format("cannot export to {}: {}", shown, errno_text(e)));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(d)) {
    const std::string_view n = entry->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  const int e = errno;
  ::closedir(d);
  if (e != 0) throw Error(fmt::format("cannot export to {}: {}", shown, errno_text(e)));
  return names;
}

namespace {

// Why the folder `fd`, not empty, is not an export of attn-trace and nothing else: "" when it
// is one; nullopt when a file vanished as it was read (another export swapped DIR meanwhile).
std::optional<std::string> not_an_export(int fd, const std::vector<std::string>& entries,
                                         const std::string& shown) {
  auto failed = [&](const std::string& name) {
    return Error(
        fmt::format("cannot export to {}: {}/{}: {}", shown, shown, name, errno_text(errno)));
  };
  struct stat st {};
  if (::fstatat(fd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return "it has no manifest.json";
    throw failed("manifest.json");
  }
  if (S_ISLNK(st.st_mode)) return "its manifest.json is a symbolic link";
  if (!S_ISREG(st.st_mode)) return "its manifest.json is not a file";
  std::string text;
  constexpr std::size_t kMaxManifest = std::size_t{1} << 30;
  if (!read_small(fd, "manifest.json", kMaxManifest, text)) {
    if (errno == ENOENT) return std::nullopt;
    throw failed("manifest.json");
  }
  const nlohmann::json manifest = nlohmann::json::parse(text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("tool") ||
      manifest["tool"] != "attn-trace" || !manifest.contains("files") ||
      !manifest["files"].is_array()) {
    return "its manifest.json is not attn-trace's";
  }
  std::set<std::string> listed{"manifest.json"};
  for (const nlohmann::json& f : manifest["files"]) {
    if (f.is_object() && f.contains("file") && f["file"].is_string()) {
      listed.insert(f["file"].get<std::string>());
    }
    if (f.is_object() && f.contains("figure") && f["figure"].is_string()) {
      listed.insert(f["figure"].get<std::string>());  // --format svg's figure of the file's step
    }
  }
  for (const std::string& name : entries) {
    if (!listed.contains(name)) return fmt::format("{} is not in its manifest", name);
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return std::nullopt;
      throw failed(name);
    }
    if (!S_ISREG(st.st_mode)) return fmt::format("{} is not a file", name);
  }
  return "";
}

// What DIR is now; nullopt when it changed while being looked at. Throws Error when it is
// nothing write_export may replace.
std::optional<Inspection> inspect_once(int parent_fd, const Target& t, bool force) {
  struct stat st {};
  if (::fstatat(parent_fd, t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Inspection{};
    throw Error(fmt::format("cannot export to {}: {}", t.shown, errno_text(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    throw Error(fmt::format("{} is a symbolic link: {}", t.shown, kAllowed), Setting::kReplace);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(fmt::format("{} is not a folder: {}", t.shown, kAllowed), Setting::kReplace);
  }
  Fd dir(::openat(parent_fd, t.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)) return std::nullopt;
  if (dir.fd < 0) throw Error(fmt::format("cannot export to {}: {}", t.shown, errno_text(errno)));
  const std::vector<std::string> entries = folder_entries(dir.fd, t.shown);
  const std::optional<std::string> why =
      entries.empty() ? std::string() : not_an_export(dir.fd, entries, t.shown);
  // The folder read must still be DIR: another export may have swapped it out meanwhile, and
  // be removing its files.
  struct stat now {};
  if (!why || ::fstat(dir.fd, &st) != 0 ||
      ::fstatat(parent_fd, t.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
      now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
    return std::nullopt;
  }
  if (!why->empty()) {
    throw Error(fmt::format("{} is not empty and not an export of attn-trace ({}): {}", t.shown,
                            *why, kAllowed),
                Setting::kReplace);
  }
  const mode_t mode = st.st_mode & 07777;
  if (entries.empty()) return Inspection{Found::kEmpty, mode};
  if (!force) {
    throw Error(fmt::format("{} holds an earlier export: replace it", t.shown), Setting::kReplace);
  }
  return Inspection{Found::kExport, mode};
}

}  // namespace

Inspection inspect(int parent_fd, const Target& t, bool force) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (const std::optional<Inspection> found = inspect_once(parent_fd, t, force)) return *found;
  }
  throw Error(
      fmt::format("cannot export to {}: it keeps changing (another program is writing "
                  "there): try again",
                  t.shown));
}

}  // namespace attn::export_detail
