// Documented limits that live outside the pure decider, pinned on a
// deterministic fake platform (tkc_set_platform) just inside and
// just outside each one:
//   - calibration (calibrate.c): the tightest bracket's midpoint at each
//     end, the frequency exactly ticks*1e9/ns, and its bound
//     ((w_start + w_end)/2)/D + 2 ns/N; the 1000 ms cap on the interval;
//   - re-validation: the drift bound
//     elapsed * (TICKCLOCK_REVALIDATE_DRIFT_PPM + uncertainty) + the
//     absolute TICKCLOCK_REVALIDATE_DRIFT_ABS_NS, on both signs;
//   - the read-cost rule through gathering: a counter read may cost as much
//     as the OS clock's, not more.
// The fake counter runs at exactly 3 GHz on simulated time; every counter
// read, clock read and sleep advances that time by a fixed amount, so
// each expected value is computed here by hand, not by the library.
#include <cstring>
#include <initializer_list>

#include "doctest/doctest.h"
#include "internal.h"

namespace {

struct World {
  int64_t t = INT64_C(1000000000000);  // simulated ns
  int64_t counter_step = 1000, raw_step = 1000, os_step = 1000;
  int64_t drift_ns = 0;  // added to the counter's view of time
  bool frozen = false;   // reads do not advance time
  bool widen_after_sleep = false;
  bool backwards = false;
  int64_t back = 0;
};
World g;

void reset_world() { g = World(); }

int fake_cpuid(void *, uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *r) {
  std::memset(r, 0, sizeof *r);
  (void)sub;
  switch (leaf) {
    case 0:  // GenuineIntel, max basic leaf 0xd: no leaf 0x15/0x16
      r->eax = 0xd;
      r->ebx = 0x756e6547;
      r->edx = 0x49656e69;
      r->ecx = 0x6c65746e;
      break;
    case 1:
      r->eax = 0x000906ea;
      r->edx = 1u << 4;  // TSC
      break;
    case 0x80000000u:
      r->eax = 0x80000008u;
      break;
    case 0x80000007u:
      r->edx = 1u << 8;  // invariant TSC
      break;
    default:
      break;
  }
  return 1;
}

int fake_read_line(void *, const char *path, char *buf, size_t n) {
  if (std::strcmp(path, TKC_SYSFS_CURRENT_CLOCKSOURCE) == 0)
    tkc_strlcpy(buf, "tsc", n);
  else if (std::strcmp(path, TKC_SYSFS_AVAILABLE_CLOCKSOURCE) == 0)
    tkc_strlcpy(buf, "tsc hpet acpi_pm", n);
  else
    return 0;
  return 1;
}

int fake_prctl(void *) { return TICKCLOCK_PRCTL_ENABLED; }

void fake_perf(void *, tickclock_perf_page *pp) {
  std::memset(pp, 0, sizeof *pp);
  pp->attempted = 1;
  pp->err = 13;  // EACCES: no page
}

uint64_t fake_counter(void *) {
  if (g.backwards) return (uint64_t)(INT64_C(4000000000000000) - (g.back += 1000));
  if (!g.frozen) g.t += g.counter_step;
  return (uint64_t)(3 * (g.t + g.drift_ns));
}
uint64_t fake_raw(void *) {
  if (!g.frozen) g.t += g.raw_step;
  return (uint64_t)g.t;
}
uint64_t fake_os(void *) {
  if (!g.frozen) g.t += g.os_step;
  return (uint64_t)g.t;
}
void fake_sleep(void *, uint64_t ns) {
  g.t += (int64_t)ns;
  if (g.widen_after_sleep) g.counter_step = g.raw_step = 3000;
}
const char *fake_getenv(void *, const char *) { return nullptr; }

const tickclock_platform kFake = {nullptr,      fake_cpuid,   fake_read_line, fake_prctl, fake_perf,
                                  fake_counter, fake_counter, fake_raw,       fake_os,    nullptr,
                                  nullptr,      fake_sleep,   fake_getenv};

uint64_t rd() { return fake_counter(nullptr); }

struct Installed {
  Installed() {
    reset_world();
    tkc_set_platform(&kFake);
  }
  ~Installed() { tkc_set_platform(nullptr); }
};

}  // namespace

TEST_CASE("calibration: midpoints, exact frequency and the stated bound (by hand)") {
  Installed p;
  g.widen_after_sleep = true;  // start brackets 6000 ticks wide, end brackets 18000
  tickclock_calibration cal;
  std::memset(&cal, 0, sizeof cal);
  REQUIRE(tkc_calibrate(rd, 20, &cal) == 1);
  CHECK(cal.ok == 1);
  // each bracket: counter, clock, counter, every read advancing time one step
  CHECK(cal.bracket_start == 6000u);
  CHECK(cal.bracket_end == 18000u);
  // both midpoints fall on the clock read's instant: exactly 3 ticks per ns
  CHECK(cal.ticks == 3 * cal.ns);
  CHECK(cal.hz_num == UINT64_C(3000000000));
  CHECK(cal.hz_den == 1);
  // 20 ms asked; the end bracket comes after the spin passes the target
  CHECK(cal.ns >= UINT64_C(20000000));
  CHECK(cal.ns < UINT64_C(20020000));
  // ((6000 + 18000) / 2 + 2 ticks of quantum) / (3 N) + 2 / N, in ppm
  double n = (double)cal.ns;
  CHECK(cal.uncertainty_ppm ==
        doctest::Approx((12002.0 / (3.0 * n) + 2.0 / n) * 1e6).epsilon(1e-12));
}

TEST_CASE(
    "calibration: the quick one lengthens x4 until under 50 ppm; an asked one is capped at 1000 "
    "ms") {
  Installed p;
  tickclock_calibration cal;
  // brackets 6000 ticks wide at 3 GHz: 1 ms gives ~2000 ppm, 4 ms ~500,
  // 16 ms ~125, 64 ms ~31: the first under TICKCLOCK_CAL_TARGET_PPM
  REQUIRE(tkc_calibrate(rd, 0, &cal) == 1);
  CHECK(cal.ns >= UINT64_C(64000000));
  CHECK(cal.ns < UINT64_C(64020000));
  CHECK(cal.uncertainty_ppm <= TICKCLOCK_CAL_TARGET_PPM);
  CHECK(cal.uncertainty_ppm > TICKCLOCK_CAL_TARGET_PPM / 4);
  g.counter_step = g.raw_step = 100;  // 600-tick brackets: 1 ms is ~200 ppm, 4 ms ~50.5, 16 ms
  REQUIRE(tkc_calibrate(rd, 0, &cal) == 1);
  CHECK(cal.ns >= UINT64_C(16000000));
  CHECK(cal.ns < UINT64_C(16020000));
  g.counter_step = g.raw_step = 1000;
  REQUIRE(tkc_calibrate(rd, 1000, &cal) == 1);
  CHECK(cal.ns >= UINT64_C(1000000000));
  CHECK(cal.ns < UINT64_C(1000020000));
  REQUIRE(tkc_calibrate(rd, 5000, &cal) == 1);
  CHECK(cal.ns >= UINT64_C(1000000000));
  CHECK(cal.ns < UINT64_C(1000020000));
}

TEST_CASE("calibration: a counter that steps backwards in every bracket fails, marked attempted") {
  Installed p;
  g.backwards = true;
  tickclock_calibration cal;
  CHECK(tkc_calibrate(rd, 20, &cal) == 0);
  CHECK(cal.ok == 0);
  CHECK(cal.bracket_start == UINT64_MAX);
  CHECK((cal.ns != 0 || cal.ticks != 0));  // the decider must not ask again
}

namespace {

// Initialises on the fake platform (simulated time running), then freezes
// time: re-validation reads see exactly the elapsed time and drift set.
const tickclock_info *init_then_freeze() {
  g.frozen = false;
  g.drift_ns = 0;
  REQUIRE(tickclock_init(nullptr) == TICKCLOCK_OK);
  const tickclock_info *in = tickclock_info_get();
  REQUIRE(in->source == TICKCLOCK_SOURCE_TSC);
  REQUIRE(in->hz_num == UINT64_C(3000000000));
  REQUIRE(in->hz_den == 1);
  g.frozen = true;
  return in;
}

}  // namespace

TEST_CASE(
    "re-validation: bound = elapsed * (50 ppm + uncertainty) + 100 us + half the anchor bracket, "
    "both signs") {
  Installed p;
  const tickclock_info *first = init_then_freeze();
  double u = first->uncertainty_ppm;
  // the fake's calibration brackets are 6000 ticks: the quick calibration
  // ends at 64 ms with ~31 ppm, large enough that leaving the uncertainty
  // out of the bound shows
  REQUIRE(u > 20.0);
  REQUIRE(u <= 50.0);
  struct Case {
    int64_t elapsed_ns;
  } cases[] = {{0}, {1000000000}, {10000000000}};
  for (const Case &c : cases) {
    // the anchor bracket is 2000 ns wide (its midpoint is the clock read's
    // instant); the check's own, with time frozen, is 0
    double bound = (double)c.elapsed_ns * (50.0 + u) * 1e-6 + 100000.0 + 1000.0;
    for (int sign : {+1, -1}) {
      for (int outside : {0, 1}) {
        CAPTURE(c.elapsed_ns);
        CAPTURE(sign);
        CAPTURE(outside);
        // a fresh world each time: the previous case's counter, ahead or
        // behind, must not leave its highest reading behind
        reset_world();
        tkc_set_platform(&kFake);
        const tickclock_info *s = init_then_freeze();
        CHECK(s->uncertainty_ppm == doctest::Approx(u).epsilon(1e-9));
        // the fake counter's ns at the anchor (time frozen; tickclock_now()
        // would read the real counter in this build)
        uint64_t last = tkc_ns_in(s, rd());
        g.t += c.elapsed_ns;
        g.drift_ns = sign * (int64_t)(bound + (outside ? 500.0 : -500.0));
        int r = tickclock_revalidate();
        const tickclock_info *after = tickclock_info_get();
        if (outside) {
          CHECK(r == TICKCLOCK_SWITCHED);
          CHECK(after->source == TICKCLOCK_SOURCE_SYSTEM);
          CHECK(after->revalidated == 1);
          // the first check's step since the anchor is its total too
          CHECK(std::strstr(after->why, "stepped") != nullptr);
          // the switch starts from the highest reading the checks saw:
          // the counter's own where it ran ahead; where it fell behind, the
          // anchor extrapolated over the elapsed time at (50 ppm + u) plus
          // 100 us and the anchor bracket (2000 ns): no further forward step
          uint64_t now_ns = after->base_ns;  // where the OS clock's readings start
          double step = (double)(int64_t)(now_ns - last);
          double allow = (double)c.elapsed_ns +
                         (sign > 0 ? bound + 500.0 : bound - 100000.0 - 1000.0) + 100000.0 +
                         2000.0 + 10.0;
          CAPTURE(step);
          CAPTURE(allow);
          CHECK(now_ns >= last);
          CHECK(step <= allow);
        } else {
          CHECK(r == 0);
          CHECK(after->source == TICKCLOCK_SOURCE_TSC);
        }
      }
    }
  }
}

TEST_CASE("read cost through gathering: equal costs keep the counter, one ns more refuses it") {
  Installed p;
  g.counter_step = 1000;
  g.os_step = 1000;
  REQUIRE(tickclock_init(nullptr) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC);
  g.os_step = 999;
  REQUIRE(tickclock_init(nullptr) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(std::strstr(tickclock_info_get()->why, "trapped or emulated") != nullptr);
}
