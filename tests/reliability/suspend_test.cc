// Suspend, slow counters and the default rate check, on the deterministic
// fake platform (the core compiled in with -DTICKCLOCK_TEST_FAKE_COUNTER):
// every counter read, clock read and sleep advances one simulated time line,
// and a suspend advances CLOCK_BOOTTIME - CLOCK_MONOTONIC while
// CLOCK_MONOTONIC(_RAW) stands still (the counter counting through it, or
// not). On the target ISA's fake counter (fake::isa); the cases about x86's
// leaves form the doctest suite "x86" (suspend_x86_test).
#include <string.h>

#include <cmath>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"

namespace {
constexpr int kCnt = fake::isa.counter;  // the ISA's counter

struct World {
  FakeWorld w;
  tickclock_platform p;
  World() { p = fake::full(&w); }
  // The first use, with the default rate check (a fresh world has it).
  const tickclock_info *start() {
    tkc_set_platform(&p);
    (void)tickclock_now();
    return tickclock_info_get();
  }
  // tickclock_to_ns(tickclock_now()) every step_ns of simulated time for
  // span_ns; 1 if it never decreased.
  int run(uint64_t span_ns, uint64_t step_ns = 1000000) {
    uint64_t last = 0;
    int ok = 1;
    for (uint64_t t = 0; t < span_ns; t += step_ns) {
      w.now_ns += step_ns;
      uint64_t ns = tickclock_to_ns(tickclock_now());
      if (ns < last) ok = 0;
      last = ns;
    }
    return ok;
  }
  ~World() { tkc_set_platform(NULL); }
};

double ppm_off(const tickclock_info *i, double true_hz) { return (i->hz / true_hz - 1) * 1e6; }

void publish_perf_page(FakeWorld &w) {
  // ns = cyc * mult >> 31: 2^31 / 858993459 ns per tick = 2.5 GHz - 0.6 Hz
  w.perf_mult = 858993459;
  w.perf_shift = 31;
}

// The interval of one second of counter time, converted now.
int64_t one_second(const FakeWorld &w) {
  uint64_t t0 = tickclock_now();
  return tickclock_delta_ns(
      t0, t0 + w.ticks_at(UINT64_C(2000000000)) - w.ticks_at(UINT64_C(1000000000)));
}
}  // namespace

TEST_CASE(
    "a published frequency whose cross-check spans a suspend is kept, not replaced by the suspend" *
    doctest::test_suite("x86")) {
  for (int counts = 1; counts >= 0; counts--) {
    CAPTURE(counts);
    World f;
    f.w.counts_in_suspend = counts;
    publish_perf_page(f.w);
    const tickclock_info *i = f.start();
    REQUIRE(i->source == kCnt);
    REQUIRE(i->freq_pending_check == 1);
    f.w.now_ns += 300000;                // 0.3 ms awake
    f.w.suspend(UINT64_C(20000000000));  // 20 s suspended
    CHECK(f.run(UINT64_C(2000000000)));  // 2 s awake, converting every ms
    i = tickclock_info_get();
    INFO(i->why);
    CHECK(i->source == kCnt);
    CHECK(i->freq_pending_check == 0);
    CHECK(std::fabs(ppm_off(i, (double)f.w.hz())) < 1.0);
    CHECK(i->uncertainty_ppm >= 0.01);                       // never 0.000
    CHECK(std::llabs(one_second(f.w) - 1000000000) < 1000);  // 1 ppm
  }
}

TEST_CASE(
    "a calibrated rate whose refinement spans a suspend goes on refining from a fresh bracket") {
  if (fake::calibrated_first("a refinement across a suspend")) return;
  for (int counts = 1; counts >= 0; counts--) {
    CAPTURE(counts);
    World f;
    f.w.counts_in_suspend = counts;
    const tickclock_info *i = f.start();
    REQUIRE(i->source == kCnt);
    REQUIRE(i->freq_method == TICKCLOCK_FREQ_CALIBRATED);
    double quick = i->uncertainty_ppm;
    f.w.now_ns += 2000000;               // 2 ms: before the 4 ms refinement
    f.w.suspend(UINT64_C(20000000000));  // 20 s suspended
    CHECK(f.run(UINT64_C(3000000000)));  // 3 s awake
    i = tickclock_info_get();
    INFO(i->why);
    CHECK(i->source == kCnt);
    CHECK(i->uncertainty_ppm < quick / 10);
    CHECK(i->uncertainty_ppm < 1.0);
    CHECK(i->uncertainty_ppm >= 0.01);
    CHECK(i->baseline_ns >= UINT64_C(1000000000));
    CHECK(i->baseline_ns < UINT64_C(3000000000));  // measured awake, after the resume
    CHECK(std::fabs(ppm_off(i, (double)f.w.hz())) < 1.0);
    CHECK(strstr(i->why, "; refined to") != nullptr);  // the reason says how far
    CHECK(std::llabs(one_second(f.w) - 1000000000) < 1000);
  }
}

TEST_CASE("the rate check across a suspend keeps a counter that counted it, or did not") {
  if (fake::no_counter("the rate check across a suspend")) return;
  for (int counts = 1; counts >= 0; counts--) {
    CAPTURE(counts);
    World f;
    f.w.counts_in_suspend = counts;
    const tickclock_info *i = f.start();
    REQUIRE(i->source == kCnt);
    CHECK(f.run(UINT64_C(2000000000), 10000000));  // refined, checked every second
    unsigned gen = tickclock_info_get()->generation;
    f.w.suspend(UINT64_C(20000000000));
    CHECK(f.run(UINT64_C(3000000000), 10000000));  // three default checks
    i = tickclock_info_get();
    INFO(i->why);
    CHECK(i->source == kCnt);
    CHECK(i->generation == gen);
    CHECK(tickclock_revalidate() == 0);
  }
}

TEST_CASE(
    "a counter that jumped across a suspend by neither the awake nor the whole time is left") {
  if (fake::no_counter("a jump across a suspend")) return;
  World f;
  const tickclock_info *i = f.start();
  REQUIRE(i->source == kCnt);
  CHECK(f.run(UINT64_C(2000000000), 10000000));
  f.w.suspend(UINT64_C(20000000000));
  f.w.offset += f.w.ticks(5000000000);           // 5 s more than it counted
  CHECK(f.run(UINT64_C(1500000000), 10000000));  // never backward, whatever happens
  i = tickclock_info_get();
  INFO(i->why);
  CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(strstr(i->why, "stepped") != nullptr);
}

namespace {
// Seconds from a rate change of ppm to the default check leaving the
// counter (-1: not within limit_s). The change comes after refinement.
double detect_s(double ppm, double limit_s) {
  World f;
  const tickclock_info *i = f.start();
  REQUIRE(i->source == kCnt);
  CHECK(f.run(UINT64_C(2000000000), 10000000));
  // the counter's rate * (1 + ppm): num2/den2 ticks per ns
  f.w.den2 = 1000000000;
  f.w.num2 = (uint64_t)std::llround((double)f.w.hz() * (1 + ppm * 1e-6));
  f.w.rate_from_ns = f.w.now_ns + f.w.suspended;
  uint64_t from = f.w.now_ns;
  uint64_t last = 0;
  while (f.w.now_ns - from < (uint64_t)(limit_s * 1e9)) {
    f.w.now_ns += 10000000;
    uint64_t ns = tickclock_to_ns(tickclock_now());
    CHECK(ns >= last);
    last = ns;
    if (tickclock_info_get()->source != kCnt) {
      INFO(tickclock_info_get()->why);
      CHECK(tickclock_info_get()->revalidated == 1);
      return (double)(f.w.now_ns - from) / 1e9;
    }
  }
  return -1;
}
}  // namespace

TEST_CASE("the default rate check leaves a counter whose rate changed: how fast") {
  if (fake::no_counter("the default rate check")) return;
  if (fake::isa.always_stated && fake::skipped("the default rate check",
                                               "on a published rate (the TOD's architectural "
                                               "4096 MHz) a +100 ppm rate change after the "
                                               "rate's cross-check is re-calibrated, not left "
                                               "within 10 s: an open defect of the policy for "
                                               "published rates"))
    return;
  double s1000 = detect_s(1000, 5), s100 = detect_s(100, 10), sneg = detect_s(-1000, 5);
  double s20 = detect_s(20, 20);
  MESSAGE("rate change +1000 ppm left after " << s1000 << " s, -1000 ppm after " << sneg
                                              << " s, +100 ppm after " << s100
                                              << " s, +20 ppm: " << s20);
  // the header's figures: about 1.2 s for 1000 ppm, about 4 s for 100 ppm
  CHECK(s1000 > 0);
  CHECK(s1000 <= 1.2);
  CHECK(sneg > 0);
  CHECK(sneg <= 1.2);
  CHECK(s100 > 0);
  CHECK(s100 <= 4.5);
  CHECK(s20 < 0);  // within the check's 50 ppm: never flagged
}

TEST_CASE("the default rate check is off with tickclock_revalidate_every(0)") {
  if (fake::no_counter("the rate check turned off")) return;
  World f;
  const tickclock_info *i = f.start();
  REQUIRE(i->source == kCnt);
  tickclock_revalidate_every(0);
  CHECK(f.run(UINT64_C(2000000000), 10000000));
  f.w.offset += f.w.ticks(1000000000);  // a 1 s jump
  CHECK(f.run(UINT64_C(3000000000), 10000000));
  CHECK(tickclock_info_get()->source == kCnt);
  CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);  // the explicit call still checks
}

TEST_CASE("slow and fast counters refine to the end: 19.2 MHz to 3 GHz") {
  if (fake::calibrated_first("slow and fast counters")) return;
  struct Rate {
    uint64_t num, den;
    double hz;
  } rates[] = {{24, 1250, 19.2e6},  {24, 1000, 24e6}, {25, 1000, 25e6},
               {125, 2000, 62.5e6}, {1, 1, 1e9},      {3, 1, 3e9}};
  for (const Rate &r : rates) {
    CAPTURE(r.hz);
    World f;
    f.w.num = r.num;
    f.w.den = r.den;
    const tickclock_info *i = f.start();
    REQUIRE(i->source == kCnt);
    double quick = i->uncertainty_ppm;
    CHECK(f.run(UINT64_C(4000000000), 10000000));  // the last step's baseline passes 1 s
    i = tickclock_info_get();
    INFO(i->why);
    MESSAGE((r.hz / 1e6) << " MHz: quick +-" << quick << " ppm, refined to " << i->hz << " Hz +-"
                         << i->uncertainty_ppm << " ppm over " << (i->baseline_ns / 1e9)
                         << " s, off by " << ppm_off(i, r.hz) << " ppm");
    CHECK(i->source == kCnt);
    CHECK(i->baseline_ns >= UINT64_C(1000000000));
    CHECK(i->uncertainty_ppm < 1.0);
    CHECK(std::fabs(ppm_off(i, r.hz)) <= i->uncertainty_ppm);
    CHECK(i->uncertainty_ppm >= 0.01);
  }
}

TEST_CASE("a stated 24 MHz is cross-checked and kept on every baseline up to 1 s") {
  if (fake::no_counter("a stated 24 MHz")) return;
  if (fake::isa.always_stated && fake::skipped("a stated 24 MHz",
                                               "the TOD's rate is architectural (4096 MHz): no TOD "
                                               "is stated at 24 MHz"))
    return;
  World f;
  f.w.num = 24;
  f.w.den = 1000;
  // x86: a hypervisor's timing leaf; elsewhere the ISA's own statement
  // (a 24 MHz CNTFRQ_EL0 is common on Arm boards)
  int method = fake::isa.stated_method;
  bool published = fake::isa.stated_published;
  if (kCnt == TICKCLOCK_SOURCE_TSC) {
    f.w.hypervisor = 1;
    f.w.hv_tsc_khz = 24000;
    method = TICKCLOCK_FREQ_HYPERVISOR;
    published = true;
  } else {
    f.w.state_rate();
  }
  const tickclock_info *i = f.start();
  REQUIRE(i->source == kCnt);
  REQUIRE(i->freq_pending_check == (published ? 1 : 0));
  CHECK(f.run(UINT64_C(2000000000), 10000000));
  i = tickclock_info_get();
  INFO(i->why);
  CHECK(i->source == kCnt);
  CHECK(i->freq_method == method);
  CHECK(i->freq_pending_check == 0);
  CHECK(i->hz == 24e6);
}

TEST_CASE(
    "a suspend inside the first calibration's start bracket: calibrated again, the counter kept") {
  if (fake::calibrated_first("a suspend inside the first calibration")) return;
  for (uint64_t call = 1; call <= 4; call++) {
    CAPTURE(call);
    World f;
    f.w.suspend_at_call = call;  // 1, 2: the start bracket; 3, 4: the end bracket
    f.w.suspend_for_ns = UINT64_C(5000000000);
    const tickclock_info *i = f.start();
    INFO(i->why);
    CHECK(i->source == kCnt);
    CHECK(std::fabs(ppm_off(i, (double)f.w.hz())) < 50.0);
  }
}

namespace {
// A counter state published from a stated rate (x86: leaf 0x15 with its
// crystal, bare metal; aarch64's CNTFRQ_EL0; the s390x TOD's 4096 MHz)
// while CLOCK_MONOTONIC_RAW could not be read: no anchor, its cross-check
// pending. The clock then comes back. Where the ISA's statement is the
// kernel's word (POWER, RISC-V) no state is published before calibration.
bool no_published_statement(const char *what) {
  if (fake::no_counter(what)) return true;
  return !fake::isa.stated_published && kCnt != TICKCLOCK_SOURCE_TSC &&
         fake::skipped(what,
                       "this ISA's statement of its counter's rate is the kernel's word "
                       "(cpuinfo, device tree), calibrated before use: no counter state "
                       "is published without a calibration's anchor");
}
const tickclock_info *start_unanchored(World &f) {
  if (kCnt == TICKCLOCK_SOURCE_TSC) {
    f.w.crystal_hz = 25000000;
    f.w.l15_num = 100;
    f.w.l15_den = 1;
  } else {
    f.w.state_rate();
  }
  f.w.raw_fail = 1;
  const tickclock_info *i = f.start();
  INFO(i->why);
  REQUIRE(i->source == kCnt);
  REQUIRE(i->freq_pending_check == 1);
  f.w.raw_fail = 0;
  return i;
}
}  // namespace

TEST_CASE(
    "a counter state published without an anchor (CLOCK_MONOTONIC_RAW unreadable then) is checked "
    "once it can be" *
    doctest::test_suite("x86")) {
  World f;
  const tickclock_info *i = start_unanchored(f);
  f.w.prctl_mode = TICKCLOCK_PRCTL_SIGSEGV;  // and RDTSC is disabled for this thread
  uint64_t traps = f.w.counter_traps;
  CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
  CHECK(f.w.counter_traps == traps);  // nothing read the counter to find out
  i = tickclock_info_get();
  CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(i->read_path == TICKCLOCK_READ_OS_SYSCALL);
}

TEST_CASE(
    "a counter state published without an anchor gets one from tickclock_revalidate(), then its "
    "cross-check and checks") {
  if (no_published_statement("an unanchored state")) return;
  World f;
  const tickclock_info *i = start_unanchored(f);
  CHECK(tickclock_revalidate() == 0);  // anchors
  CHECK(f.run(UINT64_C(100000000)));   // the cross-check falls due in the conversions
  i = tickclock_info_get();
  INFO(i->why);
  CHECK(i->source == kCnt);
  CHECK(i->freq_pending_check == 0);
  f.w.clocksource = fake::isa.other_clocksource;
  CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
}
