/* tickclock — the initialisation lock.
 *
 * A spin lock whose word holds the owner's thread id: a signal handler
 * that interrupts the lock holder in the same thread sees its own id and
 * never waits (a first read falls back to a direct CLOCK_MONOTONIC read;
 * init/revalidate return TICKCLOCK_EBUSY). Waiters yield, then sleep, so a
 * SCHED_FIFO waiter cannot starve a lower-priority holder on its CPU.
 *
 * Through a process's life:
 *  - fork: pthread_atfork takes the lock around fork(), so a child never
 *    inherits it held (a fork during the first initialisation waits for
 *    it). The handlers are registered when the program is loaded (a
 *    constructor), before any thread can take the lock: glibc does not run
 *    handlers registered while a fork is already under way. Where the
 *    library was loaded after threads started (dlopen) the first use
 *    registers them; and a child that still finds the word held by a
 *    thread that is not in its process (tgkill says so) takes it over.
 *  - errno: the holder's errno as it took the lock is put back as it
 *    releases it, so nothing done under the lock (a sysfs file that is
 *    not there, the clock page's readability proof, which fails on
 *    purpose) reaches the caller, as clock_gettime leaves errno alone.
 *  - cancellation: a blocking tkc_lock() disables deferred cancellation
 *    until tkc_unlock(), so a thread cancelled in a cancellation point
 *    under the lock (calibration's nanosleep, a sysfs read) unwinds only
 *    after releasing it. The try-lock of the conversions' due work reaches
 *    no cancellation point and leaves the state alone (pthread_setcancelstate
 *    is not async-signal-safe).
 */
#include "state.h"

#include <errno.h>

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

static TKC_SHARED int tkc_lock_word = 0; /* 0 free, else the owner */
static int tkc_errno_held = 0;           /* the holder's errno as it took the lock */

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
  if (spins < 64)
    SwitchToThread();
  else
    Sleep(1);
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

/* 1 when owner, a thread id the lock word holds, names no thread of
 * this process: the word was copied by a fork() that ran no handler of
 * ours (the library was loaded after the fork began, or registering
 * failed), and its holder does not exist here. */
static int tkc_owner_gone(int owner) {
#if defined(__linux__) && defined(SYS_tgkill) && defined(SYS_getpid)
  if (owner <= 1) return 0;
  return syscall(SYS_tgkill, (long)syscall(SYS_getpid), (long)owner, 0L) != 0 && errno == ESRCH;
#else
  (void)owner;
  return 0;
#endif
}

#if !defined(_WIN32)
/* The cancellation state the holder had (restored by tkc_unlock). */
static int tkc_cancel_old = 0;
static int tkc_cancel_saved = 0;
#endif

/* 1: taken. 0: this thread holds it already (a signal handler interrupted
 * the library): the caller must not wait and must not unlock. */
int tkc_lock(void) {
  int err = errno;
  int me = tkc_self();
  unsigned spins = 0;
#if !defined(_WIN32)
  int old = 0;
  /* before taking it: a cancellation point between the two would unwind
   * with the lock held */
  int saved = pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0;
#endif
  for (;;) {
    int owner;
    if (TKC_CAS_INT((int *)&tkc_lock_word, 0, me ? me : 1)) break;
    owner = TKC_LOAD_RELAXED(&tkc_lock_word);
    if (me != 0 && owner == me) {
#if !defined(_WIN32)
      if (saved) pthread_setcancelstate(old, NULL);
#endif
      errno = err;
      return 0;
    }
    if (owner != 0 && (spins & 63u) == 63u && tkc_owner_gone(owner) &&
        TKC_CAS_INT((int *)&tkc_lock_word, owner, me ? me : 1))
      break;
    tkc_backoff(spins++);
  }
#if !defined(_WIN32)
  tkc_cancel_old = old;
  tkc_cancel_saved = saved;
#endif
  tkc_errno_held = err;
  return 1;
}

int tkc_trylock(void) {
  int err = errno;
  int me = tkc_self();
  if (TKC_CAS_INT((int *)&tkc_lock_word, 0, me ? me : 1)) {
    tkc_errno_held = err;
#if !defined(_WIN32)
    tkc_cancel_saved = 0; /* nothing to restore */
#endif
    return 1;
  }
  return 0;
}

void tkc_unlock(void) {
#if !defined(_WIN32)
  int restore = tkc_cancel_saved, old = tkc_cancel_old;
  tkc_cancel_saved = 0;
#endif
  errno = tkc_errno_held; /* this thread's, put back before another takes the lock */
  TKC_STORE_RELEASE(&tkc_lock_word, 0);
#if !defined(_WIN32)
  if (restore) pthread_setcancelstate(old, NULL);
#endif
}

#if !defined(_WIN32)
static int tkc_fork_took = 0;
static void tkc_fork_prepare(void) { tkc_fork_took = tkc_lock(); }
static void tkc_fork_parent(void) {
  if (tkc_fork_took) tkc_unlock();
}
/* The child has one thread. What prepare took is released (which also
 * gives this thread its cancellation state back). Prepare took nothing
 * only when this thread already held the lock (a signal handler that
 * interrupted the library forks): the child's handler may leave the
 * interrupted frame for good (siglongjmp), so the lock is freed for the
 * child's own calls; a frame that does resume finishes after them. */
static void tkc_fork_child(void) {
  if (tkc_fork_took) {
    tkc_unlock();
    return;
  }
  /* the interrupted frame's cancellation state, given back now: the frame
   * may never run again */
  if (tkc_cancel_saved) {
    tkc_cancel_saved = 0;
    pthread_setcancelstate(tkc_cancel_old, NULL);
  }
  TKC_STORE_RELEASE(&tkc_lock_word, 0);
}
static TKC_SHARED int tkc_atfork_state = 0; /* 0, 1 registering, 2 done */
#endif

/* Registered before the lock is first taken, so no fork can copy it held:
 * at load time where the compiler runs constructors, else at first use. */
void tkc_ensure_atfork(void) {
#if !defined(_WIN32)
  if (TKC_LOAD_ACQUIRE(&tkc_atfork_state) == 2) return;
  if (TKC_CAS_INT((int *)&tkc_atfork_state, 0, 1)) {
    pthread_atfork(tkc_fork_prepare, tkc_fork_parent, tkc_fork_child);
    TKC_STORE_RELEASE(&tkc_atfork_state, 2);
  }
#endif
}

#if !defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
__attribute__((constructor)) static void tkc_atfork_at_load(void) { tkc_ensure_atfork(); }
#endif
