/* tickclock — what falls due: the conductor above initialisation,
 * re-validation and refinement (lock held for the work itself).
 *
 * The bookkeeping beneath only records when work is due (the deadline the
 * inline conversions compare with, bookkeeping.c); this file acts on it,
 * in the order the work must run, and is the only one that calls both
 * re-validation (revalidate.c) and refinement (refine.c). Three ways in
 * (and tickclock_init, which checks the published counter before the
 * initialisation replaces it):
 *  - tickclock_revalidate() (and tickclock_revalidate_every()): a call the
 *    program makes on purpose, outside any signal handler. It may
 *    allocate (it tops up the slots the conversions publish into) and read
 *    files (the kernel's clocksource).
 *  - tkc_revalidate_due(), from tickclock_to_ns/tickclock_delta_ns (and
 *    tickclock_duration_get) once a tick passed the deadline: possibly
 *    inside a signal handler that interrupted anything, malloc included.
 *    It takes the lock only if it is free (never waits), allocates
 *    nothing (a publication takes a ready slot, or waits for a call that
 *    may allocate), reads no file, and formats with the library's own
 *    formatter.
 */
#include "state.h"

#if defined(TKC_ARCH_COUNTER)
/* What is due at unit tick ticks: the RDTSC check before any counter
 * read (check_now: an explicit tickclock_revalidate(), which made it
 * before reading the tick, and wants the checks in any case); a published
 * frequency's cross-check before the checks (a wrong stated rate is
 * replaced, not mistaken for the counter drifting); the rate check; a
 * refinement (after a break the state is restated first, and measured
 * again from there). may_alloc (and the file reads):
 * tickclock_revalidate() only. *now: the unit tick read for the
 * conversions' way in (UINT64_MAX when none was read). */
static void tkc_due_locked(uint64_t ticks, int check_now, int may_alloc, uint64_t *now) {
  tkc_check_book *bk = tkc_checks();
  const tickclock_info *s = tkc_published();
  *now = UINT64_MAX;
  if (s == NULL || !tkc_reads_counter(s) || (!bk->chk_on && bk->reval_ms == 0)) return;
  if (!check_now) {
    if (tkc_rdtsc_disabled_locked(s)) return;
    /* a tick from the future (an interval converted as a tick, a caller's
     * arbitrary value) makes nothing due before its time */
    *now = tkc_map(s, tkc_read_counter_ordered());
    if (ticks > *now) ticks = *now;
  }
  if (!bk->chk_on) { /* published with nothing to check against: try again */
    if (check_now || ticks >= bk->reval_at)
      (void)tkc_unanchored_locked(s, check_now ? tkc_map(s, tkc_read_counter_ordered()) : *now);
    return;
  }
  /* the host rewrote the clock page: before a refinement measures across it */
  if (tkc_pv_check_locked(s)) {
    s = tkc_published();
    if (!tkc_reads_counter(s)) return;
    ticks = 0; /* a new state: its own schedule */
  }
  if (tkc_refine_pending() && s->freq_pending_check && ticks >= tkc_refine_at()) {
    tkc_refine_locked(may_alloc);
    s = tkc_published();
    if (!tkc_reads_counter(s)) return;     /* it disagreed: the OS clock now */
    if (!s->freq_pending_check) ticks = 0; /* a new state: its own schedule */
  }
  if (check_now || ticks >= bk->reval_at) {
    int rc = tkc_revalidate_locked(check_now);
    if (rc == TICKCLOCK_SWITCHED) return;
    if (rc == TKC_BREAK) { /* restated, and measured again from here */
      tkc_restate_locked(may_alloc);
      if (!tkc_reads_counter(tkc_published())) return;
      ticks = 0; /* a new state: its own schedule */
    }
  }
  if (tkc_refine_pending() && ticks >= tkc_refine_at()) tkc_refine_locked(may_alloc);
  tkc_store_deadline();
}

/* A tick ahead of the counter at or past the deadline (the deadline
 * stands: the work due by the counter's time is done). The ticks within
 * TKC_AHEAD_NS / 2 of it (at the state's rate), or, for a tick
 * TKC_AHEAD_FAR_NS or more ahead, every tick that far ahead, are then left
 * alone by the conversions until the deadline moves (tkc_store_deadline
 * empties both), so what is due runs at most once per deadline whatever
 * the ticks converted. Only ticks TKC_AHEAD_MIN_NS or more ahead of the
 * reading now go in, and the range starts no nearer than that: a reading
 * taken on another CPU a little ahead of this one's is never noted, and a
 * reading falls in the near range only once the counter has passed its
 * low end, and then for at most TKC_AHEAD_NS of counter time: what is due
 * is never put off by more than that (by the far one only in a process
 * that converts no reading for 50 years, or whose counter itself jumps
 * among the far ticks: then tickclock_duration_get's visits, one in 64
 * of its far durations, run it, duration.c). A tick less than
 * TKC_AHEAD_MIN_NS ahead goes out of line at each conversion, for at
 * most that long. */
#define TKC_AHEAD_NS UINT64_C(100000000)
#define TKC_AHEAD_MIN_NS UINT64_C(1000000)
#define TKC_AHEAD_FAR_NS (UINT64_C(50) * 365 * 86400 * UINT64_C(1000000000))
static void tkc_ahead_locked(uint64_t ticks, uint64_t now) {
  const tickclock_info *s = tkc_published();
  uint64_t half, lo, far, near, deadline = TKC_LOAD_RELAXED(&tkc_g_reval_deadline);
  if (now == UINT64_MAX || ticks <= now || ticks < deadline || s == NULL) return;
  near = tkc_after(s, now, TKC_AHEAD_MIN_NS);
  if (ticks < near) return;
  far = tkc_after(s, now, TKC_AHEAD_FAR_NS);
  if (ticks >= far) {
    tkc_ahead_note(far, TKC_LOAD_RELAXED(&tkc_g_ahead_lo), TKC_LOAD_RELAXED(&tkc_g_ahead_span));
    return;
  }
  half = tkc_after(s, 0, TKC_AHEAD_NS / 2);
  lo = ticks - half > near ? ticks - half : near;
  tkc_ahead_note(tkc_ahead_far(), lo,
                 ticks - lo + half < ticks - lo ? UINT64_MAX - lo : ticks - lo + half);
}
#endif

int tickclock_revalidate(void) {
  int r = 0;
  const tickclock_info *s;
  if (tkc_first_state() == NULL) return TICKCLOCK_EBUSY;
  if (!tkc_lock()) return TICKCLOCK_EBUSY;
  s = tkc_published();
  tkc_reserve_slots();
  tkc_os_path_check_locked(s);
#if defined(TKC_ARCH_COUNTER)
  /* the checks now, and whatever refinement is due (the RDTSC check
   * first: the current tick is read only once it passed) */
  if (tkc_reads_counter(s)) {
    if (!tkc_rdtsc_disabled_locked(s)) {
      uint64_t now;
      if (!tkc_checks()->chk_on) tkc_anchor_again(s);
      tkc_due_locked(tkc_map(s, tkc_read_counter_ordered()), 1, 1, &now);
    }
    if (!tkc_reads_counter(tkc_published())) r = TICKCLOCK_SWITCHED;
  }
  tkc_reserve_slots();
#endif
  tkc_unlock();
  return r;
}

/* A (re-)initialisation: the published counter is checked first, so what
 * it did since its last check is judged (and a break's window kept)
 * before a new decision replaces it and its samples. */
int tickclock_init(const tickclock_config *cfg) {
  int rc;
  if (cfg != NULL) {
    if (cfg->source < 0 || cfg->source >= TICKCLOCK_SOURCE_COUNT_) return TICKCLOCK_EINVAL;
    if (cfg->calibration_ms > 1000 || cfg->flags != 0) return TICKCLOCK_EINVAL;
  }
  tkc_ensure_atfork();
  if (!tkc_lock()) return TICKCLOCK_EBUSY;
#if defined(TKC_ARCH_COUNTER)
  {
    const tickclock_info *s = tkc_published();
    /* the checks only: a break leaves its window, the new decision
     * replaces the state (nothing is restated or refined first) */
    if (s != NULL && tkc_reads_counter(s) && tkc_checks()->chk_on && !tkc_rdtsc_disabled_locked(s))
      (void)tkc_revalidate_locked(0);
  }
#endif
  rc = tkc_init_locked(cfg);
  tkc_unlock();
  return rc;
}

void tickclock_revalidate_every(uint32_t ms) {
  tkc_check_book *bk = tkc_checks();
  if (tkc_first_state() == NULL || !tkc_lock()) return;
  bk->reval_ms = ms;
  tkc_reserve_slots();
  tkc_arm_deadline(tkc_published(), bk->max_seen);
  tkc_unlock();
}

/* From tickclock_to_ns/tickclock_delta_ns once their tick passed the
 * deadline: one thread does what is due, the others (and a re-entering
 * signal handler) carry on. Nothing here allocates, reads a file or
 * waits. */
void tkc_revalidate_due(uint64_t ticks) {
  if (!tkc_trylock()) return;
#if defined(TKC_ARCH_COUNTER)
  if (ticks >= TKC_LOAD_ACQUIRE(&tkc_g_reval_deadline)) {
    uint64_t now;
    tkc_due_locked(ticks, 0, 0, &now);
    tkc_ahead_locked(ticks, now);
  }
#else
  (void)ticks;
#endif
  tkc_unlock();
}
