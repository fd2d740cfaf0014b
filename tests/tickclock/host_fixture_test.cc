// Every host the project has run on (tests/fixtures/hosts/*.cpuid, written by
// `tickclock-probe validate --fixture-out`), replayed through the decider:
// the source and frequency method chosen there must be chosen again from the
// recorded evidence, and with RDTSC disabled (PR_SET_TSC) the OS clock. One
// test case per host; a fixture without its test case fails the last case.
// Emulated guests (qemu-*.cpuid, written by ci/guest inside QEMU system
// emulation and marked by a `# emulated:` line) are replayed by one case
// that reads each file's own expectations: they are regenerated with the
// guest table, not named here one by one.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

using namespace tctest;

namespace {

const char *const kHosts[] = {
    "kvm-amd-epyc-19-11-tsc.cpuid", "firecracker-bhyve-amd-1a-02-kvmclock.cpuid",
    "kvm-amd-1a-02-tsc.cpuid",      "firecracker-intel-06-cf-tsc.cpuid",
    "kvm-intel-06-a7-tsc.cpuid",    "kvm-intel-06-a7-kvmclock.cpuid",
    "kvm-amd-epyc-19-01-tsc.cpuid", "kvm-amd-epyc-19-01-kvmclock.cpuid",
    "kvm-intel-06-a7-08-tsc.cpuid", "kvm-intel-06-a7-08-kvmclock.cpuid",
};

std::string host_dir() { return runfiles_root() + "/tests/fixtures/hosts"; }

struct Expect {
  const char *source;      // expect.source
  const char *freq;        // expect.freq
  const char *verdict;     // validate.verdict
  const char *pr_set_tsc;  // observed.pr_set_tsc_traps
};

void replay(const char *name, const Expect &want) {
  std::string path = host_dir() + "/" + name;
  CAPTURE(path);
  std::string text;
  REQUIRE(read_file(path, &text));
  Parsed p = parse_text(text, path);
  REQUIRE_MESSAGE(p.bad_line == 0, p.err);
  const tickclock_fixture *fx = p.fx.get();
  // the metadata every host fixture carries
  for (const char *k : {"host", "kernel", "clocksource", "available_clocksource",
                        "validate.verdict", "observed.drift_ppm", "observed.warp_backward",
                        "observed.monotonic_backward", "observed.pr_set_tsc_traps",
                        "read_ns.system", "read_ns.tsc", "expect.source", "expect.freq"})
    REQUIRE_MESSAGE(tickclock_fixture_meta_get(fx, k) != nullptr, "missing # " << k);
  // what the file says is what this test expects (a changed file must
  // change the test too)
  CHECK(meta(fx, "expect.source") == want.source);
  CHECK(meta(fx, "expect.freq") == want.freq);
  CHECK(meta(fx, "validate.verdict") == want.verdict);  // "unknown (not recorded)" where so
  CHECK(meta(fx, "host").size() > 20);                  // says what the machine is
  CHECK(meta(fx, "observed.pr_set_tsc_traps") == want.pr_set_tsc);
  // a warp or a backward step can never go with a pass
  if (meta(fx, "validate.verdict") == "pass") {
    CHECK(meta(fx, "observed.warp_backward") == "0");
    CHECK(meta(fx, "observed.monotonic_backward") == "0");
  }

  tickclock_evidence ev;
  tickclock_fixture_evidence(fx, &ev);
  std::unique_ptr<tickclock_info> info(new tickclock_info);
  REQUIRE_MESSAGE(tickclock_decide(&ev, info.get()) == 0,
                  "the decision needs a calibration the fixture does not give");
  CHECK_MESSAGE(malformed(*info) == "", malformed(*info));
  CHECK(std::string(info->source_name) == want.source);
  CHECK(std::string(info->freq_detail) == want.freq);
  MESSAGE((std::string(name) + ": " + info->source_name + " (" + info->freq_detail +
           "): " + info->why));
  if (info->source == TICKCLOCK_SOURCE_TSC && info->freq_method == TICKCLOCK_FREQ_PVCLOCK) {
    // the clock page's rate: 1e9 * 2^(32 - shift) / mul, cross-checked with
    // the recorded calibration
    double mul = std::strtod(meta(fx, "pvclock.mul").c_str(), nullptr);
    int shift = (int)std::strtol(meta(fx, "pvclock.shift").c_str(), nullptr, 0);
    REQUIRE(mul > 0);
    CHECK(info->hz == doctest::Approx(1e9 * std::ldexp(1.0, 32 - shift) / mul).epsilon(1e-12));
    CHECK(meta(fx, "pvclock.flags") == "0x1");
  } else if (info->source == TICKCLOCK_SOURCE_TSC) {
    // the calibrated rational is the frequency used, exactly
    uint64_t n = 0, d = 0;
    std::string cal = meta(fx, "calibration_hz");
    unsigned long long cn = 0, cd = 1;  // "NUM/DEN" or "NUM"
    REQUIRE(std::sscanf(cal.c_str(), "%llu/%llu", &cn, &cd) >= 1);
    n = cn;
    d = cd;
    REQUIRE(d != 0);
    uint64_t g = std::gcd(n, d);
    CHECK(info->hz_num == n / g);
    CHECK(info->hz_den == d / g);
  } else {
    CHECK(info->hz_num == 1000000000u);
    CHECK(info->hz_den == 1u);
  }

  // where the page was read, the same host without it decides as before
  // the page was a source: never the page's rate, and the TSC's reason
  // says the page was not read
  if (!meta(fx, "pvclock.mul").empty()) {
    tickclock_evidence nopage = ev;
    memset(&nopage.pv, 0, sizeof nopage.pv);
    tkc_list_claims(&nopage);
    std::unique_ptr<tickclock_info> np(new tickclock_info);
    REQUIRE(tickclock_decide(&nopage, np.get()) == 0);
    CHECK(np->freq_method != TICKCLOCK_FREQ_PVCLOCK);
    CHECK(std::string(np->why).find("clock page of 'kvm-clock' was not read") != std::string::npos);
    MESSAGE((std::string(name) + " without its page: " + np->source_name + ": " + np->why));
  }

  // the same host with RDTSC disabled by the program: never the TSC, and
  // the reason says why
  ev.tsc_prctl = TICKCLOCK_PRCTL_SIGSEGV;
  std::unique_ptr<tickclock_info> off(new tickclock_info);
  REQUIRE(tickclock_decide(&ev, off.get()) == 0);
  CHECK(off->source == TICKCLOCK_SOURCE_SYSTEM);
  bool named = false;
  for (unsigned k = 0; k < off->n_candidates; k++)
    if (off->candidates[k].source == TICKCLOCK_SOURCE_TSC)
      named = std::string(off->candidates[k].reason).find("PR_SET_TSC") != std::string::npos;
  CHECK(named);
}

}  // namespace

TEST_CASE("host: AMD EPYC 0x19/0x11 under KVM, clocksource tsc: the TSC by calibration") {
  replay("kvm-amd-epyc-19-11-tsc.cpuid", {"tsc", "calibration", "pass", "yes"});
}

TEST_CASE(
    "host: AMD EPYC 0x19/0x1 under Firecracker/KVM, clocksource tsc: the TSC by calibration") {
  // no frequency leaf of any kind (AMD, no 0x40000010, perf page without cap_user_time)
  replay("kvm-amd-epyc-19-01-tsc.cpuid", {"tsc", "calibration", "pass", "yes"});
}

TEST_CASE(
    "host: AMD EPYC 0x19/0x1 under Firecracker/KVM switched to kvm-clock: the TSC at the page's "
    "rate") {
  // recorded by validate --fixture-out there; the page's fields are validate's own lines
  replay("kvm-amd-epyc-19-01-kvmclock.cpuid", {"tsc", "pvclock_page", "pass", "yes"});
}

TEST_CASE(
    "host: Intel 6/0xA7 stepping 8 under Firecracker/KVM, clocksource tsc: the TSC by "
    "calibration") {
  // a 2000 MHz TSC with no frequency leaf the library trusts (leaf 0x15 reads 0 there)
  replay("kvm-intel-06-a7-08-tsc.cpuid", {"tsc", "calibration", "pass", "yes"});
}

TEST_CASE(
    "host: Intel 6/0xA7 stepping 8 switched to kvm-clock: the TSC at the page's rate, mul 2^31 "
    "shift 0") {
  replay("kvm-intel-06-a7-08-kvmclock.cpuid", {"tsc", "pvclock_page", "pass", "yes"});
}

TEST_CASE(
    "host: AMD 0x1a/0x2 under Firecracker (bhyve signature), kvm-clock only: the TSC at the page's "
    "rate") {
  // the kernel marked the TSC unstable; its kvm-clock page is stable and states the rate
  replay("firecracker-bhyve-amd-1a-02-kvmclock.cpuid", {"tsc", "pvclock_page", "pass", "no"});
}

TEST_CASE(
    "host: Intel 6/0xA7 under Firecracker/KVM switched to kvm-clock: the TSC at the page's rate") {
  // recorded by validate --fixture-out there, the page's fields added
  replay("kvm-intel-06-a7-kvmclock.cpuid", {"tsc", "pvclock_page", "pass", "yes"});
}

TEST_CASE("host: AMD 0x1a/0x2 under KVM, clocksource tsc: the TSC by calibration") {
  replay("kvm-amd-1a-02-tsc.cpuid", {"tsc", "calibration", "pass", "yes"});
}

TEST_CASE("host: Intel 6/0xCF under Firecracker/KVM, clocksource tsc: the TSC by calibration") {
  // reconstructed (no dump was kept there): the choice from the recorded facts
  replay("firecracker-intel-06-cf-tsc.cpuid",
         {"tsc", "calibration", "unknown (not recorded)", "yes"});
}

TEST_CASE("host: Intel 6/0xA7 under Firecracker/KVM, clocksource tsc: the TSC by calibration") {
  // recorded by validate --fixture-out there
  replay("kvm-intel-06-a7-tsc.cpuid", {"tsc", "calibration", "pass", "yes"});
}

// The emulated guests' fixtures: what `tickclock-probe validate` recorded
// inside the guest must be what ci/guest's table expects there
// (guest.expect.source), and the decider must choose it again from the
// recorded evidence.
std::set<std::string> emulated_fixtures() {
  std::set<std::string> out;
  for (const std::string &f : list_cpuid(host_dir())) {
    std::string text;
    if (!read_file(f, &text)) continue;
    Parsed p = parse_text(text, f);
    if (p.bad_line == 0 && tickclock_fixture_meta_get(p.fx.get(), "emulated") != nullptr)
      out.insert(f.substr(f.rfind('/') + 1));
  }
  return out;
}

TEST_CASE(
    "emulated guests (ci/guest, QEMU system emulation): each replays to its recorded choice") {
  std::set<std::string> guests = emulated_fixtures();
  for (const std::string &name : guests) {
    CAPTURE(name);
    CHECK(name.rfind("qemu-", 0) == 0);
    std::string text;
    REQUIRE(read_file(host_dir() + "/" + name, &text));
    Parsed p = parse_text(text, name);
    REQUIRE(p.bad_line == 0);
    const tickclock_fixture *fx = p.fx.get();
    REQUIRE(tickclock_fixture_meta_get(fx, "guest.expect.source") != nullptr);
    CHECK(meta(fx, "expect.source") == meta(fx, "guest.expect.source"));
    CHECK(meta(fx, "validate.verdict") == "pass");
    // copies: the Expect fields point into them
    std::string src = meta(fx, "expect.source"), freq = meta(fx, "expect.freq");
    std::string verdict = meta(fx, "validate.verdict"),
                traps = meta(fx, "observed.pr_set_tsc_traps");
    replay(name.c_str(), {src.c_str(), freq.c_str(), verdict.c_str(), traps.c_str()});
  }
}

TEST_CASE("every host fixture has its test case") {
  std::vector<std::string> files = list_cpuid(host_dir());
  std::set<std::string> have, named(std::begin(kHosts), std::end(kHosts));
  std::set<std::string> guests = emulated_fixtures();
  named.insert(guests.begin(), guests.end());
  for (const std::string &f : files) have.insert(f.substr(f.rfind('/') + 1));
  CHECK(have == named);
  CHECK(have.size() >= 4);
}
