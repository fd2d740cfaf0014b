// An oracle for counter frequencies that shares nothing with the library:
// the counter read given by the caller, bracketed around
// CLOCK_MONOTONIC_RAW read through the system call itself (not the vDSO,
// not tkc_p_raw_ns, not tkc_calibrate), over an interval
// slept with nanosleep. A scale error in the library's calibration does
// not cancel against it.
#ifndef TICKCLOCK_TESTS_SYSCLOCK_REF_H
#define TICKCLOCK_TESTS_SYSCLOCK_REF_H

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace tctest {

inline uint64_t syscall_raw_ns() {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

struct SysRef {
  bool ok = false;
  double hz = 0;       // counter ticks per second of CLOCK_MONOTONIC_RAW
  double err_ppm = 0;  // half the two bracket widths over the interval, + 2 ns
  uint64_t ns = 0, ticks = 0;
};

// The tightest of 64 (counter, syscall clock, counter) brackets.
inline bool sys_bracket(uint64_t (*rd)(), uint64_t *mid, uint64_t *ns, uint64_t *width) {
  *width = UINT64_MAX;
  for (int i = 0; i < 64; i++) {
    uint64_t a = rd(), n = syscall_raw_ns(), b = rd();
    if (b >= a && b - a < *width) {
      *width = b - a;
      *mid = a + (b - a) / 2;
      *ns = n;
    }
  }
  return *width != UINT64_MAX;
}

inline SysRef sys_reference(uint64_t (*rd)(), unsigned ms) {
  SysRef r;
  uint64_t m0, n0, w0, m1, n1, w1;
  if (!sys_bracket(rd, &m0, &n0, &w0)) return r;
  struct timespec s = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&s, nullptr);
  if (!sys_bracket(rd, &m1, &n1, &w1) || n1 <= n0 || m1 <= m0) return r;
  r.ns = n1 - n0;
  r.ticks = m1 - m0;
  r.hz = (double)r.ticks / (double)r.ns * 1e9;
  r.err_ppm = (((double)w0 + (double)w1) / 2.0 / (double)r.ticks + 2.0 / (double)r.ns) * 1e6;
  r.ok = true;
  return r;
}

}  // namespace tctest

#endif
