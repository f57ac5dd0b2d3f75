#include "attn/memory.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "support/fake_files.hpp"
#include "support/real_cgroup.hpp"
#include "support/temp_dir.hpp"

using attn::test::mount_line;
using attn::test::TempDir;
using attn::test::write_file;

namespace fs = std::filesystem;

TEST_CASE("machine_memory reads the available memory and swap of /proc/meminfo") {
  const TempDir dir;
  const fs::path meminfo = dir.path() / "meminfo", none = dir.path() / "none";
  const auto memory = [&] { return attn::machine_memory(meminfo, none, none); };
  write_file(meminfo,
             "MemTotal:       24683744 kB\nMemFree:        21000000 kB\n"
             "MemAvailable:   24198972 kB\nBuffers:           12345 kB\nSwapTotal:        "
             "1048576 kB\nSwapFree:          524288 kB\n");
  REQUIRE(memory());
  CHECK(memory()->bytes == (24198972ull + 524288ull) * 1024);
  CHECK_FALSE(memory()->cgroup);
  // Without swap, and without the SwapFree line: the available memory alone.
  write_file(meminfo, "MemTotal: 2000 kB\nMemAvailable: 1000 kB\n");
  REQUIRE(memory());
  CHECK(memory()->bytes == 1024000);
  // A field whose name only starts the same is not it; nothing readable is no answer.
  write_file(meminfo, "MemAvailableX: 5 kB\nMemFree: 7 kB\n");
  CHECK_FALSE(memory());
  write_file(meminfo, "MemAvailable: lots kB\n");
  CHECK_FALSE(memory());
  CHECK_FALSE(attn::machine_memory(none, none, none));
  // The real one: some memory, and no more than the address space can hold.
  const auto real = attn::machine_memory();
  REQUIRE(real);
  CHECK(real->bytes > 0);
}

TEST_CASE("machine_memory takes a cgroup's memory limit where it is less") {
  const TempDir dir;
  const fs::path meminfo = dir.path() / "meminfo", mountinfo = dir.path() / "mountinfo",
                 cgroup = dir.path() / "cgroup";
  write_file(meminfo, "MemAvailable: 4194304 kB\nSwapFree: 0 kB\n");  // 4 GiB
  const auto memory = [&] { return attn::machine_memory(meminfo, mountinfo, cgroup); };

  // cgroup v2: memory.max along the process's path, "max" for none.
  const fs::path unified = dir.path() / "unified";
  write_file(mountinfo, mount_line("/", unified, "cgroup2", "rw"));
  write_file(cgroup, "0::/box/inner\n");
  write_file(unified / "box/inner/memory.max", "max\n");
  CHECK(memory()->bytes == 4ull << 30);
  CHECK_FALSE(memory()->cgroup);
  write_file(unified / "box/memory.max", "1073741824\n");  // a parent's limit bounds its children
  CHECK(memory()->bytes == 1ull << 30);
  CHECK(memory()->cgroup);
  write_file(unified / "box/inner/memory.max", "536870912\n");
  CHECK(memory()->bytes == 512ull << 20);
  // A limit above the available memory: the available memory.
  write_file(unified / "box/inner/memory.max", "8589934592\n");
  write_file(unified / "box/memory.max", "max\n");
  CHECK(memory()->bytes == 4ull << 30);
  CHECK_FALSE(memory()->cgroup);
  // A limit where /proc/meminfo cannot be read.
  CHECK(attn::machine_memory(dir.path() / "none", mountinfo, cgroup)->bytes == 8ull << 30);

  // cgroup v1, in a container: memory.limit_in_bytes, a number near 2^63 for none; only the
  // memory controller's hierarchy counts.
  const fs::path memory_dir = dir.path() / "memory", cpu_dir = dir.path() / "cpu";
  write_file(mountinfo, mount_line("/docker/abc", cpu_dir, "cgroup", "rw,cpu,cpuacct") +
                            mount_line("/docker/abc", memory_dir, "cgroup", "rw,memory"));
  write_file(cgroup, "4:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n0::/\n");
  write_file(memory_dir / "memory.limit_in_bytes", "9223372036854771712\n");
  write_file(cpu_dir / "memory.limit_in_bytes", "1048576\n");
  CHECK(memory()->bytes == 4ull << 30);
  write_file(memory_dir / "memory.limit_in_bytes", "2147483648\n");
  CHECK(memory()->bytes == 2ull << 30);
  CHECK(memory()->cgroup);
  write_file(memory_dir / "memory.limit_in_bytes", "-1\n");  // not a limit
  CHECK_FALSE(memory()->cgroup);
}

TEST_CASE("a process in a cgroup limited to 256 MiB of memory reads that limit") {
  // A child process in a real cgroup reads its own limit.
  const std::optional<int> code = attn::test::exit_code_in_cgroup(
      {{"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "268435456"},
       {"/sys/fs/cgroup", "memory.max", "268435456"},
       {"/sys/fs/cgroup/unified", "memory.max", "268435456"}},
      [] {
        const auto m = attn::machine_memory();
        return !m ? 2 : m->cgroup && m->bytes == (256u << 20) ? 0 : 1;
      });
  if (!code) {
    MESSAGE("skipped: no cgroup hierarchy with the memory controller that this process may write");
    return;
  }
  CHECK(*code == 0);
}
