#pragma once

// The small files of /proc and /sys, and the cgroups a process is in: for the limits on its CPU
// time (cpu_limit.cpp) and on its memory (memory_limit.cpp).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::sysfiles {

// The parts of s between the separators (an empty part where two are adjacent).
std::vector<std::string_view> split(std::string_view s, char sep);

// The whole of a small file, with read(2); nullopt where it cannot be opened.
std::optional<std::string> read_text(const std::string& path);
// Its first line, without the newline; nullopt where it cannot be read or is empty.
std::optional<std::string> first_line(const std::string& path);
// A whole number, as cgroup files write them, and nothing else.
std::optional<double> number(std::string_view text);

// What `reading` gives for a cgroup's folder (`v2`: of the unified hierarchy), where it gives
// one: a limit.
using Reading = std::function<std::optional<double>(const std::string& dir, bool v2)>;

// The least limit that `reading` finds in the folders of the process's cgroups and their parents
// up to each hierarchy's mount point (a parent's limit bounds its children's): in the unified
// (v2) hierarchy, and in the v1 hierarchy that has `controller`. The cgroups are found through
// `cgroup` (/proc/self/cgroup) and their folders through `mountinfo` (/proc/self/mountinfo); a
// cgroup outside the mounted one (another cgroup namespace) is read at the mount point. nullopt
// where there is no limit or none can be read.
std::optional<double> least_limit(const std::string& mountinfo, const std::string& cgroup,
                                  std::string_view controller, const Reading& reading);

}  // namespace attn::sysfiles
