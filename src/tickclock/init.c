/* tickclock — initialisation and the out-of-line reads.
 *
 * A first use or tickclock_init() gathers the evidence, decides, and
 * hands the decision to publication (publish.c), which keeps the one tick
 * unit and the immutable states. The lock is lock.c's; re-validation and
 * refinement, which replace the published counter state, are
 * revalidate.c's and refine.c's, and what falls due is due.c's.
 */
#include "state.h"
#include "decide.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

static int tkc_env_reported = 0;

static tickclock_info tkc_fresh; /* under the lock; too big for small stacks */

/* A re-initialisation's decision that says what the current state says:
 * the same source, read the same way, its frequency found the same way
 * and agreeing with the current one within both bounds plus the agreement
 * allowance. */
static int tkc_same_decision(const tickclock_info *fresh, const tickclock_info *old) {
  double off, bound;
  if (fresh->source != old->source || fresh->forced != old->forced ||
      fresh->freq_method != old->freq_method ||
      (old->read_path == TICKCLOCK_READ_OS_SYSCALL) != (tkc_os_syscall_on() != 0))
    return 0;
  /* A published rate not yet cross-checked (every fresh decision that uses
   * one) is the current state's when it states the very same rate and that
   * state was cross-checked already or still has its cross-check planned
   * (one published without a bracket to measure from has none: it is
   * published again, with a fresh bracket). */
  if (fresh->freq_pending_check)
    return fresh->hz_num == old->hz_num && fresh->hz_den == old->hz_den &&
           (!old->freq_pending_check || tkc_refine_pending() || tkc_refine_deferred());
  if (fresh->hz_den == 0 || old->hz_den == 0) return fresh->hz_num == old->hz_num;
  off = tkc_ppm(fresh->hz_num, fresh->hz_den, old->hz_num, old->hz_den);
  bound = fresh->uncertainty_ppm + old->uncertainty_ppm + TICKCLOCK_AGREE_PPM;
  return off <= bound && -off <= bound;
}

/* under the lock, like tkc_fresh: the evidence (its claims' reasons) is a
 * few kilobytes, too much for the stack of a small thread's first read */
static tickclock_evidence tkc_ev;
static tkc_choice tkc_choice_now; /* the decision, paused for a calibration */

static int tkc_build_and_publish(const tickclock_config *cfg) {
  tickclock_evidence *ev = &tkc_ev;
  const tickclock_info *old = TKC_LOAD_ACQUIRE(&tkc_g_state);
  tickclock_info *fresh = &tkc_fresh;
  int rc, asked = cfg != NULL && cfg->calibration_ms != 0;
  tkc_gather(cfg, ev);
  tkc_refusals_copy(ev); /* what a cross-check refused stays refused */
  if (tkc_decide_start(ev, fresh, &tkc_choice_now)) {
#if defined(TKC_ARCH_COUNTER)
    tkc_calibrate(tkc_read_counter_ordered, cfg ? cfg->calibration_ms : 0, &ev->cal);
#else
    ev->cal.ns = 1; /* attempted: nothing to calibrate */
#endif
    tkc_list_claims(ev);
    tkc_decide_resume(ev, fresh, &tkc_choice_now);
  }
  /* once, and never into what may be the program's own data (a regular
   * file on fd 2 not opened for appending: platform.h) */
  if (fresh->env_error[0] && !tkc_env_reported) {
    tkc_env_reported = 1;
    if (tkc_p_stderr_writable()) fprintf(stderr, "tickclock: %s\n", fresh->env_error);
  }
  fresh->baseline_ns = ev->cal.ok ? ev->cal.ns : 0;
  /* a long history: a decision that changes nothing keeps the state (and
   * its refinement) rather than taking another slot */
  if (old != NULL && !asked && tkc_states_count() >= TICKCLOCK_COALESCE_AFTER &&
      tkc_same_decision(fresh, old)) {
    tkc_reserve_slots();
    return fresh->request_refused ? TICKCLOCK_EUNAVAILABLE : TICKCLOCK_OK;
  }
  rc = tkc_publish_planned(
      fresh, old, ev, asked, 0,
      ev->tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV ? TKC_OLD_UNREADABLE : TKC_OLD_HEALTHY, 0, 1);
  if (rc != TICKCLOCK_OK) return rc;
  tkc_checks()->breaks = 0; /* a new decision: its own count of breaks */
  tkc_reserve_slots();
  return fresh->request_refused ? TICKCLOCK_EUNAVAILABLE : TICKCLOCK_OK;
}

/* The first state, or NULL when this thread re-entered the lock. */
const tickclock_info *tkc_first_state(void) {
  const tickclock_info *s;
  tkc_ensure_atfork();
  if (!tkc_lock()) return NULL;
  s = TKC_LOAD_ACQUIRE(&tkc_g_state);
  if (s == NULL) {
    (void)tkc_build_and_publish(NULL);
    s = TKC_LOAD_ACQUIRE(&tkc_g_state);
  }
  tkc_unlock();
  return s;
}

int tkc_init_locked(const tickclock_config *cfg) { return tkc_build_and_publish(cfg); }

/* Tests only (through tkc_set_platform): forget every published
 * state, so the next initialisation is a first one in a fresh world. The
 * old states stay allocated: a test may still hold them. */
#if !defined(TKC_SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only entry */
void tkc_set_platform(const tickclock_platform *p) {
  tkc_platform_install(p);
  tkc_reset_world();
}
#endif

const tickclock_info *tkc_state_slow(void) {
  const tickclock_info *s = TKC_LOAD_ACQUIRE(&tkc_g_state);
  if (s != NULL) return s;
  s = tkc_first_state();
  return s != NULL ? s : tkc_before_first(); /* re-entered during the first one */
}

const tickclock_info *tickclock_info_get(void) { return tkc_state(); }

/* A reading r of the OS clock whose own ticks are the unit's (its
 * nanoseconds; QPC counts on Windows; offset only) -> unit ticks: never
 * below the base. */
static uint64_t tkc_os_unit(const tickclock_info *s, uint64_t r) {
  return s->base_ticks + (r >= s->src_base ? r - s->src_base : 0);
}

/* The out-of-line read: any state, any path. Async-signal-safe once a
 * state is published (a load, a clock read, integer arithmetic). */
static uint64_t tkc_read(int ordered) {
  const tickclock_info *s;
  uint64_t r;
  int src = TKC_LOAD_ACQUIRE(&tkc_g_source);
  if (TKC_UNLIKELY(src == 0)) {
    s = tkc_state_slow();
    /* re-entered during the first initialisation, before its state could
     * be read: RDTSC may be disabled and not yet known */
    if (tkc_is_reentry(s)) return tkc_reentry_read();
  } else {
    s = TKC_LOAD_ACQUIRE(&tkc_g_state); /* at least as new as the source */
  }
  (void)ordered;
#if defined(TKC_ARCH_COUNTER)
  /* tkc_reads_counter(s), written out: no call on the OS clock's path */
  if (s->read_path == TICKCLOCK_READ_COUNTER || s->read_path == TICKCLOCK_READ_COUNTER_MAPPED) {
    r = ordered ? tkc_arch_read_ordered() : tkc_arch_read();
    if (s->read_path == TICKCLOCK_READ_COUNTER) return r;
    return tkc_map(s, r);
  }
#endif
#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
  r = tkc_p_os_ns();
#else
  r = tkc_os_read_inline();
#endif
  /* the OS clock's nanoseconds are the unit's (the OS clock first, or
   * TICKCLOCK_SOURCE_SYSTEM from the start): an offset, here, not a call
   * into the general mapping, so the OS clock costs what the OS's read
   * costs */
  if (TKC_LIKELY(s->src_is_unit)) return tkc_os_unit(s, r);
  return tkc_map(s, r);
}

/* tickclock_now() off the inline counter read. The OS clock whose own
 * ticks (nanoseconds; QPC counts on Windows) are the unit (the OS clock
 * first: TICKCLOCK_SOURCE_SYSTEM, or no trusted counter) is read first
 * thing, with nothing but the clock read and an offset around it: the OS
 * clock through the library costs what the OS clock costs. A published
 * state is all it needs (the source is published after it); anything
 * else goes through tkc_read. */
uint64_t tkc_now_slow(void) {
  const tickclock_info *s;
  /* the OS clock's own ticks unchanged: no state to load, no offset */
  if (TKC_LIKELY(TKC_LOAD_RELAXED(&tkc_g_os_direct))) {
#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
    return tkc_p_os_ns();
#else
    return tkc_os_read_inline();
#endif
  }
  s = TKC_LOAD_ACQUIRE(&tkc_g_state);
  if (TKC_LIKELY(s != NULL) && s->read_path == TICKCLOCK_READ_OS && s->src_is_unit) {
#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
    uint64_t r = tkc_p_os_ns();
#else
    uint64_t r = tkc_os_read_inline();
#endif
    return tkc_os_unit(s, r);
  }
  return tkc_read(0);
}
uint64_t tkc_now_ordered_slow(void) { return tkc_read(1); }
