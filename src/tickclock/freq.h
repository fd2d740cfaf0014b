/* tickclock internals — a frequency as an exact rational, and the
 * arithmetic on it (conv.c). Pure. */
#ifndef TICKCLOCK_FREQ_H
#define TICKCLOCK_FREQ_H

#include "sys.h"
#include "tickclock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tickclock_freq {
  int ok;
  uint64_t hz_num, hz_den;  /* reduced */
  int method;               /* tickclock_freq_method */
  const char *name;         /* "cpuid_15h_crystal", ... (tsc_hz.method) */
  double uncertainty_ppm;   /* quantisation of the reported value; 0 if exact */
  int from_table;           /* the crystal is tickclock's table's, not stated by the
                               CPU: a claim to check against calibration, never a
                               frequency to publish on its own */
  char why[TICKCLOCK_REASON_LEN]; /* when a rule gives no frequency: why not */
} tickclock_freq;

/* num/den reduced by their gcd; den 0 leaves them untouched. */
TKC_INTERNAL void tkc_reduce(uint64_t *num, uint64_t *den);
/* Signed disagreement of a against b in ppm: (a/b - 1) * 1e6. */
TKC_INTERNAL double tkc_ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den);
TKC_INTERNAL void tkc_ratio_hz(uint64_t ticks, uint64_t ns, uint64_t *num, uint64_t *den);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_FREQ_H */
