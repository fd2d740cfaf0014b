// The bounded history: 10 000 re-initialisations on the fake platform (the
// core compiled in with -DTICKCLOCK_TEST_FAKE_COUNTER, so each costs
// microseconds). Its own binary: the history is the process's, and these
// cases fill it for good. In order:
//  1. a re-initialisation that decides what the current state says keeps
//     it once TICKCLOCK_COALESCE_AFTER states exist, whatever the state (a
//     counter mapped into an OS-clock unit included): thousands of them
//     never reach the limit;
//  2. alternating decisions fill the history to TICKCLOCK_MAX_STATES, then
//     TICKCLOCK_ELIMIT with nothing changed; memory stops growing;
//  3. a tick taken under the first state means what it meant, and every
//     old tick converts as the linear walk through prev says, through the
//     skip pointers, in O(log^2 n) steps.
#include <malloc.h>
#include <string.h>
#include <time.h>

#include <cmath>
#include <vector>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"

namespace {
FakeWorld g_w;
tickclock_platform g_p;
uint64_t g_first_tick = 0, g_first_ns = 0;

void start() {
  static bool started = false;
  if (started) return;
  started = true;
#if defined(TCTEST_HISTORY_PUBLISHED)
  g_w.crystal_hz = 25000000;  // leaf 0x15: 25 MHz x 100 = the fake TSC's 2.5 GHz
  g_w.l15_num = 100;
  g_w.l15_den = 1;
#endif
  g_p = fake::full(&g_w);
  tkc_set_platform(&g_p);
  g_first_tick = tickclock_now();
  g_first_ns = tickclock_to_ns(g_first_tick);
}

size_t heap_in_use() { return mallinfo2().uordblks; }

// The reference: the newest state at or before s whose base lies at or
// below ticks, one prev at a time (what the history promises to find).
const tickclock_info *linear_find(const tickclock_info *s, uint64_t ticks) {
  while (s->prev != nullptr && ticks < s->base_ticks) s = s->prev;
  return s;
}

// The same search through the skip pointers, counting steps (the
// algorithm of tkc_ns_before, written again here to count).
const tickclock_info *skip_find(const tickclock_info *s, uint64_t ticks, int *steps) {
  if (ticks >= s->base_ticks) return s;
  const tickclock_info *x = s->prev;
  *steps = 0;
  while (x != nullptr) {
    ++*steps;
    if (x->base_ticks <= ticks) return x;
    x = (x->skip_min_base > ticks && x->skip != nullptr) ? x->skip : x->prev;
  }
  return nullptr;
}
}  // namespace

TEST_CASE(
    "1. thousands of re-initialisations to the same decision keep the state past "
    "TICKCLOCK_COALESCE_AFTER") {
  if (fake::no_counter("history case 1")) return;
  start();
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  REQUIRE(tickclock_init(&sys) == TICKCLOCK_OK);  // the OS clock...
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);  // ...then the counter mapped into its unit
  REQUIRE(tickclock_info_get()->read_path == TICKCLOCK_READ_COUNTER_MAPPED);
#if defined(TCTEST_HISTORY_PUBLISHED)
  REQUIRE(tickclock_info_get()->freq_method == TICKCLOCK_FREQ_CPUID_15H);
#endif
  int elimit = 0, other = 0;
  for (int k = 0; k < 3000; k++) {
    g_w.now_ns += 1000000;
    int rc = tickclock_init(NULL);
    if (rc == TICKCLOCK_ELIMIT)
      elimit++;
    else if (rc != TICKCLOCK_OK)
      other++;
  }
  unsigned gen = tickclock_info_get()->generation;
  MESSAGE("3000 re-initialisations to the same decision: generation " << gen << ", " << elimit
                                                                      << " ELIMIT");
  CHECK(elimit == 0);
  CHECK(other == 0);
  CHECK(gen <= TICKCLOCK_COALESCE_AFTER + 16);
  CHECK(tickclock_to_ns(g_first_tick) == g_first_ns);
}

// (with a published rate only: history_published_x86_test)
#if defined(TCTEST_HISTORY_PUBLISHED)
TEST_CASE(
    "1b. past TICKCLOCK_COALESCE_AFTER, a published rate that went out without a bracket is "
    "published again, and cross-checked") {
  start();
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  REQUIRE(tickclock_init(&sys) == TICKCLOCK_OK);
  // CLOCK_MONOTONIC_RAW unreadable while the rate is published: no bracket
  // to cross-check it from, so no cross-check is planned
  g_w.raw_fail = 1;
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  g_w.raw_fail = 0;
  const tickclock_info *blind = tickclock_info_get();
  REQUIRE(blind->freq_method == TICKCLOCK_FREQ_CPUID_15H);
  REQUIRE(blind->freq_pending_check);
  // the same decision again: it must not be coalesced onto the state that
  // can never be checked
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  CHECK(tickclock_info_get() != blind);
  for (int k = 0; k < 100 && tickclock_info_get()->freq_pending_check; k++) {
    g_w.now_ns += 1000000;
    (void)tickclock_to_ns(tickclock_now());
  }
  CHECK(!tickclock_info_get()->freq_pending_check);                      // cross-checked
  CHECK(tickclock_info_get()->freq_method == TICKCLOCK_FREQ_CPUID_15H);  // and kept
}
#endif

TEST_CASE(
    "2. 10 000 alternating re-initialisations: TICKCLOCK_ELIMIT at the limit, memory bounded") {
  if (fake::no_counter("history case 2")) return;
  start();
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  size_t heap0 = heap_in_use();
  int ok = 0, elimit = 0, other = 0, first_elimit = -1;
  for (int k = 0; k < 10000; k++) {
    g_w.now_ns += 1000000;
    int rc = (k & 1) ? tickclock_init(NULL) : tickclock_init(&sys);
    if (rc == TICKCLOCK_OK) {
      ok++;
    } else if (rc == TICKCLOCK_ELIMIT) {
      if (first_elimit < 0) first_elimit = k;
      elimit++;
    } else {
      other++;
    }
  }
  size_t heap1 = heap_in_use();
  const tickclock_info *last = tickclock_info_get();
  MESSAGE("10000 alternating re-initialisations: "
          << ok << " OK, " << elimit << " ELIMIT (from #" << first_elimit << "), generation "
          << last->generation << ", heap +" << (heap1 - heap0) / 1024 << " KiB ("
          << sizeof(tickclock_info) << " bytes a state)");
  CHECK(other == 0);
  CHECK(elimit > 0);
  CHECK(last->generation <= TICKCLOCK_MAX_STATES);
  CHECK(heap1 - heap0 <= (size_t)TICKCLOCK_MAX_STATES * (sizeof(tickclock_info) + 64));
  // nothing changed at ELIMIT: the state stays, and still converts
  g_w.now_ns += 1000000;
  CHECK(tickclock_init(&sys) == TICKCLOCK_ELIMIT);
  CHECK(tickclock_info_get() == last);
  // the other decision too; and a switch away from the counter (a failed
  // check) always has its slot, at the limit as before it
  uint64_t before = tickclock_to_ns(tickclock_now());
  int back = tickclock_init(NULL);
  CHECK((back == TICKCLOCK_ELIMIT || back == TICKCLOCK_OK));
  if (tkc_reads_counter(tickclock_info_get())) {
    g_w.clocksource = fake::isa.other_clocksource;
    CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
    g_w.clocksource = fake::isa.clocksource;
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  }
  CHECK(tickclock_to_ns(tickclock_now()) >= before);
}

TEST_CASE(
    "3. an old tick means what it meant, found through the skips as the linear walk finds it, in "
    "O(log^2 n) steps") {
  if (fake::no_counter("history case 3")) return;
  start();
  const tickclock_info *s = tickclock_info_get();
  CHECK(tickclock_to_ns(g_first_tick) == g_first_ns);
  // every state's jump lands on its generation with the lowest bit cleared
  std::vector<const tickclock_info *> chain;
  for (const tickclock_info *x = s; x != nullptr; x = x->prev) chain.push_back(x);
  MESSAGE(chain.size() << " states in the history");
  CHECK(chain.size() >= TICKCLOCK_MAX_STATES / 2);
  for (const tickclock_info *x : chain) {
    unsigned target = x->generation & (x->generation - 1u);
    if (x->skip != nullptr) {
      CHECK(x->skip->generation == target);
    } else {
      CHECK(chain.back()->generation > target);  // before the first state
    }
    uint64_t low = UINT64_MAX;
    for (const tickclock_info *y = x; y != nullptr && y != x->skip; y = y->prev)
      low = y->base_ticks < low ? y->base_ticks : low;
    CHECK(x->skip_min_base == low);
  }
  // every base, one below and one above each, against the linear walk
  int worst = 0;
  long checked = 0;
  for (const tickclock_info *x : chain) {
    for (int d = -1; d <= 1; d++) {
      uint64_t t = x->base_ticks + (uint64_t)(int64_t)d;
      if (d < 0 && x->base_ticks == 0) continue;
      int steps = 0;
      const tickclock_info *want = linear_find(s, t), *got = skip_find(s, t, &steps);
      CHECK(got == want);
      worst = steps > worst ? steps : worst;
      uint64_t ns_want = tkc_ns_in(want, t);
      CHECK(tickclock_to_ns(t) == (t >= s->base_ticks ? tkc_ns_in(s, t) : ns_want));
      checked++;
    }
  }
  int log2n = 0;
  while ((1u << log2n) < chain.size()) log2n++;
  MESSAGE(checked << " old ticks checked; worst walk " << worst << " steps for " << chain.size()
                  << " states (log2^2 = " << log2n * log2n << ")");
  CHECK(worst <= log2n * log2n);
  // what it costs (reported, not asserted: a shared machine's wall time)
  struct timespec a, b, c;
  uint64_t sink = 0, now_tick = s->base_ticks + 1000;
  clock_gettime(CLOCK_MONOTONIC_RAW, &a);
  for (int k = 0; k < 100000; k++) sink += tickclock_to_ns(g_first_tick + (uint64_t)(k & 1));
  clock_gettime(CLOCK_MONOTONIC_RAW, &b);
  for (int k = 0; k < 100000; k++) sink += tickclock_to_ns(now_tick + (uint64_t)(k & 1));
  clock_gettime(CLOCK_MONOTONIC_RAW, &c);
  double old_ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e5;
  double new_ns = ((c.tv_sec - b.tv_sec) * 1e9 + (c.tv_nsec - b.tv_nsec)) / 1e5;
  MESSAGE("to_ns of the first state's tick through " << chain.size() << " states: " << old_ns
                                                     << " ns; of a current tick: " << new_ns
                                                     << " ns (" << (sink & 1) << ")");
}
