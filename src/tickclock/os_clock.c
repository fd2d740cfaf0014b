/* tickclock — the OS clock: the fallback source and the calibration
 * reference.
 *  - POSIX: clock_gettime(CLOCK_MONOTONIC) is the fallback (ticks are ns);
 *    CLOCK_MONOTONIC_RAW (not slewed by NTP) is the calibration reference.
 *  - Windows: QueryPerformanceCounter is the fallback; its ticks are QPC
 *    counts at QueryPerformanceFrequency, converted with the same exact
 *    conversion as any counter. The reference is QPC converted to ns.
 */
#include "internal.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <time.h>
#endif
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/syscall.h>
#include <unistd.h>
#if defined(SYS_clock_gettime)
#define TICKCLOCK__HAVE_CLOCK_SYSCALL 1
#endif
#endif

static TICKCLOCK__SHARED int tickclock__g_os_syscall = 0;

void tickclock__os_use_syscall(int on) { TICKCLOCK__STORE_RELEASE(&tickclock__g_os_syscall, on); }
int tickclock__os_syscall_on(void) { return TICKCLOCK__LOAD_RELAXED(&tickclock__g_os_syscall); }

#if defined(_WIN32)

/* QPF is fixed at boot; read it once (benign race: every thread computes
 * the same value, and the publication is the conversion's own). */
static const tickclock_conv *tickclock__qpc_conv(void) {
  static tickclock_conv conv;
  static TICKCLOCK__SHARED int ready = 0;
  if (!TICKCLOCK__LOAD_ACQUIRE(&ready)) {
    LARGE_INTEGER f;
    tickclock_conv c;
    if (!QueryPerformanceFrequency(&f) || f.QuadPart <= 0 ||
        tickclock_conv_init(&c, (uint64_t)f.QuadPart, 1) != TICKCLOCK_OK)
      tickclock_conv_init(&c, UINT64_C(1000000000), 1); /* cannot happen on XP+ */
    conv = c;
    TICKCLOCK__STORE_RELEASE(&ready, 1);
  }
  return &conv;
}

uint64_t tickclock__qpc_hz(void) { return tickclock__qpc_conv()->hz_num; }

uint64_t tickclock__os_read(void) {
  LARGE_INTEGER c;
  QueryPerformanceCounter(&c);
  return (uint64_t)c.QuadPart;
}

uint64_t tickclock__os_now(void) {
  return tickclock_conv_ticks_to_ns(tickclock__qpc_conv(), tickclock__os_read());
}

uint64_t tickclock__os_now_raw(void) { return tickclock__os_now(); }

double tickclock__os_resolution_ns(void) {
  return 1e9 / (double)tickclock__qpc_conv()->hz_num;
}

void tickclock__sleep_ns(uint64_t ns) { Sleep((DWORD)(ns / UINT64_C(1000000))); }

#else /* POSIX */

static uint64_t tickclock__ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * UINT64_C(1000000000) + (uint64_t)ts->tv_nsec;
}

/* One clock read. With clocksource tsc, kvm-clock or the Hyper-V TSC page
 * the vDSO's clock_gettime executes RDTSC itself, so once RDTSC is
 * disabled (prctl PR_SET_TSC) the vDSO traps like a direct read: then the
 * system call, which reads the clock in the kernel. The kernel's
 * timespec for SYS_clock_gettime is two longs on i386 and x86-64 alike,
 * whatever time_t the C library was built with. */
static uint64_t tickclock__clock_ns(int id) {
  struct timespec ts;
#if defined(TICKCLOCK__HAVE_CLOCK_SYSCALL)
  if (TICKCLOCK__LOAD_RELAXED(&tickclock__g_os_syscall)) {
    struct {
      long sec, nsec;
    } k;
    if (syscall(SYS_clock_gettime, (long)id, &k) != 0) return 0;
    return (uint64_t)k.sec * UINT64_C(1000000000) + (uint64_t)k.nsec;
  }
#endif
  clock_gettime(id, &ts);
  return tickclock__ts_ns(&ts);
}

uint64_t tickclock__os_now(void) { return tickclock__clock_ns(CLOCK_MONOTONIC); }

uint64_t tickclock__os_read(void) { return tickclock__os_now(); }

uint64_t tickclock__qpc_hz(void) { return 0; }

uint64_t tickclock__os_now_raw(void) {
#if defined(CLOCK_MONOTONIC_RAW)
  return tickclock__clock_ns(CLOCK_MONOTONIC_RAW);
#else
  return tickclock__clock_ns(CLOCK_MONOTONIC);
#endif
}

double tickclock__os_resolution_ns(void) {
  struct timespec ts;
  if (clock_getres(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (double)tickclock__ts_ns(&ts);
}

void tickclock__sleep_ns(uint64_t ns) {
  struct timespec req;
  req.tv_sec = (time_t)(ns / UINT64_C(1000000000));
  req.tv_nsec = (long)(ns % UINT64_C(1000000000));
  nanosleep(&req, NULL);
}

#endif
