// The system calls the first use makes are the ones README.md lists for
// whoever writes a sandbox's filter ("System calls, for whoever writes a
// sandbox's filter"), named as the kernel sees them: a child installs a
// filter that allows exactly those (and what the test itself needs), and
// any other call raises SIGSYS, which a handler records and answers with
// ENOSYS. Under each source, a refused TICKCLOCK_SOURCE, and two threads
// making the first use at once (the lock's waiting calls). x86-64 Linux
// only (the numbers, the handler's registers).
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tests/support/child.h"
#include "tests/support/skip.h"
#include "tickclock.h"

namespace {
// README.md's list, as the kernel names the calls (glibc's open is
// openat, nanosleep clock_nanosleep, fstat newfstatat).
const long kListed[] = {SYS_prctl, SYS_clock_gettime, SYS_clock_getres, SYS_openat, SYS_read,
                        SYS_close, SYS_gettid, SYS_sched_yield, SYS_clock_nanosleep, SYS_getpid,
                        SYS_tgkill, SYS_perf_event_open, SYS_mmap, SYS_munmap, SYS_ioctl,
                        SYS_rt_sigprocmask, SYS_pipe2, SYS_write, SYS_fcntl, SYS_newfstatat,
                        SYS_fstat,
                        // what an older glibc calls them
                        SYS_open, SYS_nanosleep,
                        // the test's own: leaving, returning from the handler, the second
                        // thread's start and join, the barrier
                        SYS_exit_group, SYS_exit, SYS_rt_sigreturn, SYS_futex, SYS_madvise};

volatile int g_unlisted[64];
volatile int g_n_unlisted = 0;

void on_sigsys(int, siginfo_t *si, void *uc) {
  if (g_n_unlisted < 64) g_unlisted[g_n_unlisted++] = si->si_syscall;
  static_cast<ucontext_t *>(uc)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
}

int install_filter() {
  std::vector<struct sock_filter> f;
  size_t k = sizeof kListed / sizeof kListed[0];
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  for (size_t i = 0; i < k; i++)
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)kListed[i], (uint8_t)(k - i), 0));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  struct sock_fprog p = {(unsigned short)f.size(), f.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &p);
}

pthread_barrier_t g_bar;
uint64_t g_second = 0;
void *second_thread(void *) {
  pthread_barrier_wait(&g_bar);  // started: the filter may come
  pthread_barrier_wait(&g_bar);  // the filter is there: go
  g_second = tickclock_now();
  return nullptr;
}

// A child: the filter, then the first use (by two threads when contend);
// exits 3 with the unlisted calls on stderr, 77 when no filter could be
// installed.
void first_use_filtered(const char *env, bool contend) {
  if (env[0] != '\0') setenv("TICKCLOCK_SOURCE", env, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSYS, &sa, nullptr);
  pthread_t t;
  if (contend) {
    pthread_barrier_init(&g_bar, nullptr, 2);
    pthread_create(&t, nullptr, second_thread, nullptr);  // a clone before the filter
    pthread_barrier_wait(&g_bar);
  }
  if (install_filter() != 0) _exit(77);
  if (contend) pthread_barrier_wait(&g_bar);
  uint64_t a = tickclock_now();
  if (contend) pthread_join(t, nullptr);
  if (g_n_unlisted != 0) {
    char buf[256];
    int len = snprintf(buf, sizeof buf, "child: %d call(s) outside README's list:", g_n_unlisted);
    for (int i = 0; i < g_n_unlisted && len < 200; i++)
      len += snprintf(buf + len, sizeof buf - (size_t)len, " %d", g_unlisted[i]);
    buf[len++] = '\n';
    (void)!write(2, buf, (size_t)len);
    _exit(3);
  }
  _exit(a != 0 ? 0 : 4);
}
}  // namespace

TEST_CASE("the first use makes only the system calls README.md lists") {
#if defined(TCTEST_ASAN) || defined(TCTEST_TSAN)
  tctest::skip("README's system calls: the sanitizer's runtime makes calls of its own");
  return;
#else
  for (const char *env : {"", "system", "tsc", "no-such-source"}) {
    for (bool contend : {false, true}) {
      CAPTURE(env);
      CAPTURE(contend);
      int st = tctest::in_child([env, contend] { first_use_filtered(env, contend); });
      REQUIRE(st != -1);
      if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        tctest::skip(
            "README's system calls: no seccomp filter could be installed here (an emulator, or a "
            "sandbox)");
        return;
      }
      CHECK(WIFEXITED(st));
      CHECK(WEXITSTATUS(st) == 0);
    }
  }
#endif
}
