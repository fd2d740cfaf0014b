/* tickclock — the system interfaces the implementation uses (internal).
 *
 * The implementation must compile whatever feature-test macros are in force
 * in the translation unit that holds it: a vendored single header is often
 * included after <stdio.h> (a unity build, a project header that includes
 * tickclock.h), and by then glibc has fixed what <time.h> and <unistd.h>
 * declare. Under -std=c99/-std=c11 without _POSIX_C_SOURCE or _GNU_SOURCE
 * that hides clock_gettime, clock_getres, nanosleep, the CLOCK_* ids and
 * syscall(). This header declares what is missing, with the Linux ABI's
 * values, so the same code compiles in every include order. Nothing here
 * defines a feature-test macro: the user's translation unit keeps the
 * semantics it asked for.
 *
 * C++ needs none of it (g++ and clang++ define _GNU_SOURCE), and only Linux
 * gets the declarations; other systems declare these in every mode that
 * the library supports.
 */
#ifndef TICKCLOCK_SYS_H
#define TICKCLOCK_SYS_H

#if !defined(_WIN32)
#include <time.h>
/* struct timespec: glibc's <time.h> declares it only for POSIX or C11;
 * <sched.h> always does. */
#include <sched.h>
#endif

#if defined(__linux__) && !defined(__cplusplus)
#include <unistd.h>

#if !defined(CLOCK_MONOTONIC)
/* The POSIX clock interface is hidden: declare it (clockid_t is int in
 * glibc and musl; the ids are the kernel's). */
#define CLOCK_MONOTONIC 1
#if !defined(CLOCK_MONOTONIC_RAW)
#define CLOCK_MONOTONIC_RAW 4
#endif
extern int clock_gettime(int clock_id, struct timespec *tp);
extern int clock_getres(int clock_id, struct timespec *res);
extern int nanosleep(const struct timespec *req, struct timespec *rem);
#endif

#if !(defined(__GLIBC__) && defined(__USE_MISC))
/* syscall() is declared only for _DEFAULT_SOURCE/_GNU_SOURCE; a second
 * declaration with the same prototype is harmless where it is visible. */
extern long syscall(long number, ...);
#endif
#endif /* __linux__ && !__cplusplus */

#endif /* TICKCLOCK_SYS_H */
