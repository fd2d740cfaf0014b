// Faults the library must survive, on the real machine (x86-64 Linux).
// Each fault is injected in a fork()ed child so it cannot poison the other
// tests; the parent checks the child's exit status (0 = every check held,
// 77 = the fault could not be injected here, anything else = a failure,
// with the failing check printed by the child).
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/child.h"
#include "tests/support/host_facts.h"
#include "tests/support/skip.h"

namespace {
using tctest::in_child;

uint64_t sys_call_ns() {  // CLOCK_MONOTONIC through the system call (never the vDSO)
  struct timespec ts;
  syscall(SYS_clock_gettime, (long)CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void check_clean_exit(int st) {
  REQUIRE_MESSAGE(st != -1, "the child hung (killed after 20 s)");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
    tctest::skip("a fault could not be injected on this machine (the child exited 77)");
    return;
  }
  INFO("exited " << (WIFEXITED(st) ? WEXITSTATUS(st) : -1) << ", signal "
                 << (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

const tickclock_candidate *cand(const tickclock_info *i, int src) {
  for (unsigned k = 0; k < i->n_candidates; k++)
    if (i->candidates[k].source == src) return &i->candidates[k];
  return nullptr;
}

// Where the host facts (read without the library) say the TSC must be
// chosen, a forced TSC that fails to initialise is a regression, never a
// skip: the child exits 20 then. Elsewhere it exits 77 (cannot be injected).
int forced_tsc_unavailable_status() {
  static int required = -1;
  if (required < 0) {
    tctest::HostFacts h = tctest::host_facts();
    std::string missing = h.tsc_required_missing();
    required = missing.empty();
    MESSAGE("host facts: " << h.describe() << "; the TSC "
                           << (required ? "must be usable" : "need not be usable: " + missing));
  }
  return required ? 20 : 77;
}

int deny_perf_event_open(int err) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}
}  // namespace

TEST_CASE("RDTSC disabled (PR_SET_TSC) before first use: no signal, the OS clock, reason says so") {
#if defined(TCTEST_SANITIZER_TRAPS_AFTER_PR_SET_TSC)
  tctest::skip(std::string("PR_SET_TSC cases: ") + TCTEST_SANITIZER_PR_SET_TSC_WHY);
  return;
#endif
  check_clean_exit(in_child([] {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(77);
    const tickclock_info *i = tickclock_info_get();
    EXPECT(i->source == TICKCLOCK_SOURCE_SYSTEM);
    const tickclock_candidate *t = cand(i, TICKCLOCK_SOURCE_TSC);
    EXPECT(t != nullptr && strstr(t->reason, "PR_SET_TSC") != nullptr);
    uint64_t a = tickclock_now(), b = tickclock_now_ordered();
    EXPECT(tickclock_delta_ns(a, b) >= 0);
    // forcing the TSC is refused, never executed
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    EXPECT(tickclock_init(&cfg) == TICKCLOCK_EUNAVAILABLE);
    EXPECT(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(strstr(tickclock_info_get()->why, "PR_SET_TSC") != nullptr);
    EXPECT(tickclock_revalidate() == 0);
    (void)tickclock_now();
  }));
}

// Does a raw RDTSC trap after PR_SET_TSC on this host? Decided in a child
// that does nothing else (the kernel sets CR4.TSD, but a hypervisor may not
// honour it for the guest). -1: PR_SET_TSC is not supported.
int rdtsc_traps_here() {
  int st = in_child([] {
    signal(SIGSEGV, SIG_DFL);
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(77);
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    _exit(3 + (int)((lo & hi) & 0));
  });
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) return 1;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3) return 0;
  return -1;
}

// Without tickclock_revalidate() the next tickclock_now() executes RDTSC
// (the hot path asks nothing): where the host enforces PR_SET_TSC that must
// be SIGSEGV, and exactly that; where it does not, the case cannot show
// anything and is reported as skipped.
TEST_CASE("RDTSC disabled after init without re-validation: SIGSEGV where enforced") {
#if defined(TCTEST_SANITIZER_TRAPS_AFTER_PR_SET_TSC)
  tctest::skip(std::string("PR_SET_TSC cases: ") + TCTEST_SANITIZER_PR_SET_TSC_WHY);
  return;
#endif
  int traps = rdtsc_traps_here();
  if (traps != 1) {
    tctest::skip(std::string("RDTSC after PR_SET_TSC without re-validation: ") +
                 (traps < 0 ? "PR_SET_TSC is not supported here"
                            : "RDTSC does not trap after PR_SET_TSC on this host"));
    return;
  }
  int unavailable = forced_tsc_unavailable_status();
  int st = in_child([unavailable] {
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    if (tickclock_init(&cfg) != TICKCLOCK_OK) _exit(unavailable);
    signal(SIGSEGV, SIG_DFL);
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(78);
    (void)tickclock_now();  // RDTSC: the kernel sends SIGSEGV
    _exit(3);
  });
  if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
    tctest::skip("RDTSC after PR_SET_TSC without re-validation: the TSC cannot be forced here");
    return;
  }
  INFO("exited " << (WIFEXITED(st) ? WEXITSTATUS(st) : -1) << ", signal "
                 << (WIFSIGNALED(st) ? WTERMSIG(st) : 0) << " (20: the forced TSC failed where "
                 << "the host facts require it)");
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGSEGV);
}

TEST_CASE("RDTSC disabled after init: tickclock_revalidate() switches before the next read traps") {
#if defined(TCTEST_SANITIZER_TRAPS_AFTER_PR_SET_TSC)
  tctest::skip(std::string("PR_SET_TSC cases: ") + TCTEST_SANITIZER_PR_SET_TSC_WHY);
  return;
#endif
  int unavailable = forced_tsc_unavailable_status();
  check_clean_exit(in_child([unavailable] {
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    if (tickclock_init(&cfg) != TICKCLOCK_OK) _exit(unavailable);
    double u = tickclock_info_get()->uncertainty_ppm;
    uint64_t r_sample = sys_call_ns();  // no later than the last conclusive sample
    EXPECT(tickclock_revalidate() == 0);
    uint64_t r0 = sys_call_ns();
    uint64_t before = tickclock_to_ns(tickclock_now());
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(77);
    EXPECT(tickclock_revalidate() == TICKCLOCK_SWITCHED);
    const tickclock_info *i = tickclock_info_get();
    EXPECT(i->source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(i->revalidated == 1);
    EXPECT(strstr(i->why, "PR_SET_TSC") != nullptr);
    uint64_t after = tickclock_to_ns(tickclock_now());  // no trap
    uint64_t r1 = sys_call_ns();
    EXPECT(after >= before);  // no backward step
    // and no forward step beyond the extrapolation from the last sample:
    // 100 us + (50 ppm + u) of the time since, + its bracket (< 20 us) and
    // 5 us of rate error (the system call read first and last: a preemption
    // only makes the measured step smaller)
    double step = (double)(int64_t)(after - before) - (double)(r1 - r0);
    double allow = TICKCLOCK_REVALIDATE_DRIFT_ABS_NS +
                   (TICKCLOCK_REVALIDATE_DRIFT_PPM + u) * 1e-6 * (double)(r1 - r_sample) + 25000.0;
    fprintf(stderr, "PR_SET_TSC switch after a forced TSC: forward step %.0f ns (allowed %.0f)\n",
            step, allow);
    EXPECT(step <= allow);
    EXPECT(tickclock_to_ns(tickclock_now_ordered()) >= after);
  }));
}

TEST_CASE("perf_event_open denied by seccomp (EACCES, ENOSYS): the next frequency source") {
  const int errs[] = {EACCES, ENOSYS};
  for (int err : errs) {
    CAPTURE(err);
    check_clean_exit(in_child([err] {
      if (deny_perf_event_open(err) != 0) _exit(77);
      EXPECT(syscall(__NR_perf_event_open, nullptr, 0, -1, -1, 0) == -1 && errno == err);
      // The reader itself (gathering reads the page only when the kernel's
      // clocksource is tsc; on this host it is kvm-clock).
      tickclock_perf_page pp;
      memset(&pp, 0, sizeof pp);
      tkc_native_perf_page(&pp);
      EXPECT(pp.attempted == 1);
      EXPECT(pp.ok == 0);
      EXPECT(pp.err == err);
      const tickclock_info *i = tickclock_info_get();  // automatic: a decision, explained
      EXPECT(i->source == TICKCLOCK_SOURCE_SYSTEM || i->source == TICKCLOCK_SOURCE_TSC);
      EXPECT(i->why[0] != '\0');
      EXPECT(i->freq_method != TICKCLOCK_FREQ_PERF_PAGE);
      tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
      EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
      i = tickclock_info_get();
      EXPECT(i->source == TICKCLOCK_SOURCE_TSC);
      for (unsigned k = 0; k < i->n_freqs; k++)  // listed at most as unavailable
        if (strcmp(i->freqs[k].name, "perf_page") == 0)
          EXPECT(!i->freqs[k].usable && !i->freqs[k].chosen && !(i->freqs[k].hz > 0));
      EXPECT(i->freq_method != TICKCLOCK_FREQ_PERF_PAGE);
      EXPECT(i->hz > 1e8);
      uint64_t a = tickclock_now();
      usleep(1000);
      EXPECT(tickclock_delta_ns(a, tickclock_now()) >= 900000);
    }));
  }
}

// The real sysfs can't be removed here: the facts come from the platform
// (tkc_set_platform), the counter and clocks stay native.
TEST_CASE("sysfs unreadable / clocksource not tsc, injected on the native counter") {
  check_clean_exit(in_child([] {
    struct Fake {
      static int missing(void *, const char *, char *buf, size_t n) {
        if (n) buf[0] = '\0';
        return 0;
      }
      static int hpet(void *, const char *path, char *buf, size_t n) {
        tkc_strlcpy(buf, strstr(path, "current") ? "hpet" : "tsc hpet", n);
        return 1;
      }
    };
    tickclock_platform p;
    memset(&p, 0, sizeof p);
    p.read_line = Fake::missing;
    tkc_set_platform(&p);
    EXPECT(tickclock_init(nullptr) == TICKCLOCK_OK);
    const tickclock_info *i = tickclock_info_get();
    EXPECT(i->source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(strstr(cand(i, TICKCLOCK_SOURCE_TSC)->reason, "current_clocksource") != nullptr ||
           strstr(cand(i, TICKCLOCK_SOURCE_TSC)->reason, "invariant") != nullptr);
    p.read_line = Fake::hpet;
    EXPECT(tickclock_init(nullptr) == TICKCLOCK_OK);
    EXPECT(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
    tkc_set_platform(nullptr);
  }));
}
