// How much of the machine a process's threads can use: the CPU time its cgroups allow it (a
// container's `--cpus`, systemd's CPUQuota=), and the physical cores its CPUs are on.

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/parallel.hpp"
#include "sysfiles.hpp"

namespace attn {

namespace {

using sysfiles::first_line;
using sysfiles::number;

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
  const std::vector<std::string_view> f = sysfiles::split(*line, ' ');
  return f.size() == 2 ? quota_over_period(f[0], f[1]) : std::nullopt;  // "max" is no number
}

std::optional<double> limit_v1(const std::string& dir) {
  const auto quota = first_line(dir + "/cpu.cfs_quota_us");
  const auto period = first_line(dir + "/cpu.cfs_period_us");
  return quota && period ? quota_over_period(*quota, *period) : std::nullopt;
}

}  // namespace

int cgroup_cpu_limit(const std::string& mountinfo, const std::string& cgroup) {
  const std::optional<double> least = sysfiles::least_limit(
      mountinfo, cgroup, "cpu",
      [](const std::string& dir, bool v2) { return v2 ? limit_v2(dir) : limit_v1(dir); });
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
