// Every recorded host as a personality the host-facing suites run under.
// Each fixture in tests/fixtures/hosts (written by `tickclock-probe
// validate --fixture-out` on a real machine, or by the guest lab inside
// an emulated one) drives the fake platform: its CPUID leaves, the
// kernel's clocksource and the clocks it offers, the counter's rate
// (calibration_hz), the two read costs, and whether PR_SET_TSC traps
// there. Under each, the library runs from its first use through the
// events of a process's life -- the decision, RDTSC disabled before first
// use and after it, CLOCK_MONOTONIC_RAW denied, the kernel leaving the TSC,
// re-initialisations and switches -- on one simulated time line, so a
// suite that passes on the machine at hand is known to hold on every kind
// of machine met so far. A new fixture is a new personality: nothing here
// names one. (The guest lab runs the same suites on real emulated kernels.)
#include <stdio.h>
#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/fixture_util.h"

namespace {

struct Host {
  std::string name;
  tctest::Parsed p;
  std::string meta(const char *k) const { return tctest::meta(p.fx.get(), k); }
  const tickclock_fixture *fx() const { return p.fx.get(); }
};

// Every recorded host, in name order (tests/support/fixture_util.h reads
// and parses them).
const std::vector<Host> &hosts() {
  static std::vector<Host> all = [] {
    std::vector<Host> v;
    for (const std::string &path :
         tctest::list_cpuid(tctest::runfiles_root() + "/tests/fixtures/hosts")) {
      Host h;
      h.name = path.substr(path.rfind('/') + 1);
      std::string text;
      REQUIRE(tctest::read_file(path, &text));
      h.p = tctest::parse_text(text, h.name);
      REQUIRE_MESSAGE(h.p.bad_line == 0, h.p.err);
      v.push_back(std::move(h));
    }
    return v;
  }();
  return all;
}

// The fake platform in a host's personality. The fixture answers CPUID;
// everything else is the fake world, set from the fixture's metadata.
const tickclock_fixture *g_fx = nullptr;
int fixture_cpuid(void *, uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *r) {
  return tickclock_fixture_cpuid((void *)g_fx, leaf, sub, r);
}

struct Personality {
  const Host &h;
  FakeWorld w;
  tickclock_platform p;
  bool traps;  // PR_SET_TSC observed to make RDTSC trap there
  explicit Personality(const Host &host) : h(host) {
    g_fx = h.fx();
    w.clocksource = h.meta("clocksource");
    w.available = h.meta("available_clocksource");
    if (w.available.empty()) w.available = w.clocksource;
    // the counter at the rate calibration measured there (kHz; 2.5 GHz
    // where the fixture records none), each read at its recorded cost
    unsigned long long num = 0, den = 1;
    std::string cal = h.meta("calibration_hz");
    if (sscanf(cal.c_str(), "%llu/%llu", &num, &den) >= 1 && den != 0 && num / den > 1000000) {
      w.num = (uint64_t)llround((double)num / (double)den / 1e3);
      w.den = 1000000;
    }
    double tsc_ns = atof(h.meta("read_ns.tsc").c_str()),
           sys_ns = atof(h.meta("read_ns.system").c_str());
    if (tsc_ns >= 1) w.read_cost_ns = (uint64_t)llround(tsc_ns);
    if (sys_ns >= 1) w.os_cost_ns = (uint64_t)llround(sys_ns);
    traps = h.meta("observed.pr_set_tsc_traps") == "yes";
    // the paravirtual clock page as recorded there (absent: not mapped)
    if (!h.meta("pvclock.mul").empty()) {
      w.pv_mapped = 1;
      w.pv.kind = TKC_PV_KVM;
      w.pv.mul = (uint32_t)strtoul(h.meta("pvclock.mul").c_str(), nullptr, 0);
      w.pv.shift = (int8_t)strtol(h.meta("pvclock.shift").c_str(), nullptr, 0);
      w.pv.flags = (uint8_t)strtoul(h.meta("pvclock.flags").c_str(), nullptr, 0);
      w.pv.version = (uint32_t)strtoul(h.meta("pvclock.version").c_str(), nullptr, 0);
    }
    p = fake::full(&w);
    p.cpuid = fixture_cpuid;
  }
  const tickclock_info *init(const tickclock_config *cfg = nullptr) {
    tkc_set_platform(&p);
    tickclock_revalidate_every(0);
    int rc = tickclock_init(cfg);
    INFO("tickclock_init: " << rc << ", " << tickclock_info_get()->why);
    REQUIRE((rc == TICKCLOCK_OK || (cfg != nullptr && rc == TICKCLOCK_EUNAVAILABLE)));
    return tickclock_info_get();
  }
  void run_ms(uint64_t ms) {  // the process works on: time passes, what is due runs
    for (uint64_t k = 0; k < ms; k++) {
      w.now_ns += 1000000;
      (void)tickclock_to_ns(tickclock_now());
    }
  }
  ~Personality() {
    tkc_set_platform(NULL);
    g_fx = nullptr;
  }
};

const tickclock_candidate *cand(const tickclock_info *i, int src) {
  for (unsigned k = 0; k < i->n_candidates; k++)
    if (i->candidates[k].source == src) return &i->candidates[k];
  return nullptr;
}

}  // namespace

TEST_SUITE("x86") {
  TEST_CASE("every recorded host is a personality (at least the four real kinds)") {
    int real = 0;
    for (const Host &h : hosts()) {
      MESSAGE(h.name << ": expect " << h.meta("expect.source") << " (" << h.meta("expect.freq")
                     << "), clocksource '" << h.meta("clocksource") << "', PR_SET_TSC traps "
                     << h.meta("observed.pr_set_tsc_traps"));
      CHECK_MESSAGE(!h.meta("expect.source").empty(), h.name << ": no # expect.source");
      if (h.meta("emulated").empty()) real++;
    }
    CHECK(real >= 4);
  }

  TEST_CASE("the decision at first use is the one the host recorded") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      const tickclock_info *i = ps.init();
      ps.run_ms(20);  // a published rate's cross-check, the first refinement
      i = tickclock_info_get();
      INFO(i->why);
      CHECK(std::string(i->source_name) == h.meta("expect.source"));
      if (i->source == TICKCLOCK_SOURCE_TSC) {
        CHECK(std::string(i->freq_detail) == h.meta("expect.freq"));
        CHECK(fabs(i->hz / (double)ps.w.hz() - 1) < 1e-4);
      } else {
        CHECK(i->scaled == 0);  // ticks are nanoseconds
      }
      CHECK(i->why[0] != '\0');
    }
  }

  TEST_CASE("RDTSC disabled before first use: the OS clock through the system call, no trap") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      ps.w.prctl_mode = TICKCLOCK_PRCTL_SIGSEGV;
      const tickclock_info *i = ps.init();
      uint64_t last = 0;
      for (int k = 0; k < 100; k++) {
        uint64_t ns = tickclock_to_ns(tickclock_now());
        CHECK(ns >= last);
        last = ns;
      }
      CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
      CHECK(i->read_path == TICKCLOCK_READ_OS_SYSCALL);
      const tickclock_candidate *t = cand(i, TICKCLOCK_SOURCE_TSC);
      REQUIRE(t != nullptr);
      CHECK(strstr(t->reason, "PR_SET_TSC") != nullptr);
      CHECK(ps.w.counter_traps == 0);
      CHECK(ps.w.vdso_traps == 0);
    }
  }

  TEST_CASE("RDTSC disabled after first use: the next check leaves every trapping read") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      ps.init();
      ps.run_ms(5);
      uint64_t before = tickclock_to_ns(tickclock_now());
      ps.w.prctl_mode = TICKCLOCK_PRCTL_SIGSEGV;  // the program calls prctl(PR_SET_TSC)
      int rc = tickclock_revalidate();
      const tickclock_info *i = tickclock_info_get();
      INFO(i->why);
      CHECK(i->read_path == TICKCLOCK_READ_OS_SYSCALL);
      CHECK(rc == (h.meta("expect.source") == "tsc" ? TICKCLOCK_SWITCHED : 0));
      uint64_t traps = ps.w.counter_traps + ps.w.vdso_traps;
      uint64_t after = tickclock_to_ns(tickclock_now());
      CHECK(after >= before);
      CHECK(ps.w.counter_traps + ps.w.vdso_traps == traps);  // nothing more would trap
      if (ps.traps) MESSAGE(h.name << ": PR_SET_TSC traps there; every read now a system call");
    }
  }

  TEST_CASE(
      "CLOCK_MONOTONIC_RAW denied at first use: nothing calibrates on garbage, a stated rate "
      "waits") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      std::string unhindered;
      {
        Personality ps(h);
        unhindered = ps.init()->why;
      }
      Personality ps(h);
      ps.w.raw_fail = 1;
      const tickclock_info *i = ps.init();
      INFO(i->why);
      if (h.meta("expect.freq") == "pvclock_page") {
        // a rate the clock page states stands without a calibration: published
        // unanchored, its cross-check pending until the clock can be read
        CHECK(i->source == TICKCLOCK_SOURCE_TSC);
        CHECK(i->freq_pending_check == 1);
        continue;
      }
      CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
      if (h.meta("expect.source") == "tsc")
        CHECK(strstr(i->why, "CLOCK_MONOTONIC_RAW could not be read") != nullptr);
      else  // refused earlier, for the host's own reason
        CHECK(unhindered == i->why);
    }
  }

  TEST_CASE("the TSC asked for wherever RDTSC executes: calibrated to the personality's rate") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
      const tickclock_info *i = ps.init(&cfg);
      INFO(i->why);
      CHECK(i->source == TICKCLOCK_SOURCE_TSC);
      ps.run_ms(1100);  // the refinements, up to a 1 s baseline
      i = tickclock_info_get();
      CHECK(i->source == TICKCLOCK_SOURCE_TSC);
      CHECK(fabs(i->hz / (double)ps.w.hz() - 1) * 1e6 <= i->uncertainty_ppm + 0.01);
    }
  }

  TEST_CASE("re-initialisations and switches: one tick unit, to_ns(now()) never decreases") {
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      ps.init();
      uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0), last = ns0;
      const int seq[] = {TICKCLOCK_SOURCE_SYSTEM, TICKCLOCK_SOURCE_TSC,    TICKCLOCK_SOURCE_AUTO,
                         TICKCLOCK_SOURCE_TSC,    TICKCLOCK_SOURCE_SYSTEM, TICKCLOCK_SOURCE_AUTO};
      for (int src : seq) {
        CAPTURE(src);
        tickclock_config cfg = {src, 5, 0};
        REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
        ps.run_ms(3);
        uint64_t ns = tickclock_to_ns(tickclock_now());
        CHECK(ns >= last);
        last = ns;
        CHECK(tickclock_to_ns(t0) == ns0);  // an earlier tick keeps its meaning
      }
      CHECK(tickclock_info_get()->unit_source ==
            (h.meta("expect.source") == "tsc" ? TICKCLOCK_SOURCE_TSC : TICKCLOCK_SOURCE_SYSTEM));
    }
  }

  TEST_CASE("the kernel leaves the TSC (its watchdog): the next check follows it") {
    int left = 0, tsc_hosts = 0;
    for (const Host &h : hosts()) {
      CAPTURE(h.name);
      Personality ps(h);
      const tickclock_info *i = ps.init();
      if (h.meta("expect.source") == "tsc") tsc_hosts++;
      if (i->source != TICKCLOCK_SOURCE_TSC) continue;  // nothing to leave
      left++;
      ps.run_ms(5);
      uint64_t before = tickclock_to_ns(tickclock_now());
      ps.w.clocksource = "hpet";
      CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
      i = tickclock_info_get();
      INFO(i->why);
      CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
      CHECK(strstr(i->why, "clocksource changed") != nullptr);
      CHECK(tickclock_to_ns(tickclock_now()) >= before);
    }
    // every host that chooses the TSC was made to leave it, and at least one
    CHECK(left == tsc_hosts);
    CHECK(left >= 1);
  }
}
