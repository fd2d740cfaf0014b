/* tickclock — initialisation, publication and the out-of-line reads.
 *
 * State is immutable once published: each (re)initialisation fills the
 * next of TICKCLOCK__SLOTS static slots, publishes its address with
 * release ordering (tickclock__g_state), then the source the hot path
 * branches on (tickclock__g_source). Readers load with acquire and never
 * see a half-written state. No allocation, no pthread dependency: a
 * spin lock with yield serialises initialisers, and threads racing the
 * first read wait for the first initialiser rather than returning a
 * reading in another unit.
 *
 * Faults after initialisation (issue 8):
 *  - prctl(PR_SET_TSC, PR_TSC_SIGSEGV) after the TSC was chosen: the next
 *    tickclock_now() in that thread executes RDTSC and the kernel delivers
 *    SIGSEGV (the hot path is one load, a compare and RDTSC; it cannot ask
 *    the kernel first without costing a syscall per read). Call
 *    tickclock_revalidate() in the thread right after changing the
 *    setting: it sees PR_GET_TSC = PR_TSC_SIGSEGV and switches every
 *    thread to the OS clock before the next read traps. The setting is per
 *    thread: revalidation sees only the calling thread's (and threads
 *    created afterwards inherit it), so a thread that disables RDTSC for
 *    itself must revalidate itself.
 *  - the kernel switches its clocksource (watchdog: tsc -> hpet), the
 *    counter jumps (suspend, migration, a CPU with another TSC offset), or
 *    its rate drifts from CLOCK_MONOTONIC_RAW: tickclock_revalidate()
 *    (explicit, or periodic with tickclock_revalidate_every()) switches to
 *    the OS clock; see tickclock.h for the exact no-backward-step
 *    guarantee. Nothing is checked on the read path.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#else
#include <sched.h>
#endif

#define TICKCLOCK__SLOTS 16

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines them */
TICKCLOCK__SHARED int tickclock__g_source = 0;
const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;
#endif

static tickclock_info tickclock__slots[TICKCLOCK__SLOTS];
static unsigned tickclock__next_slot = 0;
static TICKCLOCK__SHARED int tickclock__lock_word = 0;
static int tickclock__env_reported = 0;

/* Re-validation, all under the lock: what the state was checked against. */
#if !defined(TICKCLOCK_STATIC)
TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline = UINT64_MAX;
#endif
static uint32_t tickclock__reval_ms = 0;
static int tickclock__anchor_ok = 0;        /* the published state is the counter */
static uint64_t tickclock__anchor_ticks = 0; /* counter at publication */
static uint64_t tickclock__anchor_raw = 0;   /* CLOCK_MONOTONIC_RAW then */
static uint64_t tickclock__max_seen = 0;     /* highest counter value seen by checks */
static int tickclock__cs_known = 0;          /* clocksource at publication */
static char tickclock__cs[32];

static void tickclock__lock(void) {
  while (!TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, 1)) {
#if defined(_WIN32)
    SwitchToThread();
#else
    sched_yield();
#endif
  }
}

static void tickclock__unlock(void) { TICKCLOCK__STORE_RELEASE(&tickclock__lock_word, 0); }

/* Next periodic check, in counter ticks (saturating); off unless the
 * counter is in use and a period is set. Lock held. */
static void tickclock__arm_deadline(const tickclock_info *s, uint64_t now_ticks) {
  uint64_t d = UINT64_MAX, period;
  if (tickclock__anchor_ok && tickclock__reval_ms != 0) {
    period = tickclock_conv_ns_to_ticks(&s->conv, (uint64_t)tickclock__reval_ms * UINT64_C(1000000));
    d = now_ticks + period;
    if (d < now_ticks || d == UINT64_MAX) d = UINT64_MAX - 1;
  }
  TICKCLOCK__STORE_RELEASE(&tickclock__g_reval_deadline, d);
}

/* Records what later re-validation compares with. Lock held. */
static void tickclock__anchor(const tickclock_info *s, const tickclock_evidence *ev) {
  tickclock__anchor_ok = 0;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (s->source == TICKCLOCK__ARCH_COUNTER) {
    tickclock__anchor_ticks = tickclock__p_counter_ordered();
    tickclock__anchor_raw = tickclock__p_raw_ns();
    tickclock__max_seen = tickclock__anchor_ticks;
    tickclock__cs_known = ev->clocksource_known;
    tickclock__strlcpy(tickclock__cs, ev->clocksource, sizeof tickclock__cs);
    tickclock__anchor_ok = 1;
  }
#else
  (void)ev; /* no counter to re-validate on this architecture */
  (void)tickclock__cs;
  (void)tickclock__cs_known;
  (void)tickclock__anchor_raw;
  (void)tickclock__max_seen;
#endif
  tickclock__arm_deadline(s, tickclock__anchor_ok ? tickclock__anchor_ticks : 0);
}

/* Called with the lock held. */
static const tickclock_info *tickclock__build_and_publish(const tickclock_config *cfg, int *rc) {
  tickclock_evidence ev;
  tickclock_info *slot = &tickclock__slots[tickclock__next_slot % TICKCLOCK__SLOTS];
  static tickclock_info fresh; /* under the lock; too big for small stacks */
  tickclock__next_slot++;
  tickclock__gather(cfg, &ev);
  if (tickclock_decide(&ev, &fresh)) {
#if defined(TICKCLOCK__ARCH_COUNTER)
    tickclock__calibrate(tickclock__p_counter_ordered, cfg ? cfg->calibration_ms : 0, &ev.cal);
#else
    ev.cal.ns = 1; /* attempted: nothing to calibrate */
#endif
    tickclock_decide(&ev, &fresh);
  }
  if (fresh.env_error[0] && !tickclock__env_reported) {
    tickclock__env_reported = 1;
    fprintf(stderr, "tickclock: %s\n", fresh.env_error);
  }
  *rc = fresh.request_refused ? TICKCLOCK_EUNAVAILABLE : TICKCLOCK_OK;
  fresh.os_offset = 0;
  fresh.revalidated = 0;
  memcpy(slot, &fresh, sizeof *slot);
  tickclock__anchor(slot, &ev);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_state, (const tickclock_info *)slot);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_source, slot->source);
  return slot;
}

#if defined(TICKCLOCK__ARCH_COUNTER)
/* Replaces the counter state old by the OS clock. Lock held. */
static void tickclock__switch_to_os(const tickclock_info *old, const char *why) {
  static tickclock_info fresh; /* under the lock */
  tickclock_info *slot = &tickclock__slots[tickclock__next_slot % TICKCLOCK__SLOTS];
  unsigned i;
  uint64_t c_sw, c_hi, base_ns, need, os_now;
#if defined(_WIN32)
  int os = TICKCLOCK_SOURCE_QPC;
  uint64_t os_hz = tickclock__qpc_hz();
#else
  int os = TICKCLOCK_SOURCE_SYSTEM;
  uint64_t os_hz = UINT64_C(1000000000);
#endif
  tickclock__next_slot++;
  memcpy(&fresh, old, sizeof fresh);
  fresh.source = os;
  fresh.source_name = tickclock_source_name(os);
  if (tickclock_conv_init(&fresh.conv, os_hz ? os_hz : 1, 1) != TICKCLOCK_OK)
    tickclock_conv_init(&fresh.conv, UINT64_C(1000000000), 1);
  fresh.hz_num = fresh.conv.hz_num;
  fresh.hz_den = fresh.conv.hz_den;
  fresh.hz = (double)fresh.hz_num / (double)fresh.hz_den;
  fresh.freq_method = os == TICKCLOCK_SOURCE_SYSTEM ? TICKCLOCK_FREQ_IDENTITY : TICKCLOCK_FREQ_OS;
  fresh.freq_method_name = tickclock_freq_method_name(fresh.freq_method);
  fresh.freq_detail = os == TICKCLOCK_SOURCE_SYSTEM ? "identity" : "query_performance_frequency";
  fresh.uncertainty_ppm = 0;
  fresh.resolution_ns = 1e9 / fresh.hz;
  for (i = 0; i < fresh.n_candidates && i < TICKCLOCK_MAX_CANDIDATES; i++) {
    tickclock_candidate *c = &fresh.candidates[i];
    c->chosen = c->source == os;
    if (c->source == old->source) {
      c->usable = 0;
      tickclock__fmt(c->reason, sizeof c->reason, "re-validation: %s", why);
    }
  }
  tickclock__fmt(fresh.why, sizeof fresh.why, "re-validation switched from %s: %s",
                 tickclock_source_name(old->source), why);
  fresh.revalidated = 1;
  /* The offset, from the last counter reading before publication: OS
   * readings after the switch convert to no less than it did. */
  c_sw = tickclock__p_counter_ordered();
  os_now = tickclock__p_os_ns();
  c_hi = (int64_t)(tickclock__max_seen - c_sw) > 0 ? tickclock__max_seen : c_sw;
  base_ns = tickclock_conv_ticks_to_ns(&old->conv, c_hi);
  need = os == TICKCLOCK_SOURCE_SYSTEM ? base_ns : tickclock_conv_ns_to_ticks(&fresh.conv, base_ns);
  fresh.os_offset = need > os_now ? need - os_now : 0;
  memcpy(slot, &fresh, sizeof *slot);
  tickclock__anchor_ok = 0;
  TICKCLOCK__STORE_RELEASE(&tickclock__g_reval_deadline, UINT64_MAX);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_state, (const tickclock_info *)slot);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_source, slot->source);
}

/* The checks; lock held, state published. Returns TICKCLOCK_SWITCHED or 0. */
static int tickclock__revalidate_locked(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  char why[TICKCLOCK_REASON_LEN];
  char cs[32];
  uint64_t c, raw;
  double counter_ns, raw_ns, bound;
  if (s == NULL || s->source != TICKCLOCK__ARCH_COUNTER || !tickclock__anchor_ok) return 0;
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
  if (tickclock__p_prctl_get_tsc() == TICKCLOCK_PRCTL_SIGSEGV) {
    tickclock__switch_to_os(s, "RDTSC was disabled for this thread (prctl PR_SET_TSC = "
                               "PR_TSC_SIGSEGV)");
    return TICKCLOCK_SWITCHED;
  }
#endif
  if (tickclock__cs_known) {
    int known = tickclock__p_read_line(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE, cs, sizeof cs);
    if (known && strcmp(cs, tickclock__cs) != 0) {
      tickclock__fmt(why, sizeof why, "the kernel's clocksource changed from '%s' to '%s'",
                     tickclock__cs, cs);
      tickclock__switch_to_os(s, why);
      return TICKCLOCK_SWITCHED;
    }
  }
  c = tickclock__p_counter_ordered();
  raw = tickclock__p_raw_ns();
  counter_ns = (double)tickclock_conv_delta_to_ns(&s->conv, (int64_t)(c - tickclock__anchor_ticks));
  raw_ns = (double)(raw - tickclock__anchor_raw);
  bound = raw_ns * (TICKCLOCK_REVALIDATE_DRIFT_PPM + s->uncertainty_ppm) * 1e-6 +
          TICKCLOCK_REVALIDATE_DRIFT_ABS_NS;
  if (counter_ns - raw_ns > bound || raw_ns - counter_ns > bound) {
    tickclock__fmt(why, sizeof why,
                   "counter time drifted from CLOCK_MONOTONIC_RAW: %.0f ns vs %.0f ns since "
                   "initialisation (bound %.0f ns)",
                   counter_ns, raw_ns, bound);
    tickclock__switch_to_os(s, why);
    return TICKCLOCK_SWITCHED;
  }
  if ((int64_t)(c - tickclock__max_seen) > 0) tickclock__max_seen = c;
  tickclock__arm_deadline(s, c);
  return 0;
}
#endif

int tickclock_revalidate(void) {
  int r = 0;
  (void)tickclock__state();
  tickclock__lock();
#if defined(TICKCLOCK__ARCH_COUNTER)
  r = tickclock__revalidate_locked();
#endif
  tickclock__unlock();
  return r;
}

void tickclock_revalidate_every(uint32_t ms) {
  const tickclock_info *s = tickclock__state();
  tickclock__lock();
  tickclock__reval_ms = ms;
  s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  tickclock__arm_deadline(s, tickclock__anchor_ok ? tickclock__p_counter() : 0);
  tickclock__unlock();
}

/* From tickclock_to_ns once its argument passed the deadline: one thread
 * checks, the others carry on (try-lock). */
void tickclock__revalidate_due(uint64_t ticks) {
  (void)ticks;
  if (!TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, 1)) return;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__anchor_ok && ticks >= TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_reval_deadline))
    (void)tickclock__revalidate_locked();
#endif
  tickclock__unlock();
}

int tickclock_init(const tickclock_config *cfg) {
  int rc = TICKCLOCK_OK;
  if (cfg != NULL) {
    if (cfg->source < 0 || cfg->source >= TICKCLOCK_SOURCE_COUNT_) return TICKCLOCK_EINVAL;
    if (cfg->calibration_ms > 1000 || cfg->flags != 0) return TICKCLOCK_EINVAL;
  }
  tickclock__lock();
  tickclock__build_and_publish(cfg, &rc);
  tickclock__unlock();
  return rc;
}

const tickclock_info *tickclock__state_slow(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s != NULL) return s;
  tickclock__lock();
  s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s == NULL) {
    int rc;
    s = tickclock__build_and_publish(NULL, &rc);
  }
  tickclock__unlock();
  return s;
}

const tickclock_info *tickclock_info_get(void) {
  const tickclock_info *s = tickclock__state();
  uint64_t d = TICKCLOCK__LOAD_RELAXED(&tickclock__g_reval_deadline);
  if (TICKCLOCK__UNLIKELY(d != UINT64_MAX)) {
    uint64_t now = tickclock__p_counter();
    if (now >= d) {
      tickclock__revalidate_due(now);
      s = tickclock__state();
    }
  }
  return s;
}

static uint64_t tickclock__read(int ordered) {
  int src = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_source);
  if (TICKCLOCK__UNLIKELY(src == 0)) src = tickclock__state_slow()->source;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (src == TICKCLOCK__ARCH_COUNTER)
    return ordered ? tickclock__arch_read_ordered() : tickclock__arch_read();
#endif
  (void)ordered;
  /* CLOCK_MONOTONIC ns, or QPC counts on Windows; plus the offset a
   * re-validation switch set (0 otherwise). The source was loaded with
   * acquire and the state is published before it, so this state is at
   * least as new as the source. */
#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
  return tickclock__p_os_ns() + TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state)->os_offset;
#else
  return tickclock__os_read() + TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state)->os_offset;
#endif
}

uint64_t tickclock__now_slow(void) { return tickclock__read(0); }
uint64_t tickclock__now_ordered_slow(void) { return tickclock__read(1); }
