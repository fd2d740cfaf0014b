/* tickclock internals — the published states and their transitions
 * (publish.c writes them; init.c, refine.c, revalidate.c, duration.c and
 * due.c above it; the bookkeeping, bookkeeping.c, beneath). */
#ifndef TICKCLOCK_STATE_H
#define TICKCLOCK_STATE_H

#include "sys.h"
#include "tickclock.h"
#include "evidence.h"
#include "unit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Installs a platform (NULL restores the native one) and starts a fresh
 * world: forgets the published state (the next initialisation is a first
 * one) and clears the system-call flag. Not thread-safe: call before any
 * thread uses the library (tests only). */
#if !defined(TKC_SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only */
TKC_INTERNAL void tkc_set_platform(const tickclock_platform *p);
#endif

/* Forgets the published state: the next initialisation is a first one. */
TKC_INTERNAL void tkc_reset_world(void);

/* Revalidation: counter time and CLOCK_MONOTONIC_RAW must agree,
 * over the step since the previous conclusive sample and over the total
 * since initialisation, within DRIFT_PPM plus the frequency's own
 * uncertainty of the elapsed time, plus DRIFT_ABS_NS and the two samples'
 * bracket half-widths. A sample whose tightest bracket is wider than
 * MAX_BRACKET_NS (preempted every time) is inconclusive: retried at the
 * next check, never counted as a failure. */
/* (TICKCLOCK_REVALIDATE_DRIFT_PPM, _DRIFT_ABS_NS, _MAX_BRACKET_NS and
 * TICKCLOCK_CHECK_DEFAULT_MS are public: tickclock.h.) */

/* The counter this ISA reads inline, 0 where there is none. */
#if defined(TKC_ARCH_COUNTER)
#define TKC_COUNTER TKC_ARCH_COUNTER
#else
#define TKC_COUNTER 0
#endif

/* Refinement stops once its baseline spans this (refine.c). */
#define TKC_REFINE_UNTIL_NS UINT64_C(1000000000)
/* The smallest uncertainty a counter state states: a calibration's own
 * bound goes below it only on baselines the refinement never takes (or
 * across a suspend it would have discarded), and a stated frequency
 * matches CLOCK_MONOTONIC_RAW only as well as the kernel's own
 * conversion, which is not exact. */
#define TKC_MIN_UNCERTAINTY_PPM 0.01
/* Slots kept ready for the publications that fall due inside
 * tickclock_to_ns/tickclock_delta_ns (refinements, a cross-check), which
 * may not allocate: enough for a whole refinement schedule. Refilled by
 * the calls that may allocate (tickclock_init, tickclock_revalidate,
 * tickclock_revalidate_every): a whole refinement schedule (5) and a
 * restatement after a break (tkc_restate_locked). With the first state and
 * the spare they are the 8 static slots: a first use allocates nothing.
 * When they run out, the refinement and further restatements wait for the
 * next of those calls (a break's window is kept all the same). */
#define TKC_READY_SLOTS 6

/* A switch between sources reads the new one and then the old one: the
 * time between the two (bracketed on CLOCK_MONOTONIC_RAW, normally a few
 * hundred ns) is a forward step the new state starts with. A pair split
 * by an interrupt or a preemption (20-80 us on guests that stall vCPUs)
 * is read again, up to this many times, until the bracket is this tight. */
#define TKC_CONT_TRIES 4
#define TKC_CONT_TIGHT_NS UINT64_C(2000)

/* How the old state's counter may be read when a state replaces it (its
 * health, not a trust verdict: those are decide.h's TKC_TRUST_*). */
#define TKC_OLD_HEALTHY 0    /* a re-initialisation: read it */
#define TKC_OLD_FAILED 1     /* it failed a check: read it and extrapolate */
#define TKC_OLD_UNREADABLE 2 /* RDTSC is disabled: extrapolate only */

/* ---- states and slots (publish.c; lock held) ---- */
/* A slot for a new state: a ready one, else a static one, else (may_alloc)
 * a new allocation; NULL past TICKCLOCK_MAX_STATES or when none may be
 * had without allocating. */
TKC_INTERNAL tickclock_info *tkc_take_slot(int may_alloc);
/* Tops the ready slots up (may allocate) and re-arms a refinement that
 * waited for one. */
TKC_INTERNAL void tkc_reserve_slots(void);

/* ---- the lock (lock.c) ---- */
/* 1 taken; 0 when this thread already holds it (a re-entering signal
 * handler): the caller must not wait for itself. */
TKC_INTERNAL int tkc_lock(void);
TKC_INTERNAL int tkc_trylock(void);
TKC_INTERNAL void tkc_unlock(void);
TKC_INTERNAL void tkc_ensure_atfork(void);

/* ---- states and publication (publish.c; lock held) ---- */
TKC_INTERNAL int tkc_reads_counter(const tickclock_info *s);
/* (tkc_map, tkc_after, tkc_max_u64: unit.h) */
TKC_INTERNAL uint64_t tkc_read_counter_ordered(void);
/* The state published now (NULL before the first). */
TKC_INTERNAL const tickclock_info *tkc_published(void);
/* Publishes st as the continuation of old (trust: TKC_OLD_*) in a slot
 * (use_spare: the one reserved for leaving the counter; may_alloc: 0 inside
 * the conversions). TICKCLOCK_ENOMEM / TICKCLOCK_ELIMIT when there is no
 * slot: nothing changed. */
TKC_INTERNAL int tkc_publish(const tickclock_info *st, const tickclock_info *old, int trust,
                             int use_spare, int may_alloc, const tickclock_evidence *ev);
/* Plans what follows the decision fresh (tkc_refine_plan's arguments),
 * then publishes it (tkc_publish's arguments); the plan is dropped again
 * when nothing was published. */
TKC_INTERNAL int tkc_publish_planned(const tickclock_info *fresh, const tickclock_info *old,
                                     const tickclock_evidence *ev, int asked_ms, int cross_checked,
                                     int trust, int use_spare, int may_alloc);
/* The states taken so far, static and allocated (at most
 * TICKCLOCK_MAX_STATES). */
TKC_INTERNAL unsigned tkc_states_count(void);

/* Before the first state is visible (a signal handler that interrupted
 * the first initialisation in its own thread): the first state once its
 * unit is fixed, else the constant state whose ticks are CLOCK_MONOTONIC
 * nanoseconds (tkc_is_reentry); its readings come from tkc_reentry_read,
 * which the first state then continues. */
TKC_INTERNAL const tickclock_info *tkc_before_first(void);
TKC_INTERNAL int tkc_is_reentry(const tickclock_info *s);
TKC_INTERNAL uint64_t tkc_reentry_read(void);

/* ---- initialisation (init.c) ---- */
/* tickclock_init's work (due.c checks the current counter first). */
TKC_INTERNAL int tkc_init_locked(const tickclock_config *cfg);
/* The first state (initialising once), or NULL when this thread
 * re-entered the lock. */
TKC_INTERNAL const tickclock_info *tkc_first_state(void);

/* ---- the bookkeeping (bookkeeping.c owns it; lock held) ----------------
 * Beneath publication: it publishes nothing and decides nothing. */
/* The checks' records: samples in the source's ticks and
 * CLOCK_MONOTONIC_RAW ns. */
typedef struct tkc_check_book {
  uint32_t reval_ms;         /* period of the rate check, 0 off */
  uint64_t reval_at;         /* unit tick of the next periodic check */
  int chk_on;                /* the published state reads the counter */
  tkc_bracket chk_anchor;    /* at publication */
  tkc_bracket chk_prev;      /* the last conclusive sample */
  uint64_t max_seen;         /* highest unit tick known handed out */
  tkc_bracket chk_tight;     /* the last sample the stated rate was held to */
  tickclock_conv held_conv;  /* ... at this rate: the state's, or the
                                refinement's latest measurement since it
                                (published or not) */
  double held_ppm;           /* ... within this: that rate's uncertainty */
  double held_base_ppm;      /* how far the state's rate may lie from the
                                counter's at the held rate: a break's
                                restatement widens from it */
  tkc_bracket chk_loose;     /* the switch's total runs from here: the decision's
                                anchor (refinements and restatements keep it) */
  tickclock_conv loose_conv; /* ... and the rate it holds the counter to: the
                                decision's, refined until the first restatement */
  double loose_ppm;          /* with its uncertainty */
  int restating;             /* a restatement is being published */
  int restated;              /* one was, since the decision */
  unsigned breaks;           /* breaks found since the last initialisation */
  double break_ppm;          /* the last one: the uncertainty that covers it */
  char break_why[96];        /* ... and what was found */
  int cs_known;              /* clocksource at publication */
  char cs[32];
  /* the paravirtual clock page as last read (kind 0: none): its content
   * changing (not just its version) means the host rewrote the clock */
  tickclock_pvclock_page pv;
} tkc_check_book;
TKC_INTERNAL tkc_check_book *tkc_checks(void);
/* When a counter state published without a sample to check against (the
 * raw clock unreadable) first failed to take one at its check period:
 * reset at each publication. */
TKC_INTERNAL uint64_t *tkc_unanchored_since(void); /* unit tick; UINT64_MAX: none */
#define TKC_UNANCHORED_PERIODS 3
/* The deadline the inline conversions compare with: the earlier of the
 * next periodic check and the next refinement. */
TKC_INTERNAL void tkc_store_deadline(void);
/* The ticks ahead of the counter the conversions leave alone until the
 * deadline moves (the deadline's store empties it). */
TKC_INTERNAL void tkc_ahead_note(uint64_t far, uint64_t lo, uint64_t span);
/* Where the far ticks ahead start (UINT64_MAX: none seen). */
TKC_INTERNAL uint64_t tkc_ahead_far(void);
/* The next periodic check a period after now_unit (off unless the state
 * reads the counter and a period is set), then the deadline. */
TKC_INTERNAL void tkc_arm_deadline(const tickclock_info *s, uint64_t now_unit);
/* The highest unit tick known handed out. */
TKC_INTERNAL uint64_t tkc_max_seen(void);
/* The last conclusive sample of the published counter into *b; 1 when the
 * checks are on (there is one). */
TKC_INTERNAL int tkc_last_sample(tkc_bracket *b);
/* slot, about to replace old, with its anchor sample (width UINT64_MAX:
 * none could be taken): the checks start from it, the clocksource of a
 * counter state is remembered (from ev), the ticks handed out are raised
 * to slot's base and the anchor. 1 when the checks are on. The caller
 * arms the deadline after the refinement is planned. */
TKC_INTERNAL int tkc_checks_published(const tickclock_info *old, const tickclock_info *slot,
                                      tkc_bracket anchor, int counter,
                                      const tickclock_evidence *ev);
/* Forgets them (tkc_reset_world). */
TKC_INTERNAL void tkc_checks_reset(void);

/* The claims a cross-check refused (kept for the life of the process, the
 * last TKC_MAX_REFUSALS of them): noted by the cross-check, copied into
 * every later initialisation's evidence. */
TKC_INTERNAL void tkc_refusal_note(int source, uint64_t hz_num, uint64_t hz_den,
                                   const tickclock_calibration *c);
TKC_INTERNAL void tkc_refusals_copy(tickclock_evidence *ev);
TKC_INTERNAL void tkc_refusals_reset(void);

/* The refinement's schedule. */
typedef struct tkc_refine_book {
  int on;                          /* a refinement is pending */
  int deferred;                    /* it fell due where no slot was ready: the
                                      next call that may allocate re-arms it */
  tickclock_calibration cal_first; /* the calibration refinements start from */
  int from_next;                   /* cal_first starts at the next publication's
                                      bracket (tkc_refine_published), once */
  int hold_only;                   /* measures for the checks only (the rate
                                      they hold the counter to), publishes
                                      nothing: a calibration the caller asked
                                      for stays as it is */
  uint64_t at_ns;                  /* raw clock of the next refinement */
  uint64_t at;                     /* ... in unit ticks */
} tkc_refine_book;
TKC_INTERNAL tkc_refine_book *tkc_refine_schedule(void);
/* The evidence a published frequency's cross-check decides again from:
 * the published state's own, written by tkc_publish_planned only once the
 * state is out (a decision that failed to publish leaves it as it was). */
TKC_INTERNAL tickclock_evidence *tkc_refine_evidence(void);
/* Plans what follows the decision fresh (made with ev's calibration,
 * asked_ms: the caller asked for one of its own length; cross_checked: a
 * published source that passed); the publication then starts it
 * (tkc_refine_published). */
TKC_INTERNAL void tkc_refine_plan(const tickclock_info *fresh, const tickclock_evidence *ev,
                                  int asked_ms, int cross_checked);
/* The refinement's schedule from slot's anchor (checked: the state reads
 * the counter and the anchor is a sample; else no refinement). */
TKC_INTERNAL void tkc_refine_published(const tickclock_info *slot, tkc_bracket anchor, int checked);
/* A refinement is pending; the unit tick it is due at (UINT64_MAX: none). */
TKC_INTERNAL int tkc_refine_pending(void);
TKC_INTERNAL uint64_t tkc_refine_at(void);
/* It fell due where no slot was ready: waits for a call that may allocate
 * (tkc_refine_rearm, due at once, at max_seen, while a state is published). */
TKC_INTERNAL void tkc_refine_defer(void);
TKC_INTERNAL int tkc_refine_deferred(void);
TKC_INTERNAL void tkc_refine_rearm(int published, uint64_t max_seen);
TKC_INTERNAL void tkc_refine_reset(void);
#if defined(TKC_ARCH_COUNTER)
/* A published frequency's cross-check from a late anchor b (the state
 * had none at publication). */
TKC_INTERNAL void tkc_refine_from_anchor(const tickclock_info *s, tkc_bracket b);
#endif

/* The suspend windows (windows.c; written with the lock held, read without it): a
 * sample of the counter (a publication's anchor, a conclusive rate
 * check) taken between unit ticks lo and hi, with susp suspended since
 * boot (UINT64_MAX unknown). A suspend since the previous sample is kept
 * (its window and length) for the durations that span it. */
TKC_INTERNAL void tkc_note_sample(uint64_t lo, uint64_t hi, uint64_t susp);
/* The suspends that may lie inside [lo, hi]: their total length in
 * *slept, and 1 when there is one. read_now: the time suspended now is
 * compared with the last sample's (a suspend since that sample, which no
 * check has seen yet, lies before now). */
TKC_INTERNAL int tkc_suspends_in(uint64_t lo, uint64_t hi, int read_now, uint64_t *slept);
/* Forgets them (tkc_reset_world). */
TKC_INTERNAL void tkc_suspends_reset(void);
/* The breaks a rate check found (windows.c, like the suspends): the window
 * [lo, hi] (unit ticks) it looked at, where the counter lay excess_ns
 * further from CLOCK_MONOTONIC_RAW than the stated rate allows; the total
 * of those that meet [lo, hi] in *excess_ns, and 1 when there is one. */
TKC_INTERNAL void tkc_note_break(uint64_t lo, uint64_t hi, uint64_t excess_ns);
TKC_INTERNAL int tkc_breaks_in(uint64_t lo, uint64_t hi, uint64_t *excess_ns);
TKC_INTERNAL void tkc_breaks_reset(void);

/* ---- re-validation (revalidate.c; lock held) ---- */
/* tkc_revalidate_locked's answer when the counter passed the checks but
 * not its stated rate: the caller restates it (tkc_restate_locked). */
#define TKC_BREAK 2
#if defined(TKC_ARCH_COUNTER)
/* Before any counter read of a check or a refinement: RDTSC disabled for
 * this thread means switching to the OS clock without reading the
 * counter. 1 if it switched. */
TKC_INTERNAL int tkc_rdtsc_disabled_locked(const tickclock_info *s);
/* The checks of the published counter state (the caller saw RDTSC
 * enabled for this thread); with_io: also the kernel's clocksource, which
 * needs a file read. TICKCLOCK_SWITCHED when it switched to the OS clock. */
TKC_INTERNAL int tkc_revalidate_locked(int with_io);
/* The paravirtual clock page the published counter state was trusted by,
 * read again: a content change republishes (or leaves the counter); 1
 * when it published. Before any refinement, whose calibration would
 * otherwise span the change. Async-signal-safe (a ready slot). */
TKC_INTERNAL int tkc_pv_check_locked(const tickclock_info *s);
/* A counter state published without a sample to check against takes one
 * now (nothing is checked until one is had). */
TKC_INTERNAL void tkc_anchor_again(const tickclock_info *s);
TKC_INTERNAL int tkc_unanchored_locked(const tickclock_info *s, uint64_t now_unit);
#endif
/* The OS clock in use and RDTSC disabled for this thread: readings move
 * to the system call (a new state that says so). */
TKC_INTERNAL void tkc_os_path_check_locked(const tickclock_info *s);

/* ---- refinement (refine.c; lock held) ---- */
#if defined(TKC_ARCH_COUNTER) /* (no counter: nothing is ever published unchecked) */
/* The cross-check of a published frequency against the calibration c
 * measured since: decides again with c and publishes the result. */
TKC_INTERNAL void tkc_cross_check(const tickclock_info *s, const tickclock_calibration *c,
                                  int may_alloc);
/* One refinement step (may_alloc: 0 inside the conversions). */
TKC_INTERNAL void tkc_refine_locked(int may_alloc);
/* After a break (TKC_BREAK): the published state again, its uncertainty
 * widened to the checks' record (break_ppm), its rate measured again from
 * a fresh bracket by the refinement; the OS clock once there were more
 * than TICKCLOCK_REVALIDATE_MAX_BREAKS. */
TKC_INTERNAL void tkc_restate_locked(int may_alloc);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_STATE_H */
