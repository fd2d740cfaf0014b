// errno through the library's calls: whatever the library does inside
// (a file that is not there, a system call that fails on purpose, as the
// clock page's readability proof does), the caller's errno is as it was,
// the way clock_gettime leaves it. Each case a fresh process, so the
// first use is a first use.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <initializer_list>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/child.h"
#include "tests/support/host_facts.h"
#include "tests/support/skip.h"

namespace {
constexpr int kMark = EDOM;  // an errno no call of the library sets

void check_clean(int st) {
  INFO("hung: " << (st == -1) << ", exited " << ((st >> 8) & 0xff) << ", signal " << (st & 0x7f));
  REQUIRE(st != -1);
  CHECK((st & 0x7f) == 0);
  CHECK(((st >> 8) & 0xff) == 0);
}

// errno is kMark after fn, which runs with errno set to kMark.
#define KEEPS(what, call)                                                                    \
  do {                                                                                       \
    errno = kMark;                                                                           \
    call;                                                                                    \
    if (errno != kMark) {                                                                    \
      fprintf(stderr, "child: %s changed errno to %d (%s)\n", what, errno, strerror(errno)); \
      _exit(10);                                                                             \
    }                                                                                        \
  } while (0)

std::atomic<int> g_handler_bad(0), g_handler_calls(0);
void read_in_handler(int) {
  int saved = errno;
  errno = kMark;
  uint64_t t = tickclock_now();
  (void)tickclock_to_ns(t);
  (void)tickclock_info_get();
  if (errno != kMark) g_handler_bad++;
  g_handler_calls++;
  errno = saved;
}
}  // namespace

TEST_CASE("the first tickclock_now() leaves errno as it was, whatever the source") {
  for (const char *env : {"", "system", "tsc", "no-such-source"}) {
    CAPTURE(env);
    check_clean(tctest::in_child([env] {
      if (env[0] != '\0') setenv("TICKCLOCK_SOURCE", env, 1);
      KEEPS("the first tickclock_now()", (void)tickclock_now());
    }));
  }
}

TEST_CASE("every call leaves errno as it was: init, re-validation, conversions, durations") {
  check_clean(tctest::in_child([] {
    KEEPS("tickclock_info_get() first", (void)tickclock_info_get());
    uint64_t a = tickclock_now();
    tickclock_config cfg = {TICKCLOCK_SOURCE_AUTO, 2, 0};
    KEEPS("tickclock_init(calibration 2 ms)", (void)tickclock_init(&cfg));
    KEEPS("tickclock_init(NULL)", (void)tickclock_init(NULL));
    KEEPS("tickclock_revalidate()", (void)tickclock_revalidate());
    uint64_t b = tickclock_now();
    KEEPS("tickclock_to_ns", (void)tickclock_to_ns(b));
    KEEPS("tickclock_delta_ns", (void)tickclock_delta_ns(a, b));
    // a tick far ahead: the conversion runs what is due first
    KEEPS("tickclock_to_ns 100 years ahead", (void)tickclock_to_ns(b + (b >> 1) + (1ull << 62)));
    tickclock_duration d;
    KEEPS("tickclock_duration_get", (void)tickclock_duration_get(a, b, &d));
    KEEPS("tickclock_now_ordered", (void)tickclock_now_ordered());
  }));
}

TEST_CASE("a handler's reads during the first initialisation leave its errno as it was") {
  if (tctest::qemu_user_x86()) {
    // measured: 1 run in 4 ended "qemu: uncaught target signal 11" inside
    // the emulator with a timer every millisecond
    tctest::skip("a signal every millisecond during a first use: QEMU's user mode itself crashes");
    return;
  }
  check_clean(tctest::in_child(
      [] {
        tctest::handle_alarm(read_in_handler, SA_RESTART);
        tctest::alarm_every(2000, 1000);
        tickclock_config cfg = {TICKCLOCK_SOURCE_AUTO, 50, 0};  // a first initialisation of 50 ms
        KEEPS("a first tickclock_init while a handler reads", (void)tickclock_init(&cfg));
        tctest::alarm_every(0, 0);
        fprintf(stderr, "%d handler calls, %d changed errno\n", g_handler_calls.load(),
                g_handler_bad.load());
        EXPECT(g_handler_calls.load() > 0);
        EXPECT(g_handler_bad.load() == 0);
      },
      20));
}
