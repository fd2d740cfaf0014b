// The three CPUID paths of cpuid_shim.h give identical leaves.
//
// This file is compiled once per path (tests/BUILD: cpuid_shim_{cpuidex,
// cpuid_count,asm}_test, each with one TICKCLOCK_CPUID_USE_* define). Each
// build compares its forced path with (a) a reference CPUID written here in
// plain inline asm and (b) the library's tickclock_cpuid_native (default
// path), over a set of leaves of this CPU, with the thread pinned to one CPU
// (leaf 1 EBX and leaf 0xB EDX carry the APIC id). All three builds
// passing means all three paths agree.
#include <sched.h>

#include <cstdint>
#include <cstring>
#include <vector>
#include <ostream>

#include "doctest/doctest.h"
#include "tests/tickclock/cpuidex_config.h"

#if defined(TICKCLOCK_CPUID_USE_CPUIDEX) && !TICKCLOCK_TEST_HAVE_CPUIDEX
// This compiler's <cpuid.h> does not declare __cpuidex (clang 13-16):
// the path cannot be built here; the test case below is skipped.
#undef TICKCLOCK_CPUID_USE_CPUIDEX
#define TICKCLOCK_CPUID_USE_ASM 1
#define SHIM_PATH_UNAVAILABLE 1
#endif

#include "cpuid_shim.h"
#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
namespace {

void ref_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
#if defined(__i386__)
  __asm__ __volatile__("pushl %%ebx\n\tcpuid\n\tmovl %%ebx, %1\n\tpopl %%ebx"
                       : "=a"(r[0]), "=r"(r[1]), "=c"(r[2]), "=d"(r[3])
                       : "0"(leaf), "2"(sub));
#else
  uint32_t a, b, c, d;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "0"(leaf), "2"(sub));
  r[0] = a;
  r[1] = b;
  r[2] = c;
  r[3] = d;
#endif
}

struct Q {
  uint32_t leaf, sub;
};

std::vector<Q> leaves_of_this_cpu() {
  std::vector<Q> q;
  uint32_t r[4];
  ref_cpuid(0, 0, r);
  uint32_t max = r[0];
  const uint32_t basic[][2] = {{0, 0},   {1, 0},   {6, 0},    {7, 0},   {7, 1},
                               {0xd, 0}, {0xd, 1}, {0x15, 0}, {0x16, 0}};
  for (auto &b : basic)
    if (b[0] <= max) q.push_back({b[0], b[1]});
  ref_cpuid(0x80000000u, 0, r);
  uint32_t emax = r[0];
  for (uint32_t l = 0x80000000u; l <= 0x80000008u && l <= emax && emax <= 0x8000ffffu; l++)
    q.push_back({l, 0});
  ref_cpuid(1, 0, r);
  if ((r[2] >> 31) & 1) {
    q.push_back({0x40000000u, 0});
    q.push_back({0x40000001u, 0});
  }
  return q;
}

}  // namespace

#if defined(SHIM_PATH_UNAVAILABLE)
constexpr bool kUnavailable = true;
#else
constexpr bool kUnavailable = false;
#endif

TEST_CASE("forced CPUID path is the one compiled" * doctest::skip(kUnavailable)) {
  CHECK(std::strcmp(TKC_CPUID_PATH_NAME, EXPECT_CPUID_PATH) == 0);
}

TEST_CASE("forced CPUID path gives the same leaves as a reference CPUID and the library" *
          doctest::skip(kUnavailable)) {
  // Pin: leaf 1 EBX[31:24] and leaf 0xB EDX differ between CPUs.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  REQUIRE(sched_setaffinity(0, sizeof set, &set) == 0);
  std::vector<Q> q = leaves_of_this_cpu();
  REQUIRE(q.size() >= 3);
  for (const Q &l : q) {
    uint32_t ref[4], shim[4];
    tickclock_cpuid_regs lib;
    ref_cpuid(l.leaf, l.sub, ref);
    tkc_cpuid_insn(l.leaf, l.sub, shim);
    REQUIRE(tickclock_cpuid_native(nullptr, l.leaf, l.sub, &lib) == 1);
    CAPTURE(l.leaf);
    CAPTURE(l.sub);
    CHECK(shim[0] == ref[0]);
    CHECK(shim[1] == ref[1]);
    CHECK(shim[2] == ref[2]);
    CHECK(shim[3] == ref[3]);
    CHECK(lib.eax == ref[0]);
    CHECK(lib.ebx == ref[1]);
    CHECK(lib.ecx == ref[2]);
    CHECK(lib.edx == ref[3]);
  }
  // the vendor string, through the shim
  uint32_t r[4];
  tkc_cpuid_insn(0, 0, r);
  char v[13];
  std::memcpy(v, &r[1], 4);
  std::memcpy(v + 4, &r[3], 4);
  std::memcpy(v + 8, &r[2], 4);
  v[12] = 0;
  CHECK((std::strcmp(v, "GenuineIntel") == 0 || std::strcmp(v, "AuthenticAMD") == 0 ||
         std::strcmp(v, "HygonGenuine") == 0 || std::strcmp(v, "CentaurHauls") == 0 ||
         std::strcmp(v, "  Shanghai  ") == 0));
}
#endif
