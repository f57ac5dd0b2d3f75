// The small files of /proc and /sys, and the cgroups a process is in.

#include "sysfiles.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <system_error>

namespace attn::sysfiles {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t from = 0;;) {
    const std::size_t to = s.find(sep, from);
    parts.push_back(s.substr(from, to == std::string_view::npos ? to : to - from));
    if (to == std::string_view::npos) return parts;
    from = to + 1;
  }
}

// The streams' locale and buffers made the whole reading take 0.4 ms of each run's start, Zen 5.
std::optional<std::string> read_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > (std::size_t{16} << 20)) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::optional<std::string> first_line(const std::string& path) {
  std::optional<std::string> text = read_text(path);
  if (!text || text->empty()) return std::nullopt;
  text->erase(std::min(text->find('\n'), text->size()));
  return text;
}

std::optional<double> number(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return static_cast<double>(v);
}

namespace {

// A path of /proc/self/mountinfo as written, with its spaces, tabs, newlines and backslashes
// given back (the kernel writes them as \040, \011, \012 and \134).
std::string unescaped(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                    s.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// `least` lowered to `limit` where that is a lower one.
void keep_least(std::optional<double>& least, const std::optional<double>& limit) {
  if (limit && (!least || *limit < *least)) least = limit;
}

// A cgroup hierarchy that holds the controller: where it is mounted, which of its cgroups is
// mounted there, and which one the process is in.
struct Hierarchy {
  bool v2 = false;
  std::string mount_root, mount_point, cgroup;
};

// The least limit of the process's cgroup and of its parents up to the mount point.
std::optional<double> least_along(const Hierarchy& h, const Reading& reading) {
  // The cgroup's directory: its path below the mounted cgroup, under the mount point. A path
  // outside the mounted cgroup (another cgroup namespace) is read at the mount point.
  std::string below;
  const std::string& root = h.mount_root;
  if (root == "/") {
    below = h.cgroup;
  } else if (h.cgroup == root || h.cgroup.starts_with(root + "/")) {
    below = h.cgroup.substr(root.size());
  }
  while (!below.empty() && below.back() == '/') below.pop_back();
  std::optional<double> least;
  for (;;) {
    keep_least(least, reading(h.mount_point + below, h.v2));
    if (below.empty()) break;
    const std::size_t slash = below.rfind('/');
    below.erase(slash == std::string::npos ? 0 : slash);
  }
  return least;
}

}  // namespace

std::optional<double> least_limit(const std::string& mountinfo, const std::string& cgroup,
                                  std::string_view controller, const Reading& reading) {
  // The process's cgroups: "0::/path" in the unified (v2) hierarchy, "N:cpu,cpuacct:/path" in
  // a v1 hierarchy that has (here) the CPU controller.
  std::optional<std::string> v2_cgroup, v1_cgroup;
  const std::optional<std::string> cgroups = read_text(cgroup);
  if (!cgroups) return std::nullopt;
  for (const std::string_view line : split(*cgroups, '\n')) {
    const std::size_t a = line.find(':'), b = a == line.npos ? a : line.find(':', a + 1);
    if (b == line.npos) continue;
    const std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) v2_cgroup = std::string(path);
    const std::vector<std::string_view> names = split(controllers, ',');
    if (std::find(names.begin(), names.end(), controller) != names.end()) {
      v1_cgroup = std::string(path);
    }
  }
  if (!v2_cgroup && !v1_cgroup) return std::nullopt;
  // Their mounts: "id parent major:minor root mount-point options [optional...] - type source
  // super-options".
  std::vector<Hierarchy> hierarchies;
  const std::optional<std::string> mounts = read_text(mountinfo);
  if (!mounts) return std::nullopt;
  for (const std::string_view line : split(*mounts, '\n')) {
    const std::vector<std::string_view> f = split(line, ' ');
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string_view type = *(dash + 1);
    const std::vector<std::string_view> options = split(*(dash + 3), ',');
    Hierarchy h{.mount_root = unescaped(f[3]), .mount_point = unescaped(f[4]), .cgroup = {}};
    if (type == "cgroup2" && v2_cgroup) {
      h.v2 = true;
      h.cgroup = *v2_cgroup;
    } else if (type == "cgroup" && v1_cgroup &&
               std::find(options.begin(), options.end(), controller) != options.end()) {
      h.cgroup = *v1_cgroup;
    } else {
      continue;
    }
    hierarchies.push_back(h);
  }
  std::optional<double> least;
  for (const Hierarchy& h : hierarchies) keep_least(least, least_along(h, reading));
  return least;
}

}  // namespace attn::sysfiles
