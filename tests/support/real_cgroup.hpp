#pragma once

// A child process in a real cgroup with a limit, for the tests of what a process reads of its
// cgroups (parallel_test.cpp, memory_test.cpp): where the machine lets the test make one (root, a
// writable hierarchy with the controller).

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>

namespace attn::test {

// Where a cgroup may be made: a hierarchy's folder, the file of its limit and the limit.
struct CgroupPlace {
  std::filesystem::path dir;
  const char* file;
  const char* text;
};

// Runs `child` in a forked process that first moves into a new cgroup with the limit, at the
// first of `places` where this process may make one, set its limit and move a process into it;
// the child's exit code (0 to 254), or nullopt where no place allowed that. The cgroup is
// removed after.
inline std::optional<int> exit_code_in_cgroup(std::initializer_list<CgroupPlace> places,
                                              const std::function<int()>& child) {
  namespace fs = std::filesystem;
  const std::string name = "attn-test-" + std::to_string(getpid());
  for (const CgroupPlace& p : places) {
    const fs::path group = p.dir / name;
    std::error_code error;
    if (!fs::create_directory(group, error)) continue;
    if (!fs::exists(group / p.file) || !(std::ofstream(group / p.file) << p.text)) {
      fs::remove(group, error);
      continue;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      std::ofstream procs(group / "cgroup.procs");
      if (!(procs << getpid() << std::flush)) _exit(255);  // not allowed to move: skipped
      _exit(child());
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    fs::remove(group, error);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 255) continue;
    return WEXITSTATUS(status);
  }
  return std::nullopt;
}

}  // namespace attn::test
