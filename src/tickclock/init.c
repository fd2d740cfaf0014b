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

TICKCLOCK__SHARED int tickclock__g_source = 0;
const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;

static tickclock_info tickclock__slots[TICKCLOCK__SLOTS];
static unsigned tickclock__next_slot = 0;
static TICKCLOCK__SHARED int tickclock__lock_word = 0;
static int tickclock__env_reported = 0;

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

#if defined(TICKCLOCK__ARCH_COUNTER)
static uint64_t tickclock__arch_ordered_fn(void) { return tickclock__arch_read_ordered(); }
#endif

/* Called with the lock held. */
static const tickclock_info *tickclock__build_and_publish(const tickclock_config *cfg, int *rc) {
  tickclock_evidence ev;
  tickclock_info *slot = &tickclock__slots[tickclock__next_slot % TICKCLOCK__SLOTS];
  static tickclock_info fresh; /* under the lock; too big for small stacks */
  tickclock__next_slot++;
  tickclock__gather(cfg, &ev);
  if (tickclock_decide(&ev, &fresh)) {
#if defined(TICKCLOCK__ARCH_COUNTER)
    tickclock__calibrate(tickclock__arch_ordered_fn, cfg ? cfg->calibration_ms : 0, &ev.cal);
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
  memcpy(slot, &fresh, sizeof *slot);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_state, (const tickclock_info *)slot);
  TICKCLOCK__STORE_RELEASE(&tickclock__g_source, slot->source);
  return slot;
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

const tickclock_info *tickclock_info_get(void) { return tickclock__state(); }

static uint64_t tickclock__read(int ordered) {
  int src = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_source);
  if (TICKCLOCK__UNLIKELY(src == 0)) src = tickclock__state_slow()->source;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (src == TICKCLOCK__ARCH_COUNTER)
    return ordered ? tickclock__arch_read_ordered() : tickclock__arch_read();
#endif
  (void)ordered;
  return tickclock__os_read(); /* CLOCK_MONOTONIC ns, or QPC counts on Windows */
}

uint64_t tickclock__now_slow(void) { return tickclock__read(0); }
uint64_t tickclock__now_ordered_slow(void) { return tickclock__read(1); }
