// Synthetic CPUID leaves and evidence for the x86 suites (cpuid_x86_test,
// x86_decide_test, decide_limits_test): a leaf source that records what
// was asked, CPUs built from a few leaves, evidence around them.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

using namespace tctest;

namespace x86t {

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
inline uint32_t w(const char *s4) {
  const unsigned char *u = reinterpret_cast<const unsigned char *>(s4);
  return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

// An Intel CPU: max basic leaf, family 6 model `model`, leaf 1 ECX bit 31 = hv.
inline Leaves intel(uint32_t max, uint32_t model, bool hv) {
  Leaves l;
  l.set(0, max, w("Genu"), w("ntel"), w("ineI"));
  uint32_t eax = ((model >> 4) << 16) | (6u << 8) | ((model & 0xf) << 4) | 3;
  l.set(1, eax, 0, hv ? 0x80000000u : 0, 0x10);  // EDX[4] TSC
  l.set(7, 0, 0x2, 0, 0);                        // TSC_ADJUST
  l.set(0x80000000u, 0x80000008u, 0, 0, 0);
  l.set(0x80000001u, 0, 0, 0, 1u << 27);
  l.set(0x80000007u, 0, 0, 0, 1u << 8);
  return l;
}

inline tickclock_x86_facts decode(Leaves &l) {
  tickclock_x86_facts f;
  tickclock_x86_decode(Leaves::fn, &l, &f);
  return f;
}

// Evidence of a Linux x86 machine with these facts and clocksource.
inline tickclock_evidence evidence(const tickclock_x86_facts &x, const char *cs,
                                   const char *avail) {
  tickclock_evidence ev;
  std::memset(&ev, 0, sizeof ev);
  ev.arch_counter = TICKCLOCK_SOURCE_TSC;
  ev.x86 = x;
  ev.os_linux = 1;
  ev.tsc_prctl = TICKCLOCK_PRCTL_ENABLED;
  ev.clocksource_known = 1;
  tkc_strlcpy(ev.clocksource, cs, sizeof ev.clocksource);
  ev.available_known = 1;
  tkc_strlcpy(ev.available_clocksource, avail, sizeof ev.available_clocksource);
  ev.counter_read_ns = 10;
  ev.os_read_ns = 30;
  ev.os_resolution_ns = 1;
  return ev;
}

inline void calibrated(tickclock_evidence *ev, uint64_t num, uint64_t den, double unc = 1.0) {
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

inline Decision decide(const tickclock_evidence &edited) {
  Decision d;
  tickclock_evidence ev = edited;
  list_claims(&ev);
  d.rc = tickclock_decide(&ev, d.info.get());
  if (d.rc == 0) {
    std::string m = malformed(*d.info);
    CHECK_MESSAGE(m == "", m);
  }
  return d;
}

inline bool contains(const std::string &s, const char *sub) {
  return s.find(sub) != std::string::npos;
}

// Calibration placed so that a source of exactly hz disagrees with it by
// ppm_tenths / 10 ppm: cal = hz * 1e7 / (1e7 + ppm_tenths).
inline void calibrated_at(tickclock_evidence *ev, uint64_t hz, int64_t ppm_tenths, double unc) {
  calibrated(ev, hz * UINT64_C(10000000), (uint64_t)(INT64_C(10000000) + ppm_tenths), unc);
}

// A bare-metal Intel CPU whose leaf 0x15 states exactly 2.4 GHz (24 MHz
// crystal x 200/2) and whose leaf 0x16 is absent.
inline tickclock_x86_facts crystal_2400() {
  Leaves l = intel(0x15, 0x97, false);
  l.set(0x15, 2, 200, 24000000, 0);
  return decode(l);
}

}  // namespace x86t

using namespace x86t;
