// The pure x86 CPUID pieces on synthetic leaves: the decoder and its range
// gates (cpuid_x86.c), the frequency rules and the crystal table
// (crystal_x86.c), the rational helpers they use.
#include <cmath>

#include "doctest/doctest.h"
#include "tests/support/x86_leaves.h"

using namespace tctest;

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
  Leaves l = intel(0xd, 0x55, false);  // max basic 0xd
  l.set(0x15, 2, 184, 25000000, 0);    // present but beyond the max
  l.set(0x16, 2600, 3900, 100, 0);
  l.set(0x80000000u, 0x80000004u, 0, 0, 0);                          // 0x80000007 beyond
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
  CHECK(std::fabs(tkc_ppm(b.hz_num, b.hz_den, a.hz_num, a.hz_den) - (-1996.0)) < 0.1);
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
  CHECK(tkc_ppm(1000001, 1, 1000000, 1) == doctest::Approx(1.0));
  CHECK(tkc_ppm(999999, 1, 1000000, 1) == doctest::Approx(-1.0));
  CHECK(tkc_ppm(3, 2, 3000000, 2000000) == 0.0);
  // huge operands: 128-bit products
  CHECK(tkc_ppm(UINT64_C(18000000000000000000), 3, UINT64_C(6000000000000000000), 1) == 0.0);
  CHECK(tkc_ppm(2, 1, 1, 1) == 1e6);
  CHECK(tkc_ppm(1, 2, 1, 1) == -5e5);
  uint64_t n = 48, d = 36;
  tkc_reduce(&n, &d);
  CHECK(n == 4);
  CHECK(d == 3);
  n = 6, d = 4;  // gcd 2
  tkc_reduce(&n, &d);
  CHECK(n == 3);
  CHECK(d == 2);
  n = 7, d = 0;  // den 0: untouched
  tkc_reduce(&n, &d);
  CHECK(n == 7);
  CHECK(d == 0);
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
