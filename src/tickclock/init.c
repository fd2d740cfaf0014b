/* tickclock — initialisation, publication and the out-of-line reads.
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
 * The lock is lock.c's; re-validation and refinement, which replace the
 * published counter state, are revalidate.c's.
 */
#include "state.h"
#include "decide.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(TICKCLOCK_STATIC) /* TICKCLOCK_STATIC: tickclock.h defines them */
TICKCLOCK__SHARED int tickclock__g_source = 0;
const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;
/* Unit tick at which tickclock_to_ns runs the periodic re-validation. */
TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline = UINT64_MAX;
#endif

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

/* Every field given: the two "never" deadlines are not zero. */
TICKCLOCK__BOOK_LINKAGE tickclock__book tickclock__bk = {
    0, UINT64_MAX, 0, {0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0, 0}, 0, UINT64_MAX, 0,
    {0, 0, 0},      {0, 0, 0}, 0,          0, {0}};

int tickclock__reads_counter(const tickclock_info *s) {
  return s->read_path == TICKCLOCK_READ_COUNTER || s->read_path == TICKCLOCK_READ_COUNTER_MAPPED;
}

/* A source reading -> unit ticks under s (never below base_ticks). */
uint64_t tickclock__map(const tickclock_info *s, uint64_t r) {
  uint64_t d = r >= s->src_base ? r - s->src_base : 0, ns;
  if (s->src_is_unit) return s->base_ticks + d;
  ns = tickclock_conv_ticks_to_ns(&s->src_conv, d);
  return s->base_ticks + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
}

uint64_t tickclock__max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t tickclock__ns_before(const tickclock_info *s, uint64_t ticks) {
  uint64_t ns;
  while (ticks < s->base_ticks && s->prev != NULL) s = s->prev;
  if (ticks >= s->base_ticks) return tickclock__ns_in(s, ticks);
  ns = tickclock_conv_ticks_to_ns(&s->conv, s->base_ticks - ticks); /* before the first base */
  return ns > s->base_ns ? 0 : s->base_ns - ns;
}


/* An upper bound of the unit ticks old has handed out so far. A counter
 * that failed may have stepped back after readings no check saw, so the
 * bound also extrapolates from the last conclusive sample at the
 * frequency's uncertainty plus the drift allowance (all of it without
 * touching the counter when it cannot be read). */
static uint64_t tickclock__now_bound(const tickclock_info *old, int trust) {
  uint64_t t = tickclock__bk.max_seen;
  if (!tickclock__reads_counter(old))
    return tickclock__max_u64(t, tickclock__map(old, tickclock__p_os_ns()));
  if (trust != TICKCLOCK__NO_READ)
    t = tickclock__max_u64(t, tickclock__map(old, tickclock__p_counter_ordered()));
  if (trust != TICKCLOCK__TRUST && tickclock__bk.chk_on) {
    uint64_t raw = tickclock__p_raw_ns();
    uint64_t dt = raw > tickclock__bk.chk_prev.ns ? raw - tickclock__bk.chk_prev.ns : 0;
    double slack = (double)dt * (TICKCLOCK_REVALIDATE_DRIFT_PPM + old->uncertainty_ppm) * 1e-6 +
                   TICKCLOCK_REVALIDATE_DRIFT_ABS_NS;
    uint64_t c = tickclock__bk.chk_prev.mid + tickclock__bk.chk_prev.width / 2 +
                 tickclock_conv_ns_to_ticks(&old->src_conv, dt + (uint64_t)slack);
    t = tickclock__max_u64(t, tickclock__map(old, c));
  }
  return t;
}

/* The unit tick ns after from under s (saturating below UINT64_MAX). */
uint64_t tickclock__after(const tickclock_info *s, uint64_t from, uint64_t ns) {
  uint64_t d = from + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
  return (d < from || d == UINT64_MAX) ? UINT64_MAX - 1 : d;
}

/* The deadline the inline conversions compare with: the earlier of the
 * next periodic check and the next refinement. */
void tickclock__store_deadline(void) {
  uint64_t d = tickclock__bk.chk_on ? tickclock__bk.reval_at : UINT64_MAX;
  if (tickclock__bk.chk_on && tickclock__bk.refine_on && tickclock__bk.refine_at < d)
    d = tickclock__bk.refine_at;
  TICKCLOCK__STORE_RELEASE(&tickclock__g_reval_deadline, d);
}

/* The next periodic check a period after now_unit (off unless the state
 * reads the counter and a period is set), then the deadline. */
void tickclock__arm_deadline(const tickclock_info *s, uint64_t now_unit) {
  tickclock__bk.reval_at = UINT64_MAX;
  if (tickclock__bk.chk_on && tickclock__bk.reval_ms != 0)
    tickclock__bk.reval_at =
        tickclock__after(s, now_unit, (uint64_t)tickclock__bk.reval_ms * UINT64_C(1000000));
  tickclock__store_deadline();
}

uint64_t tickclock__read_counter_ordered(void) { return tickclock__p_counter_ordered(); }

static void tickclock__continue(const tickclock_info *old, tickclock_info *st, int trust);
static void tickclock__note_path(tickclock_info *st);

/* Publishes the decision st as the continuation of old (trust: how far
 * old's counter may be read). Takes a slot (the spare when asked), keeps a
 * spare while the new state reads the counter, records the re-validation
 * anchor, then fixes the base last, right before the state becomes
 * visible, so the window in which a reader can pair a newer tick with the
 * older state stays a few nanoseconds. */
int tickclock__publish(const tickclock_info *st, const tickclock_info *old, int trust,
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
  tickclock__bk.chk_anchor = tickclock__bk.chk_prev = anchor;
  tickclock__bk.chk_on = anchor.width != UINT64_MAX;
  if (counter && ev != NULL) {
    tickclock__bk.cs_known = ev->clocksource_known;
    tickclock__strlcpy(tickclock__bk.cs, ev->clocksource, sizeof tickclock__bk.cs);
  }
  if (!counter || !tickclock__bk.chk_on) tickclock__bk.refine_on = 0;
  if (tickclock__bk.refine_on)
    tickclock__bk.refine_at = tickclock__after(
        slot, tickclock__map(slot, anchor.mid),
        tickclock__bk.refine_at_ns > anchor.ns ? tickclock__bk.refine_at_ns - anchor.ns : 0);
  if (old != NULL) tickclock__bk.max_seen = tickclock__max_u64(tickclock__bk.max_seen, slot->base_ticks);
  if (tickclock__bk.chk_on)
    tickclock__bk.max_seen = tickclock__max_u64(
        tickclock__bk.max_seen, tickclock__map(slot, tickclock__bk.chk_anchor.mid + tickclock__bk.chk_anchor.width / 2));
  tickclock__arm_deadline(slot, tickclock__bk.max_seen);
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
  tickclock__bk.refine_on = fresh->freq_method == TICKCLOCK_FREQ_CALIBRATED && ev.cal.ok &&
                         (cfg == NULL || cfg->calibration_ms == 0) &&
                         ev.cal.ns < TICKCLOCK__REFINE_UNTIL_NS;
  if (tickclock__bk.refine_on) {
    tickclock__bk.cal_first = ev.cal;
    tickclock__bk.refine_at_ns = ev.cal.start_ns + 4 * ev.cal.ns;
  }
  rc = tickclock__publish(fresh, old,
                          ev.tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV ? TICKCLOCK__NO_READ
                                                                  : TICKCLOCK__TRUST,
                          0, &ev);
  if (rc != TICKCLOCK_OK) return rc;
  return fresh->request_refused ? TICKCLOCK_EUNAVAILABLE : TICKCLOCK_OK;
}

/* The first state, or NULL when this thread re-entered the lock. */
const tickclock_info *tickclock__first_state(void) {
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
  tickclock__bk.chk_on = 0;
  tickclock__bk.max_seen = 0;
  tickclock__bk.reval_ms = 0;
  tickclock__bk.reval_at = UINT64_MAX;
  tickclock__bk.refine_on = 0;
  tickclock__bk.refine_at = UINT64_MAX;
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

