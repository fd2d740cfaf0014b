// A published frequency (leaf 0x15 with its crystal, a hypervisor's timing
// leaf, the perf page's conversion; CNTFRQ_EL0 on aarch64, the TOD's
// architectural 4096 MHz on s390x) is used by the first state at once,
// without the quick calibration's millisecond, and cross-checked by the
// first refinement: kept when it agrees, replaced — continuously — when it
// does not. On the deterministic fake platform (the core compiled in with
// -DTICKCLOCK_TEST_FAKE_COUNTER), so first use is measured in simulated
// time: every counter read, clock read and sleep advances one time line.
// The cases about x86's leaves form the doctest suite "x86"
// (published_freq_x86_test); the rest run on every ISA's fake counter.
#include <string.h>

#include <cmath>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"

namespace {
// What the first tickclock_now() costs in simulated time.
struct World {
  FakeWorld w;
  tickclock_platform p;
  uint64_t first_use_ns = 0;
  World() { p = fake::full(&w); }
  const tickclock_info *start() {
    tkc_set_platform(&p);
    uint64_t t0 = w.now_ns;
    (void)tickclock_now();  // the first use: initialises
    first_use_ns = w.now_ns - t0;
    return tickclock_info_get();
  }
  ~World() { tkc_set_platform(NULL); }
};

const tickclock_freq_candidate *freq(const tickclock_info *i, const char *name) {
  for (unsigned k = 0; k < i->n_freqs; k++)
    if (strcmp(i->freqs[k].name, name) == 0) return &i->freqs[k];
  return nullptr;
}

bool has(const char *s, const char *sub) { return strstr(s, sub) != nullptr; }

// The fake TSC runs at 2.5 GHz; each published source states it exactly
// (or, with wrong_by_ppm, that far off).
void publish_crystal(FakeWorld &w, double wrong_by_ppm = 0) {
  w.crystal_hz = 25000000;  // 25 MHz x 100 = 2.5 GHz
  w.l15_num = (uint32_t)std::lround(100 * (1 + wrong_by_ppm * 1e-6) * 1000);
  w.l15_den = 1000;
}
void publish_hypervisor(FakeWorld &w, double wrong_by_ppm = 0) {
  w.hypervisor = 1;
  w.hv_tsc_khz = (uint32_t)std::lround(2500000 * (1 + wrong_by_ppm * 1e-6));
}
void publish_perf_page(FakeWorld &w) {
  // ns = cyc * mult >> 31: 2^31 / 858993459 ns per tick = 2.5 GHz - 0.6 Hz
  w.perf_mult = 858993459;
  w.perf_shift = 31;
}

// to_ns(now()) sampled every step_ns of simulated time for span_ns: it
// never decreases, and its increment never differs from the simulated
// time's by more than rate_ppm of it plus 1 us (a step at a publication).
struct Walk {
  double worst_excess_ns = 0;
  long backward = 0;
  unsigned publications = 0;
};
Walk walk(FakeWorld &w, uint64_t span_ns, uint64_t step_ns, double rate_ppm) {
  Walk r;
  unsigned gen = tickclock_info_get()->generation;
  uint64_t tick = tickclock_now(), prev_t = w.now_ns;  // the instant of the reading
  uint64_t prev = tickclock_to_ns(tick);
  for (uint64_t done = 0; done < span_ns; done += step_ns) {
    w.now_ns += step_ns;
    tick = tickclock_now();
    uint64_t t = w.now_ns;
    uint64_t v = tickclock_to_ns(tick);  // a refinement or cross-check may run here
    if (v < prev) r.backward++;
    double excess = std::fabs((double)(int64_t)(v - prev) - (double)(t - prev_t)) -
                    (double)(t - prev_t) * rate_ppm * 1e-6;
    if (excess > r.worst_excess_ns) r.worst_excess_ns = excess;
    prev = v;
    prev_t = t;
    if (tickclock_info_get()->generation != gen) {
      gen = tickclock_info_get()->generation;
      r.publications++;
    }
  }
  return r;
}
}  // namespace

TEST_CASE("nothing published: the first use waits for the quick 1 ms calibration") {
  if (fake::calibrated_first("nothing published")) return;
  World f;  // the baseline the published cases are compared with
  const tickclock_info *i = f.start();
  REQUIRE(i->source == fake::isa.counter);
  CHECK(i->freq_pending_check == 0);
  CHECK(i->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(f.first_use_ns >= 1000000);
  CHECK(f.first_use_ns < 2000000);
}

namespace {
// The ISA's own statement of its counter's rate, stated right or wrong_ppm
// off: x86's leaf 0x15 with its crystal, aarch64's CNTFRQ_EL0, POWER's
// cpuinfo timebase, RISC-V's device tree; the s390x TOD's 4096 MHz cannot
// be wrong, so there the fake TOD runs that far off it instead.
struct Statement {
  int method;
  const char *name;
  bool published;  // used before any calibration
};
Statement isa_statement() {
  if (fake::isa.counter == TICKCLOCK_SOURCE_TSC)
    return {TICKCLOCK_FREQ_CPUID_15H, "cpuid_15h_crystal", true};
  return {fake::isa.stated_method, fake::isa.stated_name, fake::isa.stated_published};
}
// the stated rate, in Hz
double state_isa_rate(FakeWorld &w, double wrong_ppm) {
  if (fake::isa.counter == TICKCLOCK_SOURCE_TSC) {
    publish_crystal(w, wrong_ppm);
    return 25e6 * w.l15_num / w.l15_den;
  }
  if (fake::isa.always_stated) {  // the counter runs at stated / (1 + wrong)
    w.num = fake::isa.num * 1000000;
    w.den = fake::isa.den * (uint64_t)(1000000 + wrong_ppm);
    return (double)fake::isa.num / (double)fake::isa.den * 1e9;
  }
  w.stated_hz = (uint64_t)std::llround((double)w.hz() * (1 + wrong_ppm * 1e-6));
  return (double)w.stated_hz;
}
}  // namespace

TEST_CASE("the ISA's statement of its counter's rate: used by its method, cross-checked") {
  if (fake::no_counter("the ISA's stated rate")) return;
  const Statement st = isa_statement();
  World f;
  double stated = state_isa_rate(f.w, 0);
  const tickclock_info *i = f.start();
  INFO(i->why);
  REQUIRE(i->source == fake::isa.counter);
  CHECK(i->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(i->freq_method == st.method);
  CHECK(std::string(i->freq_detail) == st.name);
  CHECK(i->hz == doctest::Approx(stated).epsilon(1e-12));
  MESSAGE(std::string(fake::isa.arch)
          << ": " << std::string(st.name) << " " << stated / 1e6 << " MHz, first use "
          << f.first_use_ns << " ns of simulated time");
  const tickclock_freq_candidate *pub = freq(i, st.name);
  REQUIRE(pub != nullptr);
  CHECK(pub->usable == 1);
  if (st.published) {  // at once, the cross-check pending
    CHECK(i->freq_pending_check == 1);
    CHECK(f.first_use_ns < 300000);
    CHECK(pub->checked == 0);
  } else {  // the kernel's word: calibrated first, then preferred
    CHECK(i->freq_pending_check == 0);
    CHECK(f.first_use_ns >= 1000000);
    CHECK(pub->checked == 1);
  }
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
  Walk r = walk(f.w, 3000000, 10000, 1);
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);
  CHECK(c->source == fake::isa.counter);
  CHECK(c->freq_pending_check == 0);
  CHECK(c->freq_method == st.method);
  CHECK(std::string(c->freq_detail) == st.name);
  CHECK(c->hz == doctest::Approx(stated).epsilon(1e-12));
  pub = freq(c, st.name);
  REQUIRE(pub != nullptr);
  CHECK(pub->checked == 1);
  CHECK(pub->usable == 1);
  CHECK(tickclock_to_ns(t0) == ns0);
}

TEST_CASE("the ISA's statement 0.4 % off its counter's rate: replaced by calibration, no step") {
  if (fake::no_counter("the ISA's wrong stated rate")) return;
  const Statement st = isa_statement();
  World f;
  double stated = state_isa_rate(f.w, -4000);
  double real = (double)f.w.hz();
  const tickclock_info *i = f.start();
  INFO(i->why);
  REQUIRE(i->source == fake::isa.counter);
  if (st.published) {  // used at once: the conversion runs 0.4 % fast until the check
    CHECK(i->freq_pending_check == 1);
    CHECK(std::string(i->freq_detail) == st.name);
    CHECK(i->hz == doctest::Approx(stated).epsilon(1e-12));
  } else {  // checked before any use
    CHECK(i->freq_pending_check == 0);
    CHECK(i->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  }
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
  Walk r = walk(f.w, 3000000, 10000, 4100);
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);
  CHECK(c->source == fake::isa.counter);
  CHECK(c->freq_pending_check == 0);
  CHECK(c->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(c->hz == doctest::Approx(real).epsilon(50e-6));
  const tickclock_freq_candidate *pub = freq(c, st.name);
  REQUIRE(pub != nullptr);
  CHECK(pub->checked == 1);
  CHECK(pub->usable == 0);
  CAPTURE(pub->reason);
  CHECK(has(pub->reason, "disagrees with calibration"));
  CHECK(tickclock_to_ns(t0) == ns0);
}

TEST_CASE("a published frequency is used at once: first use under 0.3 ms, then confirmed" *
          doctest::test_suite("x86")) {
  World f;
  const char *name = nullptr;
  SUBCASE("leaf 0x15 with its crystal, bare metal") {
    publish_crystal(f.w);
    name = "cpuid_15h_crystal";
  }
  SUBCASE("a KVM guest's timing leaf 0x40000010, clocksource tsc") {
    publish_hypervisor(f.w);
    name = "hypervisor_40000010";
  }
  SUBCASE("the perf page's conversion (cap_user_time)") {
    publish_perf_page(f.w);
    name = "perf_page";
  }
  SUBCASE("a KVM guest on kvm-clock: the hypervisor's frequency stands in for the agreement") {
    publish_hypervisor(f.w);
    f.w.clocksource = "kvm-clock";
    f.w.available = "kvm-clock tsc hpet acpi_pm";
    name = "hypervisor_40000010";
  }
  CAPTURE(name);
  const tickclock_info *i = f.start();
  INFO(i->why);
  REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);
  CHECK(i->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(i->freq_pending_check == 1);
  CHECK(std::string(i->freq_detail) == name);
  CHECK(i->baseline_ns == 0);  // nothing measured yet
  CHECK(has(i->why, "not calibrated yet"));
  MESSAGE(std::string(name) << ": first use " << f.first_use_ns << " ns of simulated time");
  CHECK(f.first_use_ns < 300000);
  const tickclock_freq_candidate *cal = freq(i, "calibration");
  REQUIRE(cal != nullptr);
  CHECK(cal->available == 0);
  const tickclock_freq_candidate *pub = freq(i, name);
  REQUIRE(pub != nullptr);
  CHECK(pub->usable == 1);
  CHECK(pub->checked == 0);
  uint64_t num = i->hz_num, den = i->hz_den;
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);

  // the cross-check: the first conversion after 1 ms of process life
  Walk r = walk(f.w, 3000000, 10000, 1);
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(r.publications == 1);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);
  CHECK(c->source == TICKCLOCK_SOURCE_TSC);
  CHECK(c->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(c->freq_pending_check == 0);
  CHECK(std::string(c->freq_detail) == name);
  CHECK(c->hz_num == num);  // the same frequency, now with its figures
  CHECK(c->hz_den == den);
  CHECK(c->baseline_ns >= 1000000);
  pub = freq(c, name);
  REQUIRE(pub != nullptr);
  CHECK(pub->checked == 1);
  CHECK(pub->usable == 1);
  CHECK(std::fabs(pub->ppm_vs_calibration) <= pub->bound_ppm);
  CHECK(tickclock_to_ns(t0) == ns0);  // an earlier tick keeps its ns
  // a confirmed published source is not refined further
  unsigned gen = c->generation;
  f.w.now_ns += UINT64_C(5000000000);
  (void)tickclock_to_ns(tickclock_now());
  CHECK(tickclock_info_get()->generation == gen);
}

TEST_CASE("a wrong published frequency is replaced at the cross-check, without a step" *
          doctest::test_suite("x86")) {
  World f;
  publish_crystal(f.w, -4000);  // leaf 0x15 states 2.49 GHz: 0.4 % slow
  const tickclock_info *i = f.start();
  REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);
  REQUIRE(i->freq_pending_check == 1);
  CHECK(i->hz == doctest::Approx(2.49e9).epsilon(1e-9));
  CHECK(f.first_use_ns < 300000);
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
  // until the cross-check the conversion runs 0.4 % fast: 4 us per ms
  Walk r = walk(f.w, 3000000, 10000, 4100);
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);  // no step at the replacement
  CHECK(c->source == TICKCLOCK_SOURCE_TSC);
  CHECK(c->read_path == TICKCLOCK_READ_COUNTER);
  CHECK(c->freq_pending_check == 0);
  CHECK(c->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(c->hz == doctest::Approx(2.5e9).epsilon(50e-6));
  const tickclock_freq_candidate *pub = freq(c, "cpuid_15h_crystal");
  REQUIRE(pub != nullptr);
  CHECK(pub->checked == 1);
  CHECK(pub->usable == 0);
  CAPTURE(pub->reason);
  CHECK(has(pub->reason, "disagrees with calibration"));
  CHECK(tickclock_to_ns(t0) == ns0);
  // from here the rate is right, and the calibration is refined on
  Walk later = walk(f.w, UINT64_C(2000000000), 1000000, 60);
  CHECK(later.backward == 0);
  CHECK(later.worst_excess_ns < 1000);
  CHECK(later.publications >= 4);  // 4 ms, 16 ms, ... 1 s
  CHECK(std::fabs(tickclock_info_get()->hz / 2.5e9 - 1) < 1e-6);
}

TEST_CASE("kvm-clock guest: a hypervisor frequency that disagrees means the OS clock" *
          doctest::test_suite("x86")) {
  World f;
  publish_hypervisor(f.w, 2000);  // the leaf states 2.505 GHz
  f.w.clocksource = "kvm-clock";
  f.w.available = "kvm-clock tsc hpet acpi_pm";
  const tickclock_info *i = f.start();
  REQUIRE(i->source == TICKCLOCK_SOURCE_TSC);
  REQUIRE(i->freq_pending_check == 1);
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
  Walk r = walk(f.w, 3000000, 10000, 2100);
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);
  CHECK(c->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(c->read_path == TICKCLOCK_READ_OS);  // the OS clock, mapped into the TSC's unit
  CHECK(has(c->why, "disagrees"));
  CHECK(tickclock_to_ns(t0) == ns0);
}

TEST_CASE("no published source is used unchecked where it is not a statement" *
          doctest::test_suite("x86")) {
  SUBCASE("a forced TSC is calibrated first") {
    World f;
    publish_crystal(f.w);
    tkc_set_platform(&f.p);
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    uint64_t t0 = f.w.now_ns;
    REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
    CHECK(f.w.now_ns - t0 >= 1000000);
    const tickclock_info *i = tickclock_info_get();
    CHECK(i->freq_pending_check == 0);
    CHECK(std::string(i->freq_detail) == "cpuid_15h_crystal");  // checked, then preferred
    CHECK(freq(i, "cpuid_15h_crystal")->checked == 1);
  }
  SUBCASE("calibration_ms asks for a calibration of its own") {
    World f;
    publish_hypervisor(f.w);
    tkc_set_platform(&f.p);
    tickclock_config cfg = {TICKCLOCK_SOURCE_AUTO, 5, 0};
    REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
    const tickclock_info *i = tickclock_info_get();
    CHECK(i->freq_pending_check == 0);
    CHECK(i->baseline_ns >= 5000000);
    CHECK(freq(i, "hypervisor_40000010")->checked == 1);
  }
  SUBCASE("leaf 0x16's nominal base is never used before calibration") {
    World f;
    f.w.hypervisor = 1;  // no timing leaf
    f.w.base_mhz = 2500;
    const tickclock_info *i = f.start();
    CHECK(i->freq_pending_check == 0);
    CHECK(f.first_use_ns >= 1000000);
    REQUIRE(freq(i, "cpuid_16h") != nullptr);
    CHECK(freq(i, "cpuid_16h")->checked == 1);
  }
  SUBCASE("nor leaf 0x15 in a VM (a VMM may pass the host's through to a scaled guest)") {
    World f;
    publish_crystal(f.w, -40000);  // the host's 2.4 GHz, passed through
    f.w.hypervisor = 1;            // no timing leaf of its own
    const tickclock_info *i = f.start();
    INFO(i->why);
    CHECK(i->freq_pending_check == 0);
    CHECK(f.first_use_ns >= 1000000);
    CHECK(i->source == TICKCLOCK_SOURCE_TSC);
    CHECK(i->freq_method == TICKCLOCK_FREQ_CALIBRATED);  // refused: disagrees
    CHECK(freq(i, "cpuid_15h_crystal")->usable == 0);
  }
  SUBCASE("nor the crystal table's inference (checked first, then preferred)") {
    World f;
    f.w.l15_num = 625;  // 24 MHz (model 0x9E in the table) x 625/6 = 2.5 GHz, ECX = 0
    f.w.l15_den = 6;
    f.w.base_mhz = 2500;  // the table entry needs leaf 0x16 within 1 %
    const tickclock_info *i = f.start();
    INFO(i->why);
    CHECK(i->freq_pending_check == 0);
    CHECK(f.first_use_ns >= 1000000);
    CHECK(std::string(i->freq_detail) == "cpuid_15h_known_crystal");
    CHECK(freq(i, "cpuid_15h_known_crystal")->checked == 1);
  }
  SUBCASE("a kvm-clock guest with no hypervisor frequency: calibrated first, then refused") {
    World f;
    publish_crystal(f.w);  // leaf 0x15 passed through, but no timing leaf
    f.w.hypervisor = 1;
    f.w.clocksource = "kvm-clock";
    f.w.available = "kvm-clock tsc hpet acpi_pm";
    const tickclock_info *i = f.start();
    INFO(i->why);
    CHECK(i->source == TICKCLOCK_SOURCE_SYSTEM);  // the trust rules refuse it outright
    CHECK(has(i->why, "hypervisor publishes no TSC frequency"));
  }
}

TEST_CASE("the cross-check also runs from tickclock_revalidate(), and waits out preemption" *
          doctest::test_suite("x86")) {
  SUBCASE("revalidate") {
    World f;
    publish_crystal(f.w);
    const tickclock_info *i = f.start();
    REQUIRE(i->freq_pending_check == 1);
    f.w.now_ns += 500000;  // not due yet
    CHECK(tickclock_revalidate() == 0);
    CHECK(tickclock_info_get()->freq_pending_check == 1);
    f.w.now_ns += 1000000;
    CHECK(tickclock_revalidate() == 0);
    CHECK(tickclock_info_get()->freq_pending_check == 0);
    CHECK(tickclock_info_get()->generation == i->generation + 1);
  }
  SUBCASE("brackets too wide for 50 ppm at 1 ms: the cross-check waits for 4 ms") {
    World f;
    publish_crystal(f.w);
    f.w.os_cost_ns = 60;  // every bracket ~70 ns wide: 1 ms gives ~70 ppm
    const tickclock_info *i = f.start();
    REQUIRE(i->freq_pending_check == 1);
    CHECK(f.first_use_ns < 300000);
    f.w.now_ns += 1100000;
    (void)tickclock_to_ns(tickclock_now());
    CHECK(tickclock_info_get()->freq_pending_check == 1);  // inconclusive: still pending
    f.w.now_ns += 3900000;
    (void)tickclock_to_ns(tickclock_now());
    const tickclock_info *c = tickclock_info_get();
    CHECK(c->freq_pending_check == 0);
    CHECK(c->baseline_ns >= 4000000);
    CHECK(std::string(c->freq_detail) == "cpuid_15h_crystal");
  }
}

TEST_CASE("a wrong published frequency first looked at late is replaced, not taken for drift" *
          doctest::test_suite("x86")) {
  // 0.4 % off for a whole second: 4 ms of disagreement with the raw clock,
  // 30 times the re-validation bound; the cross-check comes first
  World f;
  publish_crystal(f.w, -4000);
  SUBCASE("by tickclock_revalidate()") {
    REQUIRE(f.start()->freq_pending_check == 1);
    f.w.now_ns += UINT64_C(1000000000);
    CHECK(tickclock_revalidate() == 0);
  }
  SUBCASE("by the periodic check inside tickclock_to_ns()") {
    REQUIRE(f.start()->freq_pending_check == 1);
    tickclock_revalidate_every(10);
    f.w.now_ns += UINT64_C(1000000000);
    (void)tickclock_to_ns(tickclock_now());
  }
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  CHECK(c->source == TICKCLOCK_SOURCE_TSC);
  CHECK(c->revalidated == 0);
  CHECK(c->freq_pending_check == 0);
  CHECK(c->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(c->hz == doctest::Approx(2.5e9).epsilon(1e-6));
  CHECK(tickclock_revalidate() == 0);  // and the checks pass on the corrected rate
}

TEST_CASE("a kvm-clock guest's refused hypervisor frequency: tickclock_revalidate() says SWITCHED" *
          doctest::test_suite("x86")) {
  World f;
  publish_hypervisor(f.w, 2000);
  f.w.clocksource = "kvm-clock";
  f.w.available = "kvm-clock tsc hpet acpi_pm";
  REQUIRE(f.start()->freq_pending_check == 1);
  f.w.now_ns += 2000000;
  CHECK(tickclock_revalidate() == TICKCLOCK_SWITCHED);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
}

TEST_CASE("a published frequency slightly off passes the 1 ms check and fails a tighter one" *
          doctest::test_suite("x86")) {
  World f;
  publish_crystal(f.w, 40);  // 40 ppm fast: inside the first check's bound
  const tickclock_info *i = f.start();
  REQUIRE(i->freq_pending_check == 1);
  uint64_t t0 = tickclock_now(), ns0 = tickclock_to_ns(t0);
  f.w.now_ns += 1100000;
  (void)tickclock_to_ns(tickclock_now());
  const tickclock_info *c = tickclock_info_get();
  INFO(c->why);
  REQUIRE(c->freq_pending_check == 0);
  const tickclock_freq_candidate *pub = freq(c, "cpuid_15h_crystal");
  REQUIRE(pub != nullptr);
  MESSAGE("first check: " << pub->ppm_vs_calibration << " ppm, bound " << pub->bound_ppm);
  CHECK(pub->usable == 1);  // 40 ppm < 25 + the 1 ms calibration's own bound
  CHECK(std::string(c->freq_detail) == "cpuid_15h_crystal");
  Walk r = walk(f.w, UINT64_C(2000000000), 1000000, 60);
  const tickclock_info *e = tickclock_info_get();
  INFO(e->why);
  CHECK(r.backward == 0);
  CHECK(r.worst_excess_ns < 1000);
  CHECK(e->freq_method == TICKCLOCK_FREQ_CALIBRATED);  // replaced by a tighter check
  pub = freq(e, "cpuid_15h_crystal");
  CHECK(pub->usable == 0);
  CHECK(std::fabs(e->hz / 2.5e9 - 1) < 1e-6);  // and then refined to within 1 ppm
  CHECK(tickclock_to_ns(t0) == ns0);
}

TEST_CASE("a published frequency the cross-check refused is not used again by a re-initialisation" *
          doctest::test_suite("x86")) {
  World f;
  publish_crystal(f.w, -40000);  // leaf 0x15 states 2.4 GHz; the counter runs at 2.5
  const tickclock_info *i = f.start();
  REQUIRE(i->freq_pending_check == 1);
  (void)walk(f.w, 5000000, 10000, 50000);  // the cross-check refuses it
  REQUIRE(tickclock_info_get()->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  long violations = 0, pending = 0, failed = 0;
  double worst = 0;
  for (int k = 0; k < 1500; k++) {
    int rc = tickclock_init(NULL);
    if (rc != TICKCLOCK_OK) failed++;
    const tickclock_info *s = tickclock_info_get();
    if (s->freq_pending_check) pending++;
    // an interval of 0.9 ms right after, asked at once
    uint64_t t0 = tickclock_now(), at0 = f.w.now_ns;
    f.w.now_ns += 900000;
    uint64_t t1 = tickclock_now(), at1 = f.w.now_ns;
    tickclock_duration d;
    REQUIRE(tickclock_duration_get(t0, t1, &d) == TICKCLOCK_OK);
    // the two readings lie within a counter read of the fake's instants
    double err = std::fabs((double)d.ns - (double)(at1 - at0)) - 2.0 * (double)f.w.read_cost_ns;
    if (err > (double)d.bound_ns) violations++;
    if (err - (double)d.bound_ns > worst) worst = err - (double)d.bound_ns;
    f.w.now_ns += 1000000;
  }
  const tickclock_info *s = tickclock_info_get();
  const tickclock_freq_candidate *pub = freq(s, "cpuid_15h_crystal");
  REQUIRE(pub != nullptr);
  INFO("pending " << pending << " violations " << violations << " worst excess " << worst
                  << " ns; failed inits " << failed << "; states " << tkc_states_count()
                  << "; crystal's reason: " << pub->reason);
  CHECK(pending == 0);
  CHECK(violations == 0);
  CHECK(failed == 0);
  CHECK(s->source == TICKCLOCK_SOURCE_TSC);
  CHECK(s->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  CHECK(tkc_states_count() < TICKCLOCK_MAX_STATES);
}
