#pragma once

// Fake /proc and /sys files for the tests of what a process reads of its machine: its cgroups'
// limits (parallel_test.cpp, memory_test.cpp) and its CPUs' topology.

#include <filesystem>
#include <fstream>
#include <string>

namespace attn::test {

// Writes `text` to `path`, making its folders.
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A fake /proc/self/mountinfo line for a cgroup hierarchy: its root, where it is mounted, its
// type and its super options.
inline std::string mount_line(const std::string& root, const std::filesystem::path& point,
                              const std::string& type, const std::string& options) {
  return "35 24 0:30 " + root + " " + point.string() +
         " rw,nosuid,nodev,noexec,relatime shared:9 - " + type + " cgroup " + options + "\n";
}

}  // namespace attn::test
