// What this host charges for the things a timing test leans on, measured
// when the test starts, so that rates and deadlines follow the host instead
// of the machine a test was first written on: one signal raised and handled
// (11 us on a nested paravirtual guest, 1 us on KVM), one signal that a
// timer delivers (its interrupt too: 25 us where the guest's timer
// interrupt exits to a nested hypervisor), the clock_gettime system call
// (2.6 us on that guest, 0.1 us on KVM) and a vDSO clock_gettime. Each
// figure is the median of several batches, so a preempted batch does not
// set it; a test derives its timer periods from the signals' cost and its
// deadlines from what a child it forks takes.
#ifndef TICKCLOCK_TESTS_SUPPORT_HOST_COSTS_H
#define TICKCLOCK_TESTS_SUPPORT_HOST_COSTS_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace tctest {

struct HostCosts {
  double signal_us = 0;   // raise() of a caught signal, its handler, the return
  double timer_us = 0;    // the same signal sent by ITIMER_REAL: the interrupt too
  double syscall_us = 0;  // syscall(SYS_clock_gettime, CLOCK_MONOTONIC)
  double vdso_ns = 0;     // clock_gettime(CLOCK_MONOTONIC) as libc serves it

  // A periodic timer's period that leaves the process at least 3/4 of its
  // time outside handlers of `handler_factor` signals' cost (the handler's
  // own work counted in signals), and never below `floor_us`.
  long timer_period_us(long floor_us, double handler_factor = 1) const {
    long p = (long)(4 * handler_factor * std::max(signal_us, timer_us) + 0.999);
    return std::max(p, floor_us);
  }
  std::string describe() const {
    char b[200];
    std::snprintf(b, sizeof b,
                  "a signal raised and handled %.2f us, one a timer sends %.2f us, the "
                  "clock_gettime system call %.2f us, the vDSO clock_gettime %.1f ns",
                  signal_us, timer_us, syscall_us, vdso_ns);
    return b;
  }
};

// CLOCK_MONOTONIC through the system call, in ns: safe after PR_SET_TSC,
// where the vDSO may execute RDTSC and trap.
inline uint64_t sys_mono_ns() {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// A clock through clock_gettime (the vDSO where there is one), in ns: the
// reference a test brackets the library's readings with.
inline uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

namespace host_costs_detail {
inline double mono_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
inline void empty_handler(int) {}
inline volatile long &timer_signals() {
  static volatile long n = 0;
  return n;
}
inline void counting_handler(int) { timer_signals() = timer_signals() + 1; }
inline double thread_cpu_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
// Loop iterations in `ms` of this thread's CPU time (time stolen by other
// processes is not counted; time in this thread's interrupts and signal
// deliveries is).
inline double spin_cpu_ms(double ms) {
  double end = thread_cpu_ns() + ms * 1e6, it = 0;
  for (;;) {
    for (int k = 0; k < 256; k++) __asm__ __volatile__("");
    it += 1;
    if (((long)it & 15) == 0 && thread_cpu_ns() > end) return it;
  }
}
// What one SIGALRM from a 200 us ITIMER_REAL costs this thread: the work a
// spinning loop loses to the timer over 20 ms of its CPU time, divided by
// the signals it got. SIGALRM's disposition is restored, and a real-time
// timer the process had armed runs on, less the time measured here (due
// by now: it expires at once).
inline double timer_signal_us() {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = counting_handler;
  sa.sa_flags = SA_RESTART;
  struct itimerval on = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}}, was;
  std::vector<double> v;
  getitimer(ITIMER_REAL, &was);
  const double t0 = mono_ns();
  sigaction(SIGALRM, &sa, &old);
  for (int k = 0; k < 3; k++) {
    double base = spin_cpu_ms(20);
    timer_signals() = 0;
    setitimer(ITIMER_REAL, &on, nullptr);
    double with = spin_cpu_ms(20);
    setitimer(ITIMER_REAL, &off, nullptr);
    long n = timer_signals();
    double lost_us = 20e3 * (1 - with / base);
    v.push_back(n > 0 && lost_us > 0 ? lost_us / (double)n : 0);
  }
  sigaction(SIGALRM, &old, nullptr);
  if (was.it_value.tv_sec != 0 || was.it_value.tv_usec != 0) {
    double left_us =
        (double)was.it_value.tv_sec * 1e6 + (double)was.it_value.tv_usec - (mono_ns() - t0) / 1e3;
    long long l = left_us < 1 ? 1 : (long long)left_us;
    was.it_value.tv_sec = (time_t)(l / 1000000);
    was.it_value.tv_usec = (suseconds_t)(l % 1000000);
    setitimer(ITIMER_REAL, &was, nullptr);
  }
  std::sort(v.begin(), v.end());
  return v[1];
}

// The median over `batches` batches of `n` calls of fn, in ns per call.
template <class F>
double median_cost_ns(int batches, int n, F fn) {
  std::vector<double> v;
  for (int b = 0; b < batches; b++) {
    double t0 = mono_ns();
    for (int k = 0; k < n; k++) fn();
    v.push_back((mono_ns() - t0) / n);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace host_costs_detail

// Measured once per process (about 130 ms); SIGUSR2's and SIGALRM's
// dispositions, the signal mask and the real-time timer are as they were
// afterwards.
inline const HostCosts &host_costs() {
  static HostCosts c = [] {
    using namespace host_costs_detail;
    HostCosts h;
    // Both signals are delivered while measured, whatever this thread's
    // mask: a blocked one would cost only its raise() and stay pending
    // into the caller's disposition. One the caller had pending already
    // is raised again, blocked, afterwards.
    sigset_t ours, mask, pending;
    sigemptyset(&ours);
    sigaddset(&ours, SIGUSR2);
    sigaddset(&ours, SIGALRM);
    sigpending(&pending);
    const bool had_usr2 = sigismember(&pending, SIGUSR2) == 1,
               had_alrm = sigismember(&pending, SIGALRM) == 1;
    pthread_sigmask(SIG_UNBLOCK, &ours, &mask);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = empty_handler;
    sigaction(SIGUSR2, &sa, &old);
    h.signal_us = median_cost_ns(7, 200, [] { raise(SIGUSR2); }) / 1000;
    sigaction(SIGUSR2, &old, nullptr);
    h.timer_us = timer_signal_us();
    h.syscall_us = median_cost_ns(7, 200,
                                  [] {
                                    struct timespec ts;
                                    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
                                  }) /
                   1000;
    h.vdso_ns = median_cost_ns(7, 2000, [] {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
    });
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    if (had_usr2 && sigismember(&mask, SIGUSR2) == 1) raise(SIGUSR2);
    if (had_alrm && sigismember(&mask, SIGALRM) == 1) raise(SIGALRM);
    return h;
  }();
  return c;
}

}  // namespace tctest

#endif
