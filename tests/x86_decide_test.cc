// Unit tests of the pure x86 pieces: decoder gating, frequency rules,
// rational helpers, the fixture parser and the decider's policy, on
// synthetic leaves built here.
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "doctest/doctest.h"
#include "tests/fixture_util.h"

using namespace tctest;

namespace {

// A synthetic leaf source that also records which leaves were asked for.
struct Leaves {
  std::map<std::pair<uint32_t, uint32_t>, tickclock_cpuid_regs> m;
  std::vector<uint32_t> asked;
  void set(uint32_t leaf, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t sub = 0) {
    m[{leaf, sub}] = tickclock_cpuid_regs{a, b, c, d};
  }
  static int fn(void *ctx, uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *out) {
    Leaves *l = static_cast<Leaves *>(ctx);
    l->asked.push_back(leaf);
    auto it = l->m.find({leaf, sub});
    if (it == l->m.end()) {
      // like a real CPU past its maximum: garbage, not zeros
      *out = tickclock_cpuid_regs{0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef};
      return 1;
    }
    *out = it->second;
    return 1;
  }
  bool was_asked(uint32_t leaf) const {
    for (uint32_t a : asked)
      if (a == leaf) return true;
    return false;
  }
};

// A register holding 4 characters as x86 does (first character in the
// least significant byte), on any host byte order.
uint32_t w(const char *s4) {
  const unsigned char *u = reinterpret_cast<const unsigned char *>(s4);
  return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

// An Intel CPU: max basic leaf, family 6 model `model`, leaf 1 ECX bit 31 = hv.
Leaves intel(uint32_t max, uint32_t model, bool hv) {
  Leaves l;
  l.set(0, max, w("Genu"), w("ntel"), w("ineI"));
  uint32_t eax = ((model >> 4) << 16) | (6u << 8) | ((model & 0xf) << 4) | 3;
  l.set(1, eax, 0, hv ? 0x80000000u : 0, 0x10);  // EDX[4] TSC
  l.set(7, 0, 0x2, 0, 0);                         // TSC_ADJUST
  l.set(0x80000000u, 0x80000008u, 0, 0, 0);
  l.set(0x80000001u, 0, 0, 0, 1u << 27);
  l.set(0x80000007u, 0, 0, 0, 1u << 8);
  return l;
}

tickclock_x86_facts decode(Leaves &l) {
  tickclock_x86_facts f;
  tickclock_x86_decode(Leaves::fn, &l, &f);
  return f;
}

// Evidence of a Linux x86 machine with these facts and clocksource.
tickclock_evidence evidence(const tickclock_x86_facts &x, const char *cs, const char *avail) {
  tickclock_evidence ev;
  std::memset(&ev, 0, sizeof ev);
  ev.arch_counter = TICKCLOCK_SOURCE_TSC;
  ev.x86 = x;
  ev.os_linux = 1;
  ev.tsc_prctl = TICKCLOCK_PRCTL_ENABLED;
  ev.clocksource_known = 1;
  tickclock__strlcpy(ev.clocksource, cs, sizeof ev.clocksource);
  ev.available_known = 1;
  tickclock__strlcpy(ev.available_clocksource, avail, sizeof ev.available_clocksource);
  ev.counter_read_ns = 10;
  ev.os_read_ns = 30;
  ev.os_resolution_ns = 1;
  return ev;
}

void calibrated(tickclock_evidence *ev, uint64_t num, uint64_t den, double unc = 1.0) {
  ev->cal.ok = 1;
  ev->cal.hz_num = num;
  ev->cal.hz_den = den;
  ev->cal.hz = (double)num / (double)den;
  ev->cal.ns = 20000000;
  ev->cal.ticks = (uint64_t)(ev->cal.hz * 0.02);
  ev->cal.uncertainty_ppm = unc;
}

struct Decision {
  std::unique_ptr<tickclock_info> info{new tickclock_info};
  int rc;
  const tickclock_freq_candidate *freq(const char *name) const {
    for (unsigned i = 0; i < info->n_freqs; i++)
      if (std::strcmp(info->freqs[i].name, name) == 0) return &info->freqs[i];
    return nullptr;
  }
  std::string tsc_reason() const {
    for (unsigned i = 0; i < info->n_candidates; i++)
      if (info->candidates[i].source == TICKCLOCK_SOURCE_TSC) return info->candidates[i].reason;
    return "";
  }
};

Decision decide(const tickclock_evidence &ev) {
  Decision d;
  d.rc = tickclock_decide(&ev, d.info.get());
  if (d.rc == 0) {
    std::string m = malformed(*d.info);
    CHECK_MESSAGE(m == "", m);
  }
  return d;
}

bool contains(const std::string &s, const char *sub) { return s.find(sub) != std::string::npos; }

}  // namespace

// ---- decoder ---------------------------------------------------------------

TEST_CASE("decoder: vendor, display family/model, feature bits") {
  Leaves l = intel(0x16, 0x9e, false);
  l.set(0x80000002u, w("Inte"), w("l(R)"), w(" Cor"), w("e(TM"));
  l.set(0x80000003u, w(") i7"), w("-870"), w("0K  "), w("    "));
  l.set(0x80000004u, 0, 0, 0, 0);
  tickclock_x86_facts f = decode(l);
  CHECK(std::string(f.vendor) == "GenuineIntel");
  CHECK(f.family == 6);
  CHECK(f.model == 0x9e);
  CHECK(f.stepping == 3);
  CHECK(f.tsc == 1);
  CHECK(f.rdtscp == 1);
  CHECK(f.invariant_known == 1);
  CHECK(f.invariant_tsc == 1);
  CHECK(f.tsc_adjust == 1);
  CHECK(f.hypervisor == 0);
  CHECK(std::string(f.brand) == "Intel(R) Core(TM) i7-8700K");
  // AMD family 0x17: base family 0xf + extended 0x8, model with extension
  Leaves a;
  a.set(0, 0xd, w("Auth"), w("cAMD"), w("enti"));
  a.set(1, 0x00870f10, 0, 0, 0x10);
  a.set(0x80000000u, 0x80000001u, 0, 0, 0);
  a.set(0x80000001u, 0, 0, 0, 0);
  tickclock_x86_facts g = decode(a);
  CHECK(std::string(g.vendor) == "AuthenticAMD");
  CHECK(g.family == 0x17);
  CHECK(g.model == 0x71);
  CHECK(g.stepping == 0);
  CHECK(g.invariant_known == 0);  // 0x80000007 beyond 0x80000001
  CHECK(std::string(g.brand) == "");
}

TEST_CASE("decoder: every leaf is gated on the maximum of its range") {
  Leaves l = intel(0xd, 0x55, false);             // max basic 0xd
  l.set(0x15, 2, 184, 25000000, 0);               // present but beyond the max
  l.set(0x16, 2600, 3900, 100, 0);
  l.set(0x80000000u, 0x80000004u, 0, 0, 0);       // 0x80000007 beyond
  l.set(0x40000000u, 0x40000010u, w("VMwa"), w("reVM"), w("ware"));  // hv bit clear
  l.set(0x40000010u, 2600000, 1000, 0, 0);
  tickclock_x86_facts f = decode(l);
  CHECK(f.leaf15_valid == 0);
  CHECK(f.leaf16_valid == 0);
  CHECK(f.invariant_known == 0);
  CHECK(f.hv_valid == 0);
  CHECK(f.timing_leaf_valid == 0);
  CHECK_FALSE(l.was_asked(0x15));
  CHECK_FALSE(l.was_asked(0x16));
  CHECK_FALSE(l.was_asked(0x80000007u));
  CHECK_FALSE(l.was_asked(0x40000000u));
  tickclock_freq fr;
  CHECK_FALSE(tickclock_x86_freq_cpuid(&f, &fr));

  // extended maximum outside 0x8000xxxx: no extended range at all
  Leaves e = intel(1, 0x0f, false);
  e.set(0x80000000u, 0x00000001u, 0, 0, 0);
  tickclock_x86_facts g = decode(e);
  CHECK(g.max_ext_leaf == 0);
  CHECK_FALSE(e.was_asked(0x80000001u));
}

TEST_CASE("decoder: hypervisor ranges, signatures and timing leaves") {
  SUBCASE("VMware with the timing leaf") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0x40000010u, w("VMwa"), w("reVM"), w("ware"));
    l.set(0x40000010u, 2593992, 66000, 0, 0);
    tickclock_x86_facts f = decode(l);
    CHECK(f.hv_valid);
    CHECK(f.hv_kind == TICKCLOCK_HV_VMWARE);
    CHECK(std::string(f.hv_signature) == "VMwareVMware");
    CHECK(f.hv_max_leaf == 0x40000010u);
    CHECK(f.timing_leaf_valid);
    tickclock_freq fr;
    REQUIRE(tickclock_x86_freq_cpuid(&f, &fr));
    CHECK(fr.hz_num == UINT64_C(2593992000));
    CHECK(fr.hz_den == 1);
    CHECK(std::string(fr.name) == "hypervisor_40000010");
  }
  SUBCASE("KVM whose maximum stops before 0x40000010: timing leaf ignored") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0x40000001u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
    l.set(0x40000001u, 0x01007efb, 0, 0, 0);
    l.set(0x40000010u, 2593992, 66000, 0, 0);  // stale data past the max
    tickclock_x86_facts f = decode(l);
    CHECK(f.hv_kind == TICKCLOCK_HV_KVM);
    CHECK(std::string(f.hv_signature) == "KVMKVMKVM");
    CHECK(f.kvm_base == 0x40000000u);
    CHECK(f.kvm_features == 0x01007efbu);
    CHECK(f.timing_leaf_valid == 0);
    CHECK_FALSE(l.was_asked(0x40000010u));
    // not behind Hyper-V: no scan of further bases (each CPUID is a VM exit)
    CHECK_FALSE(l.was_asked(0x40000100u));
  }
  SUBCASE("old KVM answering EAX=0 means a maximum of base+1") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0, w("KVMK"), w("VMKV"), w("M\0\0\0"));
    l.set(0x40000001u, 0x3b, 0, 0, 1);
    tickclock_x86_facts f = decode(l);
    CHECK(f.hv_valid);
    CHECK(f.hv_max_leaf == 0x40000001u);
    CHECK(f.kvm_features_valid);
    CHECK(f.kvm_hints == 1);
  }
  SUBCASE("Xen behind a Viridian (Hyper-V) range at 0x40000100") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0x40000005u, w("Micr"), w("osof"), w("t Hv"));
    l.set(0x40000003u, (1u << 11) | (1u << 15), 0, 0, 1u << 8);
    l.set(0x40000100u, 0x40000105u, w("XenV"), w("MMXe"), w("nVMM"));
    l.set(0x40000103u, 0x6, 2, 2793296, 1);
    tickclock_x86_facts f = decode(l);
    CHECK(f.hv_kind == TICKCLOCK_HV_HYPERV);
    CHECK(f.hyperv_valid);
    CHECK(f.hyperv_freq_msrs);
    CHECK(f.hyperv_tsc_invariant);
    CHECK(f.xen_base == 0x40000100u);
    CHECK(f.xen_leaf3_valid);
    CHECK(f.xen_tsc_khz == 2793296u);
    CHECK(f.xen_tsc_mode == 2);
    tickclock_freq fr;
    REQUIRE(tickclock_x86_freq_hypervisor(&f, &fr));
    CHECK(std::string(fr.name) == "xen_leaf3");
    CHECK(fr.hz_num == UINT64_C(2793296000));
  }
  SUBCASE("Xen whose maximum is base+2: no TSC leaf") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0x40000002u, w("XenV"), w("MMXe"), w("nVMM"));
    l.set(0x40000003u, 0x6, 2, 2793296, 1);
    tickclock_x86_facts f = decode(l);
    CHECK(f.xen_base == 0x40000000u);
    CHECK_FALSE(f.xen_leaf3_valid);
    CHECK_FALSE(l.was_asked(0x40000003u));
  }
  SUBCASE("hypervisor bit set but the base leaf is garbage (junk bit): no range") {
    Leaves l = intel(0xd, 0x55, true);
    l.set(0x40000000u, 0x00000d00u, 0x1, 0x2, 0x3);  // e.g. the highest basic leaf's data
    tickclock_x86_facts f = decode(l);
    CHECK(f.hypervisor == 1);
    CHECK(f.hv_valid == 0);
    CHECK(f.hv_kind == TICKCLOCK_HV_NONE);
  }
}

// ---- frequency rules -------------------------------------------------------

TEST_CASE("0x15: crystal from ECX, exact rational") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);
  l.set(0x16, 2500, 4900, 100, 0);
  tickclock_x86_facts f = decode(l);
  tickclock_freq fr;
  REQUIRE(tickclock_x86_freq_leaf15(&f, &fr));
  CHECK(std::string(fr.name) == "cpuid_15h_crystal");
  CHECK(fr.method == TICKCLOCK_FREQ_CPUID_15H);
  CHECK(fr.hz_num == UINT64_C(2496000000));
  CHECK(fr.hz_den == 1);
  CHECK(fr.uncertainty_ppm == 0);
  // a ratio that does not divide: 19.2 MHz * 171 / 3 stays a rational if needed
  Leaves g = intel(0x15, 0x5c, false);
  g.set(0x15, 7, 100, 19200000, 0);
  tickclock_x86_facts gf = decode(g);
  REQUIRE(tickclock_x86_freq_leaf15(&gf, &fr));
  CHECK(fr.hz_num == UINT64_C(1920000000));
  CHECK(fr.hz_den == 7);  // 274285714.28... Hz, not truncated
}

TEST_CASE("0x15: 64-bit products never overflow or truncate") {
  Leaves l = intel(0x15, 0x97, false);
  l.set(0x15, 0xfffffffdu, 0xffffffffu, 0xffffffffu, 0);
  tickclock_x86_facts f = decode(l);
  tickclock_freq fr;
  REQUIRE(tickclock_x86_freq_leaf15(&f, &fr));
  // (2^32-1)^2 / (2^32-3): gcd 1, numerator exact in 64 bits
  CHECK(fr.hz_num == UINT64_C(0xfffffffe00000001));
  CHECK(fr.hz_den == UINT64_C(0xfffffffd));
}

TEST_CASE("0x15: Linux's known crystals when ECX is 0") {
  struct Case {
    uint32_t model, crystal;
  } cases[] = {{0x5f, 25000000}, {0x4e, 24000000}, {0x5e, 24000000},
               {0x8e, 24000000}, {0x9e, 24000000}, {0x5c, 19200000}};
  for (auto c : cases) {
    CAPTURE(c.model);
    Leaves l = intel(0x16, c.model, false);
    l.set(0x15, 2, 176, 0, 0);
    // a base that fits the crystal (within 1 %): a check, not the value
    l.set(0x16, (uint32_t)((uint64_t)c.crystal * 88 / 1000000), 4000, 100, 0);
    tickclock_x86_facts f = decode(l);
    tickclock_freq fr;
    REQUIRE(tickclock_x86_freq_leaf15(&f, &fr));
    CHECK(std::string(fr.name) == "cpuid_15h_known_crystal");
    uint64_t n = (uint64_t)c.crystal * 176, d = 2;
    tickclock__reduce(&n, &d);
    CHECK(fr.hz_num == n);
    CHECK(fr.hz_den == d);
  }
  // Skylake-S i7-6700K: 24 MHz * 334/2 = 4008 MHz, while 0x16 says 4000
  Leaves l = intel(0x16, 0x5e, false);
  l.set(0x15, 2, 334, 0, 0);
  l.set(0x16, 4000, 4200, 100, 0);
  tickclock_x86_facts f = decode(l);
  tickclock_freq a, b;
  REQUIRE(tickclock_x86_freq_leaf15(&f, &a));
  REQUIRE(tickclock_x86_freq_leaf16(&f, &b));
  CHECK(a.hz_num == UINT64_C(4008000000));
  CHECK(b.hz_num == UINT64_C(4000000000));
  CHECK(std::fabs(tickclock__ppm(b.hz_num, b.hz_den, a.hz_num, a.hz_den) - (-1996.0)) < 0.1);
}

TEST_CASE("0x15: crystal derived from 0x16, otherwise nothing") {
  Leaves l = intel(0x16, 0x55, false);  // Skylake-SP: no crystal, not in the table
  l.set(0x15, 2, 216, 0, 0);
  l.set(0x16, 2700, 3700, 100, 0);
  tickclock_x86_facts f = decode(l);
  tickclock_freq fr;
  REQUIRE(tickclock_x86_freq_leaf15(&f, &fr));
  CHECK(std::string(fr.name) == "cpuid_15h_from_16h");
  CHECK(fr.hz_num == UINT64_C(2700000000));
  CHECK(fr.hz_den == 1);
  CHECK(fr.uncertainty_ppm > 0);
  // 0x16 beyond the max: no rule applies
  Leaves m = intel(0x15, 0x55, false);
  m.set(0x15, 2, 216, 0, 0);
  m.set(0x16, 2700, 3700, 100, 0);
  tickclock_x86_facts g = decode(m);
  CHECK_FALSE(tickclock_x86_freq_leaf15(&g, &fr));
  CHECK_FALSE(tickclock_x86_freq_cpuid(&g, &fr));
  // zero ratio: absent
  Leaves z = intel(0x16, 0x97, false);
  z.set(0x15, 0, 0, 38400000, 0);
  z.set(0x16, 0, 0, 0, 0);
  tickclock_x86_facts zf = decode(z);
  CHECK_FALSE(tickclock_x86_freq_leaf15(&zf, &fr));
  CHECK_FALSE(tickclock_x86_freq_leaf16(&zf, &fr));
}

TEST_CASE("0x15/0x16 rules are Intel's: other vendors get none") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0, 0x16, w("Auth"), w("cAMD"), w("enti"));
  l.set(0x15, 2, 130, 38400000, 0);
  l.set(0x16, 2500, 4900, 100, 0);
  tickclock_x86_facts f = decode(l);
  tickclock_freq fr;
  CHECK_FALSE(tickclock_x86_freq_leaf15(&f, &fr));
  CHECK_FALSE(tickclock_x86_freq_leaf16(&f, &fr));
}

TEST_CASE("ppm and reduce") {
  CHECK(tickclock__ppm(1000001, 1, 1000000, 1) == doctest::Approx(1.0));
  CHECK(tickclock__ppm(999999, 1, 1000000, 1) == doctest::Approx(-1.0));
  CHECK(tickclock__ppm(3, 2, 3000000, 2000000) == 0.0);
  // huge operands: 128-bit products
  CHECK(tickclock__ppm(UINT64_C(18000000000000000000), 3, UINT64_C(6000000000000000000), 1) == 0.0);
  uint64_t n = 48, d = 36;
  tickclock__reduce(&n, &d);
  CHECK(n == 4);
  CHECK(d == 3);
}

// ---- fixture parser ----------------------------------------------------------

TEST_CASE("fixture parser: leaves, metadata, comments, CRLF") {
  std::string t =
      "# a comment line\r\n"
      "# clocksource: tsc\n"
      "#expect.tsc_hz:  2100000000  \n"
      "\n"
      "00000000 00000000 00000016 756e6547 6c65746e 49656e69\n"
      "00000015 00000000 00000002 000000B8 016e3600 00000000\r\n"
      "  00000007 00000001 00000000 00000000 00000000 00000000  \n";
  Parsed p = parse_text(t, "x.cpuid");
  REQUIRE_MESSAGE(p.bad_line == 0, p.err);
  CHECK(p.fx->n_leaves == 3);
  CHECK(meta(p.fx.get(), "clocksource") == "tsc");
  CHECK(meta(p.fx.get(), "expect.tsc_hz") == "2100000000");
  CHECK(tickclock_fixture_meta_get(p.fx.get(), "a") == nullptr);
  tickclock_cpuid_regs r;
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 0x15, 0, &r) == 1);
  CHECK(r.ebx == 0xb8u);
  CHECK(r.ecx == 0x016e3600u);
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 7, 1, &r) == 1);
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 7, 0, &r) == 1);  // absent: zeros
  CHECK(r.eax == 0);
  CHECK(r.ebx == 0);
}

TEST_CASE("fixture parser: malformed input names the file and line") {
  struct Case {
    const char *text;
    unsigned line;
    const char *what;
  } cases[] = {
      {"00000000 00000000 00000001 0 0 0\n", 1, "8 hex digits"},
      {"# ok\n00000000 00000000 00000001 00000000 00000000\n", 2, "6 fields"},
      {"00000000 00000000 00000001 00000000 00000000 00000000 00000000\n", 1, "trailing"},
      {"00000000 00000000 00000001 00000000 00000000 0000000g\n", 1, "8 hex digits"},
      {"00000000 00000000 00000001 00000000 00000000 000000001\n", 1, "8 hex digits"},
      {"00000000 00000000 0000000d 00000000 00000000 00000000\n\n"
       "00000000 00000000 0000000d 00000000 00000000 00000000\n",
       3, "duplicate"},
      {"# nothing but comments\n", 1, "no CPUID leaves"},
      {"", 1, "no CPUID leaves"},
      {"garbage\n", 1, "8 hex digits"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.text);
    Parsed p = parse_text(c.text, "bad.cpuid");
    CHECK(p.bad_line == c.line);
    CHECK(p.err.rfind("bad.cpuid:" + std::to_string(c.line) + ": ", 0) == 0);
    CHECK(contains(p.err, c.what));
  }
  std::string nul("00000000 00000000 0000000d 00000000 00000000 00000000\n0000\0", 59);
  Parsed p = parse_text(nul, "nul.cpuid");
  CHECK(p.bad_line == 2);
}

// ---- decider ------------------------------------------------------------------

TEST_CASE("decider: bare metal, clocksource tsc, crystal agrees: CPUID 0x15 chosen") {
  Leaves l = intel(0x16, 0x97, false);
  l.set(0x15, 2, 130, 38400000, 0);
  l.set(0x16, 2500, 4900, 100, 0);
  tickclock_evidence ev = evidence(decode(l), "tsc", "tsc hpet acpi_pm");
  Decision d0 = decide(ev);
  CHECK(d0.rc == 1);  // asks for a calibration first
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
  CHECK(d.info->n_freqs == 5);  // calibration, perf_page, cpuid_15h_*, hypervisor, cpuid_16h
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
  Leaves l = intel(0xd, 0x55, true);
  l.set(0x40000000u, 0x40000010u, w("KVMK"), w("VMKV"), w("M\0\0\0"));
  l.set(0x40000001u, 0x01007efb, 0, 0, 0);
  l.set(0x40000010u, 2100000, 1000000, 0, 0);
  tickclock_evidence ev = evidence(decode(l), "kvm-clock", "kvm-clock tsc acpi_pm");
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
    tickclock__strlcpy(ev.available_clocksource, "kvm-clock", sizeof ev.available_clocksource);
    Decision d = decide(ev);
    CHECK(d.rc == 0);
    CHECK(d.info->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(contains(d.tsc_reason(), "does not offer 'tsc'"));
    CHECK(contains(d.info->why, "kvm-clock"));
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
  tickclock__strlcpy(ev.env_value, "tsc", sizeof ev.env_value);
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

TEST_CASE("decider: Xen emulated TSC (vtsc) refused; a Xen stable-TSC promise stands in for invariant") {
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
