// The trust rules of the decider, each on a recorded machine
// (tests/fixtures/cpuid/trust__*.cpuid: a real dump, its header saying what
// was changed, if anything) and with the one fact that decides flipped, so
// each test shows that rule, and not another, makes the decision.
//   - KVM guests whose kernel did not pick the TSC need
//     KVM_FEATURE_CLOCKSOURCE_STABLE_BIT (KVM base+1 EAX[24]);
//   - Hyper-V's 0x40000003 EAX[15] is no promise of an invariant TSC;
//   - without a kernel sync verdict: packages, TSC_ADJUST, the warp check;
//   - the chosen TSC's reason says what read cost and calibration cannot
//     see when the vDSO reads the TSC itself.
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

using namespace tctest;

namespace {

struct Replay {
  Parsed p;
  tickclock_evidence ev;
};

Replay load(const std::string &name) {
  Replay r;
  std::string path = runfiles_root() + "/tests/fixtures/cpuid/" + name;
  std::string text;
  REQUIRE_MESSAGE(read_file(path, &text), "cannot read " << path);
  r.p = parse_text(text, path);
  REQUIRE_MESSAGE(r.p.bad_line == 0, r.p.err);
  tickclock_fixture_evidence(r.p.fx.get(), &r.ev);
  return r;
}

struct Decision {
  std::unique_ptr<tickclock_info> info{new tickclock_info};
  std::string tsc_reason() const {
    for (unsigned i = 0; i < info->n_candidates; i++)
      if (info->candidates[i].source == TICKCLOCK_SOURCE_TSC) return info->candidates[i].reason;
    return "";
  }
  int source() const { return info->source; }
};

Decision decide(const tickclock_evidence &edited) {
  Decision d;
  tickclock_evidence ev = edited;
  list_claims(&ev);
  REQUIRE(tickclock_decide(&ev, d.info.get()) == 0);
  std::string m = malformed(*d.info);
  CHECK_MESSAGE(m == "", m);
  return d;
}

bool contains(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("trust fixtures: the decision and the reason that makes it") {
  std::vector<std::string> all = list_cpuid(runfiles_root() + "/tests/fixtures/cpuid");
  int n = 0;
  for (const std::string &path : all) {
    std::string base = path.substr(path.rfind('/') + 1);
    if (base.compare(0, 7, "trust__") != 0) continue;
    CAPTURE(base);
    n++;
    Replay r = load(base);
    Decision d = decide(r.ev);
    std::string want = meta(r.p.fx.get(), "expect.source");
    CHECK(std::string(d.info->source_name) == want);
    std::string reason = meta(r.p.fx.get(), "expect.reason");
    REQUIRE_MESSAGE(!reason.empty(), "a trust fixture names its reason (# expect.reason:)");
    CHECK_MESSAGE(contains(d.tsc_reason(), reason.c_str()),
                  "TSC reason '" << d.tsc_reason() << "' lacks '" << reason << "'");
    if (want == "system") CHECK(contains(d.info->why, reason.c_str()));
  }
  CHECK(n >= 8);
}

TEST_CASE("KVM: CLOCKSOURCE_STABLE_BIT decides where the kernel did not pick the TSC") {
  Replay r = load("trust__kvm-no-stable-bit-no-verdict.cpuid");
  REQUIRE(r.ev.x86.kvm_features_valid);
  REQUIRE(((r.ev.x86.kvm_features >> 24) & 1u) == 0);
  SUBCASE("no kernel verdict: refused, with the leaf named") {
    Decision d = decide(r.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "0x40000001 EAX[24]"));
  }
  SUBCASE("the same machine with the bit set: the TSC") {
    r.ev.x86.kvm_features |= 1u << 24;
    CHECK(decide(r.ev).source() == TICKCLOCK_SOURCE_TSC);
  }
  SUBCASE("KVM's feature leaf absent: refused, stability unknown") {
    r.ev.x86.kvm_features_valid = 0;
    r.ev.x86.kvm_features = 0;
    Decision d = decide(r.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "is absent"));
  }
  SUBCASE("Linux whose kernel picked tsc: its verdict stands, the bit is not needed") {
    r.ev.os_linux = 1;
    r.ev.clocksource_known = 1;
    tkc_strlcpy(r.ev.clocksource, "tsc", sizeof r.ev.clocksource);
    CHECK(decide(r.ev).source() == TICKCLOCK_SOURCE_TSC);
  }
  SUBCASE("Linux on kvm-clock, tsc offered, KVM timing leaf agrees: the bit still decides") {
    r.ev.os_linux = 1;
    r.ev.clocksource_known = 1;
    tkc_strlcpy(r.ev.clocksource, "kvm-clock", sizeof r.ev.clocksource);
    r.ev.available_known = 1;
    tkc_strlcpy(r.ev.available_clocksource, "kvm-clock tsc acpi_pm",
                sizeof r.ev.available_clocksource);
    r.ev.x86.timing_leaf_valid = 1;
    r.ev.x86.timing_tsc_khz = 2500000;  // the fixture's calibration is 2.5 GHz
    Decision off = decide(r.ev);
    CHECK(off.source() == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(off.tsc_reason(), "CLOCKSOURCE_STABLE_BIT"));
    r.ev.x86.kvm_features |= 1u << 24;
    Decision on = decide(r.ev);
    CHECK(on.source() == TICKCLOCK_SOURCE_TSC);
    CHECK(std::string(on.info->freq_detail) == "hypervisor_40000010");
  }
}

TEST_CASE("Hyper-V: 0x40000003 EAX[15] is access to a control, not a promise") {
  Replay r = load("trust__hyperv-bit15-invariant-clear.cpuid");
  REQUIRE(r.ev.x86.hyperv_valid);
  REQUIRE(r.ev.x86.hyperv_tsc_invariant);
  REQUIRE_FALSE(r.ev.x86.invariant_tsc);
  Decision d = decide(r.ev);
  CHECK(d.source() == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(d.tsc_reason(), "0x40000003 EAX[15]"));
  CHECK(contains(d.tsc_reason(), "CPUID.80000007H:EDX[8] is clear"));
  SUBCASE("the guest kernel enabled it (EDX[8] now set as the guest sees it): the TSC") {
    r.ev.x86.invariant_tsc = 1;
    CHECK(decide(r.ev).source() == TICKCLOCK_SOURCE_TSC);
  }
  SUBCASE("without the grant the reason is the plain one") {
    r.ev.x86.hyperv_tsc_invariant = 0;
    Decision e = decide(r.ev);
    CHECK(e.source() == TICKCLOCK_SOURCE_SYSTEM);
    CHECK_FALSE(contains(e.tsc_reason(), "0x40000003"));
  }
}

TEST_CASE("no kernel sync verdict: packages, TSC_ADJUST and the warp check") {
  Replay two = load("trust__no-verdict-2pkg-no-warp-check.cpuid");
  REQUIRE(two.ev.os_linux == 0);
  REQUIRE(two.ev.cpu_packages == 2);
  REQUIRE(two.ev.x86.invariant_tsc);
  REQUIRE(two.ev.x86.tsc_adjust);
  CHECK(decide(two.ev).source() == TICKCLOCK_SOURCE_SYSTEM);
  SUBCASE("one package: the invariant bit stands") {
    two.ev.cpu_packages = 1;
    Decision d = decide(two.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_TSC);
    CHECK(contains(d.tsc_reason(), "one package"));
  }
  SUBCASE("packages unknown: kept, and the reason says so") {
    two.ev.cpu_packages = 0;
    Decision d = decide(two.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_TSC);
    CHECK(contains(d.tsc_reason(), "packages unknown"));
  }
  SUBCASE("a passed warp check with TSC_ADJUST: the TSC") {
    two.ev.warp_checked = 1;
    two.ev.warp_ok = 1;
    CHECK(decide(two.ev).source() == TICKCLOCK_SOURCE_TSC);
    two.ev.x86.tsc_adjust = 0;  // without it the offsets could not be undone
    Decision d = decide(two.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "no TSC_ADJUST"));
  }
  SUBCASE("Linux: the kernel's verdict covers sync, packages do not matter") {
    two.ev.os_linux = 1;
    two.ev.clocksource_known = 1;
    tkc_strlcpy(two.ev.clocksource, "tsc", sizeof two.ev.clocksource);
    CHECK(decide(two.ev).source() == TICKCLOCK_SOURCE_TSC);
  }
  SUBCASE("a forced TSC is honoured, with the caveat") {
    two.ev.cfg_source = TICKCLOCK_SOURCE_TSC;
    Decision d = decide(two.ev);
    CHECK(d.source() == TICKCLOCK_SOURCE_TSC);
    CHECK(contains(d.tsc_reason(), "forced by tickclock_config although"));
    CHECK(contains(d.tsc_reason(), "2 packages"));
  }
  Replay fail = load("trust__no-verdict-1pkg-warp-fail.cpuid");
  Decision f = decide(fail.ev);
  CHECK(f.source() == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(contains(f.tsc_reason(), "850.0 ns"));
  fail.ev.warp_ok = 1;
  CHECK(decide(fail.ev).source() == TICKCLOCK_SOURCE_TSC);
}

TEST_CASE("the vDSO reads the TSC too: the reasons say what that hides") {
  Replay r = load("trust__no-verdict-1pkg.cpuid");
  Decision plain = decide(r.ev);
  REQUIRE(plain.source() == TICKCLOCK_SOURCE_TSC);
  CHECK_FALSE(contains(plain.tsc_reason(), "vDSO"));  // no kernel clock known to read it
  auto calibration_reason = [](const Decision &d) {
    for (unsigned i = 0; i < d.info->n_freqs; i++)
      if (std::strcmp(d.info->freqs[i].name, "calibration") == 0)
        return std::string(d.info->freqs[i].reason);
    return std::string();
  };
  CHECK_FALSE(contains(calibration_reason(plain), "per-CPU offsets"));
  for (const char *cs : {"tsc", "kvm-clock"}) {
    CAPTURE(cs);
    r.ev.os_linux = 1;
    r.ev.clocksource_known = 1;
    tkc_strlcpy(r.ev.clocksource, cs, sizeof r.ev.clocksource);
    r.ev.available_known = 1;
    tkc_strlcpy(r.ev.available_clocksource, "tsc kvm-clock hpet",
                sizeof r.ev.available_clocksource);
    r.ev.counter_read_ns = 19.5;
    r.ev.os_read_ns = 33.0;
    bool kvm = std::string(cs) == "kvm-clock";
    if (kvm) {  // a KVM range with the stable bit and a timing leaf
      r.ev.x86.hypervisor = 1;
      r.ev.x86.hv_valid = 1;
      r.ev.x86.kvm_base = 0x40000000u;
      r.ev.x86.kvm_features_valid = 1;
      r.ev.x86.kvm_features = 1u << 24;
      r.ev.x86.timing_leaf_valid = 1;
      r.ev.x86.timing_tsc_khz = 2712000;
    }
    Decision d = decide(r.ev);
    REQUIRE(d.source() == TICKCLOCK_SOURCE_TSC);
    std::string why = d.tsc_reason();
    // the read-cost check: nearly vacuous under every clock the vDSO serves with RDTSC
    CHECK(contains(why, "19.5 ns per read (the vDSO reads the TSC too: cannot show a trap)"));
    CHECK(contains(why, kvm ? "MHz from hypervisor_40000010" : "MHz from cpuid_15h_known_crystal"));
    CHECK(why.size() < TICKCLOCK_REASON_LEN - 1);  // whole, not cut off
    // calibration: blind to per-CPU offsets when MONOTONIC_RAW is the TSC
    // itself (kvm-clock corrects per vCPU, so only clocksource tsc)
    std::string cal = calibration_reason(d);
    CHECK(
        contains(cal, "that clock is this TSC: blind to per-CPU offsets (validate: warp check)") ==
        !kvm);
    CHECK(cal.size() < TICKCLOCK_REASON_LEN - 1);
  }
}
