// tickclock_duration_get's bound on the real host: hard and useful.
//
// A child process (a fresh first use) records a time line of about 12 s:
// bursts of tickclock_now() readings, each bracketed by CLOCK_MONOTONIC_RAW
// reads taken just before and just after it, while the frequency is
// refined (the conversions run what falls due), tickclock_init(NULL)
// re-initialises twice and tickclock_init(SYSTEM) switches to the OS
// clock. It then draws intervals between pairs of readings (most of them
// short: inside a burst, 1 us and up; some across bursts; some across the
// whole time line, up to 10 s), converts each with tickclock_duration_get
// and compares it with the raw clock:
//   hard: the duration lies within its bound of the raw interval, widened
//         by the two brackets (a reading happened somewhere inside its
//         bracket) and, for the part of the interval under the OS clock,
//         by the slew NTP applied to CLOCK_MONOTONIC against
//         CLOCK_MONOTONIC_RAW over the run (the bound does not cover it:
//         tickclock.h) — no interval outside;
//   useful: the median of bound / observed error (the error against the
//         brackets' midpoints, at least 1 ns) stays below a figure measured
//         on this project's hosts with a margin.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "doctest/doctest.h"
#include "tests/support/child.h"
#include "tickclock.h"

namespace {

uint64_t raw_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint64_t mono_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct Reading {
  uint64_t r0, tick, r1;
  int under_os;  // taken after the switch to the OS clock
};

uint64_t rng_state = 0x243F6A8885A308D3ull;
uint64_t next_rand() {
  uint64_t x = rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng_state = x;
  return x * 0x2545F4914F6CDD1Dull;
}
uint64_t below(uint64_t n) { return next_rand() % n; }

void spin_ns(uint64_t ns) {
  uint64_t end = raw_ns() + ns;
  while (raw_ns() < end) {
  }
}

// Median bound / error must stay below this: measured 8.0 over all the
// intervals (the short ones' bound is the quantum, a few ns) and 8.7-9.0
// over those longer than 100 ms (the rate's stated uncertainty) on the
// 2-core AMD EPYC KVM host, 3 runs; about 3x that is held.
constexpr double kMaxMedianRatio = 25.0;
// A second of the time line, in ms, at which each event happens.
constexpr uint64_t kTotalMs = 12000;

void time_line() {
  const int per_burst = 16;
  std::vector<Reading> rd;
  rd.reserve(400000);
  std::vector<size_t> burst_start;
  uint64_t t_start = raw_ns(), m_start = mono_ns(), m_switch = 0, r_switch = 0;
  int events = 0, under_os = 0;
  EXPECT(tickclock_init(NULL) == TICKCLOCK_OK);
  const tickclock_info *first = tickclock_info_get();
  printf("source at first use: %s (%s, %.3f ppm)\n", first->source_name, first->freq_detail,
         first->uncertainty_ppm);
  for (;;) {
    uint64_t el_ms = (raw_ns() - t_start) / 1000000u;
    if (el_ms >= kTotalMs) break;
    if ((events == 0 && el_ms >= 3000) || (events == 1 && el_ms >= 6000)) {
      EXPECT(tickclock_init(NULL) == TICKCLOCK_OK);
      events++;
    } else if (events == 2 && el_ms >= 9000) {
      tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
      // before the switch: a stall between it and these reads would leave
      // part of the time under the OS clock out of its slew slack
      m_switch = mono_ns();
      r_switch = raw_ns();
      EXPECT(tickclock_init(&sys) == TICKCLOCK_OK);
      EXPECT(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
      under_os = 1;
      events++;
    }
    burst_start.push_back(rd.size());
    for (int k = 0; k < per_burst; k++) {
      Reading r;
      r.r0 = raw_ns();
      r.tick = tickclock_now();
      r.r1 = raw_ns();
      r.under_os = under_os;
      rd.push_back(r);
      spin_ns(below(4) == 0 ? 1000 + below(20000) : below(2000));
    }
    // what falls due (refinements, the rate check) runs in the conversions
    (void)tickclock_to_ns(rd.back().tick);
    tctest::sleep_ms(1);
  }
  EXPECT(events == 3);
  uint64_t t_end = raw_ns(), m_end = mono_ns();
  // CLOCK_MONOTONIC's slew against CLOCK_MONOTONIC_RAW over the run (NTP)
  double slew_ppm = std::fabs(((double)(m_end - m_start) / (double)(t_end - t_start)) - 1) * 1e6;
  (void)m_switch;
  (void)r_switch;
  const tickclock_info *last = tickclock_info_get();
  printf(
      "time line: %zu readings in %zu bursts, %u states published, CLOCK_MONOTONIC slew "
      "%.3f ppm\n",
      rd.size(), burst_start.size(), last->generation, slew_ppm);

  // the intervals
  const int n = 20000;
  int violations = 0, spans_pub = 0, spans_bounded = 0, long_ones = 0;
  std::vector<double> ratios;
  std::vector<double> ratio_long;
  ratios.reserve(n);
  double worst_frac = -1e300;
  char worst[200] = "";
  int drawn = 0;
  while (drawn < n) {
    size_t i, j;
    int kind = (int)below(10);
    if (kind < 6) {  // inside a burst
      size_t b = below(burst_start.size());
      size_t lo = burst_start[b], hi = b + 1 < burst_start.size() ? burst_start[b + 1] : rd.size();
      i = lo + below(hi - lo);
      j = lo + below(hi - lo);
    } else if (kind < 9) {  // across a few bursts (ms)
      i = below(rd.size());
      j = std::min(rd.size() - 1, i + below(200 * per_burst));
    } else {  // anywhere (up to the whole time line)
      i = below(rd.size());
      j = below(rd.size());
    }
    if (i > j) std::swap(i, j);
    const Reading &a = rd[i], &b = rd[j];
    if (b.r0 < a.r1 + 1000 || b.r1 - a.r0 > UINT64_C(10000000000)) continue;  // 1 us .. 10 s
    drawn++;
    tickclock_duration d;
    EXPECT(tickclock_duration_get(a.tick, b.tick, &d) == TICKCLOCK_OK);
    EXPECT((d.flags & TICKCLOCK_DURATION_SATURATED) == 0);
    if (d.flags & TICKCLOCK_DURATION_SPANS_PUBLICATION) spans_pub++;
    if (d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) spans_bounded++;
    // the part under the OS clock, at the measured slew
    double os_part = 0;
    if (b.under_os) os_part = (double)(b.r1 - (a.under_os ? a.r0 : r_switch));
    double slack = os_part * slew_ppm * 1e-6 + 1;
    double lo_true = (double)(b.r0 - a.r1), hi_true = (double)(b.r1 - a.r0);
    double v = (double)d.ns, bound = (double)d.bound_ns;
    if (v + bound + slack < lo_true || v - bound - slack > hi_true) {
      violations++;
      if (violations <= 10)
        printf("VIOLATION: ns %lld bound %llu flags %u raw [%.0f, %.0f] (readings %zu, %zu)\n",
               (long long)d.ns, (unsigned long long)d.bound_ns, d.flags, lo_true, hi_true, i, j);
    }
    double mid = ((double)(b.r0 + b.r1) - (double)(a.r0 + a.r1)) / 2;
    double err = std::max(std::fabs(v - mid), 1.0);
    ratios.push_back(bound / err);
    if (mid > 1e8) {
      long_ones++;
      ratio_long.push_back(bound / err);
    }
    // how much of the bound the error used beyond what the brackets leave open
    double frac = (std::fabs(v - mid) - (hi_true - lo_true) / 2 - slack) / bound;
    if (frac > worst_frac) {
      worst_frac = frac;
      snprintf(worst, sizeof worst,
               "ns %lld, bound %llu, flags %u, brackets %llu + %llu ns, error vs midpoints %.0f",
               (long long)d.ns, (unsigned long long)d.bound_ns, d.flags,
               (unsigned long long)(a.r1 - a.r0), (unsigned long long)(b.r1 - b.r0), v - mid);
    }
  }
  std::sort(ratios.begin(), ratios.end());
  std::sort(ratio_long.begin(), ratio_long.end());
  double median = ratios[ratios.size() / 2];
  double median_long = ratio_long.empty() ? 0 : ratio_long[ratio_long.size() / 2];
  printf(
      "duration bound: %d intervals (1 us .. 10 s), %d outside bound + brackets, %d span a "
      "publication, %d a bounded switch; median bound/error %.2f (intervals over 100 ms: %d, "
      "median %.2f); the most of its bound an error used beyond the brackets: %.3f\n",
      drawn, violations, spans_pub, spans_bounded, median, long_ones, median_long, worst_frac);
  printf("the closest: %s\n", worst);
  fflush(stdout);
  EXPECT(violations == 0);
  EXPECT(spans_pub > 0);
  EXPECT(median < kMaxMedianRatio);
  EXPECT(long_ones > 100);
  EXPECT(median_long < kMaxMedianRatio);
}

}  // namespace

TEST_CASE("every interval of a 12 s time line lies within its bound; the bound is tight") {
  int st = tctest::in_child(time_line, 60);
  REQUIRE(st != -1);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}
