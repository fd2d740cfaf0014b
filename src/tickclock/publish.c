/* tickclock — publication: the one writer of the published state.
 *
 * States. Every decision is published as a new, immutable tickclock_info
 * (static slots first, then allocations that are never freed, at most
 * TICKCLOCK_MAX_STATES of them), its address stored with release ordering
 * in tkc_g_state, then the hot path's token in tkc_g_source. Readers load
 * with acquire and never see a half-written state, and a state a reader
 * holds is never written again. Publications that fall due inside the
 * conversions (which may run in a signal handler) take a slot reserved in
 * advance, never an allocation.
 *
 * One tick unit per process (the cyc2ns pattern). The first state fixes
 * the unit: raw counter ticks when it chose the counter (the inline read),
 * otherwise the OS clock's ticks (nanoseconds; QPC counts on Windows).
 * Each later state keeps it: its readings are
 *     base_ticks + unit(source reading - src_base)
 * with base_ticks no lower than any reading handed out before, and its
 * conversion is to_ns(t) = base_ns + conv(t - base_ticks) with base_ns the
 * previous state's to_ns(base_ticks). So intervals span any publication,
 * and to_ns(now()) is continuous and never decreases. A new frequency for
 * the same raw counter keeps the inline read and changes only conv.
 *
 * Initialisation, re-validation and refinement decide what to publish and
 * call tkc_publish (lock held); nothing here calls them back. What a
 * publication starts (the checks' anchor, the refinement's schedule, the
 * deadline) is recorded in the bookkeeping beneath (bookkeeping.c).
 */
#include "state.h"
#include "platform.h"
#include "calibrate.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines them */
TKC_SHARED int tkc_g_source = 0;
const tickclock_info *TKC_SHARED tkc_g_state = NULL;
TKC_SHARED int tkc_g_os_direct = 0;
#endif

/* Whether a state's readings are the OS clock's own ticks unchanged
 * (nanoseconds; QPC counts on Windows). */
static int tkc_os_direct_state(const tickclock_info *s) {
  return s->read_path == TICKCLOCK_READ_OS && s->src_is_unit && s->base_ticks == s->src_base;
}

/* ---- states (all below: lock held) ------------------------------------ */
#define TKC_STATIC_SLOTS 8
static tickclock_info tkc_slots[TKC_STATIC_SLOTS];
static unsigned tkc_slots_used = 0;
static unsigned tkc_states_taken = 0; /* static and allocated: <= TICKCLOCK_MAX_STATES */
static unsigned tkc_generation = 0;
/* Held in reserve while a counter state is published: the switch away
 * from the counter must always find a slot. */
static tickclock_info *tkc_spare = NULL;
/* Reserved for the publications due inside the conversions. */
static tickclock_info *tkc_ready[TKC_READY_SLOTS];
static unsigned tkc_n_ready = 0;

/* States past the static slots: never freed (a reader may hold one for the
 * life of the process), and all kept on a list so that each stays
 * reachable even when no state links to it any more. */
typedef struct tkc_block {
  struct tkc_block *next;
  tickclock_info info;
} tkc_block;
static tkc_block *tkc_blocks = NULL;

static tickclock_info *tkc_new_slot(int may_alloc) {
  tkc_block *b;
  if (tkc_states_taken >= TICKCLOCK_MAX_STATES) return NULL;
  if (tkc_slots_used < TKC_STATIC_SLOTS) {
    tkc_states_taken++;
    return &tkc_slots[tkc_slots_used++];
  }
  if (!may_alloc) return NULL;
  b = (tkc_block *)calloc(1, sizeof *b);
  if (b == NULL) return NULL;
  b->next = tkc_blocks;
  tkc_blocks = b;
  tkc_states_taken++;
  return &b->info;
}

tickclock_info *tkc_take_slot(int may_alloc) {
  if (tkc_n_ready > 0) return tkc_ready[--tkc_n_ready];
  return tkc_new_slot(may_alloc);
}

void tkc_reserve_slots(void) {
  while (tkc_n_ready < TKC_READY_SLOTS) {
    tickclock_info *slot = tkc_new_slot(1);
    if (slot == NULL) break;
    tkc_ready[tkc_n_ready++] = slot;
  }
  if (tkc_refine_deferred() && tkc_n_ready > 0)
    tkc_refine_rearm(TKC_LOAD_ACQUIRE(&tkc_g_state) != NULL, tkc_max_seen());
}

int tkc_reads_counter(const tickclock_info *s) {
  return s->read_path == TICKCLOCK_READ_COUNTER || s->read_path == TICKCLOCK_READ_COUNTER_MAPPED;
}

/* An upper bound of the unit ticks old has handed out so far. A counter
 * that failed may have stepped back after readings no check saw, so the
 * bound also extrapolates from the last conclusive sample at the
 * frequency's uncertainty plus the drift allowance (all of it without
 * touching the counter when it cannot be read). */
/* os_now: an OS clock reading the caller already took (0: none), which
 * serves as the old OS clock's own reading. *lo: the old source's own
 * reading (unit ticks; 0 when not read), the
 * lower end of the step; *allow_ns: when extrapolated, the allowance that
 * bounds how far the extrapolation may lie from where the old counter
 * would be (0 otherwise). */
static uint64_t tkc_now_bound(const tickclock_info *old, int trust, uint64_t os_now, uint64_t *lo,
                              double *allow_ns) {
  uint64_t t = tkc_max_seen();
  tkc_bracket prev;
  *lo = 0;
  *allow_ns = 0;
  if (!tkc_reads_counter(old)) {
    *lo = tkc_map(old, os_now != 0 ? os_now : tkc_p_os_ns());
    return tkc_max_u64(t, *lo);
  }
  if (trust != TKC_OLD_UNREADABLE) {
    *lo = tkc_map(old, tkc_p_counter_ordered());
    t = tkc_max_u64(t, *lo);
  }
  if (trust != TKC_OLD_HEALTHY && tkc_last_sample(&prev)) {
    uint64_t raw = tkc_p_raw_ns(), susp = tkc_p_suspended_ns();
    uint64_t c = tkc_extrapolate(old, prev, raw, susp, allow_ns);
    t = tkc_max_u64(t, tkc_map(old, c));
    *lo = tkc_map(old, c);
  }
  return t;
}

uint64_t tkc_read_counter_ordered(void) { return tkc_p_counter_ordered(); }

/* Handed to a signal handler that interrupted the first initialisation in
 * its own thread: ticks are nanoseconds of CLOCK_MONOTONIC (scaled == 0),
 * and it says so. Constant, so no thread ever writes it (a fork can copy
 * no half-written one). */
static const tickclock_info tkc_reentry_state = {
    TICKCLOCK_SOURCE_SYSTEM,               /* source */
    0,                                     /* scaled: ticks are ns */
    {UINT64_C(1000000000), 1, 1, 0, 1, 0}, /* conv: 1 GHz */
    0,
    0,        /* base_ticks, base_ns */
    "system", /* source_name */
    UINT64_C(1000000000),
    1,
    1e9, /* hz_num, hz_den, hz */
    TICKCLOCK_FREQ_IDENTITY,
    "identity", /* freq_method, its name */
    0.0,
    0,
    0,
    1.0, /* uncertainty, baseline, pending, resolution */
    0,
    0, /* forced, request_refused */
    "a signal handler interrupted this thread's first initialisation; its readings are "
    "CLOCK_MONOTONIC read directly (nanoseconds)", /* why */
    "",                                            /* env_error */
    0,
    {{0, NULL, 0, 0, 0.0, ""}}, /* candidates */
    "identity",                 /* freq_detail */
    0,
    {{NULL, 0, 0, 0, 0, 0.0, 0.0, 0, 0.0, 0.0, 0, 0, ""}}, /* freqs */
    {{0}},
    0.0,
    0, /* disagreements, revalidated */
    TICKCLOCK_SOURCE_SYSTEM,
    TICKCLOCK_READ_OS,
    1,
    0,                                     /* unit_source, read_path, src_is_unit, src_base */
    {UINT64_C(1000000000), 1, 1, 0, 1, 0}, /* src_conv */
    0,
    UINT64_C(1000000000),
    1,
    1e9, /* generation, unit_hz */
    NULL,
    NULL,
    0, /* prev, skip, skip_min_base */
    0,
    0,
    UINT64_MAX /* cont_bound_ns, bounded_switch, susp_ns */
};

/* The first initialisation and a handler that interrupts it in its own
 * thread: once the handler has been handed a reading of the state above
 * (tkc_reentry_handed), the first state continues it, so that reading
 * compares with every later one (the counter is then read mapped into
 * nanoseconds, out of line). tkc_first_pending is the first state from
 * the moment its unit is fixed until it is visible: a handler in that
 * window reads through it. Both are only ever written by the thread that
 * holds the lock and its own handlers (atomic loads and stores: the
 * slot's fields are written before it is named). */
static TKC_SHARED int tkc_reentry_handed = 0;
static tickclock_info *TKC_SHARED tkc_first_pending = NULL;

const tickclock_info *tkc_before_first(void) {
  const tickclock_info *p = TKC_LOAD_ACQUIRE(&tkc_first_pending);
  return p != NULL ? p : &tkc_reentry_state;
}

int tkc_is_reentry(const tickclock_info *s) { return s == &tkc_reentry_state; }

uint64_t tkc_reentry_read(void) {
  TKC_STORE_RELEASE(&tkc_reentry_handed, 1);
  return tkc_p_os_ns_reentry();
}

static void tkc_continue(const tickclock_info *old, tickclock_info *st, int trust);
static void tkc_note_path(tickclock_info *st);

/* The unit fields of slot as old's continuation, and the rate of the
 * ticks it hands out: the unit's (ticks are ns unscaled). */
static void tkc_unit_of(const tickclock_info *old, tickclock_info *slot, int trust) {
  tkc_continue(old, slot, trust);
  slot->unit_hz_num = slot->scaled ? slot->conv.hz_num : UINT64_C(1000000000);
  slot->unit_hz_den = slot->scaled ? slot->conv.hz_den : 1;
  slot->unit_hz = (double)slot->unit_hz_num / (double)slot->unit_hz_den;
}

/* No slot for a state: the history is full, or memory is. */
static int tkc_no_slot(void) {
  return tkc_states_taken >= TICKCLOCK_MAX_STATES ? TICKCLOCK_ELIMIT : TICKCLOCK_ENOMEM;
}

/* Publishes the decision st as the continuation of old (trust: how far
 * old's counter may be read). Takes a slot (the spare when asked; inside
 * the conversions, may_alloc == 0, a ready one), keeps a spare while the
 * new state reads the counter, records the re-validation anchor, then
 * fixes the base last, right before the state becomes visible, so the
 * window in which a reader can pair a newer tick with the older state
 * stays a few nanoseconds. */
int tkc_publish(const tickclock_info *st, const tickclock_info *old, int trust, int use_spare,
                int may_alloc, const tickclock_evidence *ev) {
  tickclock_info *slot;
  tkc_bracket anchor;
  int counter = TKC_COUNTER != 0 && st->source == TKC_COUNTER, tries, checked;
  /* A state continues the one published: a caller whose notion of the
   * current state is stale (a frame interrupted by a handler that forked,
   * whose child published in the meantime) publishes nothing. */
  if (old != TKC_LOAD_ACQUIRE(&tkc_g_state)) return TICKCLOCK_EBUSY;
  /* the state's slot first, then the spare: the first state lands in the
   * first static slot, beside the decision just written, rather than a
   * slot further on (two page faults fewer at first use on the PVM guest,
   * 10 us each) */
  if (use_spare && tkc_spare != NULL && !counter) {
    slot = tkc_spare;
    tkc_spare = NULL;
  } else {
    slot = tkc_take_slot(may_alloc);
  }
  if (slot == NULL) return tkc_no_slot(); /* a spare stays reserved */
  if (counter && tkc_spare == NULL) {
    tkc_spare = tkc_take_slot(may_alloc);
    if (tkc_spare == NULL) {
      /* no spare: nothing published, the slot back among the ready ones
       * (there is room: it came from them, or they were empty) */
      tkc_ready[tkc_n_ready++] = slot;
      return tkc_no_slot();
    }
  }
  memcpy(slot, st, sizeof *slot);
  slot->generation = ++tkc_generation;
  if (counter && slot->uncertainty_ppm < TKC_MIN_UNCERTAINTY_PPM)
    slot->uncertainty_ppm = TKC_MIN_UNCERTAINTY_PPM;
  slot->tkc_susp_ns = UINT64_MAX;
  anchor.width = UINT64_MAX;
  anchor.mid = anchor.ns = 0;
  anchor.susp = UINT64_MAX;
  /* (a bracket that saw a suspend is taken again: the checks need one) */
  for (tries = 0; counter && tries < 3 && anchor.width == UINT64_MAX; tries++)
    anchor = tkc_tightest_bracket(tkc_read_counter_ordered);
  if (old != NULL) {
    tkc_unit_of(old, slot, trust); /* may extrapolate from the old samples */
  } else {
    /* the first state: after a handler's reading, a continuation of it;
     * again if one came in while the unit was being fixed */
    for (;;) {
      int handed = TKC_LOAD_ACQUIRE(&tkc_reentry_handed);
      tkc_unit_of(handed ? &tkc_reentry_state : NULL, slot, trust);
      TKC_STORE_RELEASE(&tkc_first_pending, slot);
      if (TKC_LOAD_ACQUIRE(&tkc_reentry_handed) == handed) break;
      TKC_STORE_RELEASE(&tkc_first_pending, (tickclock_info *)NULL);
    }
  }
  tkc_note_path(slot);
  tkc_link_history(slot);
  checked = tkc_checks_published(old, slot, anchor, counter, ev);
  if (checked) slot->tkc_susp_ns = anchor.susp;
  tkc_refine_published(slot, anchor, counter && checked);
  tkc_arm_deadline(slot, tkc_max_seen());
  /* A new rate for the same raw counter must still lie a guard ahead when
   * it becomes visible: if the work above was delayed (preempted, or slow
   * under emulation) until the counter came within half the guard of the
   * base, the base moves ahead again, so no tick read before this store
   * is converted with the new rate after the old one converted it. */
  if (old != NULL && slot->read_path == TICKCLOCK_READ_COUNTER && slot->src_is_unit &&
      old->read_path == TICKCLOCK_READ_COUNTER &&
      tkc_unit_guard(old, slot, tkc_p_counter_ordered()))
    tkc_link_history(slot);
  /* a reader that saw the flag read before this store, as one that
   * loaded the old state did */
  if (!tkc_os_direct_state(slot)) TKC_STORE_RELEASE(&tkc_g_os_direct, 0);
  TKC_STORE_RELEASE(&tkc_g_state, (const tickclock_info *)slot);
  TKC_STORE_RELEASE(&tkc_g_source, slot->read_path == TICKCLOCK_READ_COUNTER
                                       ? (int)TKC_COUNTER
                                       : (int)TICKCLOCK_SOURCE_SYSTEM);
  if (tkc_os_direct_state(slot)) TKC_STORE_RELEASE(&tkc_g_os_direct, 1);
  return TICKCLOCK_OK;
}

/* One try of a switch's pair of readings: the new source's (base), the
 * old state's bound for it (t, lo, allow: tkc_now_bound), and the raw
 * clock's two readings around them (r0, r1). */
typedef struct tkc_cont_try {
  uint64_t r0, r1, base, t, lo;
  double allow;
} tkc_cont_try;

/* Fills the unit fields of st, a fresh decision, so that it continues old
 * (NULL for the first state): the readings here, the arithmetic in
 * unit.c. */
static void tkc_continue(const tickclock_info *old, tickclock_info *st, int trust) {
  int counter = TKC_COUNTER != 0 && st->source == TKC_COUNTER;
  int os_path = tkc_os_syscall_on() ? TICKCLOCK_READ_OS_SYSCALL : TICKCLOCK_READ_OS;
  uint64_t t, lo;
  tkc_cont_try best = {0, 0, 0, 0, 0, 0}, last = best;
  double allow;
  int k, kept = 0, last_k = 0;
  st->src_conv = st->conv;
  st->prev = old;
  st->tkc_cont_bound_ns = 0;
  st->tkc_bounded_switch = 0;
  if (old == NULL) {
    tkc_unit_first(st, counter ? TICKCLOCK_READ_COUNTER : os_path);
    return;
  }
  tkc_unit_keep(old, st);
  /* (a counter that failed a check, its clock page rewritten, may have
   * stepped: its raw readings no longer continue the unit, so it maps) */
  if (counter && st->src_is_unit && old->read_path == TICKCLOCK_READ_COUNTER &&
      trust == TKC_OLD_HEALTHY) {
    t = tkc_now_bound(old, TKC_OLD_HEALTHY, 0, &lo, &allow);
    tkc_unit_same_counter(old, st, t);
    return;
  }
  /* the new source first, then the bound: readings start at or above it.
   * The new source's readings continue from it ahead by the time between
   * the two reads (r0, r1 on the raw clock bracket it), so a pair that an
   * interrupt or a preemption split is read again: the tightest of a few
   * tries is kept (any one of them keeps readings from going back while
   * the two sources run together, see below) */
  for (k = 0; k < TKC_CONT_TRIES; k++) {
    tkc_cont_try c;
    c.r0 = tkc_p_raw_ns();
    c.base = counter ? tkc_p_counter_ordered() : tkc_p_os_ns();
    /* for the OS clock its one reading is the old state's too (a second
     * read would step forward by the time between them, microseconds
     * under emulation) */
    c.t = tkc_now_bound(old, trust, counter ? 0 : c.base, &c.lo, &c.allow);
    c.r1 = tkc_p_raw_ns();
    /* (a try the raw clock failed to bracket never replaces one it did) */
    if (k == 0 || (c.r0 != 0 && c.r1 >= c.r0 && c.r1 - c.r0 < best.r1 - best.r0))
      best = c, kept = k;
    last = c, last_k = k;
    /* tight enough, or no raw clock to tell a split pair by */
    if (c.r0 == 0 || c.r1 < c.r0 || c.r1 - c.r0 <= TKC_CONT_TIGHT_NS) break;
  }
  /* An earlier try's pair holds while the old source has run no faster
   * than the raw clock since: a counter counts through a suspend that
   * CLOCK_MONOTONIC(_RAW) does not, and the old state's readings handed
   * out after it, up to this publication, would lie above the new state's
   * (by the time suspended). Then the last pair, read after it. */
  if (kept != last_k && best.lo != 0 && last.lo != 0 && last.r1 >= best.r0 &&
      last.lo > tkc_after(old, best.lo, last.r1 - best.r0 + TKC_CONT_TIGHT_NS))
    best = last;
  st->src_base = best.base;
  t = best.t, lo = best.lo, allow = best.allow;
  tkc_unit_mapped(old, st, t, lo, best.r0, best.r1, allow,
                  trust != TKC_OLD_HEALTHY && tkc_reads_counter(old),
                  counter ? TICKCLOCK_READ_COUNTER_MAPPED : os_path);
}

/* Says in the state how it reads when that is not the plain choice. */
static void tkc_note_path(tickclock_info *st) {
  size_t len = strlen(st->why);
  const char *note = NULL;
  if (st->read_path == TICKCLOCK_READ_OS_SYSCALL)
    note = "; read with the clock_gettime system call (RDTSC is disabled, the vDSO could trap)";
  else if (!st->src_is_unit)
    note = "; readings mapped into the process's first tick unit";
  if (note != NULL && len + 1 < sizeof st->why)
    tkc_strlcpy(st->why + len, note, sizeof st->why - len);
}

/* The state published now (NULL before first use). */
const tickclock_info *tkc_published(void) { return TKC_LOAD_ACQUIRE(&tkc_g_state); }

/* Plans what follows fresh in the bookkeeping, then publishes it; the
 * plan is dropped again when nothing was published. */
int tkc_publish_planned(const tickclock_info *fresh, const tickclock_info *old,
                        const tickclock_evidence *ev, int asked_ms, int cross_checked, int trust,
                        int use_spare, int may_alloc) {
  /* the plan is the new state's: the old one is kept aside until it is out */
  tkc_refine_book keep = *tkc_refine_schedule();
  int rc;
  tkc_refine_plan(fresh, ev, asked_ms, cross_checked);
  rc = tkc_publish(fresh, old, trust, use_spare, may_alloc, ev);
  if (rc != TICKCLOCK_OK) {
    *tkc_refine_schedule() = keep; /* nothing changed */
    return rc;
  }
  /* a published rate's cross-check judges it on the evidence it came from */
  if (fresh->freq_pending_check && ev != tkc_refine_evidence()) *tkc_refine_evidence() = *ev;
  return rc;
}

/* The states taken so far (static and allocated). */
unsigned tkc_states_count(void) { return tkc_states_taken; }

void tkc_reset_world(void) {
  TKC_STORE_RELEASE(&tkc_reentry_handed, 0);
  TKC_STORE_RELEASE(&tkc_first_pending, (tickclock_info *)NULL);
  TKC_STORE_RELEASE(&tkc_g_os_direct, 0);
  TKC_STORE_RELEASE(&tkc_g_source, 0);
  TKC_STORE_RELEASE(&tkc_g_state, (const tickclock_info *)NULL);
  tkc_checks_reset();
  tkc_refine_reset();
  tkc_suspends_reset();
  tkc_breaks_reset();
  tkc_refusals_reset();
}
