#include "attn/parallel.hpp"

#include <doctest/doctest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "support/fake_files.hpp"
#include "support/real_cgroup.hpp"
#include "support/temp_dir.hpp"

using attn::test::TempDir;

namespace {

namespace fs = std::filesystem;

using attn::test::mount_line;
using attn::test::write_file;

// The CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpu_numbers() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

TEST_CASE("usable_cpus counts the cores the process may run on, as nproc counts CPUs") {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  const std::vector<int> numbers = allowed_cpu_numbers();
  // Their physical cores (tested below), and at most the cgroups' CPU time limit, where there is
  // one (tested below).
  const int cores = attn::physical_cores(numbers);
  CHECK(cores >= 1);
  CHECK(cores <= CPU_COUNT(&allowed));
  const int limit = attn::cgroup_cpu_limit();
  const auto expected = [&](int cpus) { return limit > 0 ? std::min(cpus, limit) : cpus; };
  CHECK(attn::usable_cpus() == expected(CPU_COUNT(&allowed) > 1 ? cores : 1));
  CHECK(attn::affinity_cpus() == CPU_COUNT(&allowed));  // the mask alone
  // Allowed one CPU (taskset -c N), it says 1, whatever the machine has; then all again.
  int one = 0;
  while (!CPU_ISSET(one, &allowed)) ++one;
  cpu_set_t just_one;
  CPU_ZERO(&just_one);
  CPU_SET(one, &just_one);
  REQUIRE(sched_setaffinity(0, sizeof just_one, &just_one) == 0);
  const int alone = attn::usable_cpus();
  REQUIRE(sched_setaffinity(0, sizeof allowed, &allowed) == 0);
  CHECK(alone == 1);
  CHECK(attn::usable_cpus() == expected(CPU_COUNT(&allowed) > 1 ? cores : 1));
}

TEST_CASE("physical_cores counts the two threads of one core (SMT) once") {
  const TempDir tmp;
  const fs::path sys = tmp.path() / "cpu";
  // Four CPUs on two cores, 0 and 2 on one, 1 and 3 on the other, as Linux numbers them.
  for (const auto& [cpu, list] : {std::pair{0, "0,2"}, {1, "1,3"}, {2, "0,2"}, {3, "1,3"}}) {
    write_file(sys / ("cpu" + std::to_string(cpu)) / "topology" / "core_cpus_list",
               std::string(list) + "\n");
  }
  write_file(sys / "smt" / "active", "1\n");
  CHECK(attn::physical_cores({0, 1, 2, 3}, sys.string()) == 2);
  CHECK(attn::physical_cores({0, 2}, sys.string()) == 1);  // taskset -c 0,2: one core
  CHECK(attn::physical_cores({0, 1}, sys.string()) == 2);
  CHECK(attn::physical_cores({3}, sys.string()) == 1);
  CHECK(attn::physical_cores({}, sys.string()) == 1);
  // A CPU whose list cannot be read is a core of its own.
  CHECK(attn::physical_cores({0, 2, 5}, sys.string()) == 2);
  // Kernels before 5.7 name the list thread_siblings_list; ranges are written a-b.
  const fs::path old = tmp.path() / "old";
  for (const int cpu : {0, 1}) {
    write_file(old / ("cpu" + std::to_string(cpu)) / "topology" / "thread_siblings_list", "0-1\n");
  }
  CHECK(attn::physical_cores({0, 1}, old.string()) == 1);
  // Where SMT is off (smt/active 0), each CPU is a core, with no list read.
  const fs::path off = tmp.path() / "off";
  write_file(off / "smt" / "active", "0\n");
  CHECK(attn::physical_cores({0, 1, 2, 3}, off.string()) == 4);
  // And a folder that is not there: each CPU its own core.
  CHECK(attn::physical_cores({0, 1, 2}, (tmp.path() / "none").string()) == 3);
}

TEST_CASE("cgroup_cpu_limit reads cgroup v2's cpu.max along the process's path") {
  const TempDir dir;
  const fs::path mount = dir.path() / "unified";
  const fs::path mountinfo = dir.path() / "mountinfo", cgroup = dir.path() / "cgroup";
  write_file(mountinfo,
             mount_line("/", mount, "ext4", "rw") + mount_line("/", mount, "cgroup2", "rw"));
  write_file(cgroup, "0::/box/inner\n");
  const auto limit = [&] { return attn::cgroup_cpu_limit(mountinfo, cgroup); };

  CHECK(limit() == 0);  // no cpu.max anywhere: no limit
  write_file(mount / "box/inner/cpu.max", "max 100000\n");
  CHECK(limit() == 0);
  write_file(mount / "box/inner/cpu.max", "150000 100000\n");  // docker --cpus 1.5
  CHECK(limit() == 2);
  write_file(mount / "box/inner/cpu.max", "100000 100000\n");
  CHECK(limit() == 1);
  write_file(mount / "box/inner/cpu.max", "20000 100000\n");  // a fifth of a CPU: still one thread
  CHECK(limit() == 1);
  // A parent's limit bounds its children's.
  write_file(mount / "box/inner/cpu.max", "400000 100000\n");
  write_file(mount / "box/cpu.max", "300000 100000\n");
  CHECK(limit() == 3);
  write_file(mount / "cpu.max", "200000 100000\n");
  CHECK(limit() == 2);
  // What cannot be read is no limit, not an error.
  write_file(mount / "cpu.max", "lots 100000\n");
  CHECK(limit() == 3);
  write_file(mount / "box/cpu.max", "100000\n");
  CHECK(limit() == 4);
  CHECK(attn::cgroup_cpu_limit(dir.path() / "missing", cgroup) == 0);
  CHECK(attn::cgroup_cpu_limit(mountinfo, dir.path() / "missing") == 0);
  // A path without its leading slash (no such folder: no limit), and lines that are not
  // mountinfo's (skipped): no error.
  write_file(cgroup, "0::box/inner\n");
  CHECK(limit() == 0);
  write_file(cgroup, "0::/box/inner\n");
  write_file(mountinfo, "garbage\n- cgroup2\n1 2 - x\n" + mount_line("/", mount, "cgroup2", "rw"));
  CHECK(limit() == 4);
}

TEST_CASE("cgroup_cpu_limit reads cgroup v1's CFS quota, and a container's own mount") {
  const TempDir dir;
  const fs::path mountinfo = dir.path() / "mountinfo", cgroup = dir.path() / "cgroup";
  const fs::path cpu = dir.path() / "cpu,cpuacct", memory = dir.path() / "memory";
  // A container: its cgroup /docker/abc is what is mounted, at the mount point's root.
  write_file(mountinfo, mount_line("/docker/abc", memory, "cgroup", "rw,memory") +
                            mount_line("/docker/abc", cpu, "cgroup", "rw,cpu,cpuacct"));
  write_file(cgroup, "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  const auto limit = [&] { return attn::cgroup_cpu_limit(mountinfo, cgroup); };
  write_file(memory / "cpu.cfs_quota_us", "100000\n");  // not the CPU controller's hierarchy
  write_file(memory / "cpu.cfs_period_us", "100000\n");
  write_file(cpu / "cpu.cfs_quota_us", "-1\n");
  write_file(cpu / "cpu.cfs_period_us", "100000\n");
  CHECK(limit() == 0);
  write_file(cpu / "cpu.cfs_quota_us", "250000\n");
  CHECK(limit() == 3);
  write_file(cpu / "cpu.cfs_period_us", "50000\n");
  CHECK(limit() == 5);
  // A mount point with a space in it, as mountinfo writes it (\040).
  const fs::path spaced = dir.path() / "cpu mount";
  write_file(mountinfo, "35 24 0:30 / " + (dir.path() / "cpu\\040mount").string() +
                            " rw shared:9 - cgroup cgroup rw,cpu\n");
  write_file(cgroup, "4:cpu:/\n");
  write_file(spaced / "cpu.cfs_quota_us", "100000\n");
  write_file(spaced / "cpu.cfs_period_us", "100000\n");
  CHECK(limit() == 1);
}

TEST_CASE("a process in a cgroup limited to one CPU's time defaults to one thread") {
  // A child process in a real cgroup reads its own limit.
  const std::optional<int> code = attn::test::exit_code_in_cgroup(
      {{"/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "100000"},  // the period's default: 100000
       {"/sys/fs/cgroup/cpu,cpuacct", "cpu.cfs_quota_us", "100000"},
       {"/sys/fs/cgroup", "cpu.max", "100000 100000"},
       {"/sys/fs/cgroup/unified", "cpu.max", "100000 100000"}},
      [] { return attn::cgroup_cpu_limit() * 16 + attn::usable_cpus(); });
  if (!code) {
    MESSAGE("skipped: no cgroup hierarchy with the CPU controller that this process may write");
    return;
  }
  CHECK(*code / 16 == 1);  // its limit
  CHECK(*code % 16 == 1);  // and its threads
}

TEST_CASE("a process whose CPUs are two threads of one core defaults to one thread") {
  // The real sysfs, seen through a fake one: a child process in a mount namespace of its own
  // (root) mounts a tree whose CPUs are all on one core over /sys/devices/system/cpu.
  const std::vector<int> cpus = allowed_cpu_numbers();
  if (cpus.size() < 2) {
    MESSAGE("skipped: this process may run on one CPU only");
    return;
  }
  const TempDir dir;
  const fs::path fake = dir.path() / "cpu";
  std::string all;  // every allowed CPU, as one core's sibling list
  for (const int c : cpus) {
    if (!all.empty()) all += ',';
    all += std::to_string(c);
  }
  for (const int c : cpus) {
    write_file(fake / ("cpu" + std::to_string(c)) / "topology" / "core_cpus_list", all + "\n");
  }
  write_file(fake / "smt" / "active", "1\n");
  const pid_t child = fork();
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount(fake.c_str(), "/sys/devices/system/cpu", nullptr, MS_BIND, nullptr) != 0) {
      _exit(255);  // not allowed: skipped
    }
    _exit(attn::usable_cpus());
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 255) {
    MESSAGE("skipped: this process may not mount in a namespace of its own");
    return;
  }
  CHECK(WEXITSTATUS(status) == 1);
}

TEST_CASE("new workers start on other cores first, then on the SMT siblings") {
  const TempDir dir;
  using V = std::vector<int>;
  // Without SMT: the CPUs in turn from the one after the calling thread's, its own last.
  const fs::path off = dir.path() / "off";
  write_file(off / "smt" / "active", "0\n");
  CHECK(attn::spread_order({0, 1, 2, 3}, 1, off.string()) == V{2, 3, 0, 1});
  CHECK(attn::spread_order({0, 1, 2, 3}, 3, off.string()) == V{0, 1, 2, 3});
  CHECK(attn::spread_order({0, 1, 2, 3}, 9, off.string()) == V{0, 1, 2, 3});  // not among them
  // Siblings numbered side by side (0-1 and 2-3 one core each): the other core comes first, not
  // the caller's sibling.
  const fs::path adjacent = dir.path() / "adjacent";
  for (const int cpu : {0, 1}) {
    write_file(adjacent / ("cpu" + std::to_string(cpu)) / "topology" / "core_cpus_list", "0-1\n");
  }
  for (const int cpu : {2, 3}) {
    write_file(adjacent / ("cpu" + std::to_string(cpu)) / "topology" / "core_cpus_list", "2-3\n");
  }
  CHECK(attn::spread_order({0, 1, 2, 3}, 0, adjacent.string()) == V{2, 1, 3, 0});
  CHECK(attn::spread_order({0, 1, 2, 3}, 3, adjacent.string()) == V{0, 2, 1, 3});
  CHECK(attn::spread_order({0, 2}, 0, adjacent.string()) == V{2, 0});
  // Linux's usual numbering (0 and 2 one core, 1 and 3 the other): the same rule.
  const fs::path apart = dir.path() / "apart";
  for (const int cpu : {0, 1, 2, 3}) {
    write_file(apart / ("cpu" + std::to_string(cpu)) / "topology" / "core_cpus_list",
               cpu % 2 == 0 ? "0,2\n" : "1,3\n");
  }
  CHECK(attn::spread_order({0, 1, 2, 3}, 0, apart.string()) == V{1, 2, 3, 0});
  CHECK(attn::spread_order({0, 1, 2, 3}, 1, apart.string()) == V{0, 3, 2, 1});
  // Every CPU once, whatever the tree.
  V order = attn::spread_order({0, 1, 2, 3, 5}, 2, apart.string());
  std::sort(order.begin(), order.end());
  CHECK(order == V{0, 1, 2, 3, 5});
}
