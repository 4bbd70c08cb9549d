// SPDX-License-Identifier: MIT
// peak_rss COMMAND [ARG...]: runs COMMAND, waits for it and prints its peak resident set:
//   vmhwm_polled_kib=P peak_kib=K launcher_kib=L
// P is the highest VmHWM read from /proc/PID/status while it ran (every millisecond); K is the
// same counter at its exit as wait4 returns it (ru_maxrss, which no poll can miss); L is this
// launcher's own peak (its VmHWM) when it forked. Linux carries a process's peak across fork and
// exec, so K is COMMAND's own peak only where it is above L: a launcher as small as this one keeps
// it so (a Python or shell launcher would put its own peak there). Exits with COMMAND's exit code
// (127: it could not be run, 1: the launcher failed).
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

long vm_hwm_kib(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      v = std::strtol(line + 6, nullptr, 10);
      break;
    }
  std::fclose(f);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_rss COMMAND [ARG...]\n");
    return 1;
  }
  // Its own mm's peak (not RUSAGE_SELF, which carries the peak of whatever exec'd it).
  const long launcher = vm_hwm_kib(getpid());
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("peak_rss: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    std::perror("peak_rss: exec");
    _exit(127);
  }
  long polled = 0;
  int status = 0;
  rusage child{};
  for (;;) {
    const pid_t done = wait4(pid, &status, WNOHANG, &child);
    if (done == pid) break;
    if (done < 0) {
      std::perror("peak_rss: wait4");
      return 1;
    }
    const long v = vm_hwm_kib(pid);
    if (v > polled) polled = v;
    const timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  std::printf("vmhwm_polled_kib=%ld peak_kib=%ld launcher_kib=%ld\n", polled, child.ru_maxrss,
              launcher);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
