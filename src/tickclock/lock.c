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

static TKC_SHARED int tkc_lock_word = 0; /* 0 free, else the owner */

/* The calling thread's id, or 0 where there is none to be had (then a
 * re-entered lock cannot be recognised; Linux and Windows have one). */
static int tkc_self(void) {
#if defined(_WIN32)
  return (int)GetCurrentThreadId();
#elif defined(__linux__) && defined(SYS_gettid)
  return (int)syscall(SYS_gettid);
#else
  return 0;
#endif
}

static void tkc_backoff(unsigned spins) {
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
int tkc_lock(void) {
  int me = tkc_self();
  unsigned spins = 0;
  for (;;) {
    if (TKC_CAS_INT((int *)&tkc_lock_word, 0, me ? me : 1)) return 1;
    if (me != 0 && TKC_LOAD_RELAXED(&tkc_lock_word) == me) return 0;
    tkc_backoff(spins++);
  }
}

int tkc_trylock(void) {
  int me = tkc_self();
  return TKC_CAS_INT((int *)&tkc_lock_word, 0, me ? me : 1);
}

void tkc_unlock(void) { TKC_STORE_RELEASE(&tkc_lock_word, 0); }

#if !defined(_WIN32)
static int tkc_fork_took = 0;
static void tkc_fork_prepare(void) { tkc_fork_took = tkc_lock(); }
static void tkc_fork_parent(void) {
  if (tkc_fork_took) tkc_unlock();
}
/* The child has one thread; whoever held the lock in the parent is not in
 * it (or is this thread, interrupted, and will store 0 again). */
static void tkc_fork_child(void) { TKC_STORE_RELEASE(&tkc_lock_word, 0); }
static TKC_SHARED int tkc_atfork_state = 0; /* 0, 1 registering, 2 done */
#endif

/* Registered before the lock is first taken, so no fork can copy it held. */
void tkc_ensure_atfork(void) {
#if !defined(_WIN32)
  if (TKC_LOAD_ACQUIRE(&tkc_atfork_state) == 2) return;
  if (TKC_CAS_INT((int *)&tkc_atfork_state, 0, 1)) {
    pthread_atfork(tkc_fork_prepare, tkc_fork_parent, tkc_fork_child);
    TKC_STORE_RELEASE(&tkc_atfork_state, 2);
  }
#endif
}

