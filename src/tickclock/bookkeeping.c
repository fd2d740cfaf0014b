/* tickclock — the bookkeeping beneath publication: the deadline the
 * inline conversions compare with, the checks' records, the refinement's
 * schedule and the claims a cross-check refused.
 *
 * (The windows the samples leave, suspends and the counter's detected
 * breaks, are windows.c's.) This file owns them and calls nothing that
 * publishes or decides: the
 * publication (publish.c) records a new state's anchor, schedule and
 * deadline here; re-validation, refinement and durations read and update
 * them through the functions in state.h. What falls due is only recorded
 * here (the deadline); the callers above act on it (due.c). Everything
 * but the suspend windows is accessed with the lock held.
 */
#include "state.h"
#include "platform.h"
#include "calibrate.h"
#include "text.h"

#include <string.h>

/* ---- the checks' records and the deadline ------------------------------ */
static tkc_check_book tkc_bk = {TICKCLOCK_CHECK_DEFAULT_MS,
                                UINT64_MAX,
                                0,
                                {0, 0, 0, 0},
                                {0, 0, 0, 0},
                                0,
                                {0, 0, 0, 0},
                                {0, 0, 0, 0, 0, 0},
                                0.0,
                                0.0,
                                {0, 0, 0, 0},
                                {0, 0, 0, 0, 0, 0},
                                0.0,
                                0,
                                0,
                                0,
                                0.0,
                                {0},
                                0,
                                {0},
                                {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines it */
/* Unit tick at which tickclock_to_ns runs the periodic re-validation,
 * and the window of ticks that may go there (tickclock_inline.h). */
TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_reval_deadline = UINT64_MAX;
TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_due_span = 0;
/* Ticks ahead of the counter left alone until the deadline moves
 * (tickclock_inline.h; set by due.c through tkc_ahead_note). */
TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_lo = UINT64_MAX;
TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_span = 0;
#endif
/* Where the far ticks ahead start (UINT64_MAX: none seen); the
 * conversions see it only as the end of the window, through the span. */
static uint64_t tkc_ahead_far_at = UINT64_MAX;

/* The deadline d and the window up to far: the span first, then the
 * deadline (a reader may pair either with either: tickclock_inline.h says
 * why that is harmless). Written with the lock held. */
static void tkc_due_window(uint64_t d, uint64_t far) {
  tkc_ahead_far_at = far;
  TKC_STORE_RELEASE(&tkc_g_due_span, far > d ? far - d : 0);
  TKC_STORE_RELEASE(&tkc_g_reval_deadline, d);
}

/* The ticks ahead: far and above, and [lo, lo + span];
 * tkc_ahead_note(UINT64_MAX, UINT64_MAX, 0) empties both. Written with
 * the lock held. */
void tkc_ahead_note(uint64_t far, uint64_t lo, uint64_t span) {
  tkc_due_window(TKC_LOAD_RELAXED(&tkc_g_reval_deadline), far);
  TKC_STORE_RELEASE(&tkc_g_ahead_lo, lo);
  TKC_STORE_RELEASE(&tkc_g_ahead_span, span);
}

uint64_t tkc_ahead_far(void) { return tkc_ahead_far_at; }

tkc_check_book *tkc_checks(void) { return &tkc_bk; }
static uint64_t tkc_unanchored = UINT64_MAX;
uint64_t *tkc_unanchored_since(void) { return &tkc_unanchored; }

uint64_t tkc_max_seen(void) { return tkc_bk.max_seen; }

int tkc_last_sample(tkc_bracket *b) {
  *b = tkc_bk.chk_prev;
  return tkc_bk.chk_on;
}

int tkc_checks_published(const tickclock_info *old, const tickclock_info *slot, tkc_bracket anchor,
                         int counter, const tickclock_evidence *ev) {
  /* the same counter continued (a refinement, no new decision): its
   * samples stay references for the checks, read at the new rate */
  int same = old != NULL && ev == NULL && counter && tkc_reads_counter(old) && tkc_bk.chk_on &&
             anchor.width != UINT64_MAX;
  if (!same || tkc_bk.restating) tkc_bk.chk_anchor = tkc_bk.chk_tight = anchor;
  /* the stated rate is held to the samples at the new state's rate and
   * uncertainty, unless only the uncertainty changed (the refinement
   * confirmed a stated rate): the measured rate it holds to stays */
  if (!same || tkc_bk.restating || slot->hz_num != old->hz_num || slot->hz_den != old->hz_den) {
    tkc_bk.held_conv = slot->src_conv;
    tkc_bk.held_ppm = tkc_bk.held_base_ppm = slot->uncertainty_ppm;
  } else if (slot->uncertainty_ppm < tkc_bk.held_base_ppm)
    tkc_bk.held_base_ppm = slot->uncertainty_ppm;
  /* the switch holds the counter to the decision's rate, from the last
   * publication before a restatement: a counter that drifts off it by more
   * than DRIFT_PPM is left, however the restatements followed it */
  if (!same)
    tkc_bk.restated = 0;
  else if (tkc_bk.restating)
    tkc_bk.restated = 1;
  if (!tkc_bk.restated) {
    tkc_bk.chk_loose = anchor;
    tkc_bk.loose_conv = slot->src_conv;
    tkc_bk.loose_ppm = slot->uncertainty_ppm;
  }
  tkc_bk.chk_prev = anchor;
  tkc_bk.chk_on = anchor.width != UINT64_MAX;
  tkc_unanchored = UINT64_MAX;
  if (tkc_bk.chk_on)
    tkc_note_sample(tkc_map(slot, anchor.mid - anchor.width / 2),
                    tkc_map(slot, anchor.mid + anchor.width / 2), anchor.susp);
  if (counter && ev != NULL) {
    tkc_bk.cs_known = ev->clocksource_known;
    tkc_strlcpy(tkc_bk.cs, ev->clocksource, sizeof tkc_bk.cs);
    tkc_bk.pv = ev->pv;
  }
  /* (a raw counter's base lies a guard ahead: not a reading) */
  if (old != NULL && slot->read_path != TICKCLOCK_READ_COUNTER)
    tkc_bk.max_seen = tkc_max_u64(tkc_bk.max_seen, slot->base_ticks);
  if (tkc_bk.chk_on)
    tkc_bk.max_seen = tkc_max_u64(
        tkc_bk.max_seen, tkc_map(slot, tkc_bk.chk_anchor.mid + tkc_bk.chk_anchor.width / 2));
  return tkc_bk.chk_on;
}

void tkc_checks_reset(void) {
  tkc_due_window(UINT64_MAX, UINT64_MAX);
  tkc_ahead_note(UINT64_MAX, UINT64_MAX, 0);
  tkc_bk.chk_on = 0;
  tkc_unanchored = UINT64_MAX;
  tkc_bk.max_seen = 0;
  memset(&tkc_bk.pv, 0, sizeof tkc_bk.pv);
  tkc_bk.breaks = 0;
  tkc_bk.reval_ms = TICKCLOCK_CHECK_DEFAULT_MS;
  tkc_bk.reval_at = UINT64_MAX;
}

/* ---- the claims a cross-check refused ------------------------------------ */
static tkc_refusal tkc_refusals[TKC_MAX_REFUSALS];
static unsigned tkc_n_refusals = 0; /* all ever noted: the ring keeps the last */

void tkc_refusal_note(int source, uint64_t hz_num, uint64_t hz_den,
                      const tickclock_calibration *c) {
  unsigned i, k = tkc_n_refusals < TKC_MAX_REFUSALS ? tkc_n_refusals : TKC_MAX_REFUSALS;
  tkc_refusal *r = NULL;
  for (i = 0; i < k; i++)
    if (tkc_refusals[i].source == source && tkc_refusals[i].hz_num == hz_num &&
        tkc_refusals[i].hz_den == hz_den)
      r = &tkc_refusals[i];
  if (r == NULL) r = &tkc_refusals[tkc_n_refusals++ % TKC_MAX_REFUSALS];
  r->source = source;
  r->hz_num = hz_num;
  r->hz_den = hz_den;
  r->cal_hz = c->hz;
  r->cal_ppm = c->uncertainty_ppm;
}

void tkc_refusals_copy(tickclock_evidence *ev) {
  unsigned k = tkc_n_refusals < TKC_MAX_REFUSALS ? tkc_n_refusals : TKC_MAX_REFUSALS;
  memcpy(ev->refused, tkc_refusals, sizeof ev->refused);
  ev->n_refused = k;
}

void tkc_refusals_reset(void) { tkc_n_refusals = 0; }

/* ---- the refinement's schedule ----------------------------------------- */
static tkc_refine_book tkc_rf = {0, 0,         {0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0, 0, 0, 0, 0}, 0, 0,
                                 0, UINT64_MAX};
/* The evidence behind a state whose published frequency awaits its
 * cross-check: the first refinement decides again from it. */
static tickclock_evidence tkc_pending_ev;

tkc_refine_book *tkc_refine_schedule(void) { return &tkc_rf; }

tickclock_evidence *tkc_refine_evidence(void) { return &tkc_pending_ev; }

uint64_t tkc_refine_at(void) { return tkc_rf.on ? tkc_rf.at : UINT64_MAX; }

int tkc_refine_pending(void) { return tkc_rf.on; }

void tkc_refine_reset(void) {
  tkc_rf.on = 0;
  tkc_rf.deferred = 0;
  tkc_rf.from_next = 0;
  tkc_rf.hold_only = 0;
  tkc_rf.at = UINT64_MAX;
}

void tkc_refine_defer(void) {
  tkc_rf.deferred = 1;
  tkc_rf.at = UINT64_MAX;
  tkc_store_deadline();
}

void tkc_refine_rearm(int published, uint64_t max_seen) {
  if (!tkc_rf.deferred) return;
  tkc_rf.deferred = 0;
  if (published && tkc_rf.on) {
    tkc_rf.at = max_seen; /* due at once */
    tkc_store_deadline();
  }
}

int tkc_refine_deferred(void) { return tkc_rf.deferred; }

/* What follows a decision made with the calibration ev->cal (ok == 0:
 * none): a quick calibration that was chosen is refined from its start
 * bracket; a published frequency used before calibration is cross-checked
 * from the publication's own bracket (tkc_refine_published fills cal_first
 * then), and once it passed (cross_checked) checked again on the same
 * growing baselines up to 1 s; one of a length the caller asked for
 * (calibration_ms) stays as it is, but is measured on all the same for
 * the checks (hold_only): held to its own uncertainty (7.5 ppm after 5 ms
 * between 35 ns brackets), a 1 s check period would hide a 7 us step. */
void tkc_refine_plan(const tickclock_info *fresh, const tickclock_evidence *ev, int asked_ms,
                     int cross_checked) {
  tkc_rf.on = 0;
  tkc_rf.deferred = 0;
  tkc_rf.from_next = 0;
  tkc_rf.hold_only = 0;
  if (fresh->freq_pending_check) {
    /* its evidence is kept once it is published (tkc_publish_planned): a
     * decision that fails to publish must not become the live state's */
    memset(&tkc_rf.cal_first, 0, sizeof tkc_rf.cal_first);
    tkc_rf.from_next = 1;
    tkc_rf.on = 1;
  } else if ((fresh->freq_method == TICKCLOCK_FREQ_CALIBRATED || cross_checked) && ev->cal.ok &&
             ev->cal.ns < TKC_REFINE_UNTIL_NS) {
    tkc_rf.cal_first = ev->cal;
    tkc_rf.at_ns = ev->cal.start_ns + 4 * ev->cal.ns;
    tkc_rf.on = 1;
    tkc_rf.hold_only = asked_ms != 0;
  }
}

void tkc_refine_published(const tickclock_info *slot, tkc_bracket anchor, int checked) {
  if (!checked) tkc_rf.on = 0;
  if (tkc_rf.on && tkc_rf.from_next) {
    /* a published frequency, not calibrated yet: the cross-check measures
     * from this publication's bracket, first after the quick baseline */
    tkc_cal_start(&tkc_rf.cal_first, anchor);
    tkc_rf.from_next = 0;
    tkc_rf.at_ns = anchor.ns + (uint64_t)TICKCLOCK_CAL_QUICK_MS * UINT64_C(1000000);
  }
  if (tkc_rf.on)
    tkc_rf.at = tkc_after(slot, tkc_map(slot, anchor.mid),
                          tkc_rf.at_ns > anchor.ns ? tkc_rf.at_ns - anchor.ns : 0);
}

#if defined(TKC_ARCH_COUNTER)
void tkc_refine_from_anchor(const tickclock_info *s, tkc_bracket b) {
  tkc_rf.on = 1;
  tkc_cal_start(&tkc_rf.cal_first, b);
  tkc_rf.at_ns = b.ns + (uint64_t)TICKCLOCK_CAL_QUICK_MS * UINT64_C(1000000);
  tkc_rf.at = tkc_after(s, tkc_map(s, b.mid), (uint64_t)TICKCLOCK_CAL_QUICK_MS * UINT64_C(1000000));
}
#endif

/* ---- the deadline: the earlier of the checks' and the refinement's ----- */
/* fresh: a new anchor or period (tkc_arm_deadline), after which the ticks
 * seen ahead are looked at again even if the deadline came out the same.
 * Otherwise the same deadline keeps them: an out-of-line call that found
 * nothing due (a tick from the future) does not undo what an earlier one
 * noted, so near and far ticks in turns go out of line once each. */
static void tkc_deadline_store(int fresh) {
  uint64_t d = tkc_bk.reval_at; /* armed only where there is a check to run */
  if (tkc_bk.chk_on && tkc_refine_at() < d) d = tkc_refine_at();
  if (!fresh && d == TKC_LOAD_RELAXED(&tkc_g_reval_deadline)) return;
  tkc_ahead_note(UINT64_MAX, UINT64_MAX, 0); /* a new deadline: ticks ahead are looked at again */
  tkc_due_window(d, UINT64_MAX);
}

void tkc_store_deadline(void) { tkc_deadline_store(0); }

void tkc_arm_deadline(const tickclock_info *s, uint64_t now_unit) {
  tkc_bk.reval_at = UINT64_MAX;
  /* without a sample yet (a counter state only), each period tries to take one */
  if ((tkc_bk.chk_on || tkc_reads_counter(s)) && tkc_bk.reval_ms != 0)
    tkc_bk.reval_at = tkc_after(s, now_unit, (uint64_t)tkc_bk.reval_ms * UINT64_C(1000000));
  tkc_deadline_store(1);
}
