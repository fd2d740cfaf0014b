/* tickclock — initialisation, publication, re-validation and the
 * out-of-line reads.
 *
 * States. Every decision is published as a new, immutable tickclock_info
 * (static slots first, then allocations that are never freed), its address
 * stored with release ordering in tickclock__g_state, then the hot path's
 * token in tickclock__g_source. Readers load with acquire and never see a
 * half-written state, and a state a reader holds is never written again.
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
 * The lock. A spin lock whose word holds the owner's thread id: a signal
 * handler that interrupts the lock holder in the same thread sees its own
 * id and never waits (a first read falls back to a direct CLOCK_MONOTONIC
 * read; init/revalidate return TICKCLOCK_EBUSY). Waiters yield, then
 * sleep, so a SCHED_FIFO waiter cannot starve a lower-priority holder on
 * its CPU. pthread_atfork takes the lock around fork(), so a child never
 * inherits it held (a fork during the first initialisation waits for it).
 *
 * Faults after initialisation:
 *  - prctl(PR_SET_TSC, PR_TSC_SIGSEGV) after the TSC was chosen: the next
 *    tickclock_now() in that thread executes RDTSC and the kernel delivers
 *    SIGSEGV (the hot path is one load, a compare and RDTSC; asking the
 *    kernel first would cost a system call per read). Call
 *    tickclock_revalidate() in that thread right after changing the
 *    setting: it sees PR_GET_TSC = PR_TSC_SIGSEGV and switches every thread
 *    to the OS clock through the system call, without reading the counter
 *    (the continuity bound comes from the last conclusive sample and the
 *    frequency's uncertainty). The setting is per thread.
 *  - the kernel switches its clocksource (watchdog: tsc -> hpet), the
 *    counter jumps (suspend, migration, a CPU with another TSC offset), or
 *    its rate drifts from CLOCK_MONOTONIC_RAW: tickclock_revalidate()
 *    (explicit, or periodic with tickclock_revalidate_every()) switches to
 *    the OS clock. Nothing is checked on the read path.
 */
#include "state.h"
#include "decide.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <sched.h>
#include <time.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

/* The counter this ISA reads inline, 0 where there is none. */
#if defined(TICKCLOCK__ARCH_COUNTER)
#define TICKCLOCK__COUNTER TICKCLOCK__ARCH_COUNTER
#else
#define TICKCLOCK__COUNTER 0
#endif

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines them */
TICKCLOCK__SHARED int tickclock__g_source = 0;
const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;
/* Unit tick at which tickclock_to_ns runs the periodic re-validation. */
TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline = UINT64_MAX;
#endif

/* ---- the lock -------------------------------------------------------- */
static TICKCLOCK__SHARED int tickclock__lock_word = 0; /* 0 free, else the owner */

/* The calling thread's id, or 0 where there is none to be had (then a
 * re-entered lock cannot be recognised; Linux and Windows have one). */
static int tickclock__self(void) {
#if defined(_WIN32)
  return (int)GetCurrentThreadId();
#elif defined(__linux__) && defined(SYS_gettid)
  return (int)syscall(SYS_gettid);
#else
  return 0;
#endif
}

static void tickclock__backoff(unsigned spins) {
#if defined(_WIN32)
  if (spins < 64) SwitchToThread();
  else Sleep(1);
#else
  if (spins < 64) {
    sched_yield();
  } else { /* a sleeping waiter lets any holder run, whatever its priority */
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 50000;
    nanosleep(&ts, NULL);
  }
#endif
}

/* 1: taken. 0: this thread holds it already (a signal handler interrupted
 * the library): the caller must not wait and must not unlock. */
static int tickclock__lock(void) {
  int me = tickclock__self();
  unsigned spins = 0;
  for (;;) {
    if (TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, me ? me : 1)) return 1;
    if (me != 0 && TICKCLOCK__LOAD_RELAXED(&tickclock__lock_word) == me) return 0;
    tickclock__backoff(spins++);
  }
}

static int tickclock__trylock(void) {
  int me = tickclock__self();
  return TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, me ? me : 1);
}

static void tickclock__unlock(void) { TICKCLOCK__STORE_RELEASE(&tickclock__lock_word, 0); }

#if !defined(_WIN32)
static int tickclock__fork_took = 0;
static void tickclock__fork_prepare(void) { tickclock__fork_took = tickclock__lock(); }
static void tickclock__fork_parent(void) {
  if (tickclock__fork_took) tickclock__unlock();
}
/* The child has one thread; whoever held the lock in the parent is not in
 * it (or is this thread, interrupted, and will store 0 again). */
static void tickclock__fork_child(void) { TICKCLOCK__STORE_RELEASE(&tickclock__lock_word, 0); }
static TICKCLOCK__SHARED int tickclock__atfork_state = 0; /* 0, 1 registering, 2 done */
#endif

/* Registered before the lock is first taken, so no fork can copy it held. */
static void tickclock__ensure_atfork(void) {
#if !defined(_WIN32)
  if (TICKCLOCK__LOAD_ACQUIRE(&tickclock__atfork_state) == 2) return;
  if (TICKCLOCK__CAS_INT((int *)&tickclock__atfork_state, 0, 1)) {
    pthread_atfork(tickclock__fork_prepare, tickclock__fork_parent, tickclock__fork_child);
    TICKCLOCK__STORE_RELEASE(&tickclock__atfork_state, 2);
  }
#endif
}

/* ---- states (all below: lock held) ------------------------------------ */
#define TICKCLOCK__STATIC_SLOTS 8
static tickclock_info tickclock__slots[TICKCLOCK__STATIC_SLOTS];
static unsigned tickclock__slots_used = 0;
static unsigned tickclock__generation = 0;
/* Held in reserve while a counter state is published: the switch away
 * from the counter must always find a slot. */
static tickclock_info *tickclock__spare = NULL;
static int tickclock__env_reported = 0;

static tickclock_info *tickclock__new_slot(void) {
  if (tickclock__slots_used < TICKCLOCK__STATIC_SLOTS)
    return &tickclock__slots[tickclock__slots_used++];
  /* never freed: a reader may hold it for the life of the process */
  return (tickclock_info *)calloc(1, sizeof(tickclock_info));
}

/* Re-validation bookkeeping: what the published counter state is checked
 * against. Samples are in the source's ticks and CLOCK_MONOTONIC_RAW ns. */
static uint32_t tickclock__reval_ms = 0;
static uint64_t tickclock__reval_at = UINT64_MAX; /* unit tick of the next periodic check */
/* Refinement: a calibrated frequency is measured again from the same start
 * bracket on a baseline four times longer each time, until it spans 1 s;
 * each better figure is published as a state continuous with the last. */
static int tickclock__refine_on = 0;
static tickclock_calibration tickclock__cal_first;
static uint64_t tickclock__refine_at_ns = 0;       /* raw clock of the next one */
static uint64_t tickclock__refine_at = UINT64_MAX; /* ... in unit ticks */
#define TICKCLOCK__REFINE_UNTIL_NS UINT64_C(1000000000)
static int tickclock__chk_on = 0;      /* the published state reads the counter */
static tickclock__bracket tickclock__chk_anchor; /* at publication */
static tickclock__bracket tickclock__chk_prev;   /* the last conclusive sample */
static uint64_t tickclock__max_seen = 0; /* highest unit tick known handed out */
static int tickclock__cs_known = 0;      /* clocksource at publication */
static char tickclock__cs[32];

static int tickclock__reads_counter(const tickclock_info *s) {
  return s->read_path == TICKCLOCK_READ_COUNTER || s->read_path == TICKCLOCK_READ_COUNTER_MAPPED;
}

/* A source reading -> unit ticks under s (never below base_ticks). */
static uint64_t tickclock__map(const tickclock_info *s, uint64_t r) {
  uint64_t d = r >= s->src_base ? r - s->src_base : 0, ns;
  if (s->src_is_unit) return s->base_ticks + d;
  ns = tickclock_conv_ticks_to_ns(&s->src_conv, d);
  return s->base_ticks + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
}

static uint64_t tickclock__max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t tickclock__ns_before(const tickclock_info *s, uint64_t ticks) {
  uint64_t ns;
  while (ticks < s->base_ticks && s->prev != NULL) s = s->prev;
  if (ticks >= s->base_ticks) return tickclock__ns_in(s, ticks);
  ns = tickclock_conv_ticks_to_ns(&s->conv, s->base_ticks - ticks); /* before the first base */
  return ns > s->base_ns ? 0 : s->base_ns - ns;
}

/* How far the old state's counter is trusted when a state replaces it. */
#define TICKCLOCK__TRUST 0    /* healthy (a re-initialisation): read it */
#define TICKCLOCK__DISTRUST 1 /* it failed a check: read it and extrapolate */
#define TICKCLOCK__NO_READ 2  /* RDTSC is disabled: extrapolate only */

/* An upper bound of the unit ticks old has handed out so far. A counter
 * that failed may have stepped back after readings no check saw, so the
 * bound also extrapolates from the last conclusive sample at the
 * frequency's uncertainty plus the drift allowance (all of it without
 * touching the counter when it cannot be read). */
static uint64_t tickclock__now_bound(const tickclock_info *old, int trust) {
  uint64_t t = tickclock__max_seen;
  if (!tickclock__reads_counter(old))
    return tickclock__max_u64(t, tickclock__map(old, tickclock__p_os_ns()));
  if (trust != TICKCLOCK__NO_READ)
    t = tickclock__max_u64(t, tickclock__map(old, tickclock__p_counter_ordered()));
  if (trust != TICKCLOCK__TRUST && tickclock__chk_on) {
    uint64_t raw = tickclock__p_raw_ns();
    uint64_t dt = raw > tickclock__chk_prev.ns ? raw - tickclock__chk_prev.ns : 0;
    double slack = (double)dt * (TICKCLOCK_REVALIDATE_DRIFT_PPM + old->uncertainty_ppm) * 1e-6 +
                   TICKCLOCK_REVALIDATE_DRIFT_ABS_NS;
    uint64_t c = tickclock__chk_prev.mid + tickclock__chk_prev.width / 2 +
                 tickclock_conv_ns_to_ticks(&old->src_conv, dt + (uint64_t)slack);
    t = tickclock__max_u64(t, tickclock__map(old, c));
  }
  return t;
}

/* The unit tick ns after from under s (saturating below UINT64_MAX). */
static uint64_t tickclock__after(const tickclock_info *s, uint64_t from, uint64_t ns) {
  uint64_t d = from + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
  return (d < from || d == UINT64_MAX) ? UINT64_MAX - 1 : d;
}

/* The deadline the inline conversions compare with: the earlier of the
 * next periodic check and the next refinement. */
static void tickclock__store_deadline(void) {
  uint64_t d = tickclock__chk_on ? tickclock__reval_at : UINT64_MAX;
  if (tickclock__chk_on && tickclock__refine_on && tickclock__refine_at < d)
    d = tickclock__refine_at;
  TICKCLOCK__STORE_RELEASE(&tickclock__g_reval_deadline, d);
}

/* The next periodic check a period after now_unit (off unless the state
 * reads the counter and a period is set), then the deadline. */
static void tickclock__arm_deadline(const tickclock_info *s, uint64_t now_unit) {
  tickclock__reval_at = UINT64_MAX;
  if (tickclock__chk_on && tickclock__reval_ms != 0)
    tickclock__reval_at =
        tickclock__after(s, now_unit, (uint64_t)tickclock__reval_ms * UINT64_C(1000000));
  tickclock__store_deadline();
}

static uint64_t tickclock__read_counter_ordered(void) { return tickclock__p_counter_ordered(); }

static void tickclock__continue(const tickclock_info *old, tickclock_info *st, int trust);
static void tickclock__note_path(tickclock_info *st);

/* Publishes the decision st as the continuation of old (trust: how far
 * old's counter may be read). Takes a slot (the spare when asked), keeps a
 * spare while the new state reads the counter, records the re-validation
 * anchor, then fixes the base last, right before the state becomes
 * visible, so the window in which a reader can pair a newer tick with the
 * older state stays a few nanoseconds. */
static int tickclock__publish(const tickclock_info *st, const tickclock_info *old, int trust,
                              int use_spare, const tickclock_evidence *ev) {
  tickclock_info *slot;
  tickclock__bracket anchor;
  int counter = TICKCLOCK__COUNTER != 0 && st->source == TICKCLOCK__COUNTER;
  if (counter && tickclock__spare == NULL) {
    tickclock__spare = tickclock__new_slot();
    if (tickclock__spare == NULL) return TICKCLOCK_ENOMEM;
  }
  if (use_spare && tickclock__spare != NULL && !counter) {
    slot = tickclock__spare;
    tickclock__spare = NULL;
  } else {
    slot = tickclock__new_slot();
  }
  if (slot == NULL) return TICKCLOCK_ENOMEM; /* the spare stays reserved */
  memcpy(slot, st, sizeof *slot);
  slot->generation = ++tickclock__generation;
  anchor.width = UINT64_MAX;
  anchor.mid = anchor.ns = 0;
  if (counter) anchor = tickclock__tightest_bracket(tickclock__read_counter_ordered);
  tickclock__continue(old, slot, trust); /* may extrapolate from the old samples */
  tickclock__note_path(slot);
  tickclock__chk_anchor = tickclock__chk_prev = anchor;
  tickclock__chk_on = anchor.width != UINT64_MAX;
  if (counter && ev != NULL) {
    tickclock__cs_known = ev->clocksource_known;
    tickclock__strlcpy(tickclock__cs, ev->clocksource, sizeof tickclock__cs);
  }
  if (!counter || !tickclock__chk_on) tickclock__refine_on = 0;
  if (tickclock__refine_on)
    tickclock__refine_at = tickclock__after(
        slot, tickclock__map(slot, anchor.mid),
        tickclock__refine_at_ns > anchor.ns ? tickclock__refine_at_ns - anchor.ns : 0);
  if (old != NULL) tickclock__max_seen = tickclock__max_u64(tickclock__max_seen, slot->base_ticks);
  if (tickclock__chk_on)
    tickclock__max_seen = tickclock__max_u64(
        tickclock__max_seen, tickclock__map(slot, tickclock__chk_anchor.mid + tickclock__chk_anchor.width / 2));
  tickclock__arm_deadline(slot, tickclock__max_seen);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_state, (const tickclock_info *)slot);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_source, slot->read_path == TICKCLOCK_READ_COUNTER
                                                     ? (int)TICKCLOCK__COUNTER
                                                     : (int)TICKCLOCK_SOURCE_SYSTEM);
  return TICKCLOCK_OK;
}

/* Fills the unit fields of st, a fresh decision, so that it continues old
 * (NULL for the first state). */
static void tickclock__continue(const tickclock_info *old, tickclock_info *st, int trust) {
  int counter = TICKCLOCK__COUNTER != 0 && st->source == TICKCLOCK__COUNTER;
  int os_path = tickclock__os_syscall_on() ? TICKCLOCK_READ_OS_SYSCALL
                                                                  : TICKCLOCK_READ_OS;
  uint64_t t;
  st->src_conv = st->conv;
  st->prev = old;
  if (old == NULL) { /* the first state fixes the unit: its source's ticks */
    st->unit_source = st->source;
    st->scaled = st->source != TICKCLOCK_SOURCE_SYSTEM;
    st->src_is_unit = 1;
    st->base_ticks = st->base_ns = st->src_base = 0;
    st->read_path = counter ? TICKCLOCK_READ_COUNTER : os_path;
    return;
  }
  st->unit_source = old->unit_source;
  st->scaled = old->scaled;
  st->src_is_unit = st->source == old->unit_source;
  if (counter && st->src_is_unit && old->read_path == TICKCLOCK_READ_COUNTER) {
    /* the same raw counter: only the frequency may change */
    t = tickclock__now_bound(old, TICKCLOCK__TRUST);
    st->read_path = TICKCLOCK_READ_COUNTER;
    st->src_base = t; /* readings are the raw counter: map() is the identity */
    st->base_ticks = t;
    st->base_ns = tickclock__ns_in(old, t);
    return;
  }
  /* the new source first, then the bound: readings start at or above it */
  st->src_base = counter ? tickclock__p_counter_ordered() : tickclock__p_os_ns();
  t = tickclock__now_bound(old, trust);
  st->base_ticks = t;
  st->base_ns = tickclock__ns_in(old, t);
  st->read_path = counter ? TICKCLOCK_READ_COUNTER_MAPPED : os_path;
  if (!st->src_is_unit) st->conv = old->conv; /* the unit keeps its frequency */
}

/* Says in the state how it reads when that is not the plain choice. */
static void tickclock__note_path(tickclock_info *st) {
  size_t len = strlen(st->why);
  const char *note = NULL;
  if (st->read_path == TICKCLOCK_READ_OS_SYSCALL)
    note = "; read with the clock_gettime system call (RDTSC is disabled, the vDSO could trap)";
  else if (!st->src_is_unit)
    note = "; readings mapped into the process's first tick unit";
  if (note != NULL && len + 1 < sizeof st->why)
    tickclock__strlcpy(st->why + len, note, sizeof st->why - len);
}

static tickclock_info tickclock__fresh; /* under the lock; too big for small stacks */

static int tickclock__build_and_publish(const tickclock_config *cfg) {
  tickclock_evidence ev;
  const tickclock_info *old = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  tickclock_info *fresh = &tickclock__fresh;
  int rc;
  tickclock__gather(cfg, &ev);
  if (tickclock_decide(&ev, fresh)) {
#if defined(TICKCLOCK__ARCH_COUNTER)
    tickclock__calibrate(tickclock__read_counter_ordered, cfg ? cfg->calibration_ms : 0, &ev.cal);
#else
    ev.cal.ns = 1; /* attempted: nothing to calibrate */
#endif
    tickclock_decide(&ev, fresh);
  }
  if (fresh->env_error[0] && !tickclock__env_reported) {
    tickclock__env_reported = 1;
    fprintf(stderr, "tickclock: %s\n", fresh->env_error);
  }
  fresh->baseline_ns = ev.cal.ok ? ev.cal.ns : 0;
  /* a quick calibration that was chosen gets refined; one of a length the
   * caller asked for (calibration_ms) stays as it is */
  tickclock__refine_on = fresh->freq_method == TICKCLOCK_FREQ_CALIBRATED && ev.cal.ok &&
                         (cfg == NULL || cfg->calibration_ms == 0) &&
                         ev.cal.ns < TICKCLOCK__REFINE_UNTIL_NS;
  if (tickclock__refine_on) {
    tickclock__cal_first = ev.cal;
    tickclock__refine_at_ns = ev.cal.start_ns + 4 * ev.cal.ns;
  }
  rc = tickclock__publish(fresh, old,
                          ev.tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV ? TICKCLOCK__NO_READ
                                                                  : TICKCLOCK__TRUST,
                          0, &ev);
  if (rc != TICKCLOCK_OK) return rc;
  return fresh->request_refused ? TICKCLOCK_EUNAVAILABLE : TICKCLOCK_OK;
}

#if defined(TICKCLOCK__ARCH_COUNTER)
/* Replaces the counter state old by the OS clock, in the same unit. */
static void tickclock__switch_to_os(const tickclock_info *old, const char *why, int trust) {
  tickclock_info *fresh = &tickclock__fresh;
  unsigned i;
#if defined(_WIN32)
  int os = TICKCLOCK_SOURCE_QPC;
  uint64_t os_hz = tickclock__qpc_hz();
#else
  int os = TICKCLOCK_SOURCE_SYSTEM;
  uint64_t os_hz = UINT64_C(1000000000);
#endif
  memcpy(fresh, old, sizeof *fresh);
  fresh->source = os;
  fresh->source_name = tickclock_source_name(os);
  if (tickclock_conv_init(&fresh->conv, os_hz ? os_hz : 1, 1) != TICKCLOCK_OK)
    tickclock_conv_init(&fresh->conv, UINT64_C(1000000000), 1);
  fresh->hz_num = fresh->conv.hz_num;
  fresh->hz_den = fresh->conv.hz_den;
  fresh->hz = (double)fresh->hz_num / (double)fresh->hz_den;
  fresh->uncertainty_ppm = 0;
  fresh->resolution_ns = 1e9 / fresh->hz;
  fresh->freq_method = os == TICKCLOCK_SOURCE_SYSTEM ? TICKCLOCK_FREQ_IDENTITY : TICKCLOCK_FREQ_OS;
  fresh->freq_method_name = tickclock_freq_method_name(fresh->freq_method);
  fresh->freq_detail = os == TICKCLOCK_SOURCE_SYSTEM ? "identity" : "query_performance_frequency";
  for (i = 0; i < fresh->n_candidates && i < TICKCLOCK_MAX_CANDIDATES; i++) {
    tickclock_candidate *c = &fresh->candidates[i];
    c->chosen = c->source == os;
    if (c->source == old->source) {
      c->usable = 0;
      tickclock__fmt(c->reason, sizeof c->reason, "re-validation: %s", why);
    }
  }
  tickclock__fmt(fresh->why, sizeof fresh->why, "re-validation switched from %s: %s",
                 tickclock_source_name(old->source), why);
  fresh->revalidated = 1;
  (void)tickclock__publish(fresh, old, trust, 1, NULL); /* the spare: cannot fail */
}

/* |a - b| > bound, for two ns spans. */
static int tickclock__disagree(double a, double b, double bound) {
  return a - b > bound || b - a > bound;
}

/* The checks; lock held, state published. Formats only when switching. */
/* Before any counter read of a check or a refinement: RDTSC disabled for
 * this thread means switching without reading it. 1 if it switched. */
static int tickclock__rdtsc_disabled_locked(const tickclock_info *s) {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
  if (tickclock__p_prctl_get_tsc() == TICKCLOCK_PRCTL_SIGSEGV) {
    tickclock__os_use_syscall(1);
    tickclock__switch_to_os(s, "RDTSC was disabled for this thread (prctl PR_SET_TSC = "
                               "PR_TSC_SIGSEGV)", TICKCLOCK__NO_READ);
    return 1;
  }
#else
  (void)s;
#endif
  return 0;
}

static int tickclock__revalidate_locked(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  char why[TICKCLOCK_REASON_LEN];
  char cs[32];
  tickclock__bracket b;
  double w, wp, wa, dc, dr, rate;
  if (s == NULL || !tickclock__reads_counter(s) || !tickclock__chk_on) return 0;
  if (tickclock__rdtsc_disabled_locked(s)) return TICKCLOCK_SWITCHED;
  if (tickclock__cs_known) {
    int known = tickclock__p_clocksource(cs, sizeof cs);
    if (known && strcmp(cs, tickclock__cs) != 0) {
      tickclock__fmt(why, sizeof why, "the kernel's clocksource changed from '%s' to '%s'",
                     tickclock__cs, cs);
      tickclock__switch_to_os(s, why, TICKCLOCK__DISTRUST);
      return TICKCLOCK_SWITCHED;
    }
  }
  b = tickclock__tightest_bracket(tickclock__read_counter_ordered);
  w = b.width == UINT64_MAX ? 1e300 : (double)tickclock_conv_ticks_to_ns(&s->src_conv, b.width);
  if (w > TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) { /* inconclusive: the next period */
    if (b.width != UINT64_MAX)
      tickclock__max_seen =
          tickclock__max_u64(tickclock__max_seen, tickclock__map(s, b.mid + b.width / 2));
    tickclock__arm_deadline(s, tickclock__max_seen);
    return 0;
  }
  wp = (double)tickclock_conv_ticks_to_ns(&s->src_conv, tickclock__chk_prev.width);
  wa = (double)tickclock_conv_ticks_to_ns(&s->src_conv, tickclock__chk_anchor.width);
  rate = (TICKCLOCK_REVALIDATE_DRIFT_PPM + s->uncertainty_ppm) * 1e-6;
  /* the step since the previous conclusive sample */
  dc = (double)tickclock_conv_delta_to_ns(&s->src_conv, (int64_t)(b.mid - tickclock__chk_prev.mid));
  dr = (double)(int64_t)(b.ns - tickclock__chk_prev.ns);
  if (tickclock__disagree(dc, dr, dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (w + wp) / 2)) {
    tickclock__fmt(why, sizeof why,
                   "counter stepped %.0f ns against CLOCK_MONOTONIC_RAW's %.0f ns since the "
                   "previous check (bound %.0f ns)",
                   dc, dr, dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (w + wp) / 2);
    tickclock__switch_to_os(s, why, TICKCLOCK__DISTRUST);
    return TICKCLOCK_SWITCHED;
  }
  /* the total since publication: a slow drift passes every step */
  dc = (double)tickclock_conv_delta_to_ns(&s->src_conv, (int64_t)(b.mid - tickclock__chk_anchor.mid));
  dr = (double)(int64_t)(b.ns - tickclock__chk_anchor.ns);
  if (tickclock__disagree(dc, dr, dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (w + wa) / 2)) {
    tickclock__fmt(why, sizeof why,
                   "counter time drifted from CLOCK_MONOTONIC_RAW: %.0f ns vs %.0f ns since "
                   "initialisation (bound %.0f ns)",
                   dc, dr, dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (w + wa) / 2);
    tickclock__switch_to_os(s, why, TICKCLOCK__DISTRUST);
    return TICKCLOCK_SWITCHED;
  }
  tickclock__chk_prev = b;
  tickclock__max_seen =
      tickclock__max_u64(tickclock__max_seen, tickclock__map(s, b.mid + b.width / 2));
  tickclock__arm_deadline(s, tickclock__max_seen);
  return 0;
}
#endif

/* The first state, or NULL when this thread re-entered the lock. */
static const tickclock_info *tickclock__first_state(void) {
  const tickclock_info *s;
  tickclock__ensure_atfork();
  if (!tickclock__lock()) return NULL;
  s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s == NULL) {
    (void)tickclock__build_and_publish(NULL);
    s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  }
  tickclock__unlock();
  return s;
}

int tickclock_revalidate(void) {
  int r = 0;
  if (tickclock__first_state() == NULL) return TICKCLOCK_EBUSY;
  if (!tickclock__lock()) return TICKCLOCK_EBUSY;
#if defined(TICKCLOCK__ARCH_COUNTER)
  r = tickclock__revalidate_locked();
#endif
  tickclock__unlock();
  return r;
}

void tickclock_revalidate_every(uint32_t ms) {
  if (tickclock__first_state() == NULL || !tickclock__lock()) return;
  tickclock__reval_ms = ms;
  tickclock__arm_deadline(TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state), tickclock__max_seen);
  tickclock__unlock();
}

#if defined(TICKCLOCK__ARCH_COUNTER)
/* One refinement step: the first calibration's start bracket against a new
 * end bracket. A better figure that agrees with the current one is
 * published (continuous with it: same unit, base at the moment of
 * publication); a preempted end bracket is retried a millisecond later; a
 * figure that disagrees stops refinement (re-validation judges the
 * counter). */
static void tickclock__refine_locked(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  tickclock_info *fresh = &tickclock__fresh;
  tickclock_calibration c;
  double off;
  unsigned i;
  if (!tickclock__calibrate_from(tickclock__read_counter_ordered, &tickclock__cal_first, &c) ||
      (double)tickclock_conv_ticks_to_ns(&s->src_conv, c.bracket_end) >
          TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) {
    tickclock__refine_at = tickclock__after(s, tickclock__refine_at, UINT64_C(1000000));
    return;
  }
  /* due by a tick from the future (a caller converting an arbitrary value):
   * the clock has not got there yet */
  if (c.start_ns + c.ns < tickclock__refine_at_ns) return;
  off = tickclock__ppm(c.hz_num, c.hz_den, s->hz_num, s->hz_den);
  if (off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM ||
      -off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM) {
    tickclock__refine_on = 0;
    return;
  }
  tickclock__refine_at_ns = tickclock__cal_first.start_ns + 4 * c.ns;
  if (c.ns >= TICKCLOCK__REFINE_UNTIL_NS) tickclock__refine_on = 0;
  if (c.uncertainty_ppm >= s->uncertainty_ppm) { /* no better: measure further on */
    tickclock__refine_at = tickclock__after(
        s, tickclock__map(s, c.start_mid + c.ticks),
        tickclock__refine_at_ns - (c.start_ns + c.ns));
    return;
  }
  memcpy(fresh, s, sizeof *fresh);
  if (tickclock_conv_init(&fresh->conv, c.hz_num, c.hz_den) != TICKCLOCK_OK) {
    tickclock__refine_on = 0;
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
  (void)tickclock__publish(fresh, s, TICKCLOCK__TRUST, 0, NULL);
}

/* What is due at unit tick ticks: a periodic check, a refinement. */
static void tickclock__due_locked(uint64_t ticks) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s == NULL || !tickclock__reads_counter(s) || !tickclock__chk_on) return;
  if (ticks >= tickclock__reval_at) {
    if (tickclock__revalidate_locked() == TICKCLOCK_SWITCHED) return;
  } else if (tickclock__rdtsc_disabled_locked(s)) {
    return;
  }
  if (tickclock__refine_on && ticks >= tickclock__refine_at) tickclock__refine_locked();
  tickclock__store_deadline();
}
#endif

/* From tickclock_to_ns/tickclock_delta_ns once their argument passed the
 * deadline: one thread does what is due, the others (and a re-entering
 * signal handler) carry on. */
void tickclock__revalidate_due(uint64_t ticks) {
  if (!tickclock__trylock()) return;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__chk_on && ticks >= TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_reval_deadline))
    tickclock__due_locked(ticks);
#else
  (void)ticks;
#endif
  tickclock__unlock();
}

int tickclock_init(const tickclock_config *cfg) {
  int rc;
  if (cfg != NULL) {
    if (cfg->source < 0 || cfg->source >= TICKCLOCK_SOURCE_COUNT_) return TICKCLOCK_EINVAL;
    if (cfg->calibration_ms > 1000 || cfg->flags != 0) return TICKCLOCK_EINVAL;
  }
  tickclock__ensure_atfork();
  if (!tickclock__lock()) return TICKCLOCK_EBUSY;
  rc = tickclock__build_and_publish(cfg);
  tickclock__unlock();
  return rc;
}

/* Tests only (through tickclock__set_platform): forget every published
 * state, so the next initialisation is a first one in a fresh world. The
 * old states stay allocated: a test may still hold them. */
#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only entry */
void tickclock__set_platform(const tickclock_platform *p) {
  tickclock__platform_install(p);
  tickclock__reset_world();
}
#endif

void tickclock__reset_world(void) {
  TICKCLOCK__STORE_RELEASE(&tickclock__g_source, 0);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_state, (const tickclock_info *)NULL);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_reval_deadline, UINT64_MAX);
  tickclock__chk_on = 0;
  tickclock__max_seen = 0;
  tickclock__reval_ms = 0;
  tickclock__reval_at = UINT64_MAX;
  tickclock__refine_on = 0;
  tickclock__refine_at = UINT64_MAX;
}

/* Handed to a signal handler that interrupted the first initialisation in
 * its own thread: all zero, so ticks are nanoseconds (scaled == 0). */
static tickclock_info tickclock__reentry_state;

const tickclock_info *tickclock__state_slow(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s != NULL) return s;
  s = tickclock__first_state();
  return s != NULL ? s : &tickclock__reentry_state;
}

const tickclock_info *tickclock_info_get(void) { return tickclock__state(); }

/* The out-of-line read: any state, any path. Async-signal-safe once a
 * state is published (a load, a clock read, integer arithmetic). */
static uint64_t tickclock__read(int ordered) {
  const tickclock_info *s;
  uint64_t r;
  int src = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_source);
  if (TICKCLOCK__UNLIKELY(src == 0) && tickclock__state_slow() == &tickclock__reentry_state)
    return tickclock__os_now(); /* re-entered during the first initialisation */
  s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state); /* at least as new as the source */
  (void)ordered;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__reads_counter(s)) {
    r = ordered ? tickclock__arch_read_ordered() : tickclock__arch_read();
    if (s->read_path == TICKCLOCK_READ_COUNTER) return r;
    return tickclock__map(s, r);
  }
#endif
#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
  r = tickclock__p_os_ns();
#else
  r = tickclock__os_read();
#endif
  return tickclock__map(s, r);
}

uint64_t tickclock__now_slow(void) { return tickclock__read(0); }
uint64_t tickclock__now_ordered_slow(void) { return tickclock__read(1); }
