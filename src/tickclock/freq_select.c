/* tickclock — frequency-source selection: every source for the counter,
 * found or not (with the reason), each cross-checked against calibration,
 * and the preferred usable one by rank. Pure. */
#include "decide.h"
#include "text.h"

#include <string.h>

/* Preference rank, lower preferred, on bare metal and in a VM (see the
 * frequency policy in README.md). A row matches by name, or by method
 * where name is NULL (a non-x86 counter's stated frequency: an arch
 * register, the device tree, /proc/cpuinfo). A source missing here has no
 * rank and is never picked: adding a source means adding its row.
 *
 * published (bare metal / VM): the frequency is stated by whoever runs
 * the counter (the kernel's perf page, leaf 0x15 with its crystal, the
 * hypervisor, the architecture's own register), so a first state may use
 * it at once and leave the cross-check with calibration to the first
 * refinement. Not the crystal table (our inference), nor leaf 0x16 (a
 * nominal base), nor the device tree / cpuinfo timebase (under QEMU the
 * POWER timebase and RISC-V time run at the host's rate, not the stated
 * one). Nor leaf 0x15 in a VM: a VMM that passes the host's leaf through
 * to a guest whose TSC it scales (after a migration, or with a set
 * tsc-frequency) states the host's rate, off by the scaling ratio (whole
 * percent), which would skew the first millisecond's intervals by as much;
 * in a VM the hypervisor's own leaf is the statement. */
static const struct {
  const char *name;
  int method;
  int rank_metal, rank_vm;
  int published_metal, published_vm;
} tkc_freq_ranks[] = {
    {"perf_page", TICKCLOCK_FREQ_PERF_PAGE, 0, 0, 1, 1},
    {NULL, TICKCLOCK_FREQ_ARCH_REGISTER, 1, 1, 1, 1},
    {NULL, TICKCLOCK_FREQ_OS, 1, 1, 0, 0},
    {"cpuid_15h_crystal", TICKCLOCK_FREQ_CPUID_15H, 1, 3, 1, 0},
    {"cpuid_15h_known_crystal", TICKCLOCK_FREQ_CPUID_15H, 1, 3, 0, 0},
    {"hypervisor_40000010", TICKCLOCK_FREQ_HYPERVISOR, 2, 2, 1, 1},
    {"xen_leaf3", TICKCLOCK_FREQ_HYPERVISOR, 2, 2, 1, 1},
    {"calibration", TICKCLOCK_FREQ_CALIBRATED, 4, 4, 0, 0},
    {"cpuid_15h_from_16h", TICKCLOCK_FREQ_CPUID_15H, 5, 5, 0, 0},
    {"cpuid_16h", TICKCLOCK_FREQ_CPUID_16H, 6, 6, 0, 0},
};

/* c's row in the rank table, or -1 when none names it. */
static int tkc_freq_row(const tickclock_freq_candidate *c) {
  unsigned i;
  for (i = 0; i < sizeof tkc_freq_ranks / sizeof tkc_freq_ranks[0]; i++) {
    const char *n = tkc_freq_ranks[i].name;
    if (n != NULL ? strcmp(c->name, n) == 0 : c->method == tkc_freq_ranks[i].method)
      return (int)i;
  }
  return -1;
}

/* The rank of c, or -1 when no row names it. */
static int tkc_freq_rank(const tickclock_freq_candidate *c, int in_vm) {
  int i = tkc_freq_row(c);
  if (i < 0) return -1;
  return in_vm ? tkc_freq_ranks[i].rank_vm : tkc_freq_ranks[i].rank_metal;
}

int tkc_freq_published(const tickclock_freq_candidate *c, int in_vm) {
  int i = tkc_freq_row(c);
  if (i < 0) return 0;
  return in_vm ? tkc_freq_ranks[i].published_vm : tkc_freq_ranks[i].published_metal;
}

static tickclock_freq_candidate *tkc_add_freq(tickclock_info *out, const char *name,
                                                     int method, uint64_t num, uint64_t den,
                                                     double unc) {
  tickclock_freq_candidate *c;
  if (out->n_freqs >= TICKCLOCK_MAX_FREQS || num == 0 || den == 0) return NULL;
  c = &out->freqs[out->n_freqs++];
  tkc_reduce(&num, &den);
  c->name = name;
  c->method = method;
  c->available = 1;
  c->hz_num = num;
  c->hz_den = den;
  c->hz = (double)num / (double)den;
  c->uncertainty_ppm = unc;
  return c;
}

/* A source that gave no frequency, and why (so the reasons cover every
 * source, not just the ones found). */
static void tkc_absent_freq(tickclock_info *out, const char *name, int method,
                                   const char *why) {
  tickclock_freq_candidate *c;
  if (out->n_freqs >= TICKCLOCK_MAX_FREQS) return;
  c = &out->freqs[out->n_freqs++];
  c->name = name;
  c->method = method;
  tkc_fmt(c->reason, sizeof c->reason, "unavailable: %s", why);
}

/* The perf page rule: ns = cyc * mult >> shift, so Hz = 1e9 * 2^shift /
 * mult, when the kernel publishes a TSC conversion; else why not. */
static void tkc_perf_freq(const tickclock_evidence *ev, tickclock_info *out) {
  const tickclock_perf_page *p = &ev->perf;
  char b[TICKCLOCK_REASON_LEN];
  size_t n = sizeof b;
  if (p->ok && p->cap_user_time && p->time_mult != 0 && p->time_shift <= 32) {
    tkc_add_freq(out, "perf_page", TICKCLOCK_FREQ_PERF_PAGE,
                        UINT64_C(1000000000) << p->time_shift, p->time_mult,
                        1e6 / (double)p->time_mult);
    return;
  }
  if (!p->attempted && ev->clocksource_known && strcmp(ev->clocksource, "tsc") != 0)
    tkc_fmt(b, n,
                   "perf page not read: clocksource '%s'; the page has a TSC conversion "
                   "(cap_user_time) only when the kernel's clocks run on a stable native TSC",
                   ev->clocksource);
  else if (!p->attempted)
    tkc_strlcpy(b, "perf_event mmap page not read (not Linux x86, or built without it)", n);
  else if (!p->ok)
    tkc_fmt(b, n, "perf_event_open/mmap of a self-monitoring event failed (errno %d)",
                   p->err);
  else if (!p->cap_user_time)
    tkc_strlcpy(b, "perf mmap page has cap_user_time = 0: the kernel does not publish a "
                          "TSC-to-ns conversion (its clock is not a stable native TSC)", n);
  else
    tkc_fmt(b, n, "perf mmap page has unusable time_mult %u / time_shift %u",
                   (unsigned)p->time_mult, (unsigned)p->time_shift);
  tkc_absent_freq(out, "perf_page", TICKCLOCK_FREQ_PERF_PAGE, b);
}

/* A CPUID rule's answer: its frequency, or the reason it gave none. */
static void tkc_rule_freq(tickclock_info *out, int ok, const tickclock_freq *f,
                                 const char *absent_name, int absent_method) {
  if (ok)
    tkc_add_freq(out, f->name, f->method, f->hz_num, f->hz_den, f->uncertainty_ppm);
  else
    tkc_absent_freq(out, absent_name, absent_method, f->why);
}

void tkc_collect_freqs(const tickclock_evidence *ev, tickclock_info *out) {
  tickclock_freq f;
  if (ev->cal.ok)
    tkc_add_freq(out, "calibration", TICKCLOCK_FREQ_CALIBRATED, ev->cal.hz_num,
                        ev->cal.hz_den, ev->cal.uncertainty_ppm);
  else
    tkc_absent_freq(out, "calibration", TICKCLOCK_FREQ_CALIBRATED,
                           ev->cal.ns            ? "calibration failed"
                           : ev->cal_deferrable ? "not calibrated yet: a published frequency is "
                                                  "used first, the first refinement measures it"
                                                : "not calibrated: the counter was not going to "
                                                  "be used");
  if (ev->arch_counter != TICKCLOCK_SOURCE_TSC) {
    /* the architecture's own statement, preferred when it agrees with
     * calibration (firmware can program CNTFRQ wrongly; under QEMU the
     * POWER timebase and RISC-V time run at the host's TSC rate) */
    if (ev->arch_nominal.ok)
      tkc_add_freq(out, ev->arch_nominal.name, ev->arch_nominal.method,
                          ev->arch_nominal.hz_num, ev->arch_nominal.hz_den,
                          ev->arch_nominal.uncertainty_ppm);
    return;
  }
  tkc_perf_freq(ev, out);
  tkc_rule_freq(out, tickclock_x86_freq_leaf15(&ev->x86, &f), &f, "cpuid_15h",
                       TICKCLOCK_FREQ_CPUID_15H);
  tkc_rule_freq(out, tickclock_x86_freq_hypervisor(&ev->x86, &f), &f, "hypervisor",
                       TICKCLOCK_FREQ_HYPERVISOR);
  tkc_rule_freq(out, tickclock_x86_freq_leaf16(&ev->x86, &f), &f, "cpuid_16h",
                       TICKCLOCK_FREQ_CPUID_16H);
}

void tkc_check_freqs(const tickclock_evidence *ev, tickclock_info *out, int provisional) {
  unsigned i, j;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    if (!c->available) continue;
    if (provisional && !ev->cal.ok) {
      /* no calibration yet: a published source may stand until the first
       * refinement compares it; nothing else is usable before that */
      c->usable = tkc_freq_published(c, ev->x86.hypervisor);
      tkc_strlcpy(c->reason,
                         c->usable ? "published: used before calibration, cross-checked by "
                                     "the first refinement"
                                   : "not cross-checked: no calibration yet",
                         sizeof c->reason);
      continue;
    }
    if (strcmp(c->name, "calibration") == 0) {
      /* With clocksource tsc, CLOCK_MONOTONIC_RAW is the same TSC read on
       * the same CPU: an offset between CPUs moves both ends alike, so
       * neither calibration nor the drift check against that clock can
       * see it; a cross-CPU warp check can. */
      int raw_is_tsc = ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->os_linux &&
                       strcmp(ev->clocksource, "tsc") == 0;
      c->usable = 1;
      tkc_fmt(c->reason, sizeof c->reason,
                     "measured against CLOCK_MONOTONIC_RAW over %.1f ms, +-%.2f ppm%s",
                     (double)ev->cal.ns / 1e6, ev->cal.uncertainty_ppm,
                     raw_is_tsc ? "; that clock is this TSC: blind to per-CPU offsets "
                                  "(validate: warp check)"
                                : "");
      continue;
    }
    if (!ev->cal.ok) {
      c->usable = 0;
      tkc_strlcpy(c->reason, "not cross-checked: no calibration", sizeof c->reason);
      continue;
    }
    c->checked = 1;
    c->ppm_vs_calibration = tkc_ppm(c->hz_num, c->hz_den, ev->cal.hz_num, ev->cal.hz_den);
    c->bound_ppm = TICKCLOCK_AGREE_PPM + ev->cal.uncertainty_ppm + c->uncertainty_ppm;
    if (c->ppm_vs_calibration > c->bound_ppm || c->ppm_vs_calibration < -c->bound_ppm) {
      c->usable = 0;
      tkc_fmt(c->reason, sizeof c->reason,
                     "refused: %.3f MHz disagrees with calibration by %+.1f ppm (bound %.1f ppm)",
                     c->hz / 1e6, c->ppm_vs_calibration, c->bound_ppm);
    } else {
      c->usable = 1;
      tkc_fmt(c->reason, sizeof c->reason,
                     "%sagrees with calibration: %+.2f ppm (bound %.1f ppm)",
                     strcmp(c->name, "cpuid_15h_known_crystal") == 0 ? "table crystal " : "",
                     c->ppm_vs_calibration, c->bound_ppm);
    }
  }
  out->max_disagreement_ppm = 0;
  for (i = 0; i < out->n_freqs; i++)
    for (j = 0; j < out->n_freqs; j++) {
      double d = i == j || !out->freqs[i].available || !out->freqs[j].available
                     ? 0
                     : tkc_ppm(out->freqs[i].hz_num, out->freqs[i].hz_den,
                                         out->freqs[j].hz_num, out->freqs[j].hz_den);
      double a = d < 0 ? -d : d;
      out->freq_disagreement_ppm[i][j] = d;
      if (a > out->max_disagreement_ppm) out->max_disagreement_ppm = a;
    }
}

tickclock_freq_candidate *tkc_pick_freq(const tickclock_evidence *ev,
                                               tickclock_info *out) {
  tickclock_freq_candidate *best = NULL;
  unsigned i;
  int in_vm = ev->x86.hypervisor;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    if (!c->usable) continue;
    if (tkc_freq_rank(c, in_vm) < 0) { /* no row in the rank table */
      char tmp[TICKCLOCK_REASON_LEN];
      tkc_fmt(tmp, sizeof tmp, "%s; not used: no rank for source '%s'", c->reason, c->name);
      tkc_strlcpy(c->reason, tmp, sizeof c->reason);
      c->usable = 0;
      continue;
    }
    if (best == NULL || tkc_freq_rank(c, in_vm) < tkc_freq_rank(best, in_vm))
      best = c;
  }
  if (best) {
    for (i = 0; i < out->n_freqs; i++) {
      tickclock_freq_candidate *c = &out->freqs[i];
      if (c != best && c->usable && tkc_freq_rank(c, in_vm) > tkc_freq_rank(best, in_vm)) {
        char tmp[TICKCLOCK_REASON_LEN];
        tkc_fmt(tmp, sizeof tmp, "%s; not used: %s ranks higher", c->reason, best->name);
        tkc_strlcpy(c->reason, tmp, sizeof c->reason);
      }
    }
  }
  return best;
}
