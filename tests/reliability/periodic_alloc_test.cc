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
#define TCTEST_INTERPOSE_ALLOC 1
#include "tests/support/interpose.h"
#include "tests/support/skip.h"
#include "tickclock.h"

static std::atomic<long> g_allocs(0);
static void count_alloc(int) { g_allocs++; }

TEST_CASE("periodic re-validation in tickclock_to_ns: no allocation while the counter is healthy") {
#if !TCTEST_ALLOC_INTERPOSED
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
  tctest::g_alloc_hook = count_alloc;
  for (int k = 0; k < 4000; k++) {
    (void)tickclock_to_ns(tickclock_now());
    if (tkc_g_reval_deadline != last_deadline) {
      checks++;
      last_deadline = tkc_g_reval_deadline;
    }
    nanosleep(&pause, nullptr);
  }
  tctest::g_alloc_hook = nullptr;
  tickclock_revalidate_every(0);
  MESSAGE(checks << " periodic checks, " << g_allocs.load() << " allocations");
  INFO(tickclock_info_get()->why);
  CHECK(tickclock_info_get()->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(checks > 50);
  CHECK(g_allocs.load() == 0);
}
