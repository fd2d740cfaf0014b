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
  double uncertainty_ppm;  /* from the bracket widths and clock granularity */
  uint64_t bracket_start, bracket_end; /* tightest (counter, clock, counter) widths, ticks */
  uint64_t start_mid, start_ns;  /* the start bracket (counter midpoint, raw ns): a later
                                    refinement measures from it on a longer baseline */
} tickclock_calibration;

/* The calibration's own bound an automatic choice accepts for the counter;
 * a quick calibration above it is lengthened (x4, up to
 * TICKCLOCK_CAL_QUICK_MAX_MS) before it is given up. */
#define TICKCLOCK_CAL_TARGET_PPM 50.0
#define TICKCLOCK_CAL_QUICK_MS 1     /* the first calibration, milliseconds */
#define TICKCLOCK_CAL_QUICK_MAX_MS 64

/* Calibrates over ms milliseconds; ms == 0: the quick calibration
 * (TICKCLOCK_CAL_QUICK_MS, lengthened x4 while its bound exceeds
 * TICKCLOCK_CAL_TARGET_PPM, up to TICKCLOCK_CAL_QUICK_MAX_MS). */
TKC_INTERNAL int tkc_calibrate(uint64_t (*read_ordered)(void), uint32_t ms,
                         tickclock_calibration *out);
/* A refinement of first: its start bracket, an end bracket taken now. */
TKC_INTERNAL int tkc_calibrate_from(uint64_t (*read_ordered)(void),
                                                  const tickclock_calibration *first,
                                                  tickclock_calibration *out);
/* One calibration end: the tightest of 16 (counter, raw clock, counter)
 * brackets. mid is the counter at the clock's instant to within width/2;
 * width is UINT64_MAX when every try stepped backwards. */
typedef struct tkc_bracket {
  uint64_t mid, ns, width;
} tkc_bracket;
TKC_INTERNAL tkc_bracket tkc_tightest_bracket(uint64_t (*read_ordered)(void));

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_CALIBRATE_H */
