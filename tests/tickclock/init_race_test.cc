// 64 threads race the very first tickclock_now(): every one must get a
// valid reading in the unit that was finally chosen. Its own binary, so
// nothing initialises the library before the race. Also built with TSan.
#include <atomic>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "tickclock.h"

TEST_CASE("64 threads racing the first read all get a valid reading") {
  const int n = 64;
  REQUIRE(tkc_g_state == NULL);  // nothing initialised yet
  std::atomic<int> ready(0);
  std::atomic<bool> go(false);
  std::vector<uint64_t> reading(n), ns(n);
  std::vector<const tickclock_info *> seen(n);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; i++)
    ts.emplace_back([&, i] {
      ready++;
      while (!go.load(std::memory_order_acquire)) {
      }
      reading[i] = (i & 1) ? tickclock_now() : tickclock_now_ordered();
      ns[i] = tickclock_to_ns(reading[i]);
      seen[i] = tickclock_info_get();
    });
  while (ready.load() < n) {
  }
  go.store(true, std::memory_order_release);
  for (auto &t : ts) t.join();
  uint64_t after = tickclock_now_ordered();
  const tickclock_info *info = tickclock_info_get();
  const tickclock_info *first = info;
  while (first->prev != NULL) first = first->prev;  // refinements may follow it
  CHECK(first->generation == 1);
  for (int i = 0; i < n; i++) {
    CAPTURE(i);
    // one initialisation, seen by all: the first state, or a refinement of it
    const tickclock_info *s = seen[i];
    while (s->prev != NULL) s = s->prev;
    CHECK(s == first);
    CHECK(reading[i] != 0);
    CHECK(reading[i] <= after);  // same unit, taken earlier
    CHECK(ns[i] == tickclock_to_ns(reading[i]));
  }
  MESSAGE("source after the race: " << info->source_name);
}
