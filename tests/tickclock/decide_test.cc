// The decider is a pure function: synthetic evidence in, decision out.
// Every refusal path names its reason.
#include <cstring>

#include "doctest/doctest.h"
#include "internal.h"

namespace {

// A healthy bare-metal x86 box: invariant TSC, clocksource tsc, cheap reads.
tickclock_evidence healthy() {
  tickclock_evidence ev;
  std::memset(&ev, 0, sizeof ev);
  ev.arch_counter = TICKCLOCK_SOURCE_TSC;
  ev.x86.have_cpuid = 1;
  ev.x86.max_leaf = 0x16;
  ev.x86.max_ext_leaf = 0x80000008;
  ev.x86.tsc = 1;
  ev.x86.invariant_known = 1;
  ev.x86.invariant_tsc = 1;
  ev.os_linux = 1;
  ev.tsc_prctl = TICKCLOCK_PRCTL_ENABLED;
  ev.clocksource_known = 1;
  std::strcpy(ev.clocksource, "tsc");
  ev.counter_read_ns = 8;
  ev.os_read_ns = 20;
  ev.os_resolution_ns = 1;
  return ev;
}

// The decision on hand-built evidence, its claims listed as the gatherer
// lists them.
int decide(tickclock_evidence *ev, tickclock_info *out) {
  tickclock_x86_claims(&ev->x86);
  tkc_list_claims(ev);
  return tickclock_decide(ev, out);
}

void calibrated(tickclock_evidence &ev, uint64_t hz) {
  ev.cal.ok = 1;
  ev.cal.ticks = hz / 50;
  ev.cal.ns = 20000000;
  ev.cal.hz_num = hz;
  ev.cal.hz_den = 1;
  ev.cal.hz = (double)hz;
  ev.cal.uncertainty_ppm = 2;
}

const tickclock_candidate *find(const tickclock_info &i, int src) {
  for (unsigned k = 0; k < i.n_candidates; k++)
    if (i.candidates[k].source == src) return &i.candidates[k];
  return NULL;
}

void expect_refused(tickclock_evidence ev, const char *needle) {
  tickclock_info out;
  calibrated(ev, 3000000000ull);
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  const tickclock_candidate *tsc = find(out, TICKCLOCK_SOURCE_TSC);
  REQUIRE(tsc != NULL);
  CHECK(tsc->usable == 0);
  CHECK_MESSAGE(std::strstr(tsc->reason, needle) != NULL, tsc->reason);
  CHECK(std::strstr(out.why, needle) != NULL);
}

}  // namespace

TEST_CASE("healthy TSC: asks for calibration, then chooses the TSC") {
  tickclock_evidence ev = healthy();
  tickclock_info out;
  CHECK(decide(&ev, &out) == 1);  // needs calibration
  calibrated(ev, 3000000000ull);
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::strcmp(out.source_name, "tsc") == 0);
  CHECK(out.freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(out.hz == doctest::Approx(3e9));
  CHECK(out.resolution_ns == doctest::Approx(1.0 / 3));
  CHECK(tickclock_conv_ticks_to_ns(&out.conv, 3000000000ull) == 1000000000ull);
  CHECK(find(out, TICKCLOCK_SOURCE_TSC)->chosen == 1);
  CHECK(find(out, TICKCLOCK_SOURCE_SYSTEM)->chosen == 0);
}

TEST_CASE("refusals, each with its reason") {
  tickclock_evidence ev;
  ev = healthy();
  ev.x86.tsc = 0;
  expect_refused(ev, "CPUID.01H:EDX[4]");
  ev = healthy();
  ev.x86.have_cpuid = 0;
  expect_refused(ev, "no CPUID");
  ev = healthy();
  ev.tsc_prctl = TICKCLOCK_PRCTL_SIGSEGV;
  expect_refused(ev, "PR_SET_TSC");
  ev = healthy();
  ev.x86.invariant_known = 0;  // leaf 0x80000007 absent: the bit reads as clear
  ev.x86.invariant_tsc = 0;
  ev.x86.max_ext_leaf = 0x80000004;
  expect_refused(ev, "0x80000004");
  ev = healthy();
  ev.x86.invariant_tsc = 0;
  expect_refused(ev, "invariant TSC");
  ev = healthy();
  std::strcpy(ev.clocksource, "hpet");
  expect_refused(ev, "'hpet'");
  ev = healthy();
  ev.clocksource_known = 0;
  expect_refused(ev, "current_clocksource");
  ev = healthy();
  ev.counter_read_ns = 1500;  // trapped by the hypervisor
  expect_refused(ev, "trapped");
}

TEST_CASE("a failed calibration refuses the counter") {
  tickclock_evidence ev = healthy();
  ev.cal.ok = 0;
  ev.cal.ns = 1;  // attempted
  tickclock_info out;
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  // the reason names the failure itself, not a consequence of it
  CHECK(std::strstr(find(out, TICKCLOCK_SOURCE_TSC)->reason,
                    "calibration against CLOCK_MONOTONIC_RAW failed") != NULL);
  CHECK(std::strstr(out.why, "calibration against CLOCK_MONOTONIC_RAW failed") != NULL);
  // forced: refused for the same reason, the automatic choice kept
  ev.cfg_source = TICKCLOCK_SOURCE_TSC;
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(out.request_refused == 1);
  CHECK(std::strstr(find(out, TICKCLOCK_SOURCE_TSC)->reason,
                    "calibration against CLOCK_MONOTONIC_RAW failed") != NULL);
}

TEST_CASE("non-Linux: no clocksource check") {
  tickclock_evidence ev = healthy();
  ev.os_linux = 0;
  ev.clocksource_known = 0;
  calibrated(ev, 2000000000ull);
  tickclock_info out;
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_TSC);
}

TEST_CASE("forcing: honoured when executable even if untrusted, never when it would trap") {
  tickclock_evidence ev = healthy();
  ev.x86.invariant_tsc = 0;
  ev.cfg_source = TICKCLOCK_SOURCE_TSC;
  calibrated(ev, 2000000000ull);
  tickclock_info out;
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_TSC);
  CHECK(out.forced == 1);
  CHECK(std::strstr(find(out, TICKCLOCK_SOURCE_TSC)->reason, "forced") != NULL);
  // the OS clock is not used because the TSC was forced, not because the
  // TSC is trusted (it is not here)
  const tickclock_candidate *sys = find(out, TICKCLOCK_SOURCE_SYSTEM);
  REQUIRE(sys != NULL);
  CAPTURE(sys->reason);
  CHECK(std::strstr(sys->reason, "was forced by") != NULL);
  CHECK(std::strstr(sys->reason, "trusted") == NULL);

  ev.tsc_prctl = TICKCLOCK_PRCTL_SIGSEGV;  // would trap: refuse
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(out.request_refused == 1);
  CHECK(out.forced == 0);
}

TEST_CASE("environment: parsed, bad values explained, config wins") {
  tickclock_evidence ev = healthy();
  calibrated(ev, 2000000000ull);
  tickclock_info out;
  ev.have_env = 1;
  std::strcpy(ev.env_value, "system");
  decide(&ev, &out);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(out.forced == 2);

  std::strcpy(ev.env_value, "TSC ");  // case and whitespace are not guessed at
  decide(&ev, &out);
  CHECK(out.source == TICKCLOCK_SOURCE_TSC);  // automatic choice
  CHECK(out.forced == 0);
  CHECK(std::strstr(out.env_error, "'TSC '") != NULL);

  std::strcpy(ev.env_value, "cntvct");  // another architecture's counter
  decide(&ev, &out);
  CHECK(out.request_refused == 1);
  CHECK(std::strstr(out.env_error, "unusable") != NULL);

  std::strcpy(ev.env_value, "system");
  ev.cfg_source = TICKCLOCK_SOURCE_TSC;
  decide(&ev, &out);
  CHECK(out.source == TICKCLOCK_SOURCE_TSC);
  CHECK(out.forced == 1);
}

TEST_CASE("no counter on this architecture: the OS clock, with the reason") {
  tickclock_evidence ev;
  std::memset(&ev, 0, sizeof ev);
  ev.os_resolution_ns = 1;
  tickclock_info out;
  CHECK(decide(&ev, &out) == 0);
  CHECK(out.source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(out.n_candidates == 1);
  CHECK(std::strstr(out.why, "no hardware counter") != NULL);
}

TEST_CASE("source names round-trip") {
  for (int s = 0; s < TICKCLOCK_SOURCE_COUNT_; s++)
    CHECK(tickclock_source_from_name(tickclock_source_name(s)) == s);
  CHECK(tickclock_source_from_name("nope") == -1);
  CHECK(tickclock_source_from_name(NULL) == -1);
}

TEST_CASE(
    "the OS clock chosen before any calibration: the calibration entry says it was not needed") {
  tickclock_evidence ev = healthy();
  std::strcpy(ev.clocksource, "hpet");  // the kernel rejected the TSC
  ev.cal_deferrable = 1;
  tickclock_info out;
  CHECK(decide(&ev, &out) == 0);
  REQUIRE(out.source == TICKCLOCK_SOURCE_SYSTEM);
  bool seen = false;
  for (unsigned k = 0; k < out.n_freqs; k++)
    if (out.freqs[k].method == TICKCLOCK_FREQ_CALIBRATED) {
      seen = true;
      CAPTURE(out.freqs[k].reason);
      CHECK(std::strstr(out.freqs[k].reason, "published frequency is used first") == NULL);
      CHECK(std::strstr(out.freqs[k].reason, "not chosen") != NULL);
    }
  CHECK(seen);
}
