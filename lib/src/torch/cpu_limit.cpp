// How much of the machine a process's threads can use: the CPU time its cgroups allow it (a
// container's `--cpus`, systemd's CPUQuota=), and the physical cores its CPUs are on.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "attn/parallel.hpp"

namespace attn {

namespace {

// The parts of s between the separators (an empty part where two are adjacent).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t from = 0;;) {
    const std::size_t to = s.find(sep, from);
    parts.push_back(s.substr(from, to == std::string_view::npos ? to : to - from));
    if (to == std::string_view::npos) return parts;
    from = to + 1;
  }
}

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

// The whole of a small file (/proc and /sys files), with read(2): the streams' locale and
// buffers made the whole reading take 0.4 ms of each run's start, Zen 5.
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

// A whole integer, as cgroup files write them.
std::optional<double> number(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return static_cast<double>(v);
}

// A limit in CPUs, quota over period, if both are positive integers (v1 writes -1 for none).
std::optional<double> quota_over_period(std::string_view quota_text, std::string_view period_text) {
  const auto quota = number(quota_text), period = number(period_text);
  if (!quota || !period || *quota <= 0.0 || *period <= 0.0) return std::nullopt;
  return *quota / *period;
}

// One cgroup's limit in CPUs, if it has one.
std::optional<double> limit_v2(const std::string& dir) {
  const auto line = first_line(dir + "/cpu.max");  // "max 100000" or "150000 100000"
  if (!line) return std::nullopt;
  const std::vector<std::string_view> f = split(*line, ' ');
  return f.size() == 2 ? quota_over_period(f[0], f[1]) : std::nullopt;  // "max" is no number
}

std::optional<double> limit_v1(const std::string& dir) {
  const auto quota = first_line(dir + "/cpu.cfs_quota_us");
  const auto period = first_line(dir + "/cpu.cfs_period_us");
  return quota && period ? quota_over_period(*quota, *period) : std::nullopt;
}

// `least` lowered to `limit` where that is a lower one.
void keep_least(std::optional<double>& least, const std::optional<double>& limit) {
  if (limit && (!least || *limit < *least)) least = limit;
}

// A cgroup hierarchy that holds the CPU controller: where it is mounted, which of its cgroups
// is mounted there, and which one the process is in.
struct Hierarchy {
  bool v2 = false;
  std::string mount_root, mount_point, cgroup;
};

// The least limit of the process's cgroup and of its parents up to the mount point (a parent's
// limit bounds its children's).
std::optional<double> least_limit(const Hierarchy& h) {
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
    const std::string dir = h.mount_point + below;
    keep_least(least, h.v2 ? limit_v2(dir) : limit_v1(dir));
    if (below.empty()) break;
    const std::size_t slash = below.rfind('/');
    below.erase(slash == std::string::npos ? 0 : slash);
  }
  return least;
}

}  // namespace

int cgroup_cpu_limit(const std::string& mountinfo, const std::string& cgroup) {
  // The process's cgroups: "0::/path" in the unified (v2) hierarchy, "N:cpu,cpuacct:/path" in
  // a v1 hierarchy that has the CPU controller.
  std::optional<std::string> v2_cgroup, v1_cgroup;
  const std::optional<std::string> cgroups = read_text(cgroup);
  if (!cgroups) return 0;
  for (const std::string_view line : split(*cgroups, '\n')) {
    const std::size_t a = line.find(':'), b = a == line.npos ? a : line.find(':', a + 1);
    if (b == line.npos) continue;
    const std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) v2_cgroup = std::string(path);
    const std::vector<std::string_view> names = split(controllers, ',');
    if (std::find(names.begin(), names.end(), "cpu") != names.end()) {
      v1_cgroup = std::string(path);
    }
  }
  if (!v2_cgroup && !v1_cgroup) return 0;
  // Their mounts: "id parent major:minor root mount-point options [optional...] - type source
  // super-options".
  std::vector<Hierarchy> hierarchies;
  const std::optional<std::string> mounts = read_text(mountinfo);
  if (!mounts) return 0;
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
               std::find(options.begin(), options.end(), "cpu") != options.end()) {
      h.cgroup = *v1_cgroup;
    } else {
      continue;
    }
    hierarchies.push_back(h);
  }
  std::optional<double> least;
  for (const Hierarchy& h : hierarchies) keep_least(least, least_limit(h));
  if (!least) return 0;
  // Whole CPUs, rounded up: 1.5 CPUs' time is best spent by two threads. (An integer of at most
  // 2³⁰: a quota far above the period is no limit that matters.)
  return static_cast<int>(std::clamp(std::ceil(*least - 1e-9), 1.0, 1073741824.0));
}

namespace {

// Each CPU's core, as a key equal for the CPUs of one core: its list of sibling threads in
// <cpu_dir>/cpuN/topology/core_cpus_list (thread_siblings_list before Linux 5.7), or a key of its
// own where that cannot be read or where <cpu_dir>/smt/active says 0 (one file read, not a list
// per CPU).
std::vector<std::string> core_keys(const std::vector<int>& cpus, const std::string& cpu_dir) {
  std::vector<std::string> keys;
  const auto active = first_line(cpu_dir + "/smt/active");
  const bool smt_off = active && *active == "0";
  for (const int cpu : cpus) {
    std::optional<std::string> siblings;
    if (!smt_off) {
      const std::string topology = cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/";
      siblings = first_line(topology + "core_cpus_list");
      if (!siblings) siblings = first_line(topology + "thread_siblings_list");
    }
    // A list, or "#N" for a CPU alone (no list reads as that).
    std::string key = siblings ? *siblings : std::to_string(cpu);
    if (!siblings) key.insert(key.begin(), '#');
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace

int physical_cores(const std::vector<int>& cpus, const std::string& cpu_dir) {
  const std::vector<std::string> keys = core_keys(cpus, cpu_dir);
  return std::max(1, static_cast<int>(std::set<std::string>(keys.begin(), keys.end()).size()));
}

std::vector<int> spread_order(const std::vector<int>& cpus, int here, const std::string& cpu_dir) {
  const std::vector<std::string> keys = core_keys(cpus, cpu_dir);
  // The cores in the order of their first CPU, each with its CPUs in order; `here`'s core, and
  // `here` itself within it, moved last.
  std::vector<std::vector<int>> cores;
  std::vector<std::string> core_of;
  std::size_t here_core = 0;
  bool here_found = false;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    const auto at = std::find(core_of.begin(), core_of.end(), keys[i]);
    const std::size_t c = static_cast<std::size_t>(at - core_of.begin());
    if (at == core_of.end()) {
      core_of.push_back(keys[i]);
      cores.emplace_back();
    }
    cores[c].push_back(cpus[i]);
    if (cpus[i] == here) here_core = c, here_found = true;
  }
  if (here_found) {
    std::vector<int>& mine = cores[here_core];
    std::rotate(mine.begin(), std::find(mine.begin(), mine.end(), here) + 1, mine.end());
    // The cores from the one after here's, here's last.
    std::rotate(cores.begin(), cores.begin() + static_cast<std::ptrdiff_t>(here_core) + 1,
                cores.end());
  }
  // One CPU of each core in that order, then a second of each, and so on.
  std::vector<int> order;
  for (std::size_t round = 0; order.size() < cpus.size(); ++round) {
    for (const std::vector<int>& core : cores) {
      if (round < core.size()) order.push_back(core[round]);
    }
  }
  return order;
}

}  // namespace attn
