// The memory a run can have on this machine: the system's available memory and swap, and the
// memory limit of the process's cgroups (a container's `--memory`, systemd's MemoryMax=).

#include <optional>
#include <string>
#include <string_view>

#include "attn/memory.hpp"
#include "sysfiles.hpp"

namespace attn {

namespace {

// A field of /proc/meminfo in bytes: "MemAvailable:   24198972 kB".
std::optional<double> meminfo_field(std::string_view text, std::string_view name) {
  for (const std::string_view line : sysfiles::split(text, '\n')) {
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':') {
      continue;
    }
    std::string_view value = line.substr(name.size() + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    double unit = 1.0;
    if (value.ends_with(" kB")) {
      value.remove_suffix(3);
      unit = 1024.0;
    }
    const std::optional<double> n = sysfiles::number(value);
    if (!n || *n < 0.0) return std::nullopt;
    return *n * unit;
  }
  return std::nullopt;
}

// One cgroup's memory limit in bytes, if it has one: v2 writes "max" for none, v1 a number near
// 2⁶³ (9223372036854771712).
std::optional<double> memory_limit(const std::string& dir, bool v2) {
  const auto line = sysfiles::first_line(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  if (!line) return std::nullopt;
  const std::optional<double> n = sysfiles::number(*line);
  if (!n || *n < 0.0 || *n >= 0x1p60) return std::nullopt;
  return n;
}

}  // namespace

std::optional<MachineMemory> machine_memory(const std::string& meminfo,
                                            const std::string& mountinfo,
                                            const std::string& cgroup) {
  std::optional<MachineMemory> least;
  if (const std::optional<std::string> text = sysfiles::read_text(meminfo)) {
    const std::optional<double> available = meminfo_field(*text, "MemAvailable");
    if (available) {
      const double swap = meminfo_field(*text, "SwapFree").value_or(0.0);
      least = MachineMemory{static_cast<std::uint64_t>(*available + swap), false};
    }
  }
  const std::optional<double> limit =
      sysfiles::least_limit(mountinfo, cgroup, "memory", memory_limit);
  if (limit && (!least || *limit < static_cast<double>(least->bytes))) {
    least = MachineMemory{static_cast<std::uint64_t>(*limit), true};
  }
  return least;
}

}  // namespace attn
