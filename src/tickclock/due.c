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
 * again from there). may_alloc (and the file reads): tickclock_revalidate()
 * only. */
static void tkc_due_locked(uint64_t ticks, int check_now, int may_alloc) {
  tkc_check_book *bk = tkc_checks();
  const tickclock_info *s = tkc_published();
  if (s == NULL || !tkc_reads_counter(s) || !bk->chk_on) return;
  if (!check_now) {
    uint64_t now;
    if (tkc_rdtsc_disabled_locked(s)) return;
    /* a tick from the future (an interval converted as a tick, a caller's
     * arbitrary value) makes nothing due before its time */
    now = tkc_map(s, tkc_read_counter_ordered());
    if (ticks > now) ticks = now;
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
      if (!tkc_checks()->chk_on) tkc_anchor_again(s);
      tkc_due_locked(tkc_map(s, tkc_read_counter_ordered()), 1, 1);
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
  if (tkc_checks()->chk_on && ticks >= TKC_LOAD_ACQUIRE(&tkc_g_reval_deadline))
    tkc_due_locked(ticks, 0, 0);
#else
  (void)ticks;
#endif
  tkc_unlock();
}
