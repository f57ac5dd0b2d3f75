// --export's folder, written as one set: every file goes into a staging folder beside DIR, which
// then takes DIR's place in one rename; a failure or a signal removes the staging folder, so DIR
// holds the earlier set or the new one, whole, and nothing else is left behind.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE, RENAME_EXCHANGE
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/export.hpp"
#include "attn/render_json.hpp"
#include "export_target.hpp"

namespace attn {

namespace {

using export_detail::errno_text;
using export_detail::Fd;
using export_detail::folder_entries;
using export_detail::Found;
using export_detail::Inspection;
using export_detail::Target;

// --- What a signal handler needs, where it can reach it without allocating or locking. ---------
// write_export fills these in before the phase becomes kStaging, changes the staging name only
// while the phase is kSwapping (signals held), and clears them after the phase is kIdle again;
// export_interrupted reads them only in kStaging, which it turns into kCleaning, or kCleaning.
enum Phase : int { kIdle, kStaging, kCleaning, kSwapping };
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");
std::atomic<int> g_phase{kIdle};
std::atomic<int> g_held_signal{0};     // a signal that came during the swap
int g_parent_fd = -1;                  // DIR's parent folder
std::atomic<int> g_staging_fd{-1};     // the staging folder
char g_staging_name[NAME_MAX + 1];     // its name in the parent
const char* const* g_names = nullptr;  // the files it may hold
std::size_t g_name_count = 0;
const char* const* g_created = nullptr;  // the parent folders created, outermost first
std::atomic<std::size_t> g_created_count{0};

// Removes the staging folder (its files by name, then the folder) and the parents created,
// innermost first. Async-signal-safe: system calls on what the globals hold, nothing else.
void remove_staging() noexcept {
  const int staging_fd = g_staging_fd.load();
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (staging_fd >= 0) {
      for (std::size_t i = 0; i < g_name_count; ++i) ::unlinkat(staging_fd, g_names[i], 0);
    }
    if (g_parent_fd < 0 || g_staging_name[0] == '\0') break;
    if (::unlinkat(g_parent_fd, g_staging_name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY) break;
  }
  for (std::size_t i = g_created_count.load(); i-- > 0;) ::rmdir(g_created[i]);
}

// Another thread's signal handler is removing the staging folder and will end the process.
[[noreturn]] void wait_for_the_handler() {
  for (;;) ::pause();
}

std::string random_suffix() {
  static std::random_device entropy;
  constexpr std::string_view kChars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string suffix;
  for (int i = 0; i < 6; ++i) suffix += kChars[entropy() % kChars.size()];
  return suffix;
}

// ".NAME.tmp-XXXXXX", NAME shortened so that the whole stays within NAME_MAX.
std::string staging_name(const std::string& name, std::string_view kind) {
  const std::size_t room = NAME_MAX - (1 + 1 + kind.size() + 1 + 6);
  return fmt::format(".{}.{}-{}", std::string_view(name).substr(0, room), kind, random_suffix());
}

// The folders of `parent` that do not exist yet, outermost first.
std::vector<std::string> missing_folders(const std::filesystem::path& parent) {
  std::vector<std::string> missing;
  std::filesystem::path p = parent;
  struct stat st {};
  while (!p.empty() && p != p.root_path() && ::stat(p.c_str(), &st) != 0 && errno == ENOENT) {
    missing.insert(missing.begin(), p.string());
    p = p.parent_path();
  }
  return missing;
}

// Writes `parts`, one after the other, to the new file `name` in the folder `dir_fd` (flushed
// later, all files at once); false (errno set) on failure.
bool write_new_file(int dir_fd, const std::string& name,
                    const std::vector<std::string_view>& parts) {
  Fd f(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (f.fd < 0) return false;
  for (std::string_view bytes : parts) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(f.fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  return ::close(std::exchange(f.fd, -1)) == 0;
}

// An entry's file in pieces: its header, then each step's values where the trace holds them
// (a whole tensor is not copied into one buffer first).
std::vector<std::string_view> npy_parts(const Trace& trace, const ExportEntry& entry,
                                        const std::string& header) {
  std::vector<std::string_view> parts{header};
  for (std::size_t i : entry.steps) {
    const Matrix& m = trace.steps.at(i).values;
    parts.emplace_back(reinterpret_cast<const char*>(m.data()),
                       sizeof(float) * static_cast<std::size_t>(m.size()));
  }
  return parts;
}

// Removes the folder `name` in `parent_fd` and the files in it (the earlier set, after the swap).
bool remove_folder(int parent_fd, const char* name, const std::string& shown) {
  {
    Fd dir(::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd < 0) return false;
    for (const std::string& entry : folder_entries(dir.fd, shown)) {
      if (::unlinkat(dir.fd, entry.c_str(), 0) != 0 && errno != ENOENT) return false;
    }
  }
  return ::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0;
}

// One export under way: it owns the globals the signal handler reads, and on destruction,
// unless finished, removes what it made.
class Staging {
 public:
  Staging(const Target& t, std::vector<std::string> names) : target_(t), names_(std::move(names)) {
    for (const std::string& n : names_) name_ptrs_.push_back(n.c_str());
    g_names = name_ptrs_.data();
    g_name_count = name_ptrs_.size();
    g_created = nullptr;
    g_created_count = 0;
    g_parent_fd = -1;
    g_staging_name[0] = '\0';
    g_staging_fd = -1;
    g_held_signal = 0;
    g_phase = kStaging;
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  ~Staging() {
    if (g_phase == kIdle) return;
    int expected = kStaging;
    if (!g_phase.compare_exchange_strong(expected, kCleaning)) {
      if (expected != kSwapping) wait_for_the_handler();
      g_phase = kCleaning;
    }
    remove_staging();
    finish();
  }

  // Creates the folders of DIR's parent that are missing, outermost first.
  void create_parents() {
    missing_ = missing_folders(target_.parent);
    created_ptrs_.reserve(missing_.size());  // never moved: the handler reads it
    g_created = created_ptrs_.data();
    for (const std::string& folder : missing_) {
      if (::mkdir(folder.c_str(), 0777) == 0) {
        created_ptrs_.push_back(folder.c_str());
        g_created_count = created_ptrs_.size();
      } else if (errno != EEXIST) {
        throw Error(fmt::format("cannot create the folder {}: {}", folder, errno_text(errno)));
      }
    }
  }

  // Opens DIR's parent folder, for every step from here on.
  int open_parent() {
    parent_.fd = ::open(target_.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_.fd < 0) fail(errno);
    g_parent_fd = parent_.fd;
    return parent_.fd;
  }

  // Creates the staging folder beside DIR, with `mode` when DIR exists (else the umask's).
  void create(std::optional<mode_t> mode) {
    const int parent_fd = parent_.fd;
    for (int attempt = 0;; ++attempt) {
      const std::string name = staging_name(target_.name, "tmp");
      // The name and the folder change together, signals held: the handler must never see
      // the name of a folder that is not this run's.
      hold_signals();
      name.copy(g_staging_name, name.size());
      g_staging_name[name.size()] = '\0';
      const int made = ::mkdirat(parent_fd, g_staging_name, 0777);
      const int e = errno;
      if (made != 0) g_staging_name[0] = '\0';
      release_signals();
      if (made == 0) break;
      if (e != EEXIST || attempt == 100) {
        throw Error(
            fmt::format("cannot export to {}: cannot write in {}, where the new set is "
                        "written before it takes the folder's place: {}",
                        target_.shown, target_.parent.string(), errno_text(e)));
      }
    }
    if (mode) ::fchmodat(parent_fd, g_staging_name, *mode, 0);
    const int fd = ::openat(parent_fd, g_staging_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(errno);
    g_staging_fd = fd;
  }

  // Writes one file into the staging folder; `name` is one of those given.
  void write(const std::string& name, const std::vector<std::string_view>& parts) {
    if (g_phase != kStaging) wait_for_the_handler();
    if (!write_new_file(g_staging_fd, name, parts)) {
      const int e = errno;
      throw Error(fmt::format("cannot write {}: {}",
                              (std::filesystem::path(target_.shown) / name).string(),
                              errno_text(e)));
    }
  }

  // Puts the staged set in DIR's place; a signal meanwhile is held until the end.
  void swap_in(Inspection found, bool force) {
    const int parent_fd = parent_.fd;
    // One flush for every file, before any of them takes DIR's place: syncfs() writes out the
    // file system's dirty data in one go, where an fsync() per file cost 4 ms each here.
    if (::syncfs(g_staging_fd) != 0 || ::fsync(g_staging_fd) != 0) fail(errno);
    hold_signals();
    const char* to = target_.name.c_str();
    for (int attempt = 0;; ++attempt) {
      if (attempt > 0) found = export_detail::inspect(parent_fd, target_, force);
      int done = -1;
      std::string earlier;  // where the earlier set is once swapped out
      if (found.found == Found::kMissing) {
        done = ::renameat2(parent_fd, g_staging_name, parent_fd, to, RENAME_NOREPLACE);
        if (done != 0 && (errno == EINVAL || errno == ENOSYS)) {
          done = ::renameat(parent_fd, g_staging_name, parent_fd, to);  // over an empty one at most
        }
      } else if (found.found == Found::kEmpty) {
        done = ::renameat(parent_fd, g_staging_name, parent_fd, to);  // fails if no longer empty
      } else {
        done = ::renameat2(parent_fd, g_staging_name, parent_fd, to, RENAME_EXCHANGE);
        earlier = g_staging_name;
        if (done != 0 && (errno == EINVAL || errno == ENOSYS)) {
          // A file system that cannot exchange two names: DIR to a name of its own, then the
          // new set to DIR (and back, should that fail).
          earlier = staging_name(target_.name, "old");
          done = ::renameat(parent_fd, to, parent_fd, earlier.c_str());
          if (done == 0 && ::renameat(parent_fd, g_staging_name, parent_fd, to) != 0) {
            const int e = errno;
            ::renameat(parent_fd, earlier.c_str(), parent_fd, to);
            errno = e;
            done = -1;
          }
        }
      }
      if (done == 0) {
        g_staging_name[0] = '\0';  // DIR holds the new set: nothing of it to remove any more
        g_created_count = 0;
        if (!earlier.empty() && !remove_folder(parent_fd, earlier.c_str(), target_.shown)) {
          const int e = errno;
          finish();
          throw Error(
              fmt::format("the export is in {}, but the earlier one, moved to {}, could "
                          "not be removed: {}",
                          target_.shown, (target_.parent / earlier).string(), errno_text(e)));
        }
        break;
      }
      const int e = errno;
      // DIR changed since it was inspected (another export, say): look again.
      if ((e == EEXIST || e == ENOTEMPTY || e == ENOENT || e == ENOTDIR || e == EISDIR) &&
          attempt < 10) {
        continue;
      }
      fail(e);
    }
    ::fsync(parent_fd);
    finish();
  }

 private:
  [[noreturn]] void fail(int e) {
    // The new set is swapped in by renaming a folder over DIR, which cannot be done to a mount
    // point (a tmpfs or a container's volume).
    throw Error(fmt::format("cannot export to {}: {}{}", target_.shown, errno_text(e),
                            e == EBUSY ? " (a mount point, which an export cannot replace: export "
                                         "into a folder inside it)"
                                       : ""));
  }

  // From staging to swapping: a signal is held from now on, not acted on.
  void hold_signals() {
    int expected = kStaging;
    if (!g_phase.compare_exchange_strong(expected, kSwapping)) wait_for_the_handler();
  }

  // Back to staging; a signal held meanwhile is raised now, and its handler removes the folder.
  void release_signals() {
    int expected = kSwapping;
    g_phase.compare_exchange_strong(expected, kStaging);
    if (const int held = g_held_signal.exchange(0)) ::raise(held);
  }

  // Back to idle; a signal held during the swap is raised now.
  void finish() {
    g_phase = kIdle;  // first: from here on the handler reads nothing
    const int staging_fd = g_staging_fd.exchange(-1);
    if (staging_fd >= 0) ::close(staging_fd);
    g_names = nullptr;
    g_name_count = 0;
    g_created = nullptr;
    g_created_count = 0;
    g_parent_fd = -1;
    g_staging_name[0] = '\0';
    if (const int held = g_held_signal.exchange(0)) ::raise(held);
  }

  const Target& target_;
  Fd parent_;  // DIR's parent folder; closed after the destructor's removal
  std::vector<std::string> names_;
  std::vector<const char*> name_ptrs_;
  std::vector<std::string> missing_;
  std::vector<const char*> created_ptrs_;
};

}  // namespace

bool export_interrupted(int signal) noexcept {
  int expected = kStaging;
  if (g_phase.compare_exchange_strong(expected, kCleaning) || expected == kCleaning) {
    // (Cleaning already, after a failure or in another thread's handler: removing twice is
    // harmless, and the process must not end with the folder half removed.)
    remove_staging();
    return true;
  }
  if (expected == kSwapping) {
    g_held_signal = signal;
    return false;
  }
  return true;
}

std::vector<std::string> write_export(const Trace& trace, const std::filesystem::path& dir,
                                      bool force, const std::optional<SvgOptions>& figures) {
  const Target target = export_detail::target_of(dir);
  const std::vector<ExportEntry> plan = export_plan(trace, figures.has_value());
  std::vector<std::string> names;
  for (const ExportEntry& e : plan) {
    names.push_back(e.name);
    if (!e.figure.empty()) names.push_back(e.figure);
  }
  names.push_back("manifest.json");

  // DIR is looked at before anything is made, so that a refusal leaves no trace at all.
  std::optional<Inspection> found;
  {
    Fd parent(::open(target.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (parent.fd >= 0) {
      found = export_detail::inspect(parent.fd, target, force);
    } else if (errno != ENOENT) {
      throw Error(fmt::format("cannot export to {}: {}", target.shown, errno_text(errno)));
    }
  }
  Staging staging(target, names);
  staging.create_parents();
  const int parent = staging.open_parent();
  if (!found) found = export_detail::inspect(parent, target, force);
  staging.create(found->found == Found::kMissing ? std::nullopt
                                                 : std::optional<mode_t>(found->mode));
  static_assert(std::endian::native == std::endian::little, ".npy '<f4' is little-endian");
  for (const ExportEntry& e : plan) {
    const std::string header = export_npy_header(e);
    staging.write(e.name, npy_parts(trace, e, header));
    if (!e.figure.empty()) {
      const std::vector<std::string> figure = render_svg_parts(trace, e.steps, *figures);
      staging.write(e.figure, std::vector<std::string_view>(figure.begin(), figure.end()));
    }
  }
  const std::string manifest = render_manifest(trace, plan);
  staging.write("manifest.json", {manifest});
  staging.swap_in(*found, force);
  return names;
}

}  // namespace attn
