/* tickclock — refinement: a calibrated frequency measured again on
 * baselines four times longer up to 1 s, and a published frequency's
 * cross-check (lock held throughout). The refinement's schedule is
 * bookkeeping.c's.
 *
 * A calibrated frequency is measured again from the same start bracket on
 * a baseline four times longer each time, until it spans 1 s; each better
 * figure is published as a state continuous with the last. A published
 * frequency is checked on the same baselines: the first check (from 1 ms)
 * confirms or replaces it, the later ones replace it if a tighter
 * calibration disagrees.
 */
#include "state.h"
#include "decide.h"
#include "text.h"

#include <string.h>

#if defined(TKC_ARCH_COUNTER)
/* The states a refinement and a cross-check build (too big for small
 * stacks). */
static tickclock_info tkc_refined;
static tickclock_info tkc_crossed;
#endif

#if defined(TKC_ARCH_COUNTER)
/* The cross-check of a published frequency (s->freq_pending_check, or a
 * published source that passed it and disagrees with a later, longer
 * calibration), with the calibration c measured since s's first state
 * was published: the decision is made again from the same evidence plus
 * c, so the published source is kept when it agrees (now with its
 * figures) and refused when it does not (the next source by rank, usually
 * calibration; under a paravirtual clock a disagreeing hypervisor means
 * the OS clock). Either way the result is a new state continuous with s.
 * Lock held. */
/* Every published claim the decision just refused against the calibration
 * is remembered: a later initialisation does not use it again before a
 * calibration (freqs[] lists the claims in the evidence's order). */
static void tkc_note_refusals(const tickclock_info *fresh, const tickclock_evidence *ev) {
  unsigned i;
  for (i = 0; i < fresh->n_freqs && i < ev->n_claims; i++) {
    const tickclock_freq_candidate *c = &fresh->freqs[i];
    const tickclock_freq *f = &ev->claims[i];
    if (c->checked && !c->usable && f->ok && f->source != TKC_SRC_CALIBRATION &&
        f->hz_num == c->hz_num && f->hz_den == c->hz_den)
      tkc_refusal_note(f->source, f->hz_num, f->hz_den, &ev->cal);
  }
}

void tkc_cross_check(const tickclock_info *s, const tickclock_calibration *c, int may_alloc) {
  tickclock_info *fresh = &tkc_crossed;
  tickclock_evidence *ev = tkc_refine_evidence();
  double off = tkc_ppm(c->hz_num, c->hz_den, s->hz_num, s->hz_den);
  const tickclock_info *now;
  ev->cal = *c;
  tkc_list_claims(ev);
  (void)tickclock_decide(ev, fresh); /* calibrated: decides at once */
  fresh->baseline_ns = c->ns;
  tkc_note_refusals(fresh, ev);
  /* leaving the counter: the spare; staying: a ready slot, or none inside
   * the conversions, and then the check waits for a call that may
   * allocate one */
  if (tkc_publish_planned(fresh, s, ev, 0, 1, TKC_OLD_HEALTHY, 1, may_alloc) != TICKCLOCK_OK) {
    tkc_refine_defer();
    return;
  }
  /* s converted its ticks (from its base to the new state's) at a rate
   * the calibration puts further off than s stated: that part of the
   * durations that meet them is a break, kept like the rate check's */
  now = tkc_published();
  if (off < 0) off = -off;
  if (off > s->uncertainty_ppm && now->base_ticks > s->base_ticks) {
    uint64_t span = now->base_ticks - s->base_ticks;
    double ns = (double)(s->scaled ? tickclock_conv_ticks_to_ns(&s->conv, span) : span);
    tkc_note_break(s->base_ticks, now->base_ticks,
                   (uint64_t)(ns * (off + c->uncertainty_ppm) * 1e-6) + 2);
  }
}

/* The refinement (or cross-check) starts again from a fresh bracket: the
 * one it measured from lies before a suspend. */
static void tkc_refine_restart(const tickclock_info *s) {
  tkc_refine_book *rf = tkc_refine_schedule();
  tkc_bracket nb = tkc_tightest_bracket(tkc_read_counter_ordered);
  uint64_t wait_ns =
      (uint64_t)(s->freq_pending_check ? 1 : 4) * TICKCLOCK_CAL_QUICK_MS * UINT64_C(1000000);
  if (nb.width == UINT64_MAX) { /* no bracket now: a millisecond later */
    rf->at = tkc_after(s, tkc_max_seen(), UINT64_C(1000000));
    return;
  }
  tkc_cal_start(&rf->cal_first, nb);
  rf->at_ns = nb.ns + wait_ns;
  rf->at = tkc_after(s, tkc_map(s, nb.mid), wait_ns);
}

/* The state's reason says how far its frequency was refined (the reason
 * up to an earlier such note, then the new one). */
static void tkc_note_refined(tickclock_info *st, const tickclock_calibration *c) {
  char *mark = strstr(st->why, "; refined");
  size_t len;
  if (mark != NULL) *mark = '\0';
  len = strlen(st->why);
  tkc_fmt(st->why + len, sizeof st->why - len, "; refined to %.6f MHz +-%.3f ppm over %.3f s",
          c->hz / 1e6, st->uncertainty_ppm, (double)c->ns / 1e9);
}

/* Publishes fresh, a refinement of s from the calibration c, with the
 * refinement's schedule after this step (tkc_publish arms it from the new
 * state's anchor); no slot: the schedule restored, the same step again
 * once a call that may allocate has reserved one. */
static void tkc_publish_refined(tickclock_info *fresh, const tickclock_info *s,
                                const tickclock_calibration *c, int may_alloc) {
  tkc_refine_book *rf = tkc_refine_schedule();
  uint64_t at_ns = rf->at_ns;
  rf->at_ns = rf->cal_first.start_ns + 4 * c->ns;
  rf->on = c->ns < TKC_REFINE_UNTIL_NS;
  if (tkc_publish(fresh, s, TKC_OLD_HEALTHY, 0, may_alloc, NULL) != TICKCLOCK_OK) {
    rf->at_ns = at_ns;
    rf->on = 1;
    tkc_refine_defer();
  }
}

/* The uncertainty the published source of s claims for itself (its entry
 * in freqs[]; 0 for an exact ratio); -1 when none is marked chosen. */
static double tkc_claimed_ppm(const tickclock_info *s) {
  unsigned i;
  for (i = 0; i < s->n_freqs && i < TICKCLOCK_MAX_FREQS; i++)
    if (s->freqs[i].chosen && s->freqs[i].method == s->freq_method)
      return s->freqs[i].uncertainty_ppm;
  return -1;
}

/* The bound the checks hold the counter to c's rate with: c's own, never
 * under the floor every stated uncertainty has. */
static double tkc_held_bound(const tickclock_calibration *c) {
  return c->uncertainty_ppm < TKC_MIN_UNCERTAINTY_PPM ? TKC_MIN_UNCERTAINTY_PPM
                                                      : c->uncertainty_ppm;
}

/* The checks hold the counter to c's rate from now on, the state's rate
 * within u of it (what a break restates from). */
static void tkc_hold_to(const tickclock_calibration *c, double u) {
  tkc_check_book *bk = tkc_checks();
  if (tickclock_conv_init(&bk->held_conv, c->hz_num, c->hz_den) != TICKCLOCK_OK) return;
  bk->held_ppm = tkc_held_bound(c);
  bk->held_base_ppm = u;
}

/* The calibration c, off ppm from the rate of s, measured since s's
 * anchor (or the restatement's): the true rate lies within c's bound of c,
 * so within |off| + c's bound of s's rate (never tighter than a published
 * source claims for itself). When that is within what s states and c is
 * tighter than the rate the checks hold the counter to, they hold it to c
 * from now on, whether or not a state can be published with it: a step
 * the wider stated uncertainty would hide is a break again, and a break
 * restates from |off| + c's bound. (Beyond what s states, the checks keep
 * holding the counter to s's rate: they find that as a break and restate
 * wider.) Returns that bound on s's rate. */
static double tkc_confirm(const tickclock_info *s, const tickclock_calibration *c, double off) {
  double u = (off < 0 ? -off : off) + c->uncertainty_ppm;
  double claim = s->freq_method == TICKCLOCK_FREQ_CALIBRATED ? 0 : tkc_claimed_ppm(s);
  if (u < claim) u = claim;
  if (u < TKC_MIN_UNCERTAINTY_PPM) u = TKC_MIN_UNCERTAINTY_PPM;
  if (u <= s->uncertainty_ppm && tkc_held_bound(c) < tkc_checks()->held_ppm) tkc_hold_to(c, u);
  return u;
}

/* A published rate s restated wider after a break, confirmed to u by the
 * calibration c measured since the restatement: when that is tighter than
 * s states, s is published again at the same rate with it. When c lies
 * within what s states and only c's own bound reaches past it (a rate
 * stated a few ppm off the counter's: the restatement measured the offset
 * over a check period to the brackets' half-widths, c over its baseline
 * to a little more), s is published with u all the same, and the checks
 * hold the counter to c from then on: held to the stated rate, a step
 * against the offset of up to twice it per check period would pass. 1
 * when it published (or waits for a slot to). */
static int tkc_narrow_stated(const tickclock_info *s, const tickclock_calibration *c, double u,
                             int may_alloc) {
  tickclock_info *fresh = &tkc_refined;
  double off = tkc_ppm(c->hz_num, c->hz_den, s->hz_num, s->hz_den);
  int wider = u > s->uncertainty_ppm;
  char *mark;
  size_t len;
  if (tkc_claimed_ppm(s) < 0 || u == s->uncertainty_ppm) return 0;
  if (wider &&
      ((off < 0 ? -off : off) > s->uncertainty_ppm || tkc_held_bound(c) >= tkc_checks()->held_ppm))
    return 0;
  memcpy(fresh, s, sizeof *fresh);
  fresh->uncertainty_ppm = u;
  fresh->baseline_ns = c->ns;
  mark = strstr(fresh->why, "; confirmed");
  if (mark != NULL) *mark = '\0';
  len = strlen(fresh->why);
  tkc_fmt(fresh->why + len, sizeof fresh->why - len,
          "; confirmed +-%.3f ppm by %.6f MHz over %.3f s", u, c->hz / 1e6, (double)c->ns / 1e9);
  tkc_publish_refined(fresh, s, c, may_alloc);
  if (wider && tkc_published() != s) tkc_hold_to(c, u);
  return 1;
}

/* One refinement step: the first calibration's start bracket against a new
 * end bracket. A better figure that agrees with the current one is
 * published (continuous with it: same unit, base at the moment of
 * publication); a preempted end bracket is retried a millisecond later; a
 * sample across a suspend starts again; a figure that disagrees stops
 * refinement (re-validation judges the counter). may_alloc: 0 inside the
 * conversions, where no slot left means waiting for one. */
void tkc_refine_locked(int may_alloc) {
  tkc_refine_book *rf = tkc_refine_schedule();
  const tickclock_info *s = tkc_published();
  tickclock_info *fresh = &tkc_refined;
  tickclock_calibration c;
  double off, u;
  unsigned i;
  if (!tkc_calibrate_from(tkc_read_counter_ordered, &rf->cal_first, &c)) {
    if (c.suspended) {
      tkc_refine_restart(s);
      return;
    }
    rf->at = tkc_after(s, rf->at, UINT64_C(1000000));
    return;
  }
  if ((double)tickclock_conv_ticks_to_ns(&s->src_conv, c.bracket_end) >
      TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) {
    rf->at = tkc_after(s, rf->at, UINT64_C(1000000));
    return;
  }
  /* due by a tick from the future (a caller converting an arbitrary value):
   * the clock has not got there yet; due again when it has */
  if (c.start_ns + c.ns < rf->at_ns) {
    rf->at = tkc_after(s, tkc_map(s, c.start_mid + c.ticks), rf->at_ns - (c.start_ns + c.ns));
    return;
  }
  if (s->freq_pending_check) {
    /* the published frequency's cross-check: like the quick calibration,
     * a bound above the target waits for a baseline x4 longer (up to the
     * quick calibration's longest); then the decider judges */
    if (c.uncertainty_ppm > TICKCLOCK_CAL_TARGET_PPM &&
        4 * c.ns <= (uint64_t)TICKCLOCK_CAL_QUICK_MAX_MS * UINT64_C(1000000)) {
      rf->at_ns = rf->cal_first.start_ns + 4 * c.ns;
      rf->at = tkc_after(s, tkc_map(s, c.start_mid + c.ticks), 3 * c.ns);
      return;
    }
    tkc_cross_check(s, &c, may_alloc);
    return;
  }
  off = tkc_ppm(c.hz_num, c.hz_den, s->hz_num, s->hz_den);
  if (s->freq_method != TICKCLOCK_FREQ_CALIBRATED &&
      (off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM ||
       -off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM)) {
    /* a published source that passed its first cross-check fails a
     * tighter one: decided again, it is refused */
    tkc_cross_check(s, &c, may_alloc);
    return;
  }
  if (s->freq_method == TICKCLOCK_FREQ_CALIBRATED &&
      (off > s->uncertainty_ppm + c.uncertainty_ppm ||
       -off > s->uncertainty_ppm + c.uncertainty_ppm)) {
    /* two honest measurements of one rate cannot disagree by more than
     * both bounds: the rate changed inside this baseline. Its average is
     * no rate at all: measuring starts again from a fresh bracket (the
     * rate check holds the state to its stated rate meanwhile) */
    tkc_refine_restart(s);
    return;
  }
  if (rf->hold_only) {
    /* measured for the checks only, s stays as wide as it was: the rate
     * they hold the counter to is the earlier figure, and one that
     * disagrees with it beyond both bounds averaged a change (a step the
     * next check has not seen yet) */
    const tkc_check_book *bk = tkc_checks();
    double h = tkc_ppm(c.hz_num, c.hz_den, bk->held_conv.hz_num, bk->held_conv.hz_den);
    if (h > bk->held_ppm + c.uncertainty_ppm || -h > bk->held_ppm + c.uncertainty_ppm) {
      tkc_refine_restart(s);
      return;
    }
  }
  /* a published rate restated after a break: confirmed from the
   * restatement's own bracket, it is stated as tight as this measurement
   * shows it (never tighter than its source claims), so the rate check
   * holds the counter to it closely again and later steps of the same
   * size are breaks again */
  u = tkc_confirm(s, &c, off);
  if (rf->hold_only) u = s->uncertainty_ppm; /* held to, nothing published */
  if (s->freq_method != TICKCLOCK_FREQ_CALIBRATED && tkc_narrow_stated(s, &c, u, may_alloc)) return;
  /* no better, a published source the rank prefers while it agrees, or a
   * calibration the caller asked for (held to, never published): measure
   * further on */
  if (rf->hold_only || c.uncertainty_ppm >= s->uncertainty_ppm ||
      s->freq_method != TICKCLOCK_FREQ_CALIBRATED) {
    rf->at_ns = rf->cal_first.start_ns + 4 * c.ns;
    if (c.ns >= TKC_REFINE_UNTIL_NS) rf->on = 0;
    rf->at = tkc_after(s, tkc_map(s, c.start_mid + c.ticks), rf->at_ns - (c.start_ns + c.ns));
    return;
  }
  memcpy(fresh, s, sizeof *fresh);
  if (tickclock_conv_init(&fresh->conv, c.hz_num, c.hz_den) != TICKCLOCK_OK) {
    rf->on = 0;
    return;
  }
  fresh->hz_num = c.hz_num;
  fresh->hz_den = c.hz_den;
  fresh->hz = c.hz;
  fresh->uncertainty_ppm = c.uncertainty_ppm;
  fresh->resolution_ns = 1e9 / c.hz;
  fresh->baseline_ns = c.ns;
  for (i = 0; i < fresh->n_freqs && i < TICKCLOCK_MAX_FREQS; i++)
    if (fresh->freqs[i].method == TICKCLOCK_FREQ_CALIBRATED) {
      fresh->freqs[i].hz_num = c.hz_num;
      fresh->freqs[i].hz_den = c.hz_den;
      fresh->freqs[i].hz = c.hz;
      fresh->freqs[i].uncertainty_ppm = c.uncertainty_ppm;
    }
  if (fresh->uncertainty_ppm < TKC_MIN_UNCERTAINTY_PPM)
    fresh->uncertainty_ppm = TKC_MIN_UNCERTAINTY_PPM;
  tkc_note_refined(fresh, &c);
  tkc_publish_refined(fresh, s, &c, may_alloc);
}

/* After a break: the state again, its uncertainty widened by what the
 * check found (the rate lies anywhere between the stated one and the one
 * the samples showed), and its rate measured again from the new state's
 * own bracket on the refinement's growing baselines, which publish it
 * back down as the measurement tightens. No slot: the next check finds the
 * break again. */
void tkc_restate_locked(int may_alloc) {
  tkc_refine_book *rf = tkc_refine_schedule(), keep = *rf;
  tkc_check_book *bk = tkc_checks();
  const tickclock_info *s = tkc_published();
  tickclock_info *fresh = &tkc_refined;
  char *mark;
  size_t len;
  if (s == NULL || !tkc_reads_counter(s)) return;
  memcpy(fresh, s, sizeof *fresh);
  /* from how far the state's rate may lie from the rate the checks held
   * the counter to (the state's own uncertainty, or the refinement's
   * measurement's distance from it) */
  fresh->uncertainty_ppm = bk->held_base_ppm + bk->break_ppm;
  mark = strstr(fresh->why, "; refined");
  if (mark == NULL) mark = strstr(fresh->why, "; restated");
  if (mark != NULL) *mark = '\0';
  len = strlen(fresh->why);
  tkc_fmt(fresh->why + len, sizeof fresh->why - len, "; restated +-%.3f ppm: %s",
          fresh->uncertainty_ppm, bk->break_why);
  rf->on = 1;
  rf->deferred = 0;
  memset(&rf->cal_first, 0, sizeof rf->cal_first);
  rf->from_next = 1; /* from the new anchor */
  bk->restating = 1;
  if (tkc_publish(fresh, s, TKC_OLD_HEALTHY, 0, may_alloc, NULL) != TICKCLOCK_OK) *rf = keep;
  bk->restating = 0;
}

#endif
