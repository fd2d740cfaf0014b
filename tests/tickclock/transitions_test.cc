// The clock's contract through transitions, on the real machine: one tick
// unit for the life of the process (intervals span tickclock_init, a
// re-calibration and a PR_SET_TSC switch), states never rewritten, fork
// and signal handlers during the first initialisation, re-validation under
// load, RDTSC disabled before first use.
//
// Every case runs in a fork()ed child of a parent that never touches the
// library, so each starts uninitialised. A signal or a hang (killed after
// a deadline) is a failure. References are CLOCK_MONOTONIC through the
// system call, never the library.
#include <errno.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/child.h"
#include "tests/support/host_costs.h"
#include "tests/support/host_facts.h"
#include "tests/support/skip.h"
#include "tickclock.hpp"

#if defined(TCTEST_TSAN)
// A child forked while another thread of its parent runs (or has ended
// unjoined) inherits that thread's record but not the thread:
// ThreadSanitizer would report it as leaked and exit 66 in every such
// child. The fork cases below run under it with that report off.
extern "C" const char *__tsan_default_options() { return "report_thread_leaks=0"; }
#endif

#if defined(TKC_ARCH_COUNTER)
#define TKC_ARCH_COUNTER_OR_SYSTEM TKC_ARCH_COUNTER
#else
#define TKC_ARCH_COUNTER_OR_SYSTEM TICKCLOCK_SOURCE_SYSTEM
#endif

// tickclock.h's re-validation allowance (state.h's
// TICKCLOCK_REVALIDATE_DRIFT_ABS_NS; this suite sees the public header only)
#define TICKCLOCK_REVALIDATE_DRIFT_ABS_NS_ 100000.0

namespace {
uint64_t sys_ns() {  // the reference: the system call, never the vDSO
  struct {
    long s, ns;
  } k;
  syscall(SYS_clock_gettime, (long)CLOCK_MONOTONIC, &k);
  return (uint64_t)k.s * 1000000000u + (uint64_t)k.ns;
}

using tctest::in_child;
using tctest::sleep_ms;

// A non-x86 build running on an x86 host: qemu-user emulation. There the
// emulated counter (CNTVCT, the timebase, rdtime) follows the host's
// CLOCK_MONOTONIC, which NTP slews by up to hundreds of ppm against the
// CLOCK_MONOTONIC_RAW that calibration and re-validation use.
// Before a child's first use: the counter in use wherever it executes. On
// x86 the TSC is forced with TICKCLOCK_SOURCE=tsc where the kernel keeps
// another clocksource (host_facts.h's counter_plan); every other ISA's
// counter is the library's own choice where it is readable.
void counter_in_use_here() {
#if defined(__x86_64__) || defined(__i386__)
  tctest::counter_plan().apply();
#endif
}

bool emulated_counter() {
#if defined(__x86_64__) || defined(__i386__)
  return false;
#else
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  bool x86 = false;
  if (f == nullptr) return false;
  while (!x86 && fgets(line, sizeof line, f) != nullptr) x86 = strncmp(line, "vendor_id", 9) == 0;
  fclose(f);
  return x86;
#endif
}

using tctest::check_clean;

// The forward step of one switch, measured from outside: the clock's
// interval across it minus the system call's. The system call is read
// first before and last after, so a preemption anywhere can only make the
// figure smaller: the upper bound is robust on a loaded host.
struct SwitchProbe {
  uint64_t r0 = 0, t0 = 0;
  void before() {
    r0 = sys_ns();
    t0 = tickclock_now();
  }
  int64_t step() const {
    uint64_t t1 = tickclock_now(), r1 = sys_ns();
    return (int64_t)(tickclock_to_ns(t1) - tickclock_to_ns(t0)) - (int64_t)(r1 - r0);
  }
  uint64_t span() const { return sys_ns() - r0; }
};

// A switch that keeps reading a healthy source (tickclock_init) continues
// from the old source's reading at that moment: no step beyond the
// frequency's error over the switch (u of the two conversions, and
// CLOCK_MONOTONIC's NTP slew against CLOCK_MONOTONIC_RAW, 100 ppm together)
// plus 5 us. Measured on the development host: under 3 us.
void expect_trusted_switch_step(const char *what, int64_t step, uint64_t span_ns) {
  double allow = 5000.0 + 100e-6 * (double)span_ns;
  const char *emulated = getenv("TICKCLOCK_EMULATED");
  fprintf(stderr, "%s: forward step %lld ns over a %llu ns switch (allowed %.0f)\n", what,
          (long long)step, (unsigned long long)span_ns, allow);
  // Under QEMU user mode another ISA's counter is the emulator's own
  // rendering of the host's time: re-calibrations of it stepped 12-31 us
  // over 50 ms (riscv64's time CSR, s390x's TOD), which no CPU counter
  // does; the step is printed and not judged there.
  if (emulated != nullptr && *emulated != '\0') {
    fprintf(stderr, "%s: the step is not judged under %s\n", what, emulated);
    return;
  }
  if (!((double)step <= allow)) {
    fprintf(stderr, "child: %s stepped %lld ns forward\n", what, (long long)step);
    _exit(14);
  }
}

// Waits for a grandchild with a deadline (a hang is killed and fails).
bool wait_grandchild(pid_t pid, int limit_ms, int *st) {
  *st = tctest::wait_child(pid, limit_ms);
  return *st != -1;
}

// How far x lies outside [lo, hi]: a reading against the system calls
// made before and after it (a preemption between them only widens them).
long long outside(long long x, long long lo, long long hi) {
  return x < lo ? lo - x : x > hi ? x - hi : 0;
}

// An interval against the system call's, each end bracketed by two of its
// reads (a preemption between a tick and its reference read only widens
// the bracket): within 2 ms of the bracket, positive.
void expect_bracketed(int64_t measured, uint64_t r0a, uint64_t r0b, uint64_t r1a, uint64_t r1b) {
  int64_t lo = (int64_t)(r1a - r0b), hi = (int64_t)(r1b - r0a);
  if (!(measured > 0 && outside(measured, lo, hi) < 2000000)) {
    fprintf(stderr,
            "child: interval %lld ns outside the reference bracket [%lld, %lld] ns +- 2 ms\n",
            (long long)measured, (long long)lo, (long long)hi);
    _exit(11);
  }
}

// What a child forked at an awkward moment must still do, each step well
// within the grandchild's deadline: read (an interval within 2 ms of the
// system call's), re-initialise, re-validate, read again.
void child_works() {
  uint64_t r0a = sys_ns(), a = tickclock_now(), r0b = sys_ns();
  sleep_ms(5);
  uint64_t r1a = sys_ns(), b = tickclock_now(), r1b = sys_ns();
  expect_bracketed(tickclock_delta_ns(a, b), r0a, r0b, r1a, r1b);
  EXPECT(tickclock_init(NULL) == TICKCLOCK_OK);
  int rv = tickclock_revalidate();
  EXPECT(rv == 0 || rv == TICKCLOCK_SWITCHED);
  sleep_ms(5);
  uint64_t r2a = sys_ns(), c = tickclock_now(), r2b = sys_ns();
  expect_bracketed(tickclock_delta_ns(a, c), r0a, r0b, r2a, r2b);
  EXPECT(tickclock_to_ns(c) >= tickclock_to_ns(b));
}

// Forks a grandchild that runs child_works(); fails (exit 13) if it hangs
// past 5 s or fails.
void fork_and_check(const char *when) {
  pid_t pid = fork();
  if (pid == 0) {
    child_works();
    _exit(0);
  }
  EXPECT(pid > 0);
  int st = 0;
  if (!wait_grandchild(pid, 5000, &st)) {
    fprintf(stderr, "child: the child forked %s hung\n", when);
    _exit(13);
  }
  if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    fprintf(stderr, "child: the child forked %s failed (exit %d, signal %d)\n", when,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    _exit(13);
  }
}

#if defined(__x86_64__) || defined(__i386__)
// Does a raw RDTSC trap after PR_SET_TSC here? Decided in a grandchild.
int rdtsc_traps_after_prctl() {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);  // not the test framework's crash handler
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(77);
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    _exit((int)((lo ^ hi) & 0) + 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) return 1;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3) return 0;
  return -1;
}
#endif
}  // namespace

TEST_CASE("an interval spanning tickclock_init(SYSTEM) and back is within 2 ms of the reference") {
  check_clean(in_child([] {
    uint64_t r0a = sys_ns(), t0 = tickclock_now(), r0 = sys_ns();
    tickclock::stopwatch sw;
    int unit = tickclock_info_get()->source;
    sleep_ms(40);
    tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
    SwitchProbe to_os;
    to_os.before();
    EXPECT(tickclock_init(&sys) == TICKCLOCK_OK);
    expect_trusted_switch_step("tickclock_init(SYSTEM)", to_os.step(), to_os.span());
    EXPECT(tickclock_info_get()->unit_source == unit);
    sleep_ms(60);
    uint64_t r1a = sys_ns(), t1 = tickclock_now(), r1 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t1), r0a, r0, r1a, r1);
    EXPECT(sw.elapsed_ns() > 0);
    EXPECT(tickclock_to_ns(t1) > tickclock_to_ns(t0));
    EXPECT(tickclock::clock::from_ticks(t1) > tickclock::clock::from_ticks(t0));
    SwitchProbe back;
    back.before();
    EXPECT(tickclock_init(NULL) == TICKCLOCK_OK);  // back to the automatic choice
    expect_trusted_switch_step("tickclock_init(NULL) back", back.step(), back.span());
    sleep_ms(30);
    uint64_t r2a = sys_ns(), t2 = tickclock_now(), r2 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t2), r0a, r0, r2a, r2);
    expect_bracketed(tickclock_delta_ns(t1, t2), r1a, r1, r2a, r2);
  }));
}

TEST_CASE("starting on the OS clock, then the counter: ticks stay nanoseconds") {
  check_clean(in_child([] {
    tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
    EXPECT(tickclock_init(&sys) == TICKCLOCK_OK);
    uint64_t r0a = sys_ns(), t0 = tickclock_now(), r0 = sys_ns();
    EXPECT(tickclock_info_get()->scaled == 0);
    EXPECT(tickclock_init(NULL) == TICKCLOCK_OK);
    const tickclock_info *i = tickclock_info_get();
    EXPECT(i->unit_source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(i->scaled == 0);
    if (i->source != TICKCLOCK_SOURCE_SYSTEM) EXPECT(i->read_path == TICKCLOCK_READ_COUNTER_MAPPED);
    sleep_ms(50);
    uint64_t r1a = sys_ns(), t1 = tickclock_now(), r1 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t1), r0a, r0, r1a, r1);
    expect_bracketed((int64_t)(t1 - t0), r0a, r0, r1a, r1);  // ticks are ns
  }));
}

TEST_CASE("an interval spanning re-calibrations is within 2 ms; to_ns of a held tick never moves") {
  check_clean(in_child([] {
    uint64_t r0a = sys_ns(), t0 = tickclock_now(), r0 = sys_ns();
    uint64_t ns0 = tickclock_to_ns(t0);
    uint64_t worst = 0;
    for (int k = 0; k < 5; k++) {
      tickclock_config cfg = {TICKCLOCK_SOURCE_AUTO, (uint32_t)(k % 2 ? 5 : 50), 0};
      SwitchProbe re;
      re.before();
      EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
      expect_trusted_switch_step("a re-calibration", re.step(), re.span());
      uint64_t again = tickclock_to_ns(t0);
      uint64_t moved = again > ns0 ? again - ns0 : ns0 - again;
      if (moved > worst) worst = moved;
    }
    uint64_t r1a = sys_ns(), t1 = tickclock_now(), r1 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t1), r0a, r0, r1a, r1);
    // a re-calibration never changes what an earlier tick means: the held
    // tick converts with the state it was taken under, exactly
    fprintf(stderr, "to_ns of a held tick moved at most %llu ns over 5 re-calibrations\n",
            (unsigned long long)worst);
    EXPECT(worst == 0);
  }));
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE("an interval spanning a PR_SET_TSC switch is within 2 ms; no signal") {
#if defined(TCTEST_ASAN)
  tctest::skip(std::string("PR_SET_TSC switch: ") + TCTEST_SANITIZER_PR_SET_TSC_WHY);
  return;
#endif
  check_clean(in_child([] {
    uint64_t r0a = sys_ns(), t0 = tickclock_now(), r0 = sys_ns();
    int was_counter = tickclock_info_get()->read_path == TICKCLOCK_READ_COUNTER;
    double u = tickclock_info_get()->uncertainty_ppm;
    sleep_ms(20);
    // the last conclusive sample: the switch extrapolates from it
    uint64_t r_sample = sys_ns();
    int rv0 = tickclock_revalidate();
    EXPECT(rv0 == 0);
    sleep_ms(5);
    SwitchProbe sw_tsc;
    sw_tsc.before();
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) SKIP_CHILD("PR_SET_TSC not supported");
    EXPECT(tickclock_revalidate() == (was_counter ? TICKCLOCK_SWITCHED : 0));
    int64_t step = sw_tsc.step();
    uint64_t dt = sys_ns() - r_sample;
    // Without reading the counter the switch starts from the last
    // conclusive sample extrapolated at (50 ppm + u) plus 100 us: a step
    // forward of about 100 us (measured on the development host: 103 us),
    // never more than that bound plus the sample's bracket (at most 20 us)
    // and 5 us of rate error.
    double allow =
        TICKCLOCK_REVALIDATE_DRIFT_ABS_NS_ + (50.0 + u) * 1e-6 * (double)dt + 20000.0 + 5000.0;
    fprintf(
        stderr,
        "PR_SET_TSC switch: forward step %lld ns, %llu ns after the last sample (allowed %.0f)\n",
        (long long)step, (unsigned long long)dt, allow);
    EXPECT((double)step <= allow);
    const tickclock_info *i = tickclock_info_get();
    if (was_counter) EXPECT(i->read_path == TICKCLOCK_READ_OS_SYSCALL);
    sleep_ms(20);
    uint64_t r1a = sys_ns(), t1 = tickclock_now(), r1 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t1), r0a, r0, r1a, r1);
    EXPECT(tickclock_info_get() == i);
  }));
}

TEST_CASE("PR_SET_TSC before first use: no signal, the system call, the OS clock") {
#if defined(TCTEST_ASAN)
  tctest::skip(std::string("PR_SET_TSC before first use: ") + TCTEST_SANITIZER_PR_SET_TSC_WHY);
  return;
#endif
  int traps = rdtsc_traps_after_prctl();
  if (traps < 0) {
    tctest::skip("PR_SET_TSC before first use: PR_SET_TSC is not supported here");
    return;
  }
  std::string seen = traps ? "traps" : "does not trap";
  MESSAGE("a raw RDTSC after PR_SET_TSC " << seen << " here");
  check_clean(in_child([] {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) _exit(12);
    uint64_t r0a = sys_ns(), t0 = tickclock_now(), r0 = sys_ns();
    const tickclock_info *i = tickclock_info_get();
    EXPECT(i->source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(i->read_path == TICKCLOCK_READ_OS_SYSCALL);
    EXPECT(strstr(i->why, "system call") != nullptr);
    sleep_ms(10);
    uint64_t r1a = sys_ns(), t1 = tickclock_now_ordered(), r1 = sys_ns();
    expect_bracketed(tickclock_delta_ns(t0, t1), r0a, r0, r1a, r1);
    EXPECT(tickclock_revalidate() == 0);
    tickclock_config tsc = {TICKCLOCK_SOURCE_TSC, 0, 0};
    EXPECT(tickclock_init(&tsc) == TICKCLOCK_EUNAVAILABLE);
    (void)tickclock_now();
  }));
}
#endif

TEST_CASE("to_ns(now()) never decreases in one thread while another re-initialises 20 times") {
  check_clean(in_child([] {
    (void)tickclock_now();
    std::atomic<bool> done(false);
    std::atomic<long> back(0), reads(0);
    std::thread reader([&] {
      uint64_t prev = tickclock_to_ns(tickclock_now());
      while (!done.load(std::memory_order_relaxed)) {
        uint64_t v = tickclock_to_ns(tickclock_now());
        if (v < prev) back++;
        prev = v;
        reads++;
      }
    });
    // natively every fourth one switches to the OS clock and back; under
    // emulation the counter and the OS clock run hundreds of ppm apart (see
    // emulated_counter), so only re-calibrations of the counter are made
    const bool switches = !emulated_counter();
    if (!switches) printf("under emulation: re-calibrations only, no switches to the OS clock\n");
    for (int k = 0; k < 20; k++) {
      tickclock_config cfg = {
          switches && k % 4 == 1 ? TICKCLOCK_SOURCE_SYSTEM : TICKCLOCK_SOURCE_AUTO, 5, 0};
      EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
      sleep_ms(2);
    }
    done = true;
    reader.join();
    fprintf(stderr, "%ld reads, %ld backward steps over 20 re-initialisations\n", reads.load(),
            back.load());
    EXPECT(reads.load() > 1000);
    EXPECT(back.load() == 0);
  }));
}

TEST_CASE("a held tickclock_info_get() pointer keeps its content over 40 re-initialisations") {
  check_clean(in_child([] {
    const tickclock_info *held = tickclock_info_get();
    static tickclock_info copy;
    memcpy(&copy, held, sizeof copy);
    for (int k = 0; k < 40; k++) {
      tickclock_config cfg = {k % 3 == 0 ? TICKCLOCK_SOURCE_SYSTEM : TICKCLOCK_SOURCE_AUTO, 1, 0};
      EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
    }
    EXPECT(tickclock_info_get() != held);
    EXPECT(tickclock_info_get()->generation == held->generation + 40);
    EXPECT(memcmp(&copy, held, sizeof copy) == 0);
  }));
}

TEST_CASE("fork() while another thread is in the first initialisation: the child works") {
#if defined(TCTEST_TSAN_FORK_WAIT_DEADLOCKS)
  tctest::skip(std::string("a fork waiting for another thread's initialisation: ") +
               TCTEST_TSAN_FORK_WAIT_WHY);
  return;
#endif
  check_clean(in_child([] {
    // a forced counter with a 200 ms blocking calibration keeps the first
    // initialisation (and its lock) open long enough for the fork to land
    // inside it (forced: calibrated even where the automatic choice would
    // refuse the counter, as under emulation)
    std::thread init([] {
      tickclock_config cfg = {TKC_ARCH_COUNTER_OR_SYSTEM, 200, 0};
      (void)tickclock_init(&cfg);
    });
    sleep_ms(20);
    if (__atomic_load_n(&tkc_g_state, __ATOMIC_ACQUIRE) != NULL) {
      init.join();
      SKIP_CHILD(
          "fork during the first initialisation: it was over within 20 ms (no counter "
          "to calibrate here)");
    }
    pid_t pid = fork();
    if (pid == 0) {  // the grandchild: its first read must not hang
      uint64_t r0a = sys_ns(), a = tickclock_now(), r0 = sys_ns();
      sleep_ms(10);
      uint64_t r1a = sys_ns(), b = tickclock_now(), r1 = sys_ns();
      expect_bracketed(tickclock_delta_ns(a, b), r0a, r0, r1a, r1);
      _exit(0);
    }
    EXPECT(pid > 0);
    int st = 0, waited = 0;
    while (waitpid(pid, &st, WNOHANG) == 0 && waited++ < 500) sleep_ms(10);
    if (waited >= 500) {
      kill(pid, SIGKILL);
      fprintf(stderr, "child: the forked child hung\n");
      _exit(13);
    }
    init.join();
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }));
}

TEST_CASE("fork() while another thread re-initialises: the child works") {
#if defined(TCTEST_TSAN_FORK_WAIT_DEADLOCKS)
  tctest::skip(std::string("a fork waiting for another thread's initialisation: ") +
               TCTEST_TSAN_FORK_WAIT_WHY);
  return;
#endif
  check_clean(in_child(
      [] {
        (void)tickclock_now();
        std::atomic<bool> started(false);
        std::thread init([&] {
          tickclock_config cfg = {TKC_ARCH_COUNTER_OR_SYSTEM, 200, 0};
          started = true;
          EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
        });
        while (!started.load()) sleep_ms(1);
        sleep_ms(20);  // inside its 200 ms calibration
        fork_and_check("during a re-initialisation in another thread");
        init.join();
      },
      30));
}

TEST_CASE("fork() while another thread re-validates or refines: the child works") {
  SUBCASE("during tickclock_revalidate()") {
    check_clean(in_child(
        [] {
          (void)tickclock_now();
          std::atomic<bool> stop(false);
          std::atomic<long> checks(0);
          std::thread checker([&] {
            while (!stop.load()) {
              int rv = tickclock_revalidate();
              EXPECT(rv == 0 || rv == TICKCLOCK_SWITCHED);
              checks++;
            }
          });
          for (int k = 0; k < 10; k++) {
            sleep_ms(3);
            fork_and_check("during tickclock_revalidate() in another thread");
          }
          stop = true;
          checker.join();
          fprintf(stderr, "%ld re-validations around 10 forks\n", checks.load());
          EXPECT(checks.load() > 10);
        },
        60));
  }
  SUBCASE("during the refinements of the first calibration") {
    check_clean(in_child(
        [] {
          (void)tickclock_now();  // a quick calibration, refined x4 up to 1 s
          unsigned gen0 = tickclock_info_get()->generation;
          std::atomic<bool> stop(false);
          std::thread reader([&] {  // the refinements run inside its conversions
            while (!stop.load()) (void)tickclock_to_ns(tickclock_now());
          });
          uint64_t end = sys_ns() + 1300000000u;
          int forks = 0;
          while (sys_ns() < end) {
            fork_and_check("during a refinement in another thread");
            forks++;
            sleep_ms(40);
          }
          stop = true;
          reader.join();
          fprintf(stderr, "%d forks across %u publications\n", forks,
                  tickclock_info_get()->generation - gen0);
        },
        90));
  }
}

namespace {
std::atomic<int> g_fork_pid(0);
sigjmp_buf g_fork_jmp;
void fork_in_handler(int) {
  int saved = errno;
  pid_t pid = fork();
  if (pid == 0)  // the child leaves the interrupted initialisation for good
    siglongjmp(g_fork_jmp, 1);
  g_fork_pid = (int)pid;
  errno = saved;
}
}  // namespace

TEST_CASE("fork() from a signal handler that interrupted the lock holder: the child works") {
  check_clean(in_child(
      [] {
        (void)tickclock_now();
        tctest::handle_alarm(fork_in_handler, SA_RESTART);
        if (sigsetjmp(g_fork_jmp, 1) != 0) {
          // the child forked inside the handler, jumped out of the handler and
          // of the initialisation it interrupted (whose lock it inherited)
          child_works();
          _exit(0);
        }
        struct itimerval it = {{0, 0}, {0, 20000}};  // once, 20 ms into the re-initialisation
        setitimer(ITIMER_REAL, &it, nullptr);
        tickclock_config cfg = {TKC_ARCH_COUNTER_OR_SYSTEM, 200, 0};
        EXPECT(tickclock_init(&cfg) == TICKCLOCK_OK);
        for (int k = 0; k < 100 && g_fork_pid.load() == 0; k++) sleep_ms(10);
        EXPECT(g_fork_pid.load() > 0);
        int st = 0;
        if (!wait_grandchild((pid_t)g_fork_pid.load(), 5000, &st)) {
          fprintf(stderr, "child: the child forked in the handler hung\n");
          _exit(13);
        }
        fprintf(stderr, "the child forked in the handler exited %d, signal %d\n",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      },
      30));
}

namespace {
// The handler's findings; it touches nothing but lock-free atomics and the
// system call.
std::atomic<int> g_handler_calls(0), g_handler_during_init(0), g_handler_bad(0);
std::atomic<int> g_handler_far(0), g_handler_busy(0), g_handler_not_busy(0);
std::atomic<int> g_handler_outside(0);  // fired before the phase's initialisation held the lock
std::atomic<int> g_seen_held(0);        // a handler saw the phase's initialisation hold it
std::atomic<long long> g_handler_worst_off(0);
std::atomic<int> g_phase(0);  // 1: the first initialisation, 2: a re-initialisation
std::atomic<unsigned long long> g_phase_start(0);
std::atomic<long long> g_unit_off(0);    // to_ns(now()) - system call, before phase 2
std::atomic<long long> g_unit_slack(0);  // the system calls around that reading, apart
// the first reading a handler took during the first initialisation, and
// the system calls right after and right before it
std::atomic<unsigned long long> g_init_tick(0), g_init_tick_sys(0), g_init_tick_sys0(0);

void note_off(long long off) {
  long long m = off < 0 ? -off : off;
  if (m > g_handler_worst_off.load()) g_handler_worst_off.store(m);
  if (m > 1000000) g_handler_far++;
}

// Whether the library's lock is free: the interrupted thread (the only
// one) is then not inside an initialisation. A timer armed 20 ms before
// tickclock_init() can fire before the lock is taken where the process
// stalls between the two (QEMU user mode on a loaded host); such a signal
// says nothing about an initialisation, and the handler's own reads would
// run the first one. Taking the free lock and giving it straight back is
// safe here: the thread it interrupted is not inside the lock's code
// between its compare-and-swap and its bookkeeping (the word is held then).
bool lock_free_here() {
  if (!tkc_trylock()) return false;
  tkc_unlock();
  return true;
}

void on_alarm(int) {
  int saved = errno;
  bool free_lock = g_phase.load() != 0 && lock_free_here();
  if (g_phase.load() != 0 && !free_lock) g_seen_held = 1;
  // Free before the phase's initialisation was seen holding the lock: it
  // has not taken it yet. Free after: it let go of it (judged below).
  bool before_init = free_lock && g_seen_held.load() == 0;
  if (before_init) g_handler_outside++;
  if (free_lock && tkc_g_state == NULL) {
    // a read here would run the first initialisation in the handler; a
    // first initialisation that let go of its lock with no state is wrong
    if (!before_init && g_phase.load() == 1) g_handler_not_busy++;
    errno = saved;
    return;
  }
  int during = tkc_g_state == NULL;  // the first initialisation is running
  uint64_t r0 = sys_ns();
  uint64_t a = tickclock_now();
  uint64_t b = tickclock_now_ordered();
  uint64_t r = sys_ns();
  if (tickclock_delta_ns(a, b) < 0) g_handler_bad++;
  g_handler_calls++;
  if (before_init) {
    // no initialisation to judge yet
  } else if (g_phase.load() == 1 && during) {
    // its reads come straight from CLOCK_MONOTONIC, in nanoseconds
    if (g_handler_during_init++ == 0) {
      g_init_tick = b;
      g_init_tick_sys = r;
      g_init_tick_sys0 = r0;
    }
    note_off(outside((long long)b, (long long)r0, (long long)r));
    // the library is interrupted in this thread: init and revalidate say so
    if (tickclock_init(NULL) == TICKCLOCK_EBUSY && tickclock_revalidate() == TICKCLOCK_EBUSY)
      g_handler_busy++;
    else
      g_handler_not_busy++;
  } else if (g_phase.load() == 2) {
    // a re-initialisation (200 ms of calibration) holds the lock from its
    // first microseconds: judged only well inside it
    uint64_t since = r - g_phase_start.load();
    if (since > 20000000u && since < 150000000u) {
      // g_unit_off may be low by up to g_unit_slack, which only raises this
      note_off(outside((long long)tickclock_to_ns(b) - g_unit_off.load(), (long long)r0,
                       (long long)r + g_unit_slack.load()));
      if (tickclock_init(NULL) == TICKCLOCK_EBUSY && tickclock_revalidate() == TICKCLOCK_EBUSY)
        g_handler_busy++;
      else
        g_handler_not_busy++;
    }
  }
  errno = saved;
}

void arm_timer_after_20ms() {
  // from 20 ms on, every 0.5 ms, or four handlers' cost where signals cost
  // more (measured by the parent, before the child)
  static long every_us = tctest::host_costs().timer_period_us(500, 4);
  struct itimerval it = {{0, every_us}, {0, 20000}};
  setitimer(ITIMER_REAL, &it, nullptr);
}
void disarm_timer() {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, nullptr);
}
}  // namespace

// The first initialisation is made long (a forced counter calibrated for
// 200 ms; the OS clock where there is none) and the timer first fires 20 ms
// into it, when the library surely holds its lock in this thread.
TEST_CASE("a signal handler during an initialisation reads the system clock and gets EBUSY") {
  MESSAGE("host costs: " << tctest::host_costs().describe());  // measured here, not in the child
  check_clean(in_child([] {
    tctest::handle_alarm(on_alarm, SA_RESTART);
    tickclock_config cfg = {TKC_ARCH_COUNTER_OR_SYSTEM, 200, 0};
    g_seen_held = 0;
    g_phase = 1;
    arm_timer_after_20ms();
    int rc = tickclock_init(&cfg);  // the first initialisation, interrupted repeatedly
    disarm_timer();
    g_phase = 0;
    EXPECT(rc == TICKCLOCK_OK);
    int first_calls = g_handler_during_init.load();
    if (first_calls > 0) {
      // the handler's reading compares with one taken after the
      // initialisation: the same span as the system call's, within what
      // the first state's continuation allows (microseconds), each reading
      // bracketed by two system calls (a preemption only widens them)
      uint64_t later_sys0 = sys_ns(), later = tickclock_now(), later_sys = sys_ns();
      long long lo = (long long)(later_sys0 - g_init_tick_sys.load());
      long long hi = (long long)(later_sys - g_init_tick_sys0.load());
      long long got = (long long)tickclock_delta_ns(g_init_tick.load(), later);
      fprintf(stderr, "handler's tick to a later one: %lld ns, system calls [%lld, %lld] ns\n", got,
              lo, hi);
      EXPECT(outside(got, lo, hi) < 2000000);
    }
    // then a re-initialisation, interrupted the same way
    uint64_t r_before = sys_ns(), t = tickclock_now(), r = sys_ns();
    g_unit_off = (long long)(tickclock_to_ns(t) - r);
    g_unit_slack = (long long)(r - r_before);
    int busy_before = g_handler_busy.load();
    g_phase_start = sys_ns();
    g_seen_held = 0;
    g_phase = 2;
    arm_timer_after_20ms();
    rc = tickclock_init(&cfg);
    disarm_timer();
    g_phase = 0;
    EXPECT(rc == TICKCLOCK_OK);
    fprintf(stderr,
            "%d handler calls, %d during the first initialisation, %d inside the "
            "re-initialisation, %d before an initialisation held the lock; worst handler read "
            "outside its system calls %lld ns; EBUSY %d, not %d\n",
            g_handler_calls.load(), first_calls, g_handler_busy.load() - busy_before,
            g_handler_outside.load(), g_handler_worst_off.load(), g_handler_busy.load(),
            g_handler_not_busy.load());
    if (cfg.source == TICKCLOCK_SOURCE_SYSTEM && first_calls == 0)
      SKIP_CHILD(
          "signal during the first initialisation: no counter here, it was over before "
          "the timer fired");
    EXPECT(first_calls > 0);
    EXPECT(g_handler_busy.load() - busy_before > 0 || cfg.source == TICKCLOCK_SOURCE_SYSTEM);
    EXPECT(g_handler_bad.load() == 0);
    EXPECT(g_handler_far.load() == 0);
    EXPECT(g_handler_not_busy.load() == 0);
  }));
}

TEST_CASE("re-validation every ms for 2 s with both CPUs busy never switches a healthy counter") {
  check_clean(in_child(
      [] {
        counter_in_use_here();
        if (tickclock_info_get()->read_path != TICKCLOCK_READ_COUNTER)
          SKIP_CHILD("the counter is not in use here: nothing to re-validate");
        if (emulated_counter())
          SKIP_CHILD(
              "re-validation under load: the emulated counter follows the host's NTP-slewed "
              "CLOCK_MONOTONIC, which re-validation rightly sees drift from CLOCK_MONOTONIC_RAW");
        std::atomic<bool> stop(false);
        std::vector<std::thread> busy;
        unsigned ncpu = std::thread::hardware_concurrency();
        for (unsigned k = 0; k < (ncpu ? ncpu : 2); k++)
          busy.emplace_back([&] {
            volatile uint64_t x = 0;
            while (!stop.load(std::memory_order_relaxed)) x = x + 1;
          });
        tickclock_revalidate_every(1);
        uint64_t end = sys_ns() + 2000000000u;
        int explicit_checks = 0, switched = 0;
        while (sys_ns() < end) {
          for (int k = 0; k < 200; k++) (void)tickclock_to_ns(tickclock_now());  // periodic checks
          if (tickclock_revalidate() != 0) switched++;
          explicit_checks++;
          sleep_ms(1);
        }
        stop = true;
        for (auto &t : busy) t.join();
        const tickclock_info *i = tickclock_info_get();
        if (switched || i->read_path != TICKCLOCK_READ_COUNTER)
          fprintf(stderr, "child: %s\n", i->why);
        fprintf(stderr, "%d explicit checks under load, %d switched\n", explicit_checks, switched);
        EXPECT(switched == 0);
        EXPECT(i->read_path == TICKCLOCK_READ_COUNTER);
      },
      30));
}

TEST_CASE("delta_ns is antisymmetric at a difference of exactly 2^63 ticks") {
  check_clean(in_child([] {
    uint64_t a = 1000, b = a + (UINT64_C(1) << 63);
    int64_t ab = tickclock_delta_ns(a, b), ba = tickclock_delta_ns(b, a);
    EXPECT(ab > 0);
    EXPECT(ba < 0);
    EXPECT(tickclock_delta_ns(b, b + 5) == -tickclock_delta_ns(b + 5, b));
  }));
}
