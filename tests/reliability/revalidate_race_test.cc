// Readers (tickclock_now, tickclock_to_ns with the periodic check on,
// tickclock_delta_ns, tickclock_info_get) race tickclock_revalidate()
// switching the source, and re-initialisation switching it back. Built
// twice: against the library, and with the core compiled in under
// ThreadSanitizer. The clocksource flip comes from the platform's sysfs
// (tkc_set_platform); counter and clocks are native.
#include <string.h>

#include <atomic>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"

namespace {
std::atomic<int> g_flip(0);

int fake_sysfs(void *, const char *path, char *buf, size_t n) {
  const char *v =
      strstr(path, "current") ? (g_flip.load() ? "hpet" : "kvm-clock") : "kvm-clock tsc";
  tkc_strlcpy(buf, v, n);
  return 1;
}
}  // namespace

TEST_CASE("readers racing tickclock_revalidate() and re-initialisation") {
  tickclock_platform p;
  memset(&p, 0, sizeof p);
  p.read_line = fake_sysfs;
  tkc_set_platform(&p);
  tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 1, 0};
  REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
  tickclock_revalidate_every(1);

  std::atomic<bool> stop(false);
  std::atomic<long> reads(0), backward(0), negative(0);
  std::atomic<int> bad(0);
  std::atomic<long long> worst_back(0);
  std::vector<std::thread> readers;
  for (int r = 0; r < 6; r++)
    readers.emplace_back([&] {
      long n = 0;
      // per reader: to_ns(now()) never decreases, and an ordered read
      // taken after a read is never before it
      uint64_t prev = tickclock_to_ns(tickclock_now());
      while (!stop.load(std::memory_order_relaxed)) {
        uint64_t a = tickclock_now();
        uint64_t ns = tickclock_to_ns(a);
        uint64_t b = tickclock_now_ordered();
        int64_t d = tickclock_delta_ns(a, b);
        const tickclock_info *i = tickclock_info_get();
        if (i == NULL || i->source_name == NULL) bad++;
        if (ns < prev) {
          backward++;
          if ((long long)(prev - ns) > worst_back.load()) worst_back = (long long)(prev - ns);
        }
        if (d < 0) negative++;
        prev = ns;
        n++;
      }
      reads += n;
    });
  int switched = 0, round_not_switched = 0;
  // 20 rounds = 40 publications: a state is never rewritten, so the first
  // one, held throughout, keeps its content.
  const tickclock_info *held = tickclock_info_get();
  static tickclock_info copy;
  memcpy(&copy, held, sizeof copy);
  const int rounds = 20;
  for (int round = 0; round < rounds; round++) {
    g_flip = 0;
    REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
    CHECK(tickclock_revalidate() == 0);
    g_flip = 1;
    if (tickclock_revalidate() == TICKCLOCK_SWITCHED) switched++;
    // switched, here or by a reader's periodic check since the flip
    const tickclock_info *now = tickclock_info_get();
    if (now->source != TICKCLOCK_SOURCE_SYSTEM || now->revalidated != 1) round_not_switched++;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  for (auto &t : readers) t.join();
  tickclock_revalidate_every(0);
  const tickclock_info *last = tickclock_info_get();
  tkc_set_platform(NULL);
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
  INFO("worst backward step of to_ns(now()) in one reader: " << worst_back.load() << " ns");
  CHECK(backward.load() == 0);
  CHECK(negative.load() == 0);
  CHECK(round_not_switched == 0);
  // every round switched, either here or in a reader's periodic check
  CHECK(last->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(last->generation >= held->generation + 2 * rounds);
  CHECK(memcmp(&copy, held, sizeof copy) == 0);
  MESSAGE("rounds switched by the explicit call: " << switched << "/" << rounds
                                                   << ", reads: " << reads.load()
                                                   << ", backward steps: " << backward.load());
}
