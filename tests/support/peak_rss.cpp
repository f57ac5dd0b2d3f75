// peak_rss COMMAND ARGS...: runs the command with its standard output thrown away, then prints
// "STATUS PEAK_KIB": its exit status (128 + the signal if a signal ended it) and its peak resident
// memory in KiB, as wait4's rusage reports it. For the memory test (tests/memory/estimate.sh).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_rss COMMAND ARGS...\n");
    return 2;
  }
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(127);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(child, &status, 0, &usage) != child) return 2;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::printf("%d %ld\n", code, usage.ru_maxrss);
  return 0;
}
