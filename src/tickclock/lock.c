/* tickclock — the initialisation lock.
 *
 * A spin lock whose word holds the owner's thread id: a signal handler
 * that interrupts the lock holder in the same thread sees its own id and
 * never waits (a first read falls back to a direct CLOCK_MONOTONIC read;
 * init/revalidate return TICKCLOCK_EBUSY). Waiters yield, then sleep, so a
 * SCHED_FIFO waiter cannot starve a lower-priority holder on its CPU.
 * pthread_atfork takes the lock around fork(), so a child never inherits
 * it held (a fork during the first initialisation waits for it).
 */
#include "state.h"

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
int tickclock__lock(void) {
  int me = tickclock__self();
  unsigned spins = 0;
  for (;;) {
    if (TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, me ? me : 1)) return 1;
    if (me != 0 && TICKCLOCK__LOAD_RELAXED(&tickclock__lock_word) == me) return 0;
    tickclock__backoff(spins++);
  }
}

int tickclock__trylock(void) {
  int me = tickclock__self();
  return TICKCLOCK__CAS_INT((int *)&tickclock__lock_word, 0, me ? me : 1);
}

void tickclock__unlock(void) { TICKCLOCK__STORE_RELEASE(&tickclock__lock_word, 0); }

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
void tickclock__ensure_atfork(void) {
#if !defined(_WIN32)
  if (TICKCLOCK__LOAD_ACQUIRE(&tickclock__atfork_state) == 2) return;
  if (TICKCLOCK__CAS_INT((int *)&tickclock__atfork_state, 0, 1)) {
    pthread_atfork(tickclock__fork_prepare, tickclock__fork_parent, tickclock__fork_child);
    TICKCLOCK__STORE_RELEASE(&tickclock__atfork_state, 2);
  }
#endif
}

