// tickclock_duration_get on the deterministic fake platform (the core
// compiled in with -DTICKCLOCK_TEST_FAKE_COUNTER): the target ISA's fake
// counter runs at exactly 2.5 GHz (the s390x TOD at 4.096 GHz), so the time
// between two of its readings is known to the tick, and each flag is
// produced by the event it names: a refinement, a re-initialisation, a
// switch whose step was bounded (on x86: RDTSC disabled after first use,
// doctest suite "x86"), a suspend, a value that does not fit. Every
// duration is checked against its bound.
#include <string.h>

#include <cstdlib>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"
#include "tickclock.hpp"

namespace {
struct World {
  FakeWorld w;
  tickclock_platform p;
  World() { p = fake::full(&w); }
  const tickclock_info *start(uint32_t check_ms) {
    tkc_set_platform(&p);
    tickclock_revalidate_every(check_ms);
    REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
    // past the base of the state just published (a guard interval ahead
    // when it continues the first use's state on the same counter)
    w.now_ns += 2 * TKC_REPUBLISH_GUARD_NS;
    return tickclock_info_get();
  }
  // converts tickclock_now() every step_ns of simulated time for span_ns
  // (what falls due then runs: refinements, the rate check)
  void run(uint64_t span_ns, uint64_t step_ns = 1000000) {
    for (uint64_t t = 0; t < span_ns; t += step_ns) {
      w.now_ns += step_ns;
      (void)tickclock_to_ns(tickclock_now());
    }
  }
  ~World() {
    tickclock_revalidate_every(TICKCLOCK_CHECK_DEFAULT_MS);
    tkc_set_platform(NULL);
  }
};

// The fake counter's ticks as ns (its default rate, exact).
double tsc_ns(uint64_t a, uint64_t b) {
  return (double)(int64_t)(b - a) * (double)fake::isa.den / (double)fake::isa.num;
}

// |d.ns - truth| <= d.bound_ns + slack (slack: how well the test knows the
// truth, 0 for two counter readings)
void check_within(const tickclock_duration &d, double truth, double slack = 0) {
  double err = (double)d.ns - truth;
  INFO("ns " << d.ns << " truth " << truth << " error " << err << " bound " << d.bound_ns
             << " flags " << d.flags);
  CHECK(std::abs(err) <= (double)d.bound_ns + slack);
}
}  // namespace

TEST_CASE("under one state: the bound is the rate's uncertainty and the quantum") {
  if (fake::no_counter("under one state")) return;
  World f;
  const tickclock_info *i = f.start(0);
  REQUIRE(i->source == fake::isa.counter);
  tickclock_duration d;
  CHECK(tickclock_duration_get(0, 1, nullptr) == TICKCLOCK_EINVAL);
  uint64_t t0 = tickclock_now();
  f.w.now_ns += 1000000;  // 1 ms
  uint64_t t1 = tickclock_now();
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK(d.flags == 0);
  CHECK(d.spanned == 0);
  CHECK(d.ns == tickclock_delta_ns(t0, t1));
  check_within(d, tsc_ns(t0, t1));
  // 1 ms at the quick calibration's uncertainty, plus a few ns
  double expect = 1e6 * i->uncertainty_ppm * 1e-6;
  CHECK((double)d.bound_ns >= expect);
  CHECK((double)d.bound_ns <= expect + 20);
  // reversed: the same bound, the opposite value
  tickclock_duration r;
  REQUIRE(tickclock_duration_get(t1, t0, &r) == TICKCLOCK_OK);
  CHECK(r.ns == -d.ns);
  CHECK(r.bound_ns == d.bound_ns);
  // C++: the same through the stopwatch's types
  tickclock::bounded_duration b = tickclock::duration_between(t0, t1);
  CHECK(b.value.count() == d.ns);
  CHECK((uint64_t)b.bound.count() == d.bound_ns);
  CHECK(b.flags == 0u);
  tickclock::stopwatch sw;
  f.w.now_ns += 5000;
  tickclock::bounded_duration e = sw.elapsed_bounded();
  CHECK(e.value.count() > 0);
  CHECK(e.bound.count() > 0);
}

TEST_CASE("an interval spanning refinements: each part at its own state's rate, continuous") {
  if (fake::calibrated_first("an interval spanning refinements")) return;
  World f;
  const tickclock_info *i0 = f.start(0);
  REQUIRE(i0->source == fake::isa.counter);
  REQUIRE(i0->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  uint64_t t0 = tickclock_now();
  f.run(UINT64_C(2000000000));  // the refinements up to 1 s fall due
  uint64_t t1 = tickclock_now();
  const tickclock_info *i1 = tickclock_info_get();
  REQUIRE(i1->generation > i0->generation);
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_PUBLICATION) != 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) == 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) == 0);
  CHECK(d.spanned == i1->generation - i0->generation);
  CHECK(d.ns == (int64_t)(tickclock_to_ns(t1) - tickclock_to_ns(t0)));
  check_within(d, tsc_ns(t0, t1));
  // far below the first state's uncertainty over the whole interval
  CHECK((double)d.bound_ns < 2e9 * i0->uncertainty_ppm * 1e-6);
  // the value stays what it was once later states are published
  // (re-initialisations on the same counter: new rates, new bases)
  tickclock_duration again;
  int64_t before = d.ns;
  f.w.now_ns += 3000000;
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  f.w.now_ns += 3000000;
  REQUIRE(tickclock_info_get()->generation > i1->generation);
  REQUIRE(tickclock_duration_get(t0, t1, &again) == TICKCLOCK_OK);
  CHECK(again.ns == before);
  CHECK(again.bound_ns == d.bound_ns);
  // an interval after the last refinement spans nothing
  uint64_t t2 = tickclock_now();
  f.w.now_ns += 1000000;
  uint64_t t3 = tickclock_now();
  REQUIRE(tickclock_duration_get(t2, t3, &d) == TICKCLOCK_OK);
  CHECK(d.flags == 0);
  check_within(d, tsc_ns(t2, t3));
  // every sub-interval of the history, at 1 ms steps, within its bound
  uint64_t step = (t1 - t0) / 64;
  for (int a = 0; a < 64; a += 7)
    for (int b = a + 1; b <= 64; b += 5) {
      uint64_t x = t0 + step * (uint64_t)a, y = t0 + step * (uint64_t)b;
      REQUIRE(tickclock_duration_get(x, y, &d) == TICKCLOCK_OK);
      check_within(d, tsc_ns(x, y));
    }
}

TEST_CASE("what is due for the later tick runs first: a refinement due is published, then used") {
  if (fake::calibrated_first("what is due for the later tick runs first")) return;
  World f;
  const tickclock_info *i0 = f.start(0);
  REQUIRE(i0->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  uint64_t t0 = tickclock_now();
  f.w.now_ns += 10000000;  // the first refinement (at 4 ms) is due
  uint64_t t1 = tickclock_now();
  REQUIRE(tickclock_info_get() == i0);  // reading publishes nothing
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->generation > i0->generation);
  CHECK(d.ns == (int64_t)(tickclock_to_ns(t1) - tickclock_to_ns(t0)));
  check_within(d, tsc_ns(t0, t1));
}

TEST_CASE("re-initialisations and a switch to the OS clock: measured steps, not bounded") {
  if (fake::no_counter("re-initialisations and a switch to the OS clock")) return;
  World f;
  f.start(0);
  uint64_t t0 = tickclock_now(), n0 = f.w.now_ns;
  f.w.now_ns += 3000000;
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  f.w.now_ns += 3000000;
  uint64_t t1 = tickclock_now();
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_PUBLICATION) != 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) == 0);
  check_within(d, tsc_ns(t0, t1));
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  REQUIRE(tickclock_init(&sys) == TICKCLOCK_OK);
  REQUIRE(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(tickclock_info_get()->tkc_bounded_switch == 0);
  CHECK(tickclock_info_get()->tkc_cont_bound_ns < 2000);  // a few simulated reads
  f.w.now_ns += 3000000;
  uint64_t t2 = tickclock_now(), n2 = f.w.now_ns;
  REQUIRE(tickclock_duration_get(t0, t2, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_PUBLICATION) != 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) == 0);
  CHECK(d.spanned >= 2);
  // the truth from the simulated time line: t0 was read just before n0,
  // t2 (an OS clock read) just before n2
  check_within(d, (double)(n2 - n0), 2.0 * (double)(f.w.os_cost_ns + f.w.read_cost_ns));
  CHECK(d.bound_ns < 10000);
}

TEST_CASE("RDTSC disabled after first use: the switch's step is bounded, not measured" *
          doctest::test_suite("x86")) {
  World f;
  const tickclock_info *i = f.start(0);
  REQUIRE(i->source == fake::isa.counter);
  f.w.now_ns += 20000000;
  REQUIRE(tickclock_revalidate() == 0);  // the last conclusive sample
  f.w.now_ns += 7000000;
  uint64_t t0 = tickclock_now(), n0 = f.w.now_ns;
  f.w.now_ns += 3000000;
  f.w.prctl_mode = TICKCLOCK_PRCTL_SIGSEGV;
  REQUIRE(tickclock_revalidate() == TICKCLOCK_SWITCHED);
  const tickclock_info *s = tickclock_info_get();
  CHECK(s->tkc_bounded_switch == 1);
  CHECK(f.w.counter_traps == 0);
  f.w.now_ns += 2000000;
  uint64_t t1 = tickclock_now(), n1 = f.w.now_ns;
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK(f.w.counter_traps == 0);
  CHECK(f.w.vdso_traps == 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_PUBLICATION) != 0);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) != 0);
  check_within(d, (double)(n1 - n0), 2.0 * (double)(f.w.os_cost_ns + f.w.read_cost_ns));
  // about DRIFT_ABS_NS plus (DRIFT_PPM + u) of the 10 ms since the sample
  CHECK(d.bound_ns >= (uint64_t)TICKCLOCK_REVALIDATE_DRIFT_ABS_NS);
  CHECK(d.bound_ns < 2 * (uint64_t)TICKCLOCK_REVALIDATE_DRIFT_ABS_NS);
  // both ticks after the switch: nothing spanned, a few ns
  uint64_t t2 = tickclock_now();
  f.w.now_ns += 1000;
  REQUIRE(tickclock_duration_get(t2, tickclock_now(), &d) == TICKCLOCK_OK);
  CHECK(d.flags == 0);
  CHECK(d.bound_ns < 20);
}

TEST_CASE(
    "a suspend: seen by the rate check, or by the time suspended now; bounded by its length") {
  if (fake::no_counter("a suspend")) return;
  for (int counts = 1; counts >= 0; counts--) {
    CAPTURE(counts);
    World f;
    f.w.counts_in_suspend = counts;
    f.start(10);
    f.run(UINT64_C(100000000));  // 100 ms with checks
    uint64_t t0 = tickclock_now();
    f.run(UINT64_C(20000000));
    f.w.suspend(UINT64_C(5000000000));  // 5 s suspended
    f.w.now_ns += 1000;
    uint64_t t1 = tickclock_now();
    // no check has run since: the time suspended now says so
    tickclock_duration d;
    REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
    CHECK(d.bound_ns >= UINT64_C(5000000000));
    check_within(d, tsc_ns(t0, t1));                          // the counter's count
    check_within(d, tsc_ns(t0, t1) + (counts ? -5e9 : 5e9));  // the other one
    f.run(UINT64_C(100000000));                               // the checks see it
    uint64_t t2 = tickclock_now();
    REQUIRE(tickclock_duration_get(t0, t2, &d) == TICKCLOCK_OK);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
    CHECK(d.bound_ns >= UINT64_C(5000000000));
    CHECK(d.bound_ns < UINT64_C(5000100000));
    // awake time and awake plus suspended time both lie within the bound
    double awake = tsc_ns(t0, t2) - (counts ? 5e9 : 0);
    check_within(d, awake);
    check_within(d, awake + 5e9);
    // an interval after it is not flagged, one before it neither
    uint64_t t3 = tickclock_now();
    f.w.now_ns += 1000000;
    REQUIRE(tickclock_duration_get(t3, tickclock_now(), &d) == TICKCLOCK_OK);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) == 0);
    CHECK(d.bound_ns < 1000);
  }
}

TEST_CASE(
    "a suspend inside a short and a long interval: bounded either way; the time suspended is read "
    "only for an interval that can hold one") {
  if (fake::no_counter("a suspend in a short interval")) return;
  for (int counts = 1; counts >= 0; counts--) {
    CAPTURE(counts);
    World f;
    f.w.counts_in_suspend = counts;
    f.start(10);
    f.run(UINT64_C(100000000));  // 100 ms with checks
    tickclock_duration d;
    // no suspend: a 1 us interval reads no clock for it, a 2 ms one does
    uint64_t a0 = tickclock_now();
    f.w.now_ns += 1000;
    uint64_t a1 = tickclock_now(), reads = f.w.suspended_reads;
    REQUIRE(tickclock_duration_get(a0, a1, &d) == TICKCLOCK_OK);
    CHECK(f.w.suspended_reads == reads);
    CHECK(d.flags == 0);
    check_within(d, tsc_ns(a0, a1));
    f.w.now_ns += 2000000;
    uint64_t a2 = tickclock_now();
    REQUIRE(tickclock_duration_get(a0, a2, &d) == TICKCLOCK_OK);
    CHECK(f.w.suspended_reads > reads);
    CHECK(d.flags == 0);
    // a 5 s suspend 500 ns into a 1 us interval (awake time), which lies
    // at the end of a 20 ms one; no check has run since the suspend
    uint64_t l0 = tickclock_now();
    f.run(UINT64_C(20000000));
    uint64_t s0 = tickclock_now();
    f.w.now_ns += 500;
    f.w.suspend(UINT64_C(5000000000));
    f.w.now_ns += 500;
    uint64_t s1 = tickclock_now();
    double counted = tsc_ns(s0, s1);  // what the counter counted
    double awake = counted - (counts ? 5e9 : 0);
    REQUIRE(tickclock_duration_get(s0, s1, &d) == TICKCLOCK_OK);
    // CLOCK_MONOTONIC_RAW counts the time awake: always within the bound
    check_within(d, awake);
    if (counts) {
      // counted: the interval is 5 s long, the suspend found and bounded
      CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
      CHECK(d.bound_ns >= UINT64_C(5000000000));
      check_within(d, awake + 5e9);
    } else {
      // not counted: 1 us of ticks, nothing to correct against the raw
      // clock, and too short to hold a suspend the machine went through
      // (so the time suspended is not read)
      CHECK(d.ns < 2000);
      CHECK(d.bound_ns < 1000);
    }
    // the 20 ms interval holding it: found (read now, or seen by the check
    // the later tick made due), both the awake and the whole time bounded
    REQUIRE(tickclock_duration_get(l0, s1, &d) == TICKCLOCK_OK);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
    CHECK(d.bound_ns >= UINT64_C(5000000000));
    double l_awake = tsc_ns(l0, s1) - (counts ? 5e9 : 0);
    check_within(d, l_awake);
    check_within(d, l_awake + 5e9);
  }
}

TEST_CASE("a suspend stays in an interval's bound however many suspends come after it") {
  if (fake::no_counter("suspends after an interval")) return;
  World f;
  f.start(10);
  f.run(UINT64_C(100000000));
  uint64_t t0 = tickclock_now();
  f.run(UINT64_C(20000000));
  f.w.suspend(UINT64_C(10000000000));  // 10 s suspended
  f.run(UINT64_C(100000000));          // the checks see it
  uint64_t t1 = tickclock_now();
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
  CHECK(d.bound_ns >= UINT64_C(10000000000));
  // twenty more suspends, each seen by the checks: more than the windows kept
  for (int k = 0; k < 20; k++) {
    f.run(UINT64_C(50000000));
    f.w.suspend(UINT64_C(1000000000));
    f.run(UINT64_C(50000000));
  }
  tickclock_duration again;
  REQUIRE(tickclock_duration_get(t0, t1, &again) == TICKCLOCK_OK);
  INFO("bound " << again.bound_ns << " flags " << again.flags);
  CHECK(again.ns == d.ns);
  CHECK((again.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) != 0);
  CHECK(again.bound_ns >= UINT64_C(10000000000));
  double awake = tsc_ns(t0, t1) - (f.w.counts_in_suspend ? 1e10 : 0);
  check_within(again, awake);
  check_within(again, awake + 1e10);
  // an interval between two of the later suspends carries none of the first
  uint64_t t2 = tickclock_now();
  f.run(UINT64_C(10000000));
  REQUIRE(tickclock_duration_get(t2, tickclock_now(), &again) == TICKCLOCK_OK);
  CHECK((again.flags & TICKCLOCK_DURATION_SPANS_SUSPEND) == 0);
}

TEST_CASE("saturation: a value that does not fit says so") {
  World f;
  f.start(0);
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  // a fresh world on the OS clock: ticks are nanoseconds
  tkc_set_platform(&f.p);
  REQUIRE(tickclock_init(&sys) == TICKCLOCK_OK);
  REQUIRE(tickclock_info_get()->scaled == 0);
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(0, UINT64_MAX, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SATURATED) != 0);
  CHECK(d.ns == INT64_MAX);
  CHECK(d.bound_ns == UINT64_MAX);
  REQUIRE(tickclock_duration_get(UINT64_MAX, 0, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SATURATED) != 0);
  CHECK(d.ns == INT64_MIN);
  // just inside: INT64_MAX ns
  REQUIRE(tickclock_duration_get(1, (uint64_t)INT64_MAX + 1, &d) == TICKCLOCK_OK);
  CHECK((d.flags & TICKCLOCK_DURATION_SATURATED) == 0);
  CHECK(d.ns == INT64_MAX);
  tickclock::bounded_duration b = tickclock::duration_between(0, UINT64_MAX);
  CHECK(b.bound.count() == INT64_MAX);
}

TEST_CASE("a long history: the walk finds the states an old interval spans") {
  if (fake::no_counter("a long history")) return;
  World f;
  f.start(0);
  uint64_t t0 = tickclock_now();
  for (int k = 0; k < 40; k++) {
    f.w.now_ns += 1000000;
    REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  }
  f.w.now_ns += 2 * TKC_REPUBLISH_GUARD_NS;  // past the last one's base
  uint64_t t1 = tickclock_now();
  tickclock_duration d;
  REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
  CHECK(d.spanned >= 40);
  CHECK(d.ns == (int64_t)(tickclock_to_ns(t1) - tickclock_to_ns(t0)));
  check_within(d, tsc_ns(t0, t1));
  // a sub-interval inside the history spans only its own publications
  uint64_t a = t0 + (t1 - t0) / 3, b = a + (uint64_t)f.w.ticks(1000000);  // 1 ms
  REQUIRE(tickclock_duration_get(a, b, &d) == TICKCLOCK_OK);
  CHECK(d.spanned <= 2);
  check_within(d, tsc_ns(a, b));
}

namespace {
struct HandlerTick {
  uint64_t tick = 0, at_ns = 0;
  int taken = 0;
  FakeWorld *w = nullptr;
};
void take_handler_tick(void *arg) {
  HandlerTick *h = static_cast<HandlerTick *>(arg);
  h->tick = tickclock_now();
  h->at_ns = h->w->now_ns;
  h->taken = 1;
}
}  // namespace

TEST_CASE("a tick a handler took during the first initialisation compares with later ones") {
  if (fake::no_counter("a handler's tick during the first initialisation")) return;
  // the handler lands in the first, second, ... reading of the raw clock:
  // the calibration's brackets, the anchor, the publication
  for (uint64_t at : {1, 2, 3, 5, 8, 13, 40, 200, 1000}) {
    CAPTURE(at);
    FakeWorld w;
    tickclock_platform p = fake::full(&w);
    HandlerTick h;
    h.w = &w;
    w.interrupt = take_handler_tick;
    w.interrupt_arg = &h;
    w.interrupt_at_raw = at;
    tkc_set_platform(&p);
    tickclock_revalidate_every(0);
    REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
    if (!h.taken) {  // the initialisation read the raw clock fewer times
      tickclock_revalidate_every(TICKCLOCK_CHECK_DEFAULT_MS);
      tkc_set_platform(NULL);
      continue;
    }
    const tickclock_info *s = tickclock_info_get();
    w.now_ns += 3000000;  // 3 ms later
    uint64_t t1 = tickclock_now();
    double truth = (double)(w.now_ns - h.at_ns);
    tickclock_duration d;
    REQUIRE(tickclock_duration_get(h.tick, t1, &d) == TICKCLOCK_OK);
    INFO("source " << std::string(s->source_name) << " read_path " << s->read_path << " delta "
                   << tickclock_delta_ns(h.tick, t1) << " truth " << truth);
    CHECK((d.flags & TICKCLOCK_DURATION_SATURATED) == 0);
    // the handler's reading and the fake's time at it are a few reads apart
    check_within(d, truth, 200);
    CHECK(std::abs((double)tickclock_delta_ns(h.tick, t1) - truth) <= (double)d.bound_ns + 200);
    // to_ns never steps back from the handler's tick to a later one
    CHECK(tickclock_to_ns(h.tick) <= tickclock_to_ns(t1));
    tickclock_revalidate_every(TICKCLOCK_CHECK_DEFAULT_MS);
    tkc_set_platform(NULL);
  }
}
