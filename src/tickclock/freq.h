/* tickclock internals — a frequency as an exact rational, and the
 * arithmetic on it (conv.c). Pure. */
#ifndef TICKCLOCK_FREQ_H
#define TICKCLOCK_FREQ_H

#include "sys.h"
#include "tickclock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Who claims a frequency (tickclock_freq.source): one value per source,
 * so the decider tells sources apart without comparing names. */
#define TKC_SRC_NONE 0            /* a rule that gave no frequency (why says why) */
#define TKC_SRC_CALIBRATION 1     /* measured against CLOCK_MONOTONIC_RAW */
#define TKC_SRC_PERF_PAGE 2       /* the kernel's perf page time_mult/time_shift */
#define TKC_SRC_ARCH_REGISTER 3   /* the architecture's statement (CNTFRQ_EL0, TOD) */
#define TKC_SRC_ARCH_FILE 4       /* the device tree or /proc/cpuinfo timebase */
#define TKC_SRC_LEAF15_CRYSTAL 5  /* leaf 0x15 with the crystal in ECX */
#define TKC_SRC_LEAF15_TABLE 6    /* leaf 0x15 with the crystal table's crystal */
#define TKC_SRC_LEAF15_FROM_16H 7 /* leaf 0x15's ratio over leaf 0x16's base */
#define TKC_SRC_LEAF16 8          /* leaf 0x16's nominal base MHz */
#define TKC_SRC_HV_TIMING 9       /* VMware/KVM base+0x10 TSC kHz */
#define TKC_SRC_XEN_LEAF3 10      /* Xen base+3 TSC kHz */
#define TKC_SRC_PVCLOCK 11        /* the paravirtual clock page's mul/shift (scale) */
#define TKC_SRC_COUNT 12

/* A frequency claim: a source's frequency with its stated uncertainty, or
 * (ok = 0) the reason it gave none. */
typedef struct tickclock_freq {
  int ok;
  int source;                     /* TKC_SRC_* */
  uint64_t hz_num, hz_den;        /* reduced */
  int method;                     /* tickclock_freq_method */
  const char *name;               /* "cpuid_15h_crystal", ... (tsc_hz.method) */
  double uncertainty_ppm;         /* quantisation of the reported value; 0 if exact */
  int from_table;                 /* the crystal is tickclock's table's, not stated by the
                                     CPU: a claim to check against calibration, never a
                                     frequency to publish on its own */
  char why[TICKCLOCK_REASON_LEN]; /* when a rule gives no frequency: why not */
} tickclock_freq;

/* num/den reduced by their gcd; den 0 leaves them untouched. */
TKC_INTERNAL void tkc_reduce(uint64_t *num, uint64_t *den);
/* Signed disagreement of a against b in ppm: (a/b - 1) * 1e6. */
TKC_INTERNAL double tkc_ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den);
/* ticks*1e9/ns (a calibration: counter ticks over ns of the reference
 * clock) as a reduced rational num/den that tickclock_conv_init accepts
 * whenever the frequency is within 1 Hz..1 THz: den*1e9 fits in 64 bits.
 * The exact reduced fraction when it fits (num < 2^64, den <= 18446744073);
 * otherwise the nearest fraction with a power-of-two denominator up to 2^34,
 * whose relative error is at most 2^-35/f + 2^-63 for f in Hz, and so below
 * TKC_RATIO_HZ_MAX_REL_ERR from 1 kHz to 1 THz, for every ticks and ns
 * (up to 2^64 - 1): far below any calibration's own uncertainty. ns == 0
 * gives 0/1; a frequency of 2^63 Hz or more saturates at (2^64 - 1)/1. */
#define TKC_RATIO_HZ_MAX_REL_ERR 1e-13
TKC_INTERNAL void tkc_ratio_hz(uint64_t ticks, uint64_t ns, uint64_t *num, uint64_t *den);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_FREQ_H */
