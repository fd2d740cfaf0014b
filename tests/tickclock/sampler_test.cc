// tickclock_sampler: pure computation, no clock. Synthetic workloads with
// known totals (constant, bimodal, heavy-tailed Pareto, periodic with the
// sampling rate's own period, constant with a bounded measurement error)
// are fed to the sampler in 1000 seeded trials each: the 95 % interval
// must contain the true total in at least 93 % of them, and the mean
// relative error of the estimate must stay within 1 % (unbiased).
#include <stdio.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tickclock.h"

namespace {

uint64_t mix(uint64_t &x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit(uint64_t &x) { return ((double)(mix(x) >> 11) + 0.5) / 9007199254740992.0; }

struct Workload {
  std::string name;
  std::vector<double> truth;     // each execution's true duration
  std::vector<double> measured;  // what the timer said
  std::vector<double> bound;     // its stated error bound
  double total = 0;
};

constexpr size_t kN = 50000;
constexpr double kP = 1.0 / 32;

Workload make(const std::string &name) {
  Workload w;
  w.name = name;
  uint64_t g = 12345;
  for (size_t i = 0; i < kN; i++) {
    double y = 0, m, b = 0;
    if (name == "constant") {
      y = 100;
    } else if (name == "bimodal") {
      y = unit(g) < 0.1 ? 5000 : 50;
    } else if (name == "pareto") {  // x_m = 10, alpha = 2.5 (a finite variance)
      y = 10 / std::pow(unit(g), 1 / 2.5);
    } else if (name == "periodic") {  // period 32 = 1 / p: a stride would alias
      y = i % 32 == 0 ? 10000 : 10;
    } else if (name == "measured") {  // each timed with an error within its bound
      y = 100 + 50 * unit(g);
    }
    m = y;
    if (name == "measured") {
      b = 20;
      m = y + 20 * (2 * unit(g) - 1) + 15;  // biased by 15, within the bound
    }
    w.truth.push_back(y);
    w.measured.push_back(m);
    w.bound.push_back(b);
    w.total += y;
  }
  return w;
}

struct Result {
  double coverage, mean_rel_err, mean_sampled;
  double mean_rel_err_measured;  // against the total of what the timer said
};

Result trials(const Workload &w, int n_trials) {
  int covered = 0;
  double rel = 0, sampled = 0, rel_m = 0, measured_total = 0;
  for (double m : w.measured) measured_total += m;
  for (int t = 0; t < n_trials; t++) {
    tickclock_sampler s;
    REQUIRE(tickclock_sampler_init(&s, kP, (uint64_t)t * 7919 + 1) == TICKCLOCK_OK);
    for (size_t i = 0; i < kN; i++)
      if (tickclock_sampler_should_time(&s)) tickclock_sampler_add(&s, w.measured[i], w.bound[i]);
    tickclock_estimate e;
    tickclock_sampler_estimate(&s, &e);
    REQUIRE(e.count == kN);
    if (e.lo_ns <= w.total && w.total <= e.hi_ns) covered++;
    rel += (e.total_ns - w.total) / w.total;
    rel_m += (e.total_ns - measured_total) / measured_total;
    sampled += (double)e.sampled;
  }
  return {(double)covered / n_trials, rel / n_trials, sampled / n_trials, rel_m / n_trials};
}
}  // namespace

TEST_CASE("the 95 % interval covers the true total; the estimate is unbiased") {
  const char *names[] = {"constant", "bimodal", "pareto", "periodic", "measured"};
  for (const char *name : names) {
    CAPTURE(name);
    Workload w = make(name);
    Result r = trials(w, 1000);
    printf(
        "sampler %-9s p = 1/32, %zu executions, 1000 trials: coverage %.1f %%, mean relative "
        "error %+.3f %% (of the measured total %+.3f %%), %.0f timed on average\n",
        name, kN, 100 * r.coverage, 100 * r.mean_rel_err, 100 * r.mean_rel_err_measured,
        r.mean_sampled);
    CHECK(r.coverage >= 0.93);
    // unbiased for what it is given (the "measured" workload's durations
    // are off by up to their bound, which the interval covers)
    CHECK(std::fabs(r.mean_rel_err_measured) < 0.01);
    if (std::string(name) != "measured") CHECK(std::fabs(r.mean_rel_err) < 0.01);
    CHECK(std::fabs(r.mean_sampled / ((double)kN * kP) - 1) < 0.01);
  }
}

TEST_CASE("a fixed stride would alias with the periodic workload; the geometric gaps do not") {
  Workload w = make("periodic");
  // the stride 32 starting anywhere sees the same phase every time
  double stride_total = 0;
  for (size_t i = 5; i < kN; i += 32) stride_total += w.truth[i] * 32;
  CHECK(std::fabs(stride_total / w.total - 1) > 0.5);
  Result r = trials(w, 200);
  CHECK(std::fabs(r.mean_rel_err) < 0.02);
}

TEST_CASE("the gaps: geometric with mean 1 / p, for p from 1e-4 to 1") {
  const double ps[] = {1e-4, 0.01, 0.3, 0.5, 0.999};
  for (double p : ps) {
    CAPTURE(p);
    tickclock_sampler s;
    REQUIRE(tickclock_sampler_init(&s, p, 42) == TICKCLOCK_OK);
    const uint64_t n = p < 0.001 ? 20000000 : 2000000;
    uint64_t hits = 0, first_of_two = 0, both = 0;
    int prev = 0;
    for (uint64_t i = 0; i < n; i++) {
      int h = tickclock_sampler_should_time(&s);
      hits += (uint64_t)h;
      if (i % 2 == 0) {
        prev = h;
      } else {
        first_of_two += (uint64_t)prev;
        both += (uint64_t)(prev && h);
      }
    }
    CHECK(tickclock_sampler_count(&s) == n);
    double rate = (double)hits / (double)n;
    double sd = std::sqrt(p * (1 - p) / (double)n);
    CHECK(std::fabs(rate - p) < 5 * sd + 1e-12);
    // independence of neighbours: P(timed | the previous timed) = p
    if (first_of_two > 1000) {
      double cond = (double)both / (double)first_of_two;
      CHECK(std::fabs(cond - p) < 5 * std::sqrt(p * (1 - p) / (double)first_of_two));
    }
  }
}

TEST_CASE("p = 1 times everything: the total is exact; bad arguments are refused") {
  tickclock_sampler s;
  REQUIRE(tickclock_sampler_init(&s, 1.0, 0) == TICKCLOCK_OK);
  for (int i = 0; i < 1000; i++) {
    REQUIRE(tickclock_sampler_should_time(&s) == 1);
    tickclock_sampler_add(&s, i, 0);
  }
  tickclock_estimate e;
  tickclock_sampler_estimate(&s, &e);
  CHECK(e.count == 1000);
  CHECK(e.sampled == 1000);
  CHECK(e.total_ns == 999.0 * 1000 / 2);
  CHECK(e.stddev_ns == 0);
  CHECK(e.lo_ns == e.total_ns);
  CHECK(e.hi_ns == e.total_ns);
  tickclock_sampler before = s;
  CHECK(tickclock_sampler_init(&s, 0.0, 1) == TICKCLOCK_EINVAL);
  CHECK(tickclock_sampler_init(&s, 1.5, 1) == TICKCLOCK_EINVAL);
  CHECK(tickclock_sampler_init(&s, std::nan(""), 1) == TICKCLOCK_EINVAL);
  CHECK(tickclock_sampler_init(nullptr, 0.5, 1) == TICKCLOCK_EINVAL);
  CHECK(s.sampled == before.sampled);
  // nothing timed yet: nothing is known
  REQUIRE(tickclock_sampler_init(&s, 1e-9, 3) == TICKCLOCK_OK);
  CHECK(tickclock_sampler_should_time(&s) == 0);
  tickclock_sampler_estimate(&s, &e);
  CHECK(e.total_ns == 0);
  CHECK(e.lo_ns == 0);
  CHECK(std::isinf(e.hi_ns));
  // seeds: the same seed the same decisions, another seed others
  tickclock_sampler a, b, c;
  tickclock_sampler_init(&a, 0.1, 7);
  tickclock_sampler_init(&b, 0.1, 7);
  tickclock_sampler_init(&c, 0.1, 8);
  int same = 1, differ = 0;
  for (int i = 0; i < 10000; i++) {
    int x = tickclock_sampler_should_time(&a), y = tickclock_sampler_should_time(&b),
        z = tickclock_sampler_should_time(&c);
    same &= x == y;
    differ |= x != z;
  }
  CHECK(same);
  CHECK(differ);
}
