/* tickclock — a verified, low-overhead clock for short intervals.
 *
 * The only header users include. C99 / C++11 common subset, libc only.
 *
 *   uint64_t t0 = tickclock_now();
 *   work();
 *   int64_t ns = tickclock_delta_ns(t0, tickclock_now());
 *
 * tickclock_now() reads the CPU's counter where it is trustworthy (the TSC
 * on x86 with invariant-TSC and the kernel's blessing) and the OS clock
 * (CLOCK_MONOTONIC) everywhere else; with the OS clock, ticks are
 * nanoseconds. tickclock_info_get() says what was chosen and why.
 *
 * Vendoring: the amalgamated single header (bazel build //:single_header)
 * holds everything; `#define TICKCLOCK_IMPLEMENTATION` before including it
 * in exactly one .c/.cc file (any include order).
 */
#ifndef TICKCLOCK_H
#define TICKCLOCK_H

#include <stdint.h>
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TICKCLOCK_VERSION_MAJOR 0
#define TICKCLOCK_VERSION_MINOR 1
#define TICKCLOCK_VERSION_PATCH 0

/* ---- sources --------------------------------------------------------- */
typedef enum tickclock_source {
  TICKCLOCK_SOURCE_AUTO = 0,     /* in a config: decide automatically */
  TICKCLOCK_SOURCE_SYSTEM = 1,   /* clock_gettime(CLOCK_MONOTONIC); ticks = ns */
  TICKCLOCK_SOURCE_TSC = 2,      /* x86 time-stamp counter */
  TICKCLOCK_SOURCE_CNTVCT = 3,   /* AArch64 virtual counter */
  TICKCLOCK_SOURCE_TIMEBASE = 4, /* POWER timebase */
  TICKCLOCK_SOURCE_TOD = 5,      /* s390x TOD clock */
  TICKCLOCK_SOURCE_RDTIME = 6,   /* RISC-V time CSR */
  TICKCLOCK_SOURCE_QPC = 7,      /* Windows QueryPerformanceCounter */
  TICKCLOCK_SOURCE_COUNT_ = 8
} tickclock_source;

/* How the counter frequency was found. */
typedef enum tickclock_freq_method {
  TICKCLOCK_FREQ_NONE = 0,        /* not known */
  TICKCLOCK_FREQ_IDENTITY = 1,    /* the source counts nanoseconds */
  TICKCLOCK_FREQ_CALIBRATED = 2,  /* measured against CLOCK_MONOTONIC_RAW */
  TICKCLOCK_FREQ_CPUID_15H = 3,   /* CPUID leaf 0x15 (ratio x crystal) */
  TICKCLOCK_FREQ_CPUID_16H = 4,   /* CPUID leaf 0x16 base frequency */
  TICKCLOCK_FREQ_HYPERVISOR = 5,  /* hypervisor timing leaf */
  TICKCLOCK_FREQ_PERF_PAGE = 6,   /* perf_event mmap page time_mult/shift */
  TICKCLOCK_FREQ_ARCH_REGISTER = 7, /* architectural (CNTFRQ_EL0, TOD) */
  TICKCLOCK_FREQ_OS = 8,          /* OS-reported (QPF, device tree, cpuinfo) */
  TICKCLOCK_FREQ_CONFIG = 9,      /* given in tickclock_config */
  TICKCLOCK_FREQ_METHOD_COUNT_ = 10
} tickclock_freq_method;

/* Return codes. */
#define TICKCLOCK_OK 0
#define TICKCLOCK_EINVAL (-1)      /* invalid argument */
#define TICKCLOCK_EUNAVAILABLE (-2) /* forced source unusable; auto choice kept */

/* ---- conversion ---------------------------------------------------------
 * A frequency f = hz_num / hz_den Hz is turned into a 64.64 fixed-point
 * scale (integer part + 64-bit fraction, the fraction rounded up) in each
 * direction. Contract for f in [1 kHz, 100 GHz] and every 64-bit input:
 *   floor(t*1e9/f) <= ticks_to_ns(t) <= floor(t*1e9/f) + 1,
 * exact whenever t*1e9/f is an integer, never decreasing in t, saturating
 * at UINT64_MAX; one multiply above 1 GHz, two below, no division, no
 * branch on the magnitude.
 * delta_to_ns(d) is within 1 of trunc(d*1e9/f), saturates at
 * INT64_MIN/INT64_MAX, and delta(-d) == -delta(d) wherever neither side
 * saturates. Complete type: keep one on the stack. */
typedef struct tickclock_conv {
  uint64_t hz_num, hz_den; /* the frequency, reduced */
  uint64_t ns_int;         /* ns per tick, integer part */
  uint64_t ns_frac;        /* ns per tick, fraction * 2^64, rounded up */
  uint64_t tk_int;         /* ticks per ns, integer part */
  uint64_t tk_frac;        /* ticks per ns, fraction * 2^64, rounded up */
} tickclock_conv;

/* Accepts 1 Hz <= f <= 1 THz with hz_den <= 18446744073 after reduction;
 * otherwise returns TICKCLOCK_EINVAL and leaves *c untouched. */
TICKCLOCK_API int tickclock_conv_init(tickclock_conv *c, uint64_t hz_num, uint64_t hz_den);

/* t * (i + f/2^64), saturating. */
TICKCLOCK__INLINE uint64_t tickclock__scale(uint64_t t, uint64_t i, uint64_t f) {
  uint64_t frac_lo, int_lo, sum;
  uint64_t frac_hi = tickclock__mul64(t, f, &frac_lo);
  uint64_t int_hi = tickclock__mul64(t, i, &int_lo);
  sum = int_lo + frac_hi;
  /* overflow if the integer product spilled or the sum carried */
  return (int_hi | TICKCLOCK__CAST(uint64_t, sum < int_lo)) ? UINT64_MAX : sum;
}

/* Scale below one: a single high multiply, which cannot overflow. The
 * branch is on the frequency (fixed per conversion, always predicted),
 * never on the magnitude of t: every t costs the same. */
TICKCLOCK__INLINE uint64_t tickclock__scale_frac(uint64_t t, uint64_t f) {
  uint64_t lo;
  return tickclock__mul64(t, f, &lo);
}

TICKCLOCK__INLINE uint64_t tickclock_conv_ticks_to_ns(const tickclock_conv *c,
                                                      uint64_t ticks) {
  if (c->ns_int == 0) return tickclock__scale_frac(ticks, c->ns_frac); /* f > 1 GHz */
  return tickclock__scale(ticks, c->ns_int, c->ns_frac);
}

TICKCLOCK__INLINE uint64_t tickclock_conv_ns_to_ticks(const tickclock_conv *c,
                                                      uint64_t ns) {
  if (c->tk_int == 0) return tickclock__scale_frac(ns, c->tk_frac); /* f < 1 GHz */
  return tickclock__scale(ns, c->tk_int, c->tk_frac);
}

/* Signed: magnitude through the unsigned path, so delta(-d) == -delta(d). */
TICKCLOCK__INLINE int64_t tickclock__signed_ns(uint64_t mag_ns, int negative) {
  if (negative)
    return mag_ns >= (UINT64_C(1) << 63) ? INT64_MIN : -TICKCLOCK__CAST(int64_t, mag_ns);
  return mag_ns > TICKCLOCK__CAST(uint64_t, INT64_MAX) ? INT64_MAX : TICKCLOCK__CAST(int64_t, mag_ns);
}

TICKCLOCK__INLINE int64_t tickclock_conv_delta_to_ns(const tickclock_conv *c,
                                                     int64_t dticks) {
  int neg = dticks < 0;
  /* |INT64_MIN| = 2^63 is representable as uint64_t */
  uint64_t mag = neg ? UINT64_C(0) - TICKCLOCK__CAST(uint64_t, dticks) : TICKCLOCK__CAST(uint64_t, dticks);
  return tickclock__signed_ns(tickclock_conv_ticks_to_ns(c, mag), neg);
}

/* ---- configuration and provenance ----------------------------------- */
typedef struct tickclock_config {
  int source;                /* tickclock_source; AUTO = decide */
  uint32_t calibration_ms;   /* 0 = default (20 ms); at most 1000 */
  uint32_t flags;            /* reserved, 0 */
} tickclock_config;

#define TICKCLOCK_MAX_CANDIDATES 8
#define TICKCLOCK_REASON_LEN 192

typedef struct tickclock_candidate {
  int source;        /* tickclock_source */
  const char *name;  /* "tsc", "system", ... */
  int usable;        /* 1 if it passed every check */
  int chosen;        /* 1 for the source in use */
  double read_ns;    /* measured cost of one read, 0 if not measured */
  char reason[TICKCLOCK_REASON_LEN]; /* why usable / refused */
} tickclock_candidate;

/* One frequency source for the counter, measured or read, and what the
 * decider made of it (see decide.c for the policy). */
#define TICKCLOCK_MAX_FREQS 8 /* one entry per source kind (5 on x86) */
typedef struct tickclock_freq_candidate {
  const char *name;          /* "calibration", "perf_page", "cpuid_15h_crystal",
                                "cpuid_15h_known_crystal", "cpuid_15h_from_16h",
                                "cpuid_16h", "hypervisor_40000010", "xen_leaf3" */
  int method;                /* tickclock_freq_method */
  int available;             /* 1: the source gave a frequency; 0: see reason
                                (names then: "calibration", "perf_page",
                                "cpuid_15h", "hypervisor", "cpuid_16h") */
  uint64_t hz_num, hz_den;   /* reduced rational, Hz; 0/0 when unavailable */
  double hz;
  double uncertainty_ppm;    /* the source's own quantisation / measurement bound */
  int checked;               /* compared with calibration */
  double ppm_vs_calibration; /* (hz / calibrated - 1) * 1e6, when checked */
  double bound_ppm;          /* the agreement bound it was held to, when checked */
  int usable;                /* may be used: agreed with calibration (or is it) */
  int chosen;
  char reason[TICKCLOCK_REASON_LEN];
} tickclock_freq_candidate;

typedef struct tickclock_info {
  /* hot: read by tickclock_to_ns/tickclock_delta_ns, one cache line */
  int source;               /* tickclock_source in use */
  tickclock_conv conv;      /* ticks <-> ns for this source */
  /* provenance */
  const char *source_name;
  uint64_t hz_num, hz_den;  /* frequency as a rational (Hz) */
  double hz;                /* hz_num / hz_den */
  int freq_method;          /* tickclock_freq_method */
  const char *freq_method_name;
  double uncertainty_ppm;   /* of the frequency; 0 when exact */
  double resolution_ns;     /* granularity of one tick, ns */
  int forced;               /* 0 automatic, 1 tickclock_config, 2 TICKCLOCK_SOURCE */
  int request_refused;      /* a forced source was unusable; automatic choice made */
  char why[TICKCLOCK_REASON_LEN];       /* one line: why this source */
  char env_error[TICKCLOCK_REASON_LEN]; /* bad TICKCLOCK_SOURCE, or "" */
  unsigned n_candidates;
  tickclock_candidate candidates[TICKCLOCK_MAX_CANDIDATES];
  /* Added with the x86 evidence work: */
  const char *freq_detail;  /* the precise rule, e.g. "cpuid_15h_crystal",
                               "calibration", "identity" (probe: tsc_hz.method) */
  unsigned n_freqs;         /* frequency sources found for the counter */
  tickclock_freq_candidate freqs[TICKCLOCK_MAX_FREQS];
  /* pairwise disagreement (freqs[i].hz / freqs[j].hz - 1) * 1e6; 0 where
   * either is unavailable */
  double freq_disagreement_ppm[TICKCLOCK_MAX_FREQS][TICKCLOCK_MAX_FREQS];
  double max_disagreement_ppm; /* largest |entry| above, 0 with < 2 sources */
  /* Added with run-time re-validation (tickclock_revalidate): */
  uint64_t os_offset;       /* added to every OS-clock reading (ticks of the OS
                               source) so that readings after a switch away
                               from the counter never step backwards; 0 unless
                               revalidated is set */
  int revalidated;          /* 1: this state replaced a counter that failed
                               re-validation (why says which check) */
} tickclock_info;

TICKCLOCK_API const char *tickclock_source_name(int source);
TICKCLOCK_API const char *tickclock_freq_method_name(int method);
/* "tsc" -> TICKCLOCK_SOURCE_TSC, "auto" -> AUTO; -1 if unknown. */
TICKCLOCK_API int tickclock_source_from_name(const char *name);

/* Optional: choose (or force) the source. NULL = automatic. Thread-safe;
 * re-initialising switches the unit of later readings, so readings taken
 * before must not be compared with readings taken after. Returns
 * TICKCLOCK_OK, TICKCLOCK_EINVAL (bad config, nothing changed) or
 * TICKCLOCK_EUNAVAILABLE (forced source unusable; automatic choice made). */
TICKCLOCK_API int tickclock_init(const tickclock_config *cfg);

/* Run-time re-validation. While the arch counter is in use, checks that
 *  - the kernel still uses the clocksource it used at initialisation
 *    (Linux: current_clocksource; e.g. the watchdog switched tsc -> hpet),
 *  - the counter has not drifted from CLOCK_MONOTONIC_RAW since
 *    initialisation by more than TICKCLOCK_REVALIDATE_DRIFT_PPM (500 ppm)
 *    of the elapsed time plus 200 us (a backward step, a suspend-sized
 *    forward jump, a wrong frequency, a migration to a CPU whose TSC is
 *    offset),
 *  - RDTSC was not disabled with prctl(PR_SET_TSC, PR_TSC_SIGSEGV) for the
 *    calling thread (the flag is per thread: other threads' settings are
 *    invisible here),
 * and if any fails switches every thread to the OS clock atomically:
 * a new state is published, then the source. Guarantee: for a counter
 * reading c whose read executed before the switch (more precisely: not
 * after the switching thread's own counter read) and any OS reading o
 * taken after the switch, tickclock_to_ns(o) under the new state >=
 * tickclock_to_ns(c) under the old state (the new state's os_offset makes
 * it so). Limits: raw ticks taken before the switch stay in the old unit
 * (pass them to tickclock_delta_ns/to_ns before the switch, or not at
 * all); a reader preempted between loading the source and executing the
 * read may produce one counter reading after the switch; a counter that
 * already went backwards is caught but readings it gave before the check
 * are not corrected. Returns 0 if the current source is kept (or is not
 * the counter), 1 if it switched to the OS clock. Never called from
 * tickclock_now(); costs a few microseconds (sysfs read, prctl, two
 * clock reads). */
#define TICKCLOCK_SWITCHED 1
TICKCLOCK_API int tickclock_revalidate(void);
/* Opt-in periodic re-validation: at most every ms milliseconds, piggybacked
 * on tickclock_to_ns() (one relaxed load and compare of its argument with
 * a deadline in counter ticks) and tickclock_info_get(); never on
 * tickclock_now(). 0 turns it off (the default). */
TICKCLOCK_API void tickclock_revalidate_every(uint32_t ms);

/* Provenance of the current choice; initialises on first use. The pointer
 * stays valid for the life of the process (it is overwritten only after 16
 * further tickclock_init calls). */
TICKCLOCK_API const tickclock_info *tickclock_info_get(void);

/* ---- internal state behind the inline read path ------------------------
 * tickclock__g_source is 0 until initialisation completes, then the source
 * in use; it is the only thing the hot path loads. tickclock__g_state
 * points at the immutable state (conversion, provenance) and is published
 * with release ordering before tickclock__g_source. */
#if !defined(TICKCLOCK_STATIC)
TICKCLOCK__API_VAR TICKCLOCK__SHARED int tickclock__g_source;
TICKCLOCK__API_VAR const tickclock_info *TICKCLOCK__SHARED tickclock__g_state;
/* Counter tick at which tickclock_to_ns runs the periodic re-validation;
 * UINT64_MAX when off. */
TICKCLOCK__API_VAR TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline;
#else
/* TICKCLOCK_STATIC: this translation unit's own copy (init.c does not
 * define them then); the initial values are init.c's. */
static TICKCLOCK__UNUSED TICKCLOCK__SHARED int tickclock__g_source = 0;
static TICKCLOCK__UNUSED const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;
static TICKCLOCK__UNUSED TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline = UINT64_MAX;
#endif
TICKCLOCK_API void tickclock__revalidate_due(uint64_t ticks);
TICKCLOCK_API uint64_t tickclock__now_slow(void);
TICKCLOCK_API uint64_t tickclock__now_ordered_slow(void);
TICKCLOCK_API const tickclock_info *tickclock__state_slow(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- the counter read for this ISA (one header per ISA) ---------------- */
#if defined(TICKCLOCK_NO_ARCH_COUNTER)
#include "arch/os_only.h"
#elif defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include "arch/x86.h"
#elif defined(__aarch64__) || defined(_M_ARM64)
#include "arch/aarch64.h"
#elif defined(__powerpc64__) && (defined(__GNUC__) || defined(__clang__))
#include "arch/ppc64.h"
#elif defined(__s390x__) && (defined(__GNUC__) || defined(__clang__))
#include "arch/s390x.h"
#elif defined(__riscv) && defined(__riscv_xlen) && __riscv_xlen == 64 && \
    (defined(__GNUC__) || defined(__clang__))
#include "arch/riscv64.h"
#else
#include "arch/os_only.h"
#endif

/* Test-only build of the core: the counter read goes through the fake
 * platform (internal.h). Never defined in a normal build. */
#if defined(TICKCLOCK_TEST_FAKE_COUNTER) && defined(TICKCLOCK__ARCH_COUNTER)
#ifdef __cplusplus
extern "C" {
#endif
uint64_t tickclock__platform_read(void);
uint64_t tickclock__platform_read_ordered(void);
#ifdef __cplusplus
}
#endif
#undef tickclock__arch_read
#undef tickclock__arch_read_ordered
#define tickclock__arch_read tickclock__platform_read
#define tickclock__arch_read_ordered tickclock__platform_read_ordered
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Fastest read. May be reordered with surrounding instructions. */
TICKCLOCK__INLINE uint64_t tickclock_now(void) {
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (TICKCLOCK__LIKELY(TICKCLOCK__LOAD_RELAXED(&tickclock__g_source) == TICKCLOCK__ARCH_COUNTER))
    return tickclock__arch_read();
#endif
  return tickclock__now_slow();
}

/* Not executed before earlier loads have completed (see arch/ for each
 * ISA's instruction sequence). */
TICKCLOCK__INLINE uint64_t tickclock_now_ordered(void) {
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (TICKCLOCK__LIKELY(TICKCLOCK__LOAD_RELAXED(&tickclock__g_source) == TICKCLOCK__ARCH_COUNTER))
    return tickclock__arch_read_ordered();
#endif
  return tickclock__now_ordered_slow();
}

TICKCLOCK__INLINE const tickclock_info *tickclock__state(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (TICKCLOCK__UNLIKELY(s == NULL)) s = tickclock__state_slow();
  return s;
}

/* Absolute ticks (a tickclock_now() value) -> ns. Identity for the OS clock. */
TICKCLOCK__INLINE uint64_t tickclock_to_ns(uint64_t ticks) {
  const tickclock_info *s = tickclock__state();
  if (s->source == TICKCLOCK_SOURCE_SYSTEM) return ticks;
  if (TICKCLOCK__UNLIKELY(ticks >= TICKCLOCK__LOAD_RELAXED(&tickclock__g_reval_deadline)))
    tickclock__revalidate_due(ticks);
  return tickclock_conv_ticks_to_ns(&s->conv, ticks);
}

/* end - start in ns, signed (end may precede start). */
TICKCLOCK__INLINE int64_t tickclock_delta_ns(uint64_t start, uint64_t end) {
  const tickclock_info *s = tickclock__state();
  int64_t d = TICKCLOCK__CAST(int64_t, end - start); /* two's complement difference */
  if (s->source == TICKCLOCK_SOURCE_SYSTEM) return d;
  return tickclock_conv_delta_to_ns(&s->conv, d);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_H */
