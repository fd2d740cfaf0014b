// The first tickclock_now() of a process allocates nothing: its state goes
// into the static slots (the state, the spare a counter state keeps, the
// slots reserved for the conversions), and the files it reads (the kernel's
// clocksource, /proc/self/maps for a paravirtual clock's page) are read with
// open/read, not stdio, whose fopen allocates a stream and, in a process
// that never called malloc, sets malloc up (0.1-0.2 ms on a guest where a
// page fault costs 10 us). malloc, calloc and realloc are interposed here
// and counted around the first use in fresh children: the library's own
// choice on this host, the OS clock forced, a TICKCLOCK_SOURCE it refuses,
// RDTSC disabled before it, and a first tickclock_init that calibrates.
#include <stddef.h>
#include <sys/prctl.h>
#include <stdlib.h>

#include <atomic>

#include "doctest/doctest.h"
#include "tests/support/child.h"
#define TCTEST_INTERPOSE_ALLOC 1
#include "tests/support/interpose.h"
#include "tests/support/skip.h"
#include "tickclock.h"

static std::atomic<long> g_allocs(0);
static void count_alloc(int) { g_allocs++; }

namespace {
// In a child: the first call (first_call), counted, with TICKCLOCK_SOURCE
// set to source (nullptr: unset); the child exits 10 on a failed
// expectation, after printing what it saw.
template <class F>
void first_use_counted(const char *source, F first_call) {
  if (source != nullptr)
    setenv("TICKCLOCK_SOURCE", source, 1);
  else
    unsetenv("TICKCLOCK_SOURCE");
  // the interposer itself works here (a control: one allocation counted)
  tctest::g_alloc_hook = count_alloc;
  void *p = malloc(16);
  tctest::g_alloc_hook = nullptr;
  free(p);
  EXPECT(g_allocs.load() == 1);
  g_allocs = 0;
  tctest::g_alloc_hook = count_alloc;
  first_call();
  tctest::g_alloc_hook = nullptr;
  const tickclock_info *i = tickclock_info_get();
  fprintf(stderr, "first use: %s, %ld allocations (%s)\n", i->source_name, g_allocs.load(), i->why);
  EXPECT(g_allocs.load() == 0);
}
void now() { (void)tickclock_now(); }

int run(const char *source, void (*first_call)(), bool disable_rdtsc = false) {
  return tctest::in_child([=] {
#if defined(PR_SET_TSC)
    // where the kernel has it (x86): RDTSC traps from here on
    if (disable_rdtsc) (void)prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
#else
    (void)disable_rdtsc;
#endif
    first_use_counted(source, first_call);
  });
}
}  // namespace

#if !TCTEST_ALLOC_INTERPOSED
#define SKIP_SANITIZED()                                                            \
  do {                                                                              \
    tctest::skip("allocation count: a sanitizer's allocator cannot be interposed"); \
    return;                                                                         \
  } while (0)
#else
#define SKIP_SANITIZED() \
  do {                   \
  } while (0)
#endif

TEST_CASE("the first tickclock_now() allocates nothing: the library's choice on this host") {
  SKIP_SANITIZED();
  CHECK(run(nullptr, now) == 0);
}

TEST_CASE("the first tickclock_now() allocates nothing: the OS clock forced") {
  SKIP_SANITIZED();
  CHECK(run("system", now) == 0);
}

TEST_CASE("the first tickclock_now() allocates nothing: a TICKCLOCK_SOURCE it refuses") {
  SKIP_SANITIZED();
  // the complaint goes to fd 2 where that is safe (unbuffered stderr)
  CHECK(run("no-such-source", now) == 0);
}

TEST_CASE("the first tickclock_now() allocates nothing: RDTSC disabled before it") {
  SKIP_SANITIZED();
  CHECK(run(nullptr, now, true) == 0);
  CHECK(run("tsc", now, true) == 0);
}

TEST_CASE("a first tickclock_init() that calibrates allocates nothing") {
  SKIP_SANITIZED();
  CHECK(run(nullptr, [] {
          tickclock_config cfg = {TICKCLOCK_SOURCE_AUTO, 20, 0};
          (void)tickclock_init(&cfg);
        }) == 0);
}

TEST_CASE("other first calls allocate nothing: info_get, revalidate, duration_get, now_ordered") {
  SKIP_SANITIZED();
  CHECK(run(nullptr, [] { (void)tickclock_info_get(); }) == 0);
  CHECK(run(nullptr, [] { (void)tickclock_revalidate(); }) == 0);
  CHECK(run(nullptr, [] {
          tickclock_duration d;
          (void)tickclock_duration_get(0, 0, &d);
        }) == 0);
  CHECK(run(nullptr, [] { (void)tickclock_to_ns(tickclock_now_ordered()); }) == 0);
}
