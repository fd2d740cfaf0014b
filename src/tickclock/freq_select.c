/* tickclock — frequency-source selection: every source for the counter,
 * found or not (with the reason), each cross-checked against calibration,
 * and the preferred usable one by rank. Pure. */
#include "decide.h"
#include "text.h"

#include <string.h>

/* Preference rank, lower preferred, on bare metal and in a VM (see the
 * frequency policy in README.md), one row per source (TKC_SRC_*). A
 * source missing here has no rank and is never picked: adding a source
 * means adding its row.
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
  int source;
  int rank_metal, rank_vm;
  int published_metal, published_vm;
} tkc_freq_ranks[] = {
    {TKC_SRC_PERF_PAGE, 0, 0, 1, 1},       {TKC_SRC_ARCH_REGISTER, 1, 1, 1, 1},
    {TKC_SRC_ARCH_FILE, 1, 1, 0, 0},       {TKC_SRC_LEAF15_CRYSTAL, 1, 3, 1, 0},
    {TKC_SRC_LEAF15_TABLE, 1, 3, 0, 0},    {TKC_SRC_HV_TIMING, 2, 2, 1, 1},
    {TKC_SRC_XEN_LEAF3, 2, 2, 1, 1},       {TKC_SRC_CALIBRATION, 4, 4, 0, 0},
    {TKC_SRC_LEAF15_FROM_16H, 5, 5, 0, 0}, {TKC_SRC_LEAF16, 6, 6, 0, 0},
    {TKC_SRC_PVCLOCK, 0, 0, 1, 1},
};

/* source's row in the rank table, or -1 when none names it. */
static int tkc_freq_row(int source) {
  unsigned i;
  for (i = 0; i < sizeof tkc_freq_ranks / sizeof tkc_freq_ranks[0]; i++)
    if (tkc_freq_ranks[i].source == source) return (int)i;
  return -1;
}

/* The rank of source, or -1 when no row names it. */
static int tkc_freq_rank(int source, int in_vm) {
  int i = tkc_freq_row(source);
  if (i < 0) return -1;
  return in_vm ? tkc_freq_ranks[i].rank_vm : tkc_freq_ranks[i].rank_metal;
}

int tkc_freq_published(int source, int in_vm) {
  int i = tkc_freq_row(source);
  if (i < 0) return 0;
  return in_vm ? tkc_freq_ranks[i].published_vm : tkc_freq_ranks[i].published_metal;
}

/* A claim into the next entry of out->freqs (its source into src[]): its
 * frequency, or why it has none (so the reasons cover every source, not
 * just the ones found). */
static void tkc_add_freq(tickclock_info *out, int *src, const tickclock_freq *f) {
  tickclock_freq_candidate *c;
  if (out->n_freqs >= TICKCLOCK_MAX_FREQS) return;
  src[out->n_freqs] = f->ok ? f->source : TKC_SRC_NONE;
  c = &out->freqs[out->n_freqs++];
  c->name = f->name;
  c->method = f->method;
  if (!f->ok) {
    tkc_fmt(c->reason, sizeof c->reason, "unavailable: %s", f->why);
    return;
  }
  c->available = 1;
  c->hz_num = f->hz_num;
  c->hz_den = f->hz_den;
  c->hz = (double)f->hz_num / (double)f->hz_den;
  c->uncertainty_ppm = f->uncertainty_ppm;
}

void tkc_collect_freqs(const tickclock_evidence *ev, tickclock_info *out, int *src) {
  unsigned i;
  for (i = 0; i < ev->n_claims; i++) tkc_add_freq(out, src, &ev->claims[i]);
}

/* The earlier refusal of the claim (source, num/den), or NULL. */
static const tkc_refusal *tkc_refused_before(const tickclock_evidence *ev, int source, uint64_t num,
                                             uint64_t den) {
  unsigned i;
  for (i = 0; i < ev->n_refused && i < TKC_MAX_REFUSALS; i++)
    if (ev->refused[i].source == source && ev->refused[i].hz_num == num &&
        ev->refused[i].hz_den == den)
      return &ev->refused[i];
  return NULL;
}

void tkc_check_freqs(const tickclock_evidence *ev, tickclock_info *out, const int *src,
                     int provisional) {
  unsigned i, j;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    const tkc_refusal *r;
    if (!c->available) continue;
    r = tkc_refused_before(ev, src[i], c->hz_num, c->hz_den);
    if (provisional && !ev->cal.ok && r != NULL) {
      /* a cross-check refused it: not again before a calibration */
      c->usable = 0;
      tkc_fmt(c->reason, sizeof c->reason,
              "refused by an earlier cross-check: %.3f MHz against a calibration of %.6f MHz "
              "+-%.2f ppm; not used again before a calibration",
              c->hz / 1e6, r->cal_hz / 1e6, r->cal_ppm);
      continue;
    }
    if (provisional && !ev->cal.ok) {
      /* no calibration yet: a published source may stand until the first
       * refinement compares it; nothing else is usable before that */
      c->usable = tkc_freq_published(src[i], ev->x86.hypervisor);
      tkc_strlcpy(c->reason,
                  c->usable ? "published: used before calibration, cross-checked by "
                              "the first refinement"
                            : "not cross-checked: no calibration yet",
                  sizeof c->reason);
      continue;
    }
    if (src[i] == TKC_SRC_CALIBRATION) {
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
      tkc_fmt(c->reason, sizeof c->reason, "%sagrees with calibration: %+.2f ppm (bound %.1f ppm)",
              src[i] == TKC_SRC_LEAF15_TABLE ? "table crystal " : "", c->ppm_vs_calibration,
              c->bound_ppm);
    }
  }
  out->max_disagreement_ppm = 0;
  for (i = 0; i < out->n_freqs; i++)
    for (j = 0; j < out->n_freqs; j++) {
      double d = i == j || !out->freqs[i].available || !out->freqs[j].available
                     ? 0
                     : tkc_ppm(out->freqs[i].hz_num, out->freqs[i].hz_den, out->freqs[j].hz_num,
                               out->freqs[j].hz_den);
      double a = d < 0 ? -d : d;
      out->freq_disagreement_ppm[i][j] = d;
      if (a > out->max_disagreement_ppm) out->max_disagreement_ppm = a;
    }
}

tickclock_freq_candidate *tkc_pick_freq(const tickclock_evidence *ev, tickclock_info *out,
                                        const int *src) {
  tickclock_freq_candidate *best = NULL;
  int best_rank = -1;
  unsigned i;
  int in_vm = ev->x86.hypervisor;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    int rank = tkc_freq_rank(src[i], in_vm);
    if (!c->usable) continue;
    if (rank < 0) { /* no row in the rank table */
      char tmp[TICKCLOCK_REASON_LEN];
      tkc_fmt(tmp, sizeof tmp, "%s; not used: no rank for source '%s'", c->reason, c->name);
      tkc_strlcpy(c->reason, tmp, sizeof c->reason);
      c->usable = 0;
      continue;
    }
    if (best == NULL || rank < best_rank) {
      best = c;
      best_rank = rank;
    }
  }
  if (best) {
    for (i = 0; i < out->n_freqs; i++) {
      tickclock_freq_candidate *c = &out->freqs[i];
      if (c != best && c->usable && tkc_freq_rank(src[i], in_vm) > best_rank) {
        char tmp[TICKCLOCK_REASON_LEN];
        tkc_fmt(tmp, sizeof tmp, "%s; not used: %s ranks higher", c->reason, best->name);
        tkc_strlcpy(c->reason, tmp, sizeof c->reason);
      }
    }
  }
  return best;
}
