/* tickclock — the bookkeeping beneath publication: the deadline the
 * inline conversions compare with, the checks' records, the refinement's
 * schedule and the suspend windows the samples leave.
 *
 * This file owns them and calls nothing that publishes or decides: the
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
static tkc_check_book tkc_bk = {
    TICKCLOCK_CHECK_DEFAULT_MS, UINT64_MAX, 0, {0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, {0}};

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines it */
/* Unit tick at which tickclock_to_ns runs the periodic re-validation. */
TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_reval_deadline = UINT64_MAX;
#endif

tkc_check_book *tkc_checks(void) { return &tkc_bk; }

uint64_t tkc_max_seen(void) { return tkc_bk.max_seen; }

int tkc_last_sample(tkc_bracket *b) {
  *b = tkc_bk.chk_prev;
  return tkc_bk.chk_on;
}

int tkc_checks_published(const tickclock_info *old, const tickclock_info *slot, tkc_bracket anchor,
                         int counter, const tickclock_evidence *ev) {
  tkc_bk.chk_anchor = tkc_bk.chk_prev = anchor;
  tkc_bk.chk_on = anchor.width != UINT64_MAX;
  if (tkc_bk.chk_on)
    tkc_note_sample(tkc_map(slot, anchor.mid - anchor.width / 2),
                    tkc_map(slot, anchor.mid + anchor.width / 2), anchor.susp);
  if (counter && ev != NULL) {
    tkc_bk.cs_known = ev->clocksource_known;
    tkc_strlcpy(tkc_bk.cs, ev->clocksource, sizeof tkc_bk.cs);
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
  TKC_STORE_RELEASE(&tkc_g_reval_deadline, UINT64_MAX);
  tkc_bk.chk_on = 0;
  tkc_bk.max_seen = 0;
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
static tkc_refine_book tkc_rf = {
    0, 0, {0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0, 0, 0, 0, 0}, 0, UINT64_MAX};
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
 * (calibration_ms) stays as it is. */
void tkc_refine_plan(const tickclock_info *fresh, const tickclock_evidence *ev, int asked_ms,
                     int cross_checked) {
  tkc_rf.on = 0;
  tkc_rf.deferred = 0;
  if (fresh->freq_pending_check) {
    /* its evidence is kept once it is published (tkc_publish_planned): a
     * decision that fails to publish must not become the live state's */
    memset(&tkc_rf.cal_first, 0, sizeof tkc_rf.cal_first);
    tkc_rf.on = 1;
  } else if ((fresh->freq_method == TICKCLOCK_FREQ_CALIBRATED || cross_checked) && ev->cal.ok &&
             !asked_ms && ev->cal.ns < TKC_REFINE_UNTIL_NS) {
    tkc_rf.cal_first = ev->cal;
    tkc_rf.at_ns = ev->cal.start_ns + 4 * ev->cal.ns;
    tkc_rf.on = 1;
  }
}

void tkc_refine_published(const tickclock_info *slot, tkc_bracket anchor, int checked) {
  if (!checked) tkc_rf.on = 0;
  if (tkc_rf.on && tkc_rf.cal_first.ns == 0) {
    /* a published frequency, not calibrated yet: the cross-check measures
     * from this publication's bracket, first after the quick baseline */
    tkc_cal_start(&tkc_rf.cal_first, anchor);
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
void tkc_store_deadline(void) {
  uint64_t d = tkc_bk.chk_on ? tkc_bk.reval_at : UINT64_MAX;
  if (tkc_bk.chk_on && tkc_refine_at() < d) d = tkc_refine_at();
  TKC_STORE_RELEASE(&tkc_g_reval_deadline, d);
}

void tkc_arm_deadline(const tickclock_info *s, uint64_t now_unit) {
  tkc_bk.reval_at = UINT64_MAX;
  if (tkc_bk.chk_on && tkc_bk.reval_ms != 0)
    tkc_bk.reval_at = tkc_after(s, now_unit, (uint64_t)tkc_bk.reval_ms * UINT64_C(1000000));
  tkc_store_deadline();
}

/* ---- the suspend windows (written with the lock held) ------------------ */
#define TKC_SUSP_RING 8
/* A sequence count around every write (odd while one is under way): a
 * reader that sees it change, or odd, reads again (a few times, then
 * takes the windows as unknown). */
static TKC_SHARED unsigned tkc_susp_seq = 0;
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_lo[TKC_SUSP_RING];
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_hi[TKC_SUSP_RING];
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_len[TKC_SUSP_RING];
static TKC_SHARED unsigned tkc_susp_n = 0; /* windows ever kept */
/* The windows the ring let go, merged into one: from the lowest tick to
 * the highest, their total time suspended. An interval that meets it is
 * flagged and bounded by that total (more than its own share, never less:
 * a bound stays a bound however many suspends came after it). */
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_old_lo = 0;
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_old_hi = 0;
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_susp_old_len = 0;
/* the last sample: its lower unit tick and suspended time */
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_last_lo = 0;
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_last_susp = UINT64_MAX;

void tkc_note_sample(uint64_t lo, uint64_t hi, uint64_t susp) {
  uint64_t prev_lo = TKC_LOAD_RELAXED(&tkc_last_lo);
  uint64_t prev_susp = TKC_LOAD_RELAXED(&tkc_last_susp);
  unsigned seq = TKC_LOAD_RELAXED(&tkc_susp_seq), n = TKC_LOAD_RELAXED(&tkc_susp_n);
  if (susp == UINT64_MAX) return; /* unknown: the previous one stays the reference */
  TKC_STORE_RELEASE(&tkc_susp_seq, seq + 1u);
  if (tkc_suspend_between(prev_susp, susp) && susp > prev_susp) {
    unsigned i = n % TKC_SUSP_RING;
    if (n >= TKC_SUSP_RING) { /* the oldest window goes: merged, not forgotten */
      uint64_t olo = TKC_LOAD_RELAXED(&tkc_susp_lo[i]), ohi = TKC_LOAD_RELAXED(&tkc_susp_hi[i]);
      uint64_t olen = TKC_LOAD_RELAXED(&tkc_susp_len[i]), sum;
      if (n > TKC_SUSP_RING) {
        uint64_t mlo = TKC_LOAD_RELAXED(&tkc_susp_old_lo), mhi = TKC_LOAD_RELAXED(&tkc_susp_old_hi);
        if (mlo < olo) olo = mlo;
        if (mhi > ohi) ohi = mhi;
        sum = TKC_LOAD_RELAXED(&tkc_susp_old_len);
        olen = sum + olen < sum ? UINT64_MAX : sum + olen;
      }
      TKC_STORE_RELEASE(&tkc_susp_old_lo, olo);
      TKC_STORE_RELEASE(&tkc_susp_old_hi, ohi);
      TKC_STORE_RELEASE(&tkc_susp_old_len, olen);
    }
    TKC_STORE_RELEASE(&tkc_susp_lo[i], prev_lo);
    TKC_STORE_RELEASE(&tkc_susp_hi[i], hi);
    TKC_STORE_RELEASE(&tkc_susp_len[i], susp - prev_susp);
    TKC_STORE_RELEASE(&tkc_susp_n, n + 1u);
  }
  TKC_STORE_RELEASE(&tkc_last_lo, lo);
  TKC_STORE_RELEASE(&tkc_last_susp, susp);
  TKC_STORE_RELEASE(&tkc_susp_seq, seq + 2u);
}

void tkc_suspends_reset(void) {
  unsigned seq = TKC_LOAD_RELAXED(&tkc_susp_seq);
  TKC_STORE_RELEASE(&tkc_susp_seq, seq + 1u);
  TKC_STORE_RELEASE(&tkc_susp_n, 0u);
  TKC_STORE_RELEASE(&tkc_last_lo, (uint64_t)0);
  TKC_STORE_RELEASE(&tkc_last_susp, UINT64_MAX);
  TKC_STORE_RELEASE(&tkc_susp_seq, seq + 2u);
}

/* a + b, saturating. */
static uint64_t tkc_susp_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

int tkc_suspends_in(uint64_t lo, uint64_t hi, int read_now, uint64_t *slept) {
  int tries;
  for (tries = 0; tries < 4; tries++) {
    unsigned seq = TKC_LOAD_ACQUIRE(&tkc_susp_seq), n, i, k;
    uint64_t total = 0, last_lo, last_susp;
    int found = 0;
    if (seq & 1u) continue;
    n = TKC_LOAD_ACQUIRE(&tkc_susp_n);
    k = n < TKC_SUSP_RING ? n : TKC_SUSP_RING;
    for (i = 0; i < k; i++) {
      uint64_t wlo = TKC_LOAD_ACQUIRE(&tkc_susp_lo[i]), whi = TKC_LOAD_ACQUIRE(&tkc_susp_hi[i]);
      if (lo < whi && hi > wlo) {
        found = 1;
        total = tkc_susp_add(total, TKC_LOAD_ACQUIRE(&tkc_susp_len[i]));
      }
    }
    if (n > TKC_SUSP_RING && lo < TKC_LOAD_ACQUIRE(&tkc_susp_old_hi) &&
        hi > TKC_LOAD_ACQUIRE(&tkc_susp_old_lo)) { /* the windows the ring let go */
      found = 1;
      total = tkc_susp_add(total, TKC_LOAD_ACQUIRE(&tkc_susp_old_len));
    }
    last_lo = TKC_LOAD_ACQUIRE(&tkc_last_lo);
    last_susp = TKC_LOAD_ACQUIRE(&tkc_last_susp);
    if (TKC_LOAD_ACQUIRE(&tkc_susp_seq) != seq) continue;
    if (read_now && last_susp != UINT64_MAX && hi > last_lo) {
      uint64_t now = tkc_p_suspended_ns();
      if (tkc_suspend_between(last_susp, now) && now > last_susp) {
        found = 1;
        total = tkc_susp_add(total, now - last_susp);
      }
    }
    *slept = total;
    return found;
  }
  *slept = 0;
  return 1; /* a writer kept interrupting: a suspend cannot be ruled out */
}
