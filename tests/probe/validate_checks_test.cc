// tickclock-probe validate's clocksource check on set evidence: the
// kernel's verdict read as the decider reads it, a paravirtual page's
// trust honoured only where the page passes its checks and the choice
// was the library's own.
#include <cstring>
#include <string>

#include "doctest/doctest.h"
#include "src/probe/validate.h"

namespace {

// This host kind: kvm-clock only (tsc=unstable), the TSC chosen at the
// page's rate, the page's claim as the decider listed it.
struct Case {
  tickclock_info info{};
  tickclock_evidence ev{};
  Case() {
    info.source = TICKCLOCK_SOURCE_TSC;
    info.forced = TICKCLOCK_FORCED_NO;
    info.freq_method = TICKCLOCK_FREQ_PVCLOCK;
    ev.os_linux = 1;
    ev.clocksource_known = 1;
    ev.available_known = 1;
    std::strcpy(ev.clocksource, "kvm-clock");
    std::strcpy(ev.available_clocksource, "kvm-clock");
    ev.pv.kind = TKT_PV_KVM;
    ev.pv.version = 20;
    ev.pv.flags = TKT_PVCLOCK_STABLE;
    ev.pv.mul = 4098231684u;
    ev.pv.shift = -1;
    ev.n_claims = 1;
    ev.claims[0].method = TICKCLOCK_FREQ_PVCLOCK;
    ev.claims[0].ok = 1;
  }
  std::string verdict(std::string *detail = nullptr) {
    std::string d;
    std::string v = tickclock_probe::clocksource_verdict(info, ev, &d);
    if (detail) *detail = d;
    return v;
  }
};

}  // namespace

TEST_CASE("clocksource: kvm-clock only, the TSC trusted through a stable page: PASS, saying why") {
  Case c;
  std::string d;
  CHECK(c.verdict(&d) == "PASS");
  CHECK(d.find("does not offer the TSC, but its clock is the TSC scaled by a stable "
               "'kvm-clock' page") != std::string::npos);
}

TEST_CASE("clocksource: a page that fails its checks now does not pass, and the check says which") {
  Case c;
  c.ev.pv.flags = 0;  // a restore onto a host without a master clock
  c.ev.claims[0].ok = 0;
  std::strcpy(c.ev.claims[0].why, "kvm-clock page flags 0x0 lack the stable bit");
  std::string d;
  CHECK(c.verdict(&d) == "FAIL");
  CHECK(d.find("its clock page fails: kvm-clock page flags 0x0 lack the stable bit") !=
        std::string::npos);
}

TEST_CASE("clocksource: no page claim at all fails where the kernel does not offer the TSC") {
  Case c;
  c.ev.n_claims = 0;
  CHECK(c.verdict() == "FAIL");
}

TEST_CASE("clocksource: a forced TSC or a rate not the page's is not the page's trust") {
  Case forced;
  forced.info.forced = TICKCLOCK_FORCED_BY_ENV;
  CHECK(forced.verdict() == "FAIL");
  Case calibrated;
  calibrated.info.freq_method = TICKCLOCK_FREQ_CALIBRATED;
  CHECK(calibrated.verdict() == "FAIL");
}

TEST_CASE("clocksource: 'tsc' is a whole word of the kernel's list") {
  Case c;
  c.ev.n_claims = 0;
  c.info.forced = TICKCLOCK_FORCED_BY_ENV;
  std::strcpy(c.ev.clocksource, "hyperv_clocksource_tsc_page");
  std::strcpy(c.ev.available_clocksource,
              "hyperv_clocksource_tsc_page hyperv_clocksource_msr acpi_pm");
  CHECK(c.verdict() == "FAIL");
  std::strcpy(c.ev.available_clocksource, "tsc-early kvm-clock");
  CHECK(c.verdict() == "FAIL");
  std::strcpy(c.ev.available_clocksource, "kvm-clock tsc acpi_pm");
  CHECK(c.verdict() == "PASS");
  std::strcpy(c.ev.clocksource, "tsc");
  std::strcpy(c.ev.available_clocksource, "tsc");
  CHECK(c.verdict() == "PASS");
}

TEST_CASE("clocksource: a Hyper-V page the library took as trust passes, named as Hyper-V's") {
  Case c;
  std::strcpy(c.ev.clocksource, "hyperv_clocksource_tsc_page");
  std::strcpy(c.ev.available_clocksource, "hyperv_clocksource_tsc_page acpi_pm");
  c.ev.pv.kind = TKT_PV_HYPERV;
  std::string d;
  CHECK(c.verdict(&d) == "PASS");
  CHECK(d.find("valid Hyper-V TSC page") != std::string::npos);
}

TEST_CASE("clocksource: not the TSC, or not Linux: the check does not apply") {
  Case sys;
  sys.info.source = TICKCLOCK_SOURCE_SYSTEM;
  CHECK(sys.verdict() == "SKIP");
  Case other;
  other.ev.os_linux = 0;
  CHECK(other.verdict() == "SKIP");
}

TEST_CASE("clocksource: a page not read this time fails, naming why it was not read") {
  Case c;
  c.ev.pv.kind = 0;
  c.ev.pv.absent = TKT_PV_ABSENT_TORN;
  c.ev.claims[0].ok = 0;
  std::strcpy(c.ev.claims[0].why, "never read twice with the same even version");
  std::string d;
  CHECK(c.verdict(&d) == "FAIL");
  CHECK(d.find("its clock page fails: never read twice") != std::string::npos);
}

TEST_CASE("clocksource: an unreadable clocksource is an unknown verdict, said so") {
  Case c;
  c.ev.clocksource_known = 0;
  c.ev.available_known = 0;
  std::string d;
  CHECK(c.verdict(&d) == "FAIL");
  CHECK(d.find("could not be read") != std::string::npos);
}

TEST_CASE("clocksource: 'tsc' as the list's last word, after a tab, or before a line end") {
  for (const char *list : {"kvm-clock tsc", "kvm-clock\ttsc", "kvm-clock tsc\n", "tsc\t"}) {
    Case c;
    c.ev.n_claims = 0;
    c.info.forced = TICKCLOCK_FORCED_BY_ENV;
    std::strcpy(c.ev.available_clocksource, list);
    CAPTURE(list);
    CHECK(c.verdict() == "PASS");
  }
}
