/* tickclock — the paravirtual clock page's claim: where the kernel's
 * clocksource is kvm-clock (or Xen's, with the same page) or Hyper-V's
 * TSC page, the kernel's own clock is the TSC scaled by a page the host
 * writes, and the vDSO reads it only while the page passes the checks
 * below. The page then states the TSC's rate the way the kernel uses it.
 * Pure: the gatherer (evidence.c) reads the page through the platform,
 * the decider reads this claim. */
#include "evidence.h"
#include "text.h"

#include <string.h>

/* A negative shift divides: ns = (delta >> -shift) * mul >> 32. KVM
 * picks the shift that puts mul in [2^31, 2^32); a TSC between 1 MHz and
 * 100 GHz needs a shift within these. */
#define TKC_PV_SHIFT_MIN (-8)
#define TKC_PV_SHIFT_MAX 12
#define TKC_PV_HZ_MIN 1e6
#define TKC_PV_HZ_MAX 1e11

int tkc_pv_kind_of(const char *cs) {
  if (strcmp(cs, "kvm-clock") == 0 || strcmp(cs, "xen") == 0) return TKC_PV_KVM;
  if (strcmp(cs, "hyperv_clocksource_tsc_page") == 0) return TKC_PV_HYPERV;
  return TKC_PV_NONE;
}

int tkc_pv_same(const tickclock_pvclock_page *a, const tickclock_pvclock_page *b) {
  if (a->kind != b->kind) return 0;
  if (a->kind == TKC_PV_HYPERV) return a->scale == b->scale && a->offset == b->offset;
  return a->mul == b->mul && a->shift == b->shift && a->flags == b->flags &&
         a->tsc_timestamp == b->tsc_timestamp && a->system_time == b->system_time;
}

static const char *tkc_pv_absent_why(int absent) {
  switch (absent) {
    case TKC_PV_ABSENT_NO_MAPPING:
      return "no [vvar_vclock] or [vvar] mapping in /proc/self/maps";
    case TKC_PV_ABSENT_UNMAPPED:
      return "its page is not mapped into this process (copying it gave EFAULT)";
    case TKC_PV_ABSENT_TORN:
      return "never read twice with the same even version: the host kept writing it";
    case TKC_PV_ABSENT_NO_MAPS:
      return "/proc/self/maps or a pipe to probe the page could not be opened";
    default:
      return "not read";
  }
}

/* pvclock: ns = ((tsc << shift) * mul) >> 32, so hz = 1e9 * 2^(32 - shift) / mul:
 * 2^(32 - shift) ticks take mul ns. */
static void tkc_pv_kvm_claim(const tickclock_pvclock_page *pv, tickclock_freq *c) {
  char *b = c->why;
  size_t n = sizeof c->why;
  double hz;
  if (pv->version & 1u) {
    tkc_fmt(b, n, "kvm-clock page version %u is odd: the host was writing it", pv->version);
    return;
  }
  if (!(pv->flags & TKC_PVCLOCK_STABLE)) {
    tkc_fmt(b, n,
            "kvm-clock page flags 0x%x lack the stable bit (PVCLOCK_TSC_STABLE_BIT): the host "
            "does not promise one TSC for every vCPU",
            (unsigned)pv->flags);
    return;
  }
  if (pv->mul == 0 || pv->shift < TKC_PV_SHIFT_MIN || pv->shift > TKC_PV_SHIFT_MAX) {
    tkc_fmt(b, n, "kvm-clock page has unusable tsc_to_system_mul %u / tsc_shift %d",
            (unsigned)pv->mul, (int)pv->shift);
    return;
  }
  tkc_ratio_hz(UINT64_C(1) << (32 - pv->shift), pv->mul, &c->hz_num, &c->hz_den);
  hz = (double)c->hz_num / (double)c->hz_den;
  if (hz < TKC_PV_HZ_MIN || hz > TKC_PV_HZ_MAX) {
    tkc_fmt(b, n, "kvm-clock page states %.0f Hz (mul %u, shift %d): no TSC runs at that", hz,
            (unsigned)pv->mul, (int)pv->shift);
    c->hz_num = c->hz_den = 0;
    return;
  }
  c->ok = 1;
  c->uncertainty_ppm = 1e6 / (double)pv->mul; /* mul's last bit */
}

/* Hyper-V: 100 ns units = tsc * scale >> 64, so hz = 1e7 * 2^64 / scale,
 * taken from scale's top bits (2^40 ticks take (scale >> 24) * 100 ns). */
static void tkc_pv_hyperv_claim(const tickclock_pvclock_page *pv, tickclock_freq *c) {
  double hz;
  if (pv->sequence == 0 || pv->sequence == UINT32_MAX) {
    tkc_fmt(c->why, sizeof c->why, "Hyper-V TSC page sequence %u: the host marks the page invalid",
            (unsigned)pv->sequence);
    return;
  }
  if ((pv->scale >> 24) == 0 || (pv->scale >> 24) > (UINT64_MAX / 100)) {
    tkc_fmt(c->why, sizeof c->why, "Hyper-V TSC page has unusable tsc_scale 0x%016llx",
            (unsigned long long)pv->scale);
    return;
  }
  tkc_ratio_hz(UINT64_C(1) << 40, (pv->scale >> 24) * 100, &c->hz_num, &c->hz_den);
  hz = (double)c->hz_num / (double)c->hz_den;
  if (hz < TKC_PV_HZ_MIN || hz > TKC_PV_HZ_MAX) {
    tkc_fmt(c->why, sizeof c->why, "Hyper-V TSC page states %.0f Hz: no TSC runs at that", hz);
    c->hz_num = c->hz_den = 0;
    return;
  }
  c->ok = 1;
  c->uncertainty_ppm = 1e6 / (double)(pv->scale >> 24);
}

void tkc_pv_claim(const tickclock_pvclock_page *pv, const char *cs, tickclock_freq *c) {
  memset(c, 0, sizeof *c);
  c->name = "pvclock_page";
  c->method = TICKCLOCK_FREQ_PVCLOCK;
  c->source = TKC_SRC_PVCLOCK;
  if (pv->kind == TKC_PV_NONE) {
    if (pv->absent == TKC_PV_ABSENT_NOT_TRIED && tkc_pv_kind_of(cs) != TKC_PV_NONE)
      tkc_fmt(c->why, sizeof c->why, "the clock page of '%s' was not read", cs);
    else if (pv->absent == TKC_PV_ABSENT_NOT_TRIED)
      tkc_fmt(c->why, sizeof c->why,
              "not read: clocksource '%s'; the kernel keeps a TSC clock page only for "
              "kvm-clock, xen or hyperv_clocksource_tsc_page",
              cs[0] ? cs : "unknown");
    else
      tkc_fmt(c->why, sizeof c->why, "paravirtual clock page (clocksource '%s'): %s", cs,
              tkc_pv_absent_why(pv->absent));
    return;
  }
  if (pv->kind == TKC_PV_KVM)
    tkc_pv_kvm_claim(pv, c);
  else
    tkc_pv_hyperv_claim(pv, c);
}
