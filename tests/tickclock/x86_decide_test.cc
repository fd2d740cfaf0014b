// Unit tests of the pure x86 pieces: decoder gating, frequency rules,
// rational helpers, the fixture parser and the decider's policy, on
// synthetic leaves built here.
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

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
    uint32_t model;
    uint64_t tsc_hz;
  } cases[] = {{0x5f, UINT64_C(2200000000)}, {0x4e, UINT64_C(2112000000)},
               {0x5e, UINT64_C(2112000000)}, {0x8e, UINT64_C(2112000000)},
               {0x9e, UINT64_C(2112000000)}, {0x5c, UINT64_C(1689600000)}};
  for (auto c : cases) {
    CAPTURE(c.model);
    Leaves l = intel(0x16, c.model, false);
    l.set(0x15, 2, 176, 0, 0);
    // a base that fits the crystal (within 1 %): a check, not the value
    l.set(0x16, (uint32_t)(c.tsc_hz / 1000000), 4000, 100, 0);
    tickclock_x86_facts f = decode(l);
    tickclock_freq fr;
    REQUIRE(tickclock_x86_freq_leaf15(&f, &fr));
    CHECK(std::string(fr.name) == "cpuid_15h_known_crystal");
    CHECK(fr.hz_num == c.tsc_hz);  // crystal * 176 / 2, written out
    CHECK(fr.hz_den == 1);
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
  CHECK(tickclock__ppm(2, 1, 1, 1) == 1e6);
  CHECK(tickclock__ppm(1, 2, 1, 1) == -5e5);
  uint64_t n = 48, d = 36;
  tickclock__reduce(&n, &d);
  CHECK(n == 4);
  CHECK(d == 3);
  n = 6, d = 4;  // gcd 2
  tickclock__reduce(&n, &d);
  CHECK(n == 3);
  CHECK(d == 2);
  n = 7, d = 0;  // den 0: untouched
  tickclock__reduce(&n, &d);
  CHECK(n == 7);
  CHECK(d == 0);
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

// ---- documented limits, each pinned just inside and just outside ----------

namespace {

// Calibration placed so that a source of exactly hz disagrees with it by
// ppm_tenths / 10 ppm: cal = hz * 1e7 / (1e7 + ppm_tenths).
void calibrated_at(tickclock_evidence *ev, uint64_t hz, int64_t ppm_tenths, double unc) {
  calibrated(ev, hz * UINT64_C(10000000), (uint64_t)(INT64_C(10000000) + ppm_tenths), unc);
}

// A bare-metal Intel CPU whose leaf 0x15 states exactly 2.4 GHz (24 MHz
// crystal x 200/2) and whose leaf 0x16 is absent.
tickclock_x86_facts crystal_2400() {
  Leaves l = intel(0x15, 0x97, false);
  l.set(0x15, 2, 200, 24000000, 0);
  return decode(l);
}

}  // namespace

TEST_CASE("limit: agreement bound is 25 ppm + calibration uncertainty + the source's quantisation") {
  tickclock_x86_facts x = crystal_2400();
  struct Case {
    int64_t tenths;  // the crystal's disagreement with calibration, 0.1 ppm
    double cal_unc;
    bool agrees;
  } cases[] = {
      {+245, 0.0, true},   {+255, 0.0, false}, {-245, 0.0, true},  {-255, 0.0, false},
      {+255, 1.0, true},   {+265, 1.0, false}, {-255, 1.0, true},  {-265, 1.0, false},
      {+345, 10.0, true},  {+355, 10.0, false}, {-345, 10.0, true}, {-355, 10.0, false},
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
      {30.0, 30.0, TICKCLOCK_SOURCE_TSC},    {30.5, 30.0, TICKCLOCK_SOURCE_SYSTEM},
      {29.5, 30.0, TICKCLOCK_SOURCE_TSC},    {60.5, 30.0, TICKCLOCK_SOURCE_SYSTEM},
      {900.0, 0.0, TICKCLOCK_SOURCE_TSC},    // clock_gettime not measured: no rule
      {0.0, 30.0, TICKCLOCK_SOURCE_TSC},     // counter not measured: no rule
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

// ---- decider rules seen from both sides ---------------------------------------

TEST_CASE("decider: Hyper-V's 0x40000003 EAX[15] grants access, it does not stand in for the invariant bit") {
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

TEST_CASE("decider: the perf page's frequency is 1e9 * 2^shift / mult; shifts past 32 are no source") {
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

// ---- decoder gates and bit positions -----------------------------------------

TEST_CASE("decoder: range gates at their edges") {
  // extended maximum 0x80010000 is outside 0x80000000..0x8000ffff
  Leaves e = intel(0xd, 0x55, false);
  e.set(0x80000000u, 0x80010000u, 0, 0, 0);
  CHECK(decode(e).max_ext_leaf == 0);
  CHECK_FALSE(e.was_asked(0x80000007u));
  e.set(0x80000000u, 0x8000ffffu, 0, 0, 0);
  CHECK(decode(e).max_ext_leaf == 0x8000ffffu);
  // a hypervisor base whose EAX is past base + 0xff is no range
  Leaves h = intel(0xd, 0x55, true);
  h.set(0x40000000u, 0x40000100u, w("VMwa"), w("reVM"), w("ware"));
  h.set(0x40000010u, 2400000, 1000, 0, 0);
  CHECK(decode(h).hv_valid == 0);
  h.set(0x40000000u, 0x400000ffu, w("VMwa"), w("reVM"), w("ware"));
  tickclock_x86_facts hf = decode(h);
  CHECK(hf.hv_valid == 1);
  CHECK(hf.timing_tsc_khz == 2400000u);
  // a hypervisor base below its block is no range either
  h.set(0x40000000u, 0x3fffffffu, w("VMwa"), w("reVM"), w("ware"));
  CHECK(decode(h).hv_valid == 0);
  // the basic range: leaf 0x16 exactly at the maximum is read
  Leaves b = intel(0x16, 0x55, false);
  b.set(0x16, 0xabcd0000u | 2500, 0x12340000u | 3900, 0xffff0000u | 100, 0);
  tickclock_x86_facts bf = decode(b);
  CHECK(bf.leaf16_valid == 1);
  CHECK(bf.base_mhz == 2500u);  // EAX[15:0] only
  CHECK(bf.max_mhz == 3900u);
  CHECK(bf.bus_mhz == 100u);
}

TEST_CASE("decoder: each feature bit at its position, not its neighbour's") {
  struct Bit {
    uint32_t leaf;
    int reg;  // 0 eax 1 ebx 2 ecx 3 edx
    int bit;
    int tickclock_x86_facts::*field;
  } bits[] = {
      {1, 3, 4, &tickclock_x86_facts::tsc},
      {1, 2, 31, &tickclock_x86_facts::hypervisor},
      {7, 1, 1, &tickclock_x86_facts::tsc_adjust},
      {0x80000001u, 3, 27, &tickclock_x86_facts::rdtscp},
      {0x80000007u, 3, 8, &tickclock_x86_facts::invariant_tsc},
  };
  for (const Bit &b : bits) {
    for (int shift : {-1, 0, +1}) {
      if (b.bit + shift > 31) continue;
      CAPTURE(b.leaf);
      CAPTURE(b.bit);
      CAPTURE(shift);
      Leaves l;
      l.set(0, 0xd, w("Genu"), w("ntel"), w("ineI"));
      l.set(0x80000000u, 0x80000008u, 0, 0, 0);
      uint32_t r[4] = {0, 0, 0, 0};
      r[b.reg] = 1u << (b.bit + shift);
      if (b.leaf == 1) r[0] = 0x000906a3;  // a family 6 signature: nothing in the other regs
      l.set(b.leaf, r[0], r[1], r[2], r[3]);
      tickclock_x86_facts f = decode(l);
      CHECK(f.*(b.field) == (shift == 0 ? 1 : 0));
    }
  }
}

TEST_CASE("decoder: display family and model from the extended fields") {
  struct Case {
    uint32_t eax, family, model, stepping;
  } cases[] = {
      {0x000906ea, 6, 0x9e, 0xa},      // Coffee Lake: 6 with extended model 9
      {0x00a00f11, 0x19, 0x01, 1},     // AMD Zen 3: 0xf + 0x0a
      {0x00b40f40, 0x1a, 0x44, 0},     // AMD Zen 5: 0xf + 0x0b, model with extension
      {0x00000f29, 0xf, 0x2, 9},       // Pentium 4: 0xf + 0
      {0x00010676, 6, 0x17, 6},        // Penryn
      {0x00010592, 5, 0x9, 2},         // family 5: the extended model is not applied
      {0x0ff00f00, 0xf + 0xff, 0, 0},  // extended family at its maximum
  };
  for (const Case &c : cases) {
    CAPTURE(c.eax);
    Leaves l;
    l.set(0, 1, w("Genu"), w("ntel"), w("ineI"));
    l.set(1, c.eax, 0, 0, 0);
    tickclock_x86_facts f = decode(l);
    CHECK(f.family == c.family);
    CHECK(f.model == c.model);
    CHECK(f.stepping == c.stepping);
  }
}

TEST_CASE("0x15: the known-crystal table is family 6 only") {
  Leaves l = intel(0x16, 0x5e, false);
  l.set(1, 0x00050fe0, 0, 0, 0x10);  // family 0xf, display model 0x5e
  l.set(0x16, 0, 0, 0, 0);
  l.set(0x15, 2, 176, 0, 0);
  tickclock_x86_facts f = decode(l);
  CHECK(f.family != 6);
  tickclock_freq fr;
  CHECK_FALSE(tickclock_x86_freq_leaf15(&f, &fr));  // leaf 0x16 is absent (0 base)
}

// ---- fixture evidence: each metadata key read as the header says ---------------

TEST_CASE("fixture evidence: metadata keys") {
  std::string t =
      "# clocksource: kvm-clock\n"
      "# available_clocksource: kvm-clock tsc acpi_pm\n"
      "# calibration_hz: 2100000000.5\n"
      "# calibration_ppm: 7.5\n"
      "# read_ns.tsc: 12.5\n"
      "# read_ns.system: 31.25\n"
      "# perf.time_mult: 0x1234\n"
      "# perf.time_shift: 10\n"
      "00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n";
  Parsed p = parse_text(t, "meta.cpuid");
  REQUIRE(p.bad_line == 0);
  tickclock_evidence ev;
  tickclock_fixture_evidence(p.fx.get(), &ev);
  CHECK(ev.arch_counter == TICKCLOCK_SOURCE_TSC);
  CHECK(ev.x86.have_cpuid == 1);
  CHECK(ev.os_linux == 1);
  CHECK(ev.clocksource_known == 1);
  CHECK(std::string(ev.clocksource) == "kvm-clock");
  CHECK(ev.available_known == 1);
  CHECK(std::string(ev.available_clocksource) == "kvm-clock tsc acpi_pm");
  CHECK(ev.cal.ok == 1);
  CHECK(ev.cal.hz_num == UINT64_C(4200000001));
  CHECK(ev.cal.hz_den == 2);
  CHECK(ev.cal.uncertainty_ppm == 7.5);
  CHECK(ev.counter_read_ns == 12.5);
  CHECK(ev.os_read_ns == 31.25);
  CHECK(ev.perf.ok == 1);
  CHECK(ev.perf.cap_user_time == 1);
  CHECK(ev.perf.time_mult == 0x1234u);
  CHECK(ev.perf.time_shift == 10u);
  CHECK(ev.tsc_prctl == TICKCLOCK_PRCTL_ENABLED);

  // NUM/DEN, no ppm (default 1), no clocksource (Linux checks off)
  Parsed q = parse_text("# calibration_hz: 7000000000/3\n"
                        "00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n",
                        "q.cpuid");
  REQUIRE(q.bad_line == 0);
  tickclock_fixture_evidence(q.fx.get(), &ev);
  CHECK(ev.cal.hz_num == UINT64_C(7000000000));
  CHECK(ev.cal.hz_den == 3);
  CHECK(ev.cal.uncertainty_ppm == 1.0);
  CHECK(ev.os_linux == 0);
  CHECK(ev.clocksource_known == 0);
  CHECK(ev.perf.attempted == 0);
  CHECK(ev.counter_read_ns == 0);

  // malformed calibration: none
  for (const char *bad : {"0", "x", "21/0", "21/", "2.1e9", "-5"}) {
    CAPTURE(bad);
    Parsed b = parse_text(std::string("# calibration_hz: ") + bad +
                              "\n00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n",
                          "b.cpuid");
    REQUIRE(b.bad_line == 0);
    tickclock_fixture_evidence(b.fx.get(), &ev);
    CHECK(ev.cal.ok == 0);
  }

  // a fixture without leaf 0 describes no CPUID
  Parsed n = parse_text("00000001 00000000 000906a3 00000000 00000000 00000010\n", "n.cpuid");
  REQUIRE(n.bad_line == 0);
  tickclock_fixture_evidence(n.fx.get(), &ev);
  CHECK(ev.x86.have_cpuid == 0);
}
