/* tickclock internals — calibration of the counter against
 * CLOCK_MONOTONIC_RAW (calibrate.c). */
#ifndef TICKCLOCK_CALIBRATE_H
#define TICKCLOCK_CALIBRATE_H

#include "sys.h"
#include "tickclock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tickclock_calibration {
  int ok;
  uint64_t ticks, ns;      /* counter ticks over ns of CLOCK_MONOTONIC_RAW */
  uint64_t hz_num, hz_den; /* ticks*1e9/ns reduced */
  double hz;
  double uncertainty_ppm;              /* from the bracket widths and clock granularity */
  uint64_t bracket_start, bracket_end; /* tightest (counter, clock, counter) widths, ticks */
  uint64_t start_mid, start_ns;        /* the start bracket (counter midpoint, raw ns): a later
                                          refinement measures from it on a longer baseline */
  uint64_t start_susp;                 /* the time suspended since boot at the start bracket
                                          (UINT64_MAX unknown) */
  int suspended;                       /* failed because the system was suspended between
                                          the two brackets: not a measurement at all */
  int no_clock;                        /* failed because CLOCK_MONOTONIC_RAW could not be read */
} tickclock_calibration;

/* The calibration's own bound an automatic choice accepts for the counter;
 * a quick calibration above it is lengthened (x4, up to
 * TICKCLOCK_CAL_QUICK_MAX_MS) before it is given up. */
#define TICKCLOCK_CAL_TARGET_PPM 50.0
#define TICKCLOCK_CAL_QUICK_MS 1 /* the first calibration, milliseconds */
#define TICKCLOCK_CAL_QUICK_MAX_MS 64

/* Calibrates over ms milliseconds; ms == 0: the quick calibration
 * (TICKCLOCK_CAL_QUICK_MS, lengthened x4 while its bound exceeds
 * TICKCLOCK_CAL_TARGET_PPM, up to TICKCLOCK_CAL_QUICK_MAX_MS). */
TKC_INTERNAL int tkc_calibrate(uint64_t (*read_ordered)(void), uint32_t ms,
                               tickclock_calibration *out);
/* A refinement of first: its start bracket, an end bracket taken now. */
TKC_INTERNAL int tkc_calibrate_from(uint64_t (*read_ordered)(void),
                                    const tickclock_calibration *first, tickclock_calibration *out);
/* One calibration end: the tightest of 16 (counter, raw clock, counter)
 * brackets. mid is the counter at the clock's instant to within width/2;
 * width is UINT64_MAX when every try stepped backwards, the raw clock
 * could not be read, or the system was suspended while they were taken.
 * susp is the time suspended since boot (tickclock_platform.suspended_ns)
 * when it was taken: CLOCK_MONOTONIC_RAW stops in a suspend while a
 * counter may keep counting, so two brackets compare only when it is the
 * same at both. */
typedef struct tkc_bracket {
  uint64_t mid, ns, width, susp;
} tkc_bracket;
/* 1 when a suspend lies between two suspended-time readings (both known). */
TKC_INTERNAL int tkc_suspend_between(uint64_t s0, uint64_t s1);
TKC_INTERNAL tkc_bracket tkc_tightest_bracket(uint64_t (*read_ordered)(void));
/* Makes b the start bracket a later refinement (tkc_calibrate_from)
 * measures from. */
TKC_INTERNAL void tkc_cal_start(tickclock_calibration *c, tkc_bracket b);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_CALIBRATE_H */
