// The periodic re-validation piggybacked on tickclock_to_ns() allocates
// nothing while the counter is healthy: malloc and friends are interposed
// here and counted around a second of to_ns calls with a 1 ms period. The
// checks are seen running through the re-armed deadline. The counter is
// put in use wherever RDTSC executes: forced with TICKCLOCK_SOURCE=tsc
// where the kernel keeps another clocksource (host_facts.h's counter_plan).
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include <atomic>

#include "doctest/doctest.h"
#include "tests/support/host_facts.h"
#include "tests/support/skip.h"
#include "tickclock.h"

#if defined(TCTEST_ASAN) || defined(TCTEST_TSAN)
#define TICKCLOCK_TEST_SANITIZED 1
#endif

static std::atomic<long> g_allocs(0);
static std::atomic<bool> g_counting(false);

#if !defined(TICKCLOCK_TEST_SANITIZED) /* a sanitizer owns malloc */
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void __libc_free(void *);

extern "C" void *malloc(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs++;
  return __libc_malloc(n);
}
extern "C" void *calloc(size_t a, size_t b) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs++;
  return __libc_calloc(a, b);
}
extern "C" void *realloc(void *p, size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs++;
  return __libc_realloc(p, n);
}
extern "C" void free(void *p) { __libc_free(p); }
#endif

TEST_CASE("periodic re-validation in tickclock_to_ns: no allocation while the counter is healthy") {
#if defined(TICKCLOCK_TEST_SANITIZED)
  tctest::skip("allocation count: a sanitizer's allocator cannot be interposed");
  return;
#endif
  const tctest::CounterPlan &plan = tctest::counter_plan();
  if (!plan.usable) {
    tctest::skip("allocation count: " + plan.how());
    return;
  }
  plan.apply();  // before the process's first use
  MESSAGE("the counter: " << plan.how());
  const tickclock_info *i = tickclock_info_get();
  INFO(i->why);
  REQUIRE(i->read_path == TICKCLOCK_READ_COUNTER);
  tickclock_revalidate_every(1);
  for (int k = 0; k < 1000; k++) (void)tickclock_to_ns(tickclock_now());  // first check opens sysfs
  struct timespec pause = {0, 100000};
  long checks = 0;
  uint64_t last_deadline = tkc_g_reval_deadline;
  g_counting = true;
  for (int k = 0; k < 4000; k++) {
    (void)tickclock_to_ns(tickclock_now());
    if (tkc_g_reval_deadline != last_deadline) {
      checks++;
      last_deadline = tkc_g_reval_deadline;
    }
    nanosleep(&pause, nullptr);
  }
  g_counting = false;
  tickclock_revalidate_every(0);
  MESSAGE(checks << " periodic checks, " << g_allocs.load() << " allocations");
  INFO(tickclock_info_get()->why);
  CHECK(tickclock_info_get()->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(checks > 50);
  CHECK(g_allocs.load() == 0);
}
