// Faults and first initialisations run in fork()ed children, so each starts
// from a process that never touched the library and a crash or a hang
// cannot take the test binary with it.
#ifndef TICKCLOCK_TESTS_SUPPORT_CHILD_H
#define TICKCLOCK_TESTS_SUPPORT_CHILD_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doctest/doctest.h"

// Inside a child: a failed expectation prints where and exits 10, which the
// parent sees as a failure (doctest's checks do not cross fork()).
#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "child: %s:%d: EXPECT(%s) failed\n", __FILE__, __LINE__, #cond); \
      _exit(10);                                                                       \
    }                                                                                  \
  } while (0)

// Inside a child: a case that cannot run here says why on the project's
// skip line and exits 77, which check_clean counts as a skip.
#define SKIP_CHILD(why)                     \
  do {                                      \
    printf("TICKCLOCK_SKIPPED: %s\n", why); \
    fflush(stdout);                         \
    _exit(77);                              \
  } while (0)

namespace tctest {

inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Runs fn in a child (which exits 0 when fn returns) and returns the raw
// wait status; a child still running after limit_s seconds is killed and
// -1 returned: a hang is an outcome the caller judges, never a wait forever.
template <class F>
int in_child(F fn, int limit_s = 20) {
  fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int st = 0;
  for (int waited = 0; waited < limit_s * 100; waited++) {
    if (waitpid(pid, &st, WNOHANG) == pid) return st;
    sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

// SIGALRM handled by h (sa_flags as given: SA_RESTART or 0), and the
// real-time timer that sends it: first after first_us, then every every_us
// (0: once; both 0: disarmed).
inline void handle_alarm(void (*h)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sa.sa_flags = flags;
  sigaction(SIGALRM, &sa, nullptr);
}
inline void alarm_every(long first_us, long every_us) {
  struct itimerval it = {{every_us / 1000000, every_us % 1000000},
                         {first_us / 1000000, first_us % 1000000}};
  setitimer(ITIMER_REAL, &it, nullptr);
}

// The status of a child already forked, after at most limit_ms; -1 when it
// was still running then (it is killed: a hang is an outcome).
inline int wait_child(pid_t pid, int limit_ms) {
  int st = 0;
  for (int waited = 0; waited < limit_ms; waited += 5) {
    if (waitpid(pid, &st, WNOHANG) == pid) return st;
    sleep_ms(5);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

// in_child's status judged: exit 0 passes, exit 77 is a skip the child
// explained, anything else (a hang, a signal, another exit) fails.
inline void check_clean(int st) {
  if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
    MESSAGE("skipped (the child said why)");
    return;
  }
  INFO("hung: " << (st == -1) << ", exited " << (st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1)
                << ", signal " << (st != -1 && WIFSIGNALED(st) ? WTERMSIG(st) : 0));
  CHECK(st != -1);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

}  // namespace tctest

#endif
