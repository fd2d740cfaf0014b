// The paravirtual clock page (kvm-clock's pvclock_vcpu_time_info) as a
// frequency and trust source, on the deterministic fake platform (the core
// compiled in with -DTICKCLOCK_TEST_FAKE_COUNTER): a guest whose kernel
// runs kvm-clock and does not offer 'tsc' (a host that marks the TSC
// unstable on purpose) trusts the TSC at the page's rate when every check
// passes, refuses it saying which check failed otherwise, and follows the
// page when the host rewrites it (a restore, a migration, the stable bit
// cleared). x86 only: the page is an x86 guest's.
#include <string.h>

#include <cmath>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"

namespace {
// A kvm-clock guest like the PVM host: no 'tsc' offered, a KVM hypervisor
// without a timing leaf, the page mapped and describing the fake TSC.
struct Guest {
  FakeWorld w;
  tickclock_platform p;
  uint64_t first_use_ns = 0;
  Guest() {
    p = fake::full(&w);
    w.clocksource = "kvm-clock";
    w.available = "kvm-clock";
    w.pv_publish();
  }
  const tickclock_info *start() {
    tkc_set_platform(&p);
    uint64_t t0 = w.now_ns;
    (void)tickclock_now();
    first_use_ns = w.now_ns - t0;
    return tickclock_info_get();
  }
  ~Guest() { tkc_set_platform(NULL); }
};

const tickclock_freq_candidate *freq(const tickclock_info *i, const char *name) {
  for (unsigned k = 0; k < i->n_freqs; k++)
    if (strcmp(i->freqs[k].name, name) == 0) return &i->freqs[k];
  return nullptr;
}

const tickclock_candidate *tsc(const tickclock_info *i) {
  for (unsigned k = 0; k < i->n_candidates; k++)
    if (i->candidates[k].source == TICKCLOCK_SOURCE_TSC) return &i->candidates[k];
  return nullptr;
}

bool has(const char *s, const char *sub) { return strstr(s, sub) != nullptr; }

// to_ns(now()) every step_ns for span_ns: backward steps counted.
long backward_steps(FakeWorld &w, uint64_t span_ns, uint64_t step_ns) {
  long back = 0;
  uint64_t prev = tickclock_to_ns(tickclock_now());
  for (uint64_t done = 0; done < span_ns; done += step_ns) {
    w.now_ns += step_ns;
    uint64_t v = tickclock_to_ns(tickclock_now());
    if (v < prev) back++;
    prev = v;
  }
  return back;
}
}  // namespace

TEST_SUITE("x86") {
  TEST_CASE(
      "kvm-clock with a stable page: the TSC at the page's rate at once, then cross-checked") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    const tickclock_info *i = g.start();
    INFO(i->why);
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);
    CHECK(i->read_path == TICKCLOCK_READ_COUNTER);
    CHECK(i->freq_method == TICKCLOCK_FREQ_PVCLOCK);
    CHECK(std::string(i->freq_detail) == "pvclock_page");
    CHECK(i->freq_pending_check == 1);  // the page states the rate: no calibration wait
    CHECK(g.first_use_ns < 300000);
    CHECK(i->hz == doctest::Approx(2.5e9).epsilon(1e-9));
    CHECK(has(i->why, "paravirtual clock page stable"));
    CHECK(g.w.pv_reads >= 1);
    // the first refinement calibrates and agrees: kept, checked
    uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
    CHECK(backward_steps(g.w, 3000000, 10000) == 0);
    const tickclock_info *c = tickclock_info_get();
    INFO(c->why);
    CHECK(c->source == TICKCLOCK_SOURCE_TSC);
    CHECK(c->freq_pending_check == 0);
    CHECK(c->freq_method == TICKCLOCK_FREQ_PVCLOCK);
    const tickclock_freq_candidate *pv = freq(c, "pvclock_page");
    REQUIRE(pv != nullptr);
    CHECK(pv->checked == 1);
    CHECK(pv->usable == 1);
    CHECK(std::fabs(pv->ppm_vs_calibration) < pv->bound_ppm);
    CHECK(tickclock_to_ns(t0) == ns0);
  }

  TEST_CASE("clocksource tsc: the page is not looked for") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.clocksource = "tsc";
    g.w.available = "tsc kvm-clock";
    const tickclock_info *i = g.start();
    CHECK(g.w.pv_reads == 0);
    CHECK(i->freq_method != TICKCLOCK_FREQ_PVCLOCK);
    const tickclock_freq_candidate *pv = freq(i, "pvclock_page");
    REQUIRE(pv != nullptr);
    CHECK(pv->available == 0);
    CHECK(has(pv->reason, "not read: clocksource 'tsc'"));
  }

  // Each failed check: the OS clock, as without the page, and the TSC's
  // reason names the check.
  struct Broken {
    const char *what;
    void (*spoil)(FakeWorld &);
    const char *said;
  };
  const Broken kBroken[] = {
      {"odd version", [](FakeWorld &w) { w.pv.version |= 1; }, "is odd"},
      {"stable bit clear", [](FakeWorld &w) { w.pv.flags = 0; }, "lack the stable bit"},
      {"mul zero", [](FakeWorld &w) { w.pv.mul = 0; }, "unusable tsc_to_system_mul 0"},
      {"shift out of range", [](FakeWorld &w) { w.pv.shift = 40; }, "tsc_shift 40"},
      {"not mapped (EFAULT)", [](FakeWorld &w) { w.pv_mapped = 0; }, "not mapped"},
      {"torn on every try", [](FakeWorld &w) { w.pv_torn = 1000; }, "kept writing it"},
  };

  TEST_CASE("a page failing a check: the OS clock, and the reason says which check") {
    if (fake::x86_only("the kvm-clock page")) return;
    for (const Broken &b : kBroken) {
      CAPTURE(b.what);
      Guest g;
      b.spoil(g.w);
      const tickclock_info *i = g.start();
      INFO(i->why);
      CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
      const tickclock_candidate *t = tsc(i);
      REQUIRE(t != nullptr);
      CHECK(has(t->reason, b.said));
      CHECK(has(i->why, b.said));
    }
  }

  TEST_CASE("a page whose rate disagrees with calibration: refused by the cross-check, no step") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.pv_publish((uint64_t)(2.5e9 * (1 - 4000e-6)));  // 0.4 % slow
    const tickclock_info *i = g.start();
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);  // used at once, checked by the refinement
    CHECK(i->freq_pending_check == 1);
    CHECK(backward_steps(g.w, 3000000, 10000) == 0);
    const tickclock_info *c = tickclock_info_get();
    INFO(c->why);
    CHECK(c->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(has(c->why, "clock page's TSC rate disagrees with calibration"));
  }

  TEST_CASE("RDTSC disabled (PR_SET_TSC): the page changes nothing, never a trap") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.prctl_mode = TICKCLOCK_PRCTL_SIGSEGV;
    const tickclock_info *i = g.start();
    CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(g.w.counter_traps == 0);
    CHECK(g.w.vdso_traps == 0);
    CHECK(has(tsc(i)->reason, "PR_SET_TSC"));
  }

  TEST_CASE("CLOCK_MONOTONIC_RAW denied at first use: the page's rate waits for its cross-check") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.raw_fail = 1;
    const tickclock_info *i = g.start();
    INFO(i->why);
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);  // published, without an anchor
    CHECK(i->freq_pending_check == 1);
    g.w.raw_fail = 0;  // the clock is back: an anchor, then the cross-check
    CHECK(tickclock_revalidate() == 0);
    CHECK(backward_steps(g.w, 3000000, 10000) == 0);
    const tickclock_info *c = tickclock_info_get();
    INFO(c->why);
    CHECK(c->source == TICKCLOCK_SOURCE_TSC);
    CHECK(c->freq_pending_check == 0);
    CHECK(c->freq_method == TICKCLOCK_FREQ_PVCLOCK);
  }

  // The page's rate published without an anchor is checked by the
  // conversions' own periodic work, not only by an explicit
  // tickclock_revalidate(): a clock back a moment after first use anchors
  // it and the cross-check then replaces a rate 0.4 % off; a clock denied
  // for good leaves the counter, its rate never checked, for the OS clock.
  // Before, both kept the wrong rate for the whole minute (241 ms off).
  void unanchored_minute(bool raw_back) {
    Guest g;
    g.w.pv_publish((uint64_t)(2.5e9 * (1 - 4000e-6)));  // 0.4 % slow
    g.w.raw_fail = 1;
    const tickclock_info *i = g.start();
    INFO(i->why);
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);  // published, without an anchor
    REQUIRE(i->freq_pending_check == 1);
    g.w.raw_fail = raw_back ? 0 : 1;
    CHECK(backward_steps(g.w, UINT64_C(60000000000), 10000000) == 0);  // a minute of use
    const tickclock_info *c = tickclock_info_get();
    INFO(c->why);
    if (raw_back) {
      CHECK(c->freq_pending_check == 0);  // checked, and the wrong rate replaced
      CHECK(c->freq_method != TICKCLOCK_FREQ_PVCLOCK);
    } else {
      CHECK(c->source == TICKCLOCK_SOURCE_SYSTEM);
      CHECK(std::string(c->why).find("never checked") != std::string::npos);
    }
    // what a duration across the minute says holds either way
    uint64_t t0 = tickclock_now();
    uint64_t w0 = g.w.now_ns;
    CHECK(backward_steps(g.w, UINT64_C(2000000000), 10000000) == 0);
    tickclock_duration d;
    tickclock_duration_get(t0, tickclock_now(), &d);
    int64_t err = d.ns - (int64_t)(g.w.now_ns - w0);
    INFO("2 s after the minute: error " << err << " ns, bound " << d.bound_ns);
    CHECK((uint64_t)(err < 0 ? -err : err) <= d.bound_ns);
  }

  TEST_CASE("the page's rate, unanchored, is checked once CLOCK_MONOTONIC_RAW is back") {
    if (fake::x86_only("the kvm-clock page")) return;
    unanchored_minute(true);
  }

  TEST_CASE("CLOCK_MONOTONIC_RAW denied for good: a page's rate nothing can check is left") {
    if (fake::x86_only("the kvm-clock page")) return;
    unanchored_minute(false);
  }

  TEST_CASE("a page's rate no bracket can check (a suspend in each) is left, saying so") {
    // CLOCK_MONOTONIC_RAW readable, but every try at a sample spans a
    // suspend: the reason names that, not an unreadable clock.
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.pv_publish((uint64_t)(2.5e9 * (1 - 4000e-6)));  // 0.4 % slow
    g.w.raw_fail = 1;
    const tickclock_info *i = g.start();
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);  // published, without an anchor
    REQUIRE(i->freq_pending_check == 1);
    g.w.raw_fail = 0;
    g.w.suspend_every = 1;  // at every reading of the suspended time
    g.w.suspend_for_ns = 10000000;
    for (int k = 0; k < 60 && tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC; k++) {
      g.w.now_ns += 1000000000;
      (void)tickclock_to_ns(tickclock_now());
    }
    const tickclock_info *c = tickclock_info_get();
    INFO(c->why);
    CHECK(c->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(has(c->why, "never checked"));
    CHECK(has(c->why, "spanned a suspend"));
    CHECK(!has(c->why, "could not be read"));
  }

  // ---- the host rewrites the page after the choice ----------------------

  namespace {
  // A guest on the TSC at the page's rate, cross-checked.
  const tickclock_info *settled(Guest &g) {
    const tickclock_info *i = g.start();
    REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);
    (void)backward_steps(g.w, 3000000, 10000);
    REQUIRE(tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC);
    REQUIRE(tickclock_info_get()->freq_pending_check == 0);
    return tickclock_info_get();
  }
  }  // namespace

  TEST_CASE("version bumps with unchanged contents: nothing is published") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    const tickclock_info *s = settled(g);
    unsigned gen = s->generation;
    for (int k = 0; k < 5; k++) {
      g.w.pv.version += 2;
      g.w.now_ns += 1000000;
      CHECK(tickclock_revalidate() == 0);
    }
    CHECK(tickclock_info_get()->generation == gen);
    CHECK(tickclock_info_get()->read_path == TICKCLOCK_READ_COUNTER);
  }

  TEST_CASE("the host refreshes its master clock (same rate, continuous): kept") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    const tickclock_info *s = settled(g);
    unsigned gen = s->generation;
    g.w.now_ns += 50000000;
    g.w.pv_publish();  // new tsc_timestamp/system_time on the same line
    CHECK(tickclock_revalidate() == 0);
    CHECK(tickclock_info_get()->generation == gen);
  }

  TEST_CASE("a restore with the TSC back by hours: a new state from the new page, step bounded") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    g.w.base = g.w.hz() * 36000;  // the guest's TSC reads 10 hours
    g.w.pv_publish();
    settled(g);
    uint64_t t0 = tickclock_now_ordered(), ns0 = tickclock_to_ns(t0);
    uint64_t w0 = g.w.now_ns;
    g.w.now_ns += 10000000;
    // the snapshot is restored: the TSC reads 3 hours earlier than before
    g.w.offset -= g.w.ticks(INT64_C(3) * 3600 * 1000000000);
    g.w.pv_publish();
    g.w.now_ns += 1000000;
    CHECK(tickclock_revalidate() == 0);  // still the counter, not the OS clock
    const tickclock_info *r = tickclock_info_get();
    INFO(r->why);
    CHECK(r->source == TICKCLOCK_SOURCE_TSC);
    CHECK(r->read_path == TICKCLOCK_READ_COUNTER_MAPPED);
    CHECK(r->freq_method == TICKCLOCK_FREQ_PVCLOCK);
    CHECK(has(r->why, "clock page was rewritten (TSC went back"));
    uint64_t t1 = tickclock_now_ordered();
    CHECK(t1 > t0);
    tickclock_duration d;
    REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) != 0);
    // the time between the two readings on the fake's time line: within
    // the bound (the hours the TSC went back are not in it)
    double truth = (double)(g.w.now_ns - w0);
    CAPTURE(d.ns);
    CAPTURE(d.bound_ns);
    CHECK(d.ns > 0);
    CHECK(std::fabs((double)d.ns - truth) <= (double)d.bound_ns);
    CHECK(d.bound_ns < 1000000000u);  // bounded, not "unknown"
    CHECK(tickclock_to_ns(t0) == ns0);
    CHECK(backward_steps(g.w, 2000000, 10000) == 0);
  }

  TEST_CASE("a migration to a host with another TSC rate and no scaling: the new page's rate") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    settled(g);
    uint64_t t0 = tickclock_now_ordered();
    uint64_t w0 = g.w.now_ns;
    g.w.now_ns += 5000000;
    g.w.rate_from_ns = g.w.now_ns;  // from here the TSC runs at 3 GHz
    g.w.num2 = 3;
    g.w.den2 = 1;
    g.w.pv_publish(3000000000u);
    CHECK(tickclock_revalidate() == 0);
    const tickclock_info *r = tickclock_info_get();
    INFO(r->why);
    CHECK(r->source == TICKCLOCK_SOURCE_TSC);
    CHECK(r->hz == doctest::Approx(3e9).epsilon(1e-9));
    CHECK(has(r->why, "2500.000001 -> 3000.000001 MHz"));  // mul's quantisation
    g.w.now_ns += 20000000;
    uint64_t t1 = tickclock_now_ordered();
    tickclock_duration d;
    REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
    double truth = (double)(g.w.now_ns - w0);
    CAPTURE(d.ns);
    CAPTURE(d.bound_ns);
    CHECK(std::fabs((double)d.ns - truth) <= (double)d.bound_ns + 100.0);
    CHECK((d.flags & TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) != 0);
    CHECK(backward_steps(g.w, 2000000, 10000) == 0);
    // and the checks keep passing at the new rate
    g.w.now_ns += 100000000;
    CHECK(tickclock_revalidate() == 0);
    INFO(tickclock_info_get()->why);
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC);
  }

  TEST_CASE("a migration seen by the conversions alone (the periodic check, no explicit call)") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    settled(g);
    unsigned gen = tickclock_info_get()->generation;
    g.w.now_ns += 1000000;
    g.w.rate_from_ns = g.w.now_ns;  // a faster host, no TSC scaling: the TSC runs on
    g.w.num2 = 3;
    g.w.den2 = 1;
    g.w.pv_publish(3000000000u);
    uint64_t reads = g.w.pv_reads;
    // time passes in conversions only, past a few periodic checks
    CHECK(backward_steps(g.w, 4 * (uint64_t)TICKCLOCK_CHECK_DEFAULT_MS * 1000000u, 100000) == 0);
    const tickclock_info *r = tickclock_info_get();
    INFO(r->why);
    CHECK(g.w.pv_reads > reads);
    CHECK(r->generation != gen);
    CHECK(r->source == TICKCLOCK_SOURCE_TSC);
    CHECK(r->hz == doctest::Approx(3e9).epsilon(1e-9));
  }

  TEST_CASE("the stable bit cleared: the OS clock for good, with the reason") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    settled(g);
    g.w.now_ns += 1000000;
    g.w.pv.flags = 0;
    g.w.pv.version += 2;
    CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
    const tickclock_info *r = tickclock_info_get();
    INFO(r->why);
    CHECK(r->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(has(r->why, "lack the stable bit"));
    // a fresh decision reads the same page: still the OS clock
    CHECK(tickclock_init(NULL) == TICKCLOCK_OK);
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(has(tickclock_info_get()->why, "lack the stable bit"));
  }

  TEST_CASE("a torn read during an update: inconclusive, nothing published, read again later") {
    if (fake::x86_only("the kvm-clock page")) return;
    Guest g;
    const tickclock_info *s = settled(g);
    unsigned gen = s->generation;
    g.w.pv_torn = 3;   // the host is writing it: the next reads fail
    g.w.pv.flags = 0;  // ... and what it writes clears the stable bit
    g.w.pv.version += 2;
    uint64_t reads = g.w.pv_reads;
    CHECK(tickclock_revalidate() == 0);  // torn: no verdict from it
    CHECK(g.w.pv_reads > reads);         // read, and found torn
    CHECK(tickclock_info_get()->generation == gen);
    g.w.pv_torn = 0;
    CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);  // the next check sees it
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  }

  // The first use reads only what its decision reads: the kernel's list
  // of clocksources only where the TSC is not the kernel's clock and no
  // page states its rate, CPUID's brand string never; the probe's
  // gathering (tkc_gather_rest) reads both.
  TEST_CASE(
      "the kernel's list of clocksources and the brand: read only where a decision needs them") {
    if (fake::x86_only("the kvm-clock page")) return;
    {
      Guest g;  // a stable page: its rate, no list
      const tickclock_info *i = g.start();
      CHECK(i->source == TICKCLOCK_SOURCE_TSC);
      CHECK(g.w.available_reads == 0);
    }
    {
      Guest g;  // the kernel's clock is the TSC: no list
      g.w.clocksource = "tsc";
      g.w.available = "tsc kvm-clock";
      const tickclock_info *i = g.start();
      CHECK(i->source == TICKCLOCK_SOURCE_TSC);
      CHECK(g.w.available_reads == 0);
    }
    {
      Guest g;  // a page failing a check: the list decides, and the reason quotes it
      g.w.pv.flags = 0;
      const tickclock_info *i = g.start();
      INFO(i->why);
      CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);
      CHECK(g.w.available_reads == 1);
      const tickclock_candidate *t = tsc(i);
      REQUIRE(t != nullptr);
      CHECK(has(t->reason, "does not offer 'tsc' (available: 'kvm-clock')"));
    }
    {
      Guest g;  // no page at all, and 'tsc' offered: the list is what is left to decide on
      g.w.pv_mapped = 0;
      g.w.available = "kvm-clock tsc";
      const tickclock_info *i = g.start();
      INFO(i->why);
      CHECK(g.w.available_reads == 1);
      const tickclock_candidate *t = tsc(i);
      REQUIRE(t != nullptr);
      CHECK(has(t->reason, "prefers the paravirtual clock 'kvm-clock'"));
    }
    {
      Guest g;
      tkc_set_platform(&g.p);
      tickclock_evidence ev;
      tkc_gather(NULL, &ev);
      CHECK(ev.available_known == 0);
      CHECK(ev.x86.brand[0] == '\0');
      CHECK(g.w.available_reads == 0);
      tkc_gather_rest(&ev);
      CHECK(ev.available_known == 1);
      CHECK(std::string(ev.available_clocksource) == "kvm-clock");
      CHECK(std::string(ev.x86.brand) == "Fake(R) CPU 9E @ 2.50GHz");
    }
  }
}
