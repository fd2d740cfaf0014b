/* tickclock — the OS clock (the fallback source) and the calibration
 * reference. POSIX: clock_gettime. */
#include "internal.h"

#include <time.h>

static uint64_t tickclock__ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * UINT64_C(1000000000) + (uint64_t)ts->tv_nsec;
}

uint64_t tickclock__os_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return tickclock__ts_ns(&ts);
}

uint64_t tickclock__os_now_raw(void) {
  struct timespec ts;
#if defined(CLOCK_MONOTONIC_RAW)
  /* not slewed by NTP: the right reference for a frequency */
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return tickclock__ts_ns(&ts);
}

double tickclock__os_resolution_ns(void) {
  struct timespec ts;
  if (clock_getres(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (double)tickclock__ts_ns(&ts);
}
