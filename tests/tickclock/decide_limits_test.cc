// The decider's documented limits, each pinned just inside and just
// outside: the agreement bound and its terms, the calibration cap, the
// read-cost rule.
#include <cmath>

#include "doctest/doctest.h"
#include "tests/support/x86_leaves.h"

using namespace tctest;

// ---- documented limits, each pinned just inside and just outside ----------

TEST_CASE(
    "limit: agreement bound is 25 ppm + calibration uncertainty + the source's quantisation") {
  tickclock_x86_facts x = crystal_2400();
  struct Case {
    int64_t tenths;  // the crystal's disagreement with calibration, 0.1 ppm
    double cal_unc;
    bool agrees;
  } cases[] = {
      {+245, 0.0, true},  {+255, 0.0, false},  {-245, 0.0, true},  {-255, 0.0, false},
      {+255, 1.0, true},  {+265, 1.0, false},  {-255, 1.0, true},  {-265, 1.0, false},
      {+345, 10.0, true}, {+355, 10.0, false}, {-345, 10.0, true}, {-355, 10.0, false},
  };
  for (const Case &c : cases) {
    CAPTURE(c.tenths);
    CAPTURE(c.cal_unc);
    tickclock_evidence ev = evidence(x, "tsc", "tsc hpet");
    calibrated_at(&ev, UINT64_C(2400000000), c.tenths, c.cal_unc);
    Decision d = decide(ev);
    REQUIRE(d.rc == 0);
    const tickclock_freq_candidate *cr = d.freq("cpuid_15h_crystal");
    REQUIRE(cr != nullptr);
    CHECK(cr->checked == 1);
    CHECK(cr->ppm_vs_calibration == doctest::Approx(c.tenths / 10.0).epsilon(1e-9));
    CHECK(cr->bound_ppm == doctest::Approx(25.0 + c.cal_unc).epsilon(1e-12));
    CHECK(cr->usable == (c.agrees ? 1 : 0));
    CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
    if (c.agrees) {
      CHECK(std::string(d.info->freq_detail) == "cpuid_15h_crystal");
      CHECK(d.info->hz_num == UINT64_C(2400000000));
      CHECK(d.info->hz_den == 1);
    } else {
      CHECK(std::string(d.info->freq_detail) == "calibration");
      CHECK(contains(cr->reason, "disagrees with calibration"));
    }
  }
}

TEST_CASE("limit: a nominal MHz source's quantisation (0.5 MHz) widens its bound") {
  // leaf 0x16 base 2500 MHz: quantisation 0.5/2500 = 200 ppm, bound 25 + 1 + 200
  Leaves l = intel(0x16, 0x55, false);
  l.set(0x15, 2, 200, 0, 0);  // ratio, no crystal, model without a known one: from 0x16
  l.set(0x16, 2500, 3900, 100, 0);
  tickclock_x86_facts x = decode(l);
  for (int64_t tenths : {+2255, -2255, +2265, -2265}) {
    CAPTURE(tenths);
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    calibrated_at(&ev, UINT64_C(2500000000), tenths, 1.0);
    Decision d = decide(ev);
    bool inside = tenths == 2255 || tenths == -2255;
    for (const char *name : {"cpuid_16h", "cpuid_15h_from_16h"}) {
      CAPTURE(name);
      const tickclock_freq_candidate *c = d.freq(name);
      REQUIRE(c != nullptr);
      CHECK(c->uncertainty_ppm == doctest::Approx(200.0).epsilon(1e-12));
      CHECK(c->bound_ppm == doctest::Approx(226.0).epsilon(1e-12));
      CHECK(c->usable == (inside ? 1 : 0));
    }
    // both rank below calibration: measurement beats a nominal figure
    CHECK(std::string(d.info->freq_detail) == "calibration");
  }
}

TEST_CASE("limit: a hypervisor kHz leaf's quantisation is 0.5 kHz") {
  // KVM timing leaf 2 100 000 kHz: quantisation 0.238 ppm, bound 25 + 1 + 0.238
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x40000000u, 0x40000010u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  l.set(0x40000010u, 2100000, 1000000, 0, 0);
  tickclock_x86_facts x = decode(l);
  for (int64_t tenths : {+261, -261, +264, -264}) {
    CAPTURE(tenths);
    tickclock_evidence ev = evidence(x, "tsc", "tsc kvm-clock");
    calibrated_at(&ev, UINT64_C(2100000000), tenths, 1.0);
    Decision d = decide(ev);
    const tickclock_freq_candidate *c = d.freq("hypervisor_40000010");
    REQUIRE(c != nullptr);
    CHECK(c->bound_ppm == doctest::Approx(26.0 + 0.5 / 2100000 * 1e6).epsilon(1e-12));
    bool inside = tenths == 261 || tenths == -261;
    CHECK(c->usable == (inside ? 1 : 0));
    CHECK(std::string(d.info->freq_detail) == (inside ? "hypervisor_40000010" : "calibration"));
  }
}

TEST_CASE("limit: kvm-clock + offered tsc needs the hypervisor leaf inside the bound") {
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x40000000u, 0x40000010u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  l.set(0x40000001u, 1u << 24, 0, 0, 0);  // KVM_FEATURE_CLOCKSOURCE_STABLE_BIT
  l.set(0x40000010u, 2100000, 1000000, 0, 0);
  tickclock_x86_facts x = decode(l);
  for (int64_t tenths : {+255, -255, +265, -265}) {
    CAPTURE(tenths);
    tickclock_evidence ev = evidence(x, "kvm-clock", "kvm-clock tsc acpi_pm");
    calibrated_at(&ev, UINT64_C(2100000000), tenths, 1.0);
    Decision d = decide(ev);
    bool inside = tenths == 255 || tenths == -255;
    CHECK(d.info->source == (inside ? TICKCLOCK_SOURCE_TSC : TICKCLOCK_SOURCE_SYSTEM));
  }
}

TEST_CASE("limit: calibration uncertainty cap (50 ppm) for an automatic choice") {
  tickclock_x86_facts x = crystal_2400();
  for (double unc : {49.0, 50.0, 51.0}) {
    CAPTURE(unc);
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    calibrated(&ev, UINT64_C(2400000000), 1, unc);
    Decision d = decide(ev);
    if (unc <= 50.0) {
      CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
    } else {
      CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
      CHECK(contains(d.tsc_reason(), "calibration brackets too wide"));
    }
    // a forced TSC is not held to the cap (it is still calibrated)
    ev.cfg_source = TICKCLOCK_SOURCE_TSC;
    Decision f = decide(ev);
    CHECK(f.info->source == TICKCLOCK_SOURCE_TSC);
    CHECK(f.info->forced == 1);
  }
}

TEST_CASE("limit: read-cost rule: a counter read may cost as much as clock_gettime, not more") {
  tickclock_x86_facts x = crystal_2400();
  struct Case {
    double counter, os;
    int source;
  } cases[] = {
      {30.0, 30.0, TICKCLOCK_SOURCE_TSC}, {30.5, 30.0, TICKCLOCK_SOURCE_SYSTEM},
      {29.5, 30.0, TICKCLOCK_SOURCE_TSC}, {60.5, 30.0, TICKCLOCK_SOURCE_SYSTEM},
      {900.0, 0.0, TICKCLOCK_SOURCE_TSC},  // clock_gettime not measured: no rule
      {0.0, 30.0, TICKCLOCK_SOURCE_TSC},   // counter not measured: no rule
  };
  for (const Case &c : cases) {
    CAPTURE(c.counter);
    CAPTURE(c.os);
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    ev.counter_read_ns = c.counter;
    ev.os_read_ns = c.os;
    calibrated(&ev, UINT64_C(2400000000), 1, 1.0);
    Decision d = decide(ev);
    CHECK(d.info->source == c.source);
    if (c.source == TICKCLOCK_SOURCE_SYSTEM) CHECK(contains(d.tsc_reason(), "trapped"));
  }
}
