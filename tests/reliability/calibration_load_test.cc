// Calibration (20 ms, the default) against a 1 s reference taken by the
// test itself (tests/support/sysclock_ref.h: the counter bracketed around
// CLOCK_MONOTONIC_RAW read through the system call, not the library's
// calibration, so a scale error in the library cannot cancel out), idle, with the other core
// saturated by a busy thread, and while another thread flips the calibrating thread between CPUs
// with sched_setaffinity. The bound asserted is the measured worst case with a wide margin (see the
// comment at kBoundPpm); every run's figure is printed.
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/sysclock_ref.h"

namespace {
// Measured on the 2-core noisy KVM development guest (AMD EPYC, 2.096 GHz
// TSC, kernel clocksource kvm-clock; the host was shared with other
// builds, load average 60-85), 20 ms calibrations, 8 per condition, 6 runs:
//   idle       worst |ppm| vs the 1 s reference 0.53 (stated bound <= 2.10)
//   busy       (every core saturated)            0.48 (stated bound <= 2.35)
//   migrating  (affinity flipped every 200 us)   0.51 (stated bound <= 2.10)
// The assertion allows 50 ppm: ~100x the worst measured, still 2x inside
// the 25 ppm + uncertainty agreement bound's order and far inside the
// 500 ppm re-validation drift bound.
const double kBoundPpm = 50.0;
const int kRuns = 8;

double ppm(const tickclock_calibration &c, const tctest::SysRef &ref) {
  return (c.hz / ref.hz - 1.0) * 1e6;
}

double worst(const char *what, const tctest::SysRef &ref) {
  double w = 0, unc = 0;
  for (int r = 0; r < kRuns; r++) {
    tickclock_calibration c;
    REQUIRE(tkc_calibrate(tkc_p_counter_ordered, 20, &c) == 1);
    double p = ppm(c, ref);
    w = std::max(w, std::fabs(p));
    unc = std::max(unc, c.uncertainty_ppm);
  }
  printf(
      "calibration %-10s worst |ppm| vs 1 s reference: %8.2f  (largest stated uncertainty %.2f "
      "ppm)\n",
      what, w, unc);
  return w;
}
}  // namespace

TEST_CASE("20 ms calibration vs a 1 s reference: idle, other core busy, migrating") {
  tctest::SysRef ref = tctest::sys_reference(tkc_p_counter_ordered, 1000);
  REQUIRE(ref.ok);
  printf("reference (syscall CLOCK_MONOTONIC_RAW, 1 s): %.1f Hz (+-%.3f ppm)\n", ref.hz,
         ref.err_ppm);

  double idle = worst("idle", ref);
  CHECK(idle < kBoundPpm);

  std::atomic<bool> stop(false);
  {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> busy;
    for (unsigned i = 0; i < n; i++)
      busy.emplace_back([&] {
        volatile uint64_t x = 0;
        while (!stop.load(std::memory_order_relaxed)) x = x + 1;
      });
    double b = worst("busy", ref);
    CHECK(b < kBoundPpm);
    stop = true;
    for (auto &t : busy) t.join();
  }

  stop = false;
  pid_t me = (pid_t)syscall(SYS_gettid);
  int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 2) {
    MESSAGE("one CPU: no migration to test");
    return;
  }
  std::thread flipper([&] {
    int cpu = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(me, sizeof set, &set);
      cpu = (cpu + 1) % ncpu;
      usleep(200);
    }
  });
  double m = worst("migrating", ref);
  stop = true;
  flipper.join();
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int i = 0; i < ncpu; i++) CPU_SET(i, &all);
  sched_setaffinity(me, sizeof all, &all);
  CHECK(m < kBoundPpm);
}
