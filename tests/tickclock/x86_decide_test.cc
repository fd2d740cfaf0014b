// The decider's x86 policy (decide.c, trust.c, freq_select.c) on synthetic
// evidence: each rule, from both sides where it has two.
#include <cmath>

#include "doctest/doctest.h"
#include "tests/support/x86_leaves.h"

using namespace tctest;

// ---- decider ------------------------------------------------------------------

namespace {
// A KVM guest whose kernel is on kvm-clock with tsc still available, the
// stable bit set, and the timing leaf stating 2.1 GHz.
tickclock_evidence kvm_clock_guest() {
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x40000000u, 0x40000010u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  l.set(0x40000001u, 0x01007efb, 0, 0, 0);
  l.set(0x40000010u, 2100000, 1000000, 0, 0);
  return evidence(decode(l), "kvm-clock", "kvm-clock tsc acpi_pm");
}
}  // namespace

TEST_CASE("decider: bare metal, clocksource tsc, crystal agrees: CPUID 0x15 chosen") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);
  l.set(0x16, 2500, 4900, 100, 0);
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc hpet acpi_pm");
  Decision d0 = decide(ev);
  CHECK(d0.rc == 1);                         // asks for a calibration first
  calibrated(&ev, UINT64_C(2496004000), 1);  // +1.6 ppm
  Decision d = decide(ev);
  REQUIRE(d.rc == 0);
  CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::string(d.info->freq_detail) == "cpuid_15h_crystal");
  CHECK(d.info->freq_method == TICKCLOCK_FREQ_CPUID_15H);
  CHECK(d.info->hz_num == UINT64_C(2496000000));
  const tickclock_freq_candidate *c16 = d.freq("cpuid_16h");
  REQUIRE(c16 != nullptr);
  CHECK_FALSE(c16->usable);  // 2500 MHz nominal vs 2496 MHz: 1602 ppm
  CHECK(contains(c16->reason, "disagrees with calibration"));
  const tickclock_freq_candidate *cal = d.freq("calibration");
  REQUIRE(cal != nullptr);
  CHECK(cal->usable);
  CHECK_FALSE(cal->chosen);
  // calibration, perf_page, cpuid_15h_*, hypervisor, cpuid_16h, pvclock_page
  CHECK(d.info->n_freqs == 6);
  const tickclock_freq_candidate *perf = d.freq("perf_page");
  REQUIRE(perf != nullptr);
  CHECK_FALSE(perf->available);
  CHECK(contains(perf->reason, "perf_event mmap page not read"));
  const tickclock_freq_candidate *hv = d.freq("hypervisor");
  REQUIRE(hv != nullptr);
  CHECK(contains(hv->reason, "no hypervisor"));
  // the pairwise matrix: [15h][cal] ~ -1.6 ppm, antisymmetric to first order
  unsigned i15 = (unsigned)(d.freq("cpuid_15h_crystal") - d.info->freqs);
  unsigned ical = (unsigned)(cal - d.info->freqs);
  double a = d.info->freq_disagreement_ppm[i15][ical], b = d.info->freq_disagreement_ppm[ical][i15];
  CHECK(a == doctest::Approx(-1.6026).epsilon(0.001));
  CHECK(std::fabs(a + b) < 1e-3);
  unsigned iperf = (unsigned)(perf - d.info->freqs);
  CHECK(d.info->freq_disagreement_ppm[iperf][ical] == 0);
  CHECK(d.info->max_disagreement_ppm > 1500);
}

TEST_CASE("decider: perf page outranks CPUID when it agrees; cap_user_time=0 is no source") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc hpet");
  calibrated(&ev, UINT64_C(2496000000), 1);
  ev.perf.attempted = 1;
  ev.perf.ok = 1;
  ev.perf.version = 1;
  ev.perf.cap_user_time = 1;
  ev.perf.time_shift = 31;
  ev.perf.time_mult = 860370051;  // 1e9 * 2^31 / 2.496e9, rounded
  Decision d = decide(ev);
  CHECK(std::string(d.info->freq_detail) == "perf_page");
  CHECK(d.info->freq_method == TICKCLOCK_FREQ_PERF_PAGE);
  ev.perf.cap_user_time = 0;
  Decision e = decide(ev);
  REQUIRE(e.freq("perf_page") != nullptr);
  CHECK_FALSE(e.freq("perf_page")->available);
  CHECK(contains(e.freq("perf_page")->reason, "cap_user_time = 0"));
  CHECK(std::string(e.info->freq_detail) == "cpuid_15h_crystal");
}

TEST_CASE("decider: a VM's leaf 0x15 is trusted only when it agrees with calibration") {
  Leaves l = intel(0x16, 0x55, true);
  l.set(0x15, 2, 200, 25000000, 0);  // says 2.5 GHz
  l.set(0x40000000u, 0x40000001u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc kvm-clock");
  calibrated(&ev, UINT64_C(2100000000), 1);  // but the TSC runs at 2.1
  Decision d = decide(ev);
  CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::string(d.info->freq_detail) == "calibration");
  const tickclock_freq_candidate *c = d.freq("cpuid_15h_crystal");
  REQUIRE(c != nullptr);
  CHECK_FALSE(c->usable);
  CHECK(c->ppm_vs_calibration > 190000);
  CHECK(contains(c->reason, "refused"));
}

TEST_CASE("decider: kvm-clock with tsc available and a KVM frequency leaf") {
  tickclock_evidence ev = kvm_clock_guest();
  SUBCASE("agrees: TSC with the hypervisor's frequency") {
    calibrated(&ev, UINT64_C(2100003000), 1);  // +1.4 ppm
    Decision d = decide(ev);
    CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
    CHECK(std::string(d.info->freq_detail) == "hypervisor_40000010");
    CHECK(d.info->hz_num == UINT64_C(2100000000));
    CHECK(contains(d.tsc_reason(), "hypervisor frequency agrees"));
  }
  SUBCASE("disagrees: the OS clock, and says why") {
    calibrated(&ev, UINT64_C(2100500000), 1);  // +238 ppm
    Decision d = decide(ev);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "disagrees with calibration"));
    CHECK_FALSE(d.freq("hypervisor_40000010")->usable);
    // forced anyway: honoured (executable), calibrated, the caveat recorded
    ev.cfg_source = TICKCLOCK_SOURCE_TSC;
    Decision f = decide(ev);
    CHECK(f.info->source == TICKCLOCK_SOURCE_TSC);
    CHECK(std::string(f.info->freq_detail) == "calibration");
    CHECK(contains(f.tsc_reason(), "forced by tickclock_config although"));
    CHECK(contains(f.tsc_reason(), "disagrees"));
  }
  SUBCASE("tsc not in available_clocksource: refused without calibrating") {
    tkc_strlcpy(ev.available_clocksource, "kvm-clock", sizeof ev.available_clocksource);
    Decision d = decide(ev);
    CHECK(d.rc == 0);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "does not offer 'tsc'"));
    CHECK(contains(d.info->why, "kvm-clock"));
  }
}

TEST_CASE(
    "decider: a published frequency stands before calibration only where the caller defers it") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);  // 2496 MHz, crystal stated
  l.set(0x16, 2500, 4900, 100, 0);
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc hpet acpi_pm");
  SUBCASE("deferred: leaf 0x15 with its crystal at once, marked pending") {
    ev.cal_deferrable = 1;
    Decision d = decide(ev);
    REQUIRE(d.rc == 0);
    CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
    CHECK(d.info->freq_pending_check == 1);
    CHECK(std::string(d.info->freq_detail) == "cpuid_15h_crystal");
    CHECK(d.info->hz_num == UINT64_C(2496000000));
    CHECK(contains(d.tsc_reason(), "not calibrated yet"));
    CHECK(contains(d.freq("calibration")->reason, "first refinement measures it"));
    CHECK_FALSE(d.freq("cpuid_16h")->usable);  // a nominal base is no statement
    CHECK(contains(d.freq("cpuid_16h")->reason, "no calibration yet"));
    CHECK_FALSE(d.freq("cpuid_15h_crystal")->checked);
  }
  SUBCASE("not deferred: asks for calibration") { CHECK(decide(ev).rc == 1); }
  SUBCASE("forced: asks for calibration") {
    ev.cal_deferrable = 1;
    ev.cfg_source = TICKCLOCK_SOURCE_TSC;
    CHECK(decide(ev).rc == 1);
  }
  SUBCASE("leaf 0x16 alone: asks for calibration") {
    Leaves m = intel(0x16, 0x97, false);
    m.set(0x15, 0, 0, 0, 0);  // no ratio
    m.set(0x16, 2500, 4900, 100, 0);
    tickclock_evidence e = evidence(decode(m), "tsc", "tsc hpet acpi_pm");
    e.cal_deferrable = 1;
    Decision d = decide(e);
    INFO(d.info->why);
    CHECK(d.rc == 1);
  }
}

TEST_CASE(
    "decider: under kvm-clock only the hypervisor's own frequency stands before calibration") {
  tickclock_evidence ev = kvm_clock_guest();
  ev.cal_deferrable = 1;
  SUBCASE("the hypervisor leaf: at once, its agreement left to the first refinement") {
    Decision d = decide(ev);
    REQUIRE(d.rc == 0);
    CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
    CHECK(d.info->freq_pending_check == 1);
    CHECK(std::string(d.info->freq_detail) == "hypervisor_40000010");
  }
  SUBCASE("a perf page outranking it: calibrate first") {
    ev.perf.attempted = 1;
    ev.perf.ok = 1;
    ev.perf.cap_user_time = 1;
    ev.perf.time_shift = 31;
    ev.perf.time_mult = 1022611260;  // 1e9 * 2^31 / 2.1e9, rounded
    CHECK(decide(ev).rc == 1);
  }
}

TEST_CASE("decider: this host's situation, automatic and forced") {
  // invariant TSC, no frequency leaves, kvm-clock, tsc not offered
  Leaves l;
  l.set(0, 0xd, w("Auth"), w("cAMD"), w("enti"));
  l.set(1, 0x00b00f21, 0, 0xfed83203, 0x178bfbff);
  l.set(0x80000000u, 0x80000021u, 0, 0, 0);
  l.set(0x80000007u, 0, 0, 0, 0x100);
  l.set(0x40000000u, 0x40000000u, w("bhyv"), w("e bh"), w("yve "));
  tickclock_x86_facts x = decode(l);
  CHECK(std::string(x.hv_signature) == "bhyve bhyve ");
  CHECK(x.hv_kind == TICKCLOCK_HV_OTHER);
  tickclock_evidence ev = evidence(x, "kvm-clock", "kvm-clock");
  Decision a = decide(ev);
  CHECK(a.rc == 0);
  CHECK(a.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(a.info->why, "marked the TSC unstable"));
  // every frequency source is accounted for, with its reason
  REQUIRE(a.freq("cpuid_15h") != nullptr);
  CHECK(contains(a.freq("cpuid_15h")->reason, "Intel's (vendor 'AuthenticAMD')"));
  REQUIRE(a.freq("cpuid_16h") != nullptr);
  REQUIRE(a.freq("hypervisor") != nullptr);
  CHECK(contains(a.freq("hypervisor")->reason, "'bhyve bhyve ' (max leaf 0x40000000)"));
  REQUIRE(a.freq("calibration") != nullptr);
  CHECK(contains(a.freq("calibration")->reason, "not calibrated"));
  REQUIRE(a.freq("perf_page") != nullptr);
  CHECK(contains(a.freq("perf_page")->reason, "clocksource 'kvm-clock'"));
  // forced: executable, so honoured, with the calibrated frequency
  tkc_strlcpy(ev.env_value, "tsc", sizeof ev.env_value);
  ev.have_env = 1;
  Decision b = decide(ev);
  CHECK(b.rc == 1);
  calibrated(&ev, UINT64_C(2096024000), 2);
  Decision c = decide(ev);
  CHECK(c.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(c.info->forced == 2);
  CHECK(std::string(c.info->freq_detail) == "calibration");
  CHECK(c.info->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(contains(c.tsc_reason(), "forced by TICKCLOCK_SOURCE although"));
}

TEST_CASE("decider: refusals") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);
  tickclock_x86_facts x = decode(l);
  SUBCASE("clocksource hpet: the kernel rejected the TSC") {
    Decision d = decide(evidence(x, "hpet", "tsc hpet"));
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "rejected"));
  }
  SUBCASE("trapped RDTSC costs more than clock_gettime") {
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    ev.counter_read_ns = 900;
    ev.os_read_ns = 30;
    Decision d = decide(ev);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "trapped"));
  }
  SUBCASE("no invariant TSC") {
    tickclock_x86_facts y = x;
    y.invariant_tsc = 0;
    Decision d = decide(evidence(y, "tsc", "tsc"));
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "invariant TSC"));
  }
  SUBCASE("prctl PR_TSC_SIGSEGV: even a forced TSC is refused") {
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    ev.tsc_prctl = TICKCLOCK_PRCTL_SIGSEGV;
    ev.cfg_source = TICKCLOCK_SOURCE_TSC;
    Decision d = decide(ev);
    CHECK(d.rc == 0);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(d.info->request_refused == 1);
  }
  SUBCASE("calibration failed") {
    tickclock_evidence ev = evidence(x, "tsc", "tsc");
    ev.cal.ok = 0;
    ev.cal.ns = 1;
    Decision d = decide(ev);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "calibration"));
  }
}

TEST_CASE(
    "decider: Xen emulated TSC (vtsc) refused; a Xen stable-TSC promise stands in for invariant") {
  Leaves l = intel(0xd, 0x3f, true);
  l.set(0x80000007u, 0, 0, 0, 0);  // invariant TSC hidden by Xen
  l.set(0x40000000u, 0x40000005u, w("XenV"), w("MMXe"), w("nVMM"));
  l.set(0x40000003u, 0x6, 2, 2400010, 1);  // reliable host TSC, never emulate
  tickclock_evidence ev = evidence(decode(l), "xen", "xen tsc hpet");
  calibrated(&ev, UINT64_C(2400012000), 1);
  Decision d = decide(ev);
  CHECK(d.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::string(d.info->freq_detail) == "xen_leaf3");
  l.set(0x40000003u, 0x7, 1, 2400010, 1);  // vtsc: always emulate
  tickclock_evidence ev2 = evidence(decode(l), "xen", "xen tsc hpet");
  calibrated(&ev2, UINT64_C(2400012000), 1);
  Decision e = decide(ev2);
  CHECK(e.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(e.tsc_reason(), "emulates RDTSC"));
}

// ---- decider rules seen from both sides ---------------------------------------

TEST_CASE(
    "decider: Hyper-V's 0x40000003 EAX[15] grants access, it does not stand in for the invariant "
    "bit") {
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x80000007u, 0, 0, 0, 0);  // invariant TSC hidden
  l.set(0x40000000u, 0x40000005u, w("Micr"), w("osof"), w("t Hv"));
  l.set(0x40000003u, 1u << 15, 0, 0, 0);
  tickclock_x86_facts x = decode(l);
  CHECK(x.hyperv_tsc_invariant == 1);
  CHECK(x.hyperv_freq_msrs == 0);
  tickclock_evidence ev = evidence(x, "tsc", "tsc hyperv_clocksource_tsc_page");
  calibrated(&ev, UINT64_C(2400000000), 1, 1.0);
  Decision d = decide(ev);
  CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(d.tsc_reason(), "0x40000003 EAX[15]"));
  CHECK(contains(d.tsc_reason(), "no promise"));
  // the invariant bit as the guest sees it is what counts
  l.set(0x80000007u, 0, 0, 0, 1u << 8);
  tickclock_evidence ev1 = evidence(decode(l), "tsc", "tsc hyperv_clocksource_tsc_page");
  calibrated(&ev1, UINT64_C(2400000000), 1, 1.0);
  CHECK(decide(ev1).info->source == TICKCLOCK_SOURCE_TSC);
  l.set(0x80000007u, 0, 0, 0, 0);
  // bit 14 set instead: refused for the invariant bit just the same
  l.set(0x40000003u, 1u << 14, 0, 0, 0);
  tickclock_x86_facts y = decode(l);
  CHECK(y.hyperv_tsc_invariant == 0);
  tickclock_evidence ev2 = evidence(y, "tsc", "tsc hyperv_clocksource_tsc_page");
  calibrated(&ev2, UINT64_C(2400000000), 1, 1.0);
  Decision e = decide(ev2);
  CHECK(e.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(e.tsc_reason(), "invariant TSC"));
  // frequency MSRs: EAX[11] and EDX[8] both needed
  l.set(0x40000003u, 1u << 11, 0, 0, 1u << 8);
  CHECK(decode(l).hyperv_freq_msrs == 1);
  l.set(0x40000003u, 1u << 11, 0, 0, 1u << 7);
  CHECK(decode(l).hyperv_freq_msrs == 0);
}

TEST_CASE("decider: Xen's reliable-TSC flag (EAX[1]) is the promise, vtsc (EAX[0]) the veto") {
  struct Case {
    uint32_t flags;
    int source;
  } cases[] = {{0x2, TICKCLOCK_SOURCE_TSC},
               {0x0, TICKCLOCK_SOURCE_SYSTEM},
               {0x3, TICKCLOCK_SOURCE_SYSTEM},
               {0x1, TICKCLOCK_SOURCE_SYSTEM},
               {0x4, TICKCLOCK_SOURCE_SYSTEM}};
  for (const Case &c : cases) {
    CAPTURE(c.flags);
    Leaves l = intel(0xd, 0x3f, true);
    l.set(0x80000007u, 0, 0, 0, 0);
    l.set(0x40000000u, 0x40000005u, w("XenV"), w("MMXe"), w("nVMM"));
    l.set(0x40000003u, c.flags, 2, 2400000, 1);
    tickclock_evidence ev = evidence(decode(l), "tsc", "tsc xen");
    calibrated(&ev, UINT64_C(2400000000), 1, 1.0);
    Decision d = decide(ev);
    CHECK(d.info->source == c.source);
    if (c.flags & 1) CHECK(contains(d.tsc_reason(), "emulates RDTSC"));
  }
}

TEST_CASE("decider: in a VM the hypervisor's leaf outranks the leaf 0x15 it passes through") {
  Leaves l = intel(0x15, 0x97, true);
  l.set(0x15, 2, 200, 24000000, 0);  // 2.4 GHz
  l.set(0x40000000u, 0x40000010u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  l.set(0x40000010u, 2400000, 1000000, 0, 0);  // 2.4 GHz too
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc kvm-clock");
  calibrated(&ev, UINT64_C(2400000000), 1, 1.0);
  Decision d = decide(ev);
  CHECK(std::string(d.info->freq_detail) == "hypervisor_40000010");
  CHECK(d.freq("cpuid_15h_crystal")->usable);
  CHECK(contains(d.freq("cpuid_15h_crystal")->reason, "hypervisor_40000010 ranks higher"));
  // on bare metal the crystal wins over calibration
  tickclock_evidence bm = evidence(crystal_2400(), "tsc", "tsc");
  calibrated(&bm, UINT64_C(2400000000), 1, 1.0);
  CHECK(std::string(decide(bm).info->freq_detail) == "cpuid_15h_crystal");
}

TEST_CASE(
    "decider: the perf page's frequency is 1e9 * 2^shift / mult; shifts past 32 are no source") {
  tickclock_evidence ev = evidence(crystal_2400(), "tsc", "tsc");
  calibrated(&ev, UINT64_C(2400000000), 1, 1.0);
  ev.perf.attempted = ev.perf.ok = ev.perf.cap_user_time = 1;
  ev.perf.time_shift = 32;
  ev.perf.time_mult = 1789569707;  // 1e9 * 2^32 / 2.4e9 = 1789569706.67, rounded up
  Decision d = decide(ev);
  const tickclock_freq_candidate *p = d.freq("perf_page");
  REQUIRE(p != nullptr);
  CHECK(p->available);
  CHECK(p->hz_num == UINT64_C(4294967296000000000));
  CHECK(p->hz_den == UINT64_C(1789569707));
  CHECK(p->hz == doctest::Approx(2399999999.55).epsilon(1e-11));
  CHECK(std::string(d.info->freq_detail) == "perf_page");
  ev.perf.time_shift = 33;
  ev.perf.time_mult = 3579139413u;
  Decision e = decide(ev);
  CHECK_FALSE(e.freq("perf_page")->available);
  CHECK(contains(e.freq("perf_page")->reason, "unusable time_mult"));
}

// ---- the paravirtual clock page -------------------------------------------------

TEST_CASE(
    "decider: a stable Xen clock page does not outweigh vtsc; without vtsc it states the rate") {
  Leaves l = intel(0xd, 0x3f, true);
  l.set(0x40000000u, 0x40000005u, w("XenV"), w("MMXe"), w("nVMM"));
  l.set(0x40000003u, 0x7, 1, 2400010, 1);  // vtsc: every RDTSC traps to Xen
  tickclock_evidence ev = evidence(decode(l), "xen", "xen hpet");
  ev.pv.kind = TKC_PV_KVM;  // Xen's vcpu_time_info has pvclock's layout
  ev.pv.version = 4;
  ev.pv.flags = TKC_PVCLOCK_STABLE;
  ev.pv.mul = 3579139413u;  // 2.4 GHz with shift -1
  ev.pv.shift = -1;
  calibrated(&ev, UINT64_C(2400000000), 1);
  Decision d = decide(ev);
  CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(d.tsc_reason(), "emulates RDTSC"));
  l.set(0x40000003u, 0x6, 2, 2400010, 1);  // reliable host TSC, never emulate
  tickclock_evidence ev2 = evidence(decode(l), "xen", "xen hpet");
  ev2.pv = ev.pv;
  calibrated(&ev2, UINT64_C(2400000000), 1);
  Decision e = decide(ev2);
  CHECK(e.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::string(e.info->freq_detail) == "pvclock_page");
  CHECK(e.info->hz == doctest::Approx(2.4e9).epsilon(1e-9));
}

TEST_CASE("decider: Hyper-V's TSC page: sequence 0 is invalid, a valid one states the rate") {
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x40000000u, 0x40000005u, w("Micr"), w("osof"), w("t Hv"));
  tickclock_evidence ev = evidence(decode(l), "hyperv_clocksource_tsc_page",
                                   "hyperv_clocksource_tsc_page hyperv_clocksource_msr");
  ev.pv.kind = TKC_PV_HYPERV;
  ev.pv.sequence = 0;
  ev.pv.scale = UINT64_C(76861433640456465);  // 2^64 * 1e7 / 2.4e9 (100 ns units per tick)
  calibrated(&ev, UINT64_C(2400000000), 1);
  Decision d = decide(ev);
  CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(d.tsc_reason(), "sequence 0"));
  ev.pv.sequence = 9;
  tkc_list_claims(&ev);
  Decision e = decide(ev);
  CHECK(e.info->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::string(e.info->freq_detail) == "pvclock_page");
  CHECK(e.info->hz == doctest::Approx(2.4e9).epsilon(1e-7));
}
