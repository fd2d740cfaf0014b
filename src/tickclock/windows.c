/* tickclock — the windows the samples of the counter leave, for the
 * durations that span them (written with the lock held, read without it,
 * from any thread or signal handler):
 *  - suspends: a sample whose time suspended since boot differs from the
 *    previous one's leaves a window from that sample to this one, with
 *    the time suspended (the counter may have counted it or not);
 *  - breaks: a rate check that found the counter further from
 *    CLOCK_MONOTONIC_RAW than the state's stated rate allows (a step, or
 *    a rate change below the switch's threshold) leaves the window it
 *    looked at, with the discrepancy it measured.
 * Each kind is a ring of the last TKC_WINDOWS windows; the ones it lets go
 * merge into one (from the lowest tick to the highest, their total), so a
 * bound stays a bound however many windows come after it.
 */
#include "state.h"
#include "platform.h"
#include "calibrate.h"

#define TKC_WINDOWS 8

/* A sequence count around every write (odd while one is under way): a
 * reader that sees it change, or odd, reads again (a few times, then
 * takes the windows as unknown). */
typedef struct tkc_ring {
  TKC_SHARED unsigned seq;
  TKC_SHARED unsigned n; /* windows ever kept */
  TKC_ALIGN8 TKC_SHARED uint64_t lo[TKC_WINDOWS];
  TKC_ALIGN8 TKC_SHARED uint64_t hi[TKC_WINDOWS];
  TKC_ALIGN8 TKC_SHARED uint64_t len[TKC_WINDOWS];
  /* the windows the ring let go, merged */
  TKC_ALIGN8 TKC_SHARED uint64_t old_lo, old_hi, old_len;
} tkc_ring;

static tkc_ring tkc_susp_ring, tkc_break_ring;
/* the last sample: its lower unit tick and suspended time (suspend ring) */
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_last_lo = 0;
static TKC_ALIGN8 TKC_SHARED uint64_t tkc_last_susp = UINT64_MAX;

/* a + b, saturating. */
static uint64_t tkc_win_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* The writer's side (inside an odd sequence count): one more window. */
static void tkc_ring_push(tkc_ring *r, uint64_t lo, uint64_t hi, uint64_t len) {
  unsigned n = TKC_LOAD_RELAXED(&r->n), i = n % TKC_WINDOWS;
  if (n >= TKC_WINDOWS) { /* the oldest window goes: merged, not forgotten */
    uint64_t olo = TKC_LOAD_RELAXED(&r->lo[i]), ohi = TKC_LOAD_RELAXED(&r->hi[i]);
    uint64_t olen = TKC_LOAD_RELAXED(&r->len[i]);
    if (n > TKC_WINDOWS) {
      uint64_t mlo = TKC_LOAD_RELAXED(&r->old_lo), mhi = TKC_LOAD_RELAXED(&r->old_hi);
      if (mlo < olo) olo = mlo;
      if (mhi > ohi) ohi = mhi;
      olen = tkc_win_add(olen, TKC_LOAD_RELAXED(&r->old_len));
    }
    TKC_STORE_RELEASE(&r->old_lo, olo);
    TKC_STORE_RELEASE(&r->old_hi, ohi);
    TKC_STORE_RELEASE(&r->old_len, olen);
  }
  TKC_STORE_RELEASE(&r->lo[i], lo);
  TKC_STORE_RELEASE(&r->hi[i], hi);
  TKC_STORE_RELEASE(&r->len[i], len);
  TKC_STORE_RELEASE(&r->n, n + 1u);
}

/* The reader's side (between two loads of an even sequence count): the
 * windows that meet [lo, hi], their total into *total; 1 when there is one. */
static int tkc_ring_meet(const tkc_ring *r, uint64_t lo, uint64_t hi, uint64_t *total) {
  unsigned n = TKC_LOAD_ACQUIRE(&r->n), k = n < TKC_WINDOWS ? n : TKC_WINDOWS, i;
  int found = 0;
  *total = 0;
  for (i = 0; i < k; i++) {
    uint64_t wlo = TKC_LOAD_ACQUIRE(&r->lo[i]), whi = TKC_LOAD_ACQUIRE(&r->hi[i]);
    if (lo < whi && hi > wlo) {
      found = 1;
      *total = tkc_win_add(*total, TKC_LOAD_ACQUIRE(&r->len[i]));
    }
  }
  if (n > TKC_WINDOWS && lo < TKC_LOAD_ACQUIRE(&r->old_hi) && hi > TKC_LOAD_ACQUIRE(&r->old_lo)) {
    found = 1;
    *total = tkc_win_add(*total, TKC_LOAD_ACQUIRE(&r->old_len));
  }
  return found;
}

/* The writer's section (lock held): an odd sequence count while it lasts,
 * so a reader between two loads of an even one saw none of it. */
static unsigned tkc_ring_open(tkc_ring *r) {
  unsigned seq = TKC_LOAD_RELAXED(&r->seq);
  TKC_STORE_RELEASE(&r->seq, seq + 1u);
  return seq;
}
static void tkc_ring_close(tkc_ring *r, unsigned seq) { TKC_STORE_RELEASE(&r->seq, seq + 2u); }

/* ---- suspends ----------------------------------------------------------- */
void tkc_note_sample(uint64_t lo, uint64_t hi, uint64_t susp) {
  tkc_ring *r = &tkc_susp_ring;
  uint64_t prev_lo = TKC_LOAD_RELAXED(&tkc_last_lo);
  uint64_t prev_susp = TKC_LOAD_RELAXED(&tkc_last_susp);
  unsigned seq;
  if (susp == UINT64_MAX) return; /* unknown: the previous one stays the reference */
  seq = tkc_ring_open(r);
  if (tkc_suspend_between(prev_susp, susp) && susp > prev_susp)
    tkc_ring_push(r, prev_lo, hi, susp - prev_susp);
  TKC_STORE_RELEASE(&tkc_last_lo, lo);
  TKC_STORE_RELEASE(&tkc_last_susp, susp);
  tkc_ring_close(r, seq);
}

void tkc_suspends_reset(void) {
  unsigned seq = tkc_ring_open(&tkc_susp_ring);
  TKC_STORE_RELEASE(&tkc_susp_ring.n, 0u);
  TKC_STORE_RELEASE(&tkc_last_lo, (uint64_t)0);
  TKC_STORE_RELEASE(&tkc_last_susp, UINT64_MAX);
  tkc_ring_close(&tkc_susp_ring, seq);
}

int tkc_suspends_in(uint64_t lo, uint64_t hi, int read_now, uint64_t *slept) {
  const tkc_ring *r = &tkc_susp_ring;
  int tries;
  for (tries = 0; tries < 4; tries++) {
    unsigned seq = TKC_LOAD_ACQUIRE(&r->seq);
    uint64_t total, last_lo, last_susp;
    int found;
    if (seq & 1u) continue;
    found = tkc_ring_meet(r, lo, hi, &total);
    last_lo = TKC_LOAD_ACQUIRE(&tkc_last_lo);
    last_susp = TKC_LOAD_ACQUIRE(&tkc_last_susp);
    if (TKC_LOAD_ACQUIRE(&r->seq) != seq) continue;
    if (read_now && last_susp != UINT64_MAX && hi > last_lo) {
      uint64_t now = tkc_p_suspended_ns();
      if (tkc_suspend_between(last_susp, now) && now > last_susp) {
        found = 1;
        total = tkc_win_add(total, now - last_susp);
      }
    }
    *slept = total;
    return found;
  }
  /* a writer kept interrupting (or this is a handler that interrupted
   * it, which cannot finish first): a suspend cannot be ruled out, nor
   * its time known */
  *slept = UINT64_MAX;
  return 1;
}

/* ---- breaks ------------------------------------------------------------- */
void tkc_note_break(uint64_t lo, uint64_t hi, uint64_t excess_ns) {
  unsigned seq = tkc_ring_open(&tkc_break_ring);
  tkc_ring_push(&tkc_break_ring, lo, hi, excess_ns);
  tkc_ring_close(&tkc_break_ring, seq);
}

void tkc_breaks_reset(void) {
  unsigned seq = tkc_ring_open(&tkc_break_ring);
  TKC_STORE_RELEASE(&tkc_break_ring.n, 0u);
  tkc_ring_close(&tkc_break_ring, seq);
}

int tkc_breaks_in(uint64_t lo, uint64_t hi, uint64_t *excess_ns) {
  const tkc_ring *r = &tkc_break_ring;
  int tries;
  if (TKC_LOAD_ACQUIRE(&r->n) == 0) { /* none ever: one load */
    *excess_ns = 0;
    return 0;
  }
  for (tries = 0; tries < 4; tries++) {
    unsigned seq = TKC_LOAD_ACQUIRE(&r->seq);
    int found;
    if (seq & 1u) continue;
    found = tkc_ring_meet(r, lo, hi, excess_ns);
    if (TKC_LOAD_ACQUIRE(&r->seq) == seq) return found;
  }
  *excess_ns = UINT64_MAX; /* a writer kept interrupting: unknown */
  return 1;
}
