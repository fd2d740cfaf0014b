/* tickclock internals — the published states and their transitions
 * (init.c and its neighbours). */
#ifndef TICKCLOCK_STATE_H
#define TICKCLOCK_STATE_H

#include "sys.h"
#include "tickclock.h"
#include "evidence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Installs a platform (NULL restores the native one) and starts a fresh
 * world: forgets the published state (the next initialisation is a first
 * one) and clears the system-call flag. Not thread-safe: call before any
 * thread uses the library (tests only). */
#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only */
TICKCLOCK__INTERNAL void tickclock__set_platform(const tickclock_platform *p);
#endif

/* Forgets the published state: the next initialisation is a first one. */
TICKCLOCK__INTERNAL void tickclock__reset_world(void);

/* Revalidation: counter time and CLOCK_MONOTONIC_RAW must agree,
 * over the step since the previous conclusive sample and over the total
 * since initialisation, within DRIFT_PPM plus the frequency's own
 * uncertainty of the elapsed time, plus DRIFT_ABS_NS and the two samples'
 * bracket half-widths. A sample whose tightest bracket is wider than
 * MAX_BRACKET_NS (preempted every time) is inconclusive: retried at the
 * next check, never counted as a failure. */
#define TICKCLOCK_REVALIDATE_DRIFT_PPM 50.0
#define TICKCLOCK_REVALIDATE_DRIFT_ABS_NS 100000.0
#define TICKCLOCK_REVALIDATE_MAX_BRACKET_NS 20000.0

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_STATE_H */
