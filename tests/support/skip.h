// Reporting a check that could not run on this host as a skip, never as a
// pass. Bazel 4.2.3 has no run-time skip and doctest 2.4.9 no run-time
// skip either, so a test that cannot do its job prints one line
//   TICKCLOCK_SKIPPED: <what did not run>: <why>
// on stdout (kept in the target's test.log); ci/matrix_lab/summarize and ci/matrix
// count a PASSED target whose log has that line as SKIPPED, and print the
// reason. The checks that did run in the same target still had to pass.
#ifndef TICKCLOCK_TESTS_SKIP_H
#define TICKCLOCK_TESTS_SKIP_H

#include <cstdio>
#include <string>

#include "doctest/doctest.h"

// AddressSanitizer's runtime reads the clock through the vDSO itself (its
// allocator does), and with clocksource tsc the vDSO executes RDTSC: after
// prctl(PR_SET_TSC, PR_TSC_SIGSEGV) an ASan build dies of SIGSEGV inside
// its own malloc, whatever the code under test does. The PR_SET_TSC cases
// skip under either sanitizer, saying so (TCTEST_SANITIZER_* below).
#if defined(__SANITIZE_ADDRESS__)
#define TCTEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TCTEST_ASAN 1
#endif
#endif
// ThreadSanitizer, detected the same way (gcc defines the macro, clang
// answers __has_feature).
#if defined(__SANITIZE_THREAD__)
#define TCTEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TCTEST_TSAN 1
#endif
#endif
// ThreadSanitizer's runtime traps after PR_SET_TSC too, inside its own
// fopen/fclose interceptors (a program of prctl and fopen alone dies so
// with clang-19's and gcc's runtimes, then hangs in TSan's handler for a
// signal inside its runtime); cases that never open a file after the prctl
// run under it.
#if defined(TCTEST_ASAN)
#define TCTEST_SANITIZER_TRAPS_AFTER_PR_SET_TSC 1
#define TCTEST_SANITIZER_PR_SET_TSC_WHY                                                    \
  "AddressSanitizer's own allocator calls the vDSO's clock_gettime, which executes RDTSC " \
  "and traps after PR_SET_TSC"
#elif defined(TCTEST_TSAN)
#define TCTEST_SANITIZER_TRAPS_AFTER_PR_SET_TSC 1
#define TCTEST_SANITIZER_PR_SET_TSC_WHY                                             \
  "ThreadSanitizer's runtime traps inside its own fopen/fclose interceptors after " \
  "PR_SET_TSC (a program of prctl and fopen alone dies so)"
#endif

// A fork() that must wait for another thread holding the library's lock
// (a long initialisation) deadlocks inside ThreadSanitizer's own runtime
// where its fork() interceptor takes the runtime's locks before running the
// fork handlers: the handler waits for the holder, the holder waits for the
// runtime. gcc 11's libtsan does (the matrix's gcc-11 cell hung); gcc 12's
// and clang 19's run the handlers first (their cells pass these cases).
#if defined(TCTEST_TSAN) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 12
#define TCTEST_TSAN_FORK_WAIT_DEADLOCKS 1
#define TCTEST_TSAN_FORK_WAIT_WHY                                                       \
  "this ThreadSanitizer runtime takes its own locks in its fork() interceptor before "  \
  "the fork handlers, which wait for the thread holding the library's lock, which "     \
  "needs them (a deadlock inside gcc 11's sanitizer runtime; gcc 12's and clang's run " \
  "the handlers first)"
#endif

namespace tctest {

inline void skip(const std::string &why) {
  std::printf("TICKCLOCK_SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
  MESSAGE("SKIPPED: " << why);
}

}  // namespace tctest

#endif
