/* tickclock — internals shared by the implementation files and the tests.
 *
 * The initialiser is split in two halves, as in google/cpu_features:
 *  - gathering evidence (impure, thin): CPUID leaves, Linux facts, measured
 *    read costs, the environment, calibration — evidence.c, calibrate.c;
 *  - deciding (pure, tested on recorded evidence): decide.c.
 * Nothing in decide.c touches the OS.
 */
#ifndef TICKCLOCK_INTERNAL_H
#define TICKCLOCK_INTERNAL_H

#include "tickclock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPUID ------------------------------------------------------------- */
typedef struct tickclock_cpuid_regs {
  uint32_t eax, ebx, ecx, edx;
} tickclock_cpuid_regs;

/* A leaf source: the real CPU, or a recorded fixture. Returns 0 and zeroed
 * registers for a leaf it does not have. */
typedef int (*tickclock_cpuid_fn)(void *ctx, uint32_t leaf, uint32_t subleaf,
                                  tickclock_cpuid_regs *out);

/* Executes CPUID on this CPU (0 if the CPU has no CPUID instruction). */
int tickclock_cpuid_native(void *ctx, uint32_t leaf, uint32_t subleaf,
                           tickclock_cpuid_regs *out);

/* What the decider needs from CPUID, decoded with every leaf gated on the
 * maximum of its range (real CPUs and QEMU return another leaf's data past
 * the maximum). */
typedef struct tickclock_x86_facts {
  int have_cpuid;
  char vendor[13];
  uint32_t max_leaf;       /* leaf 0 EAX */
  uint32_t max_ext_leaf;   /* leaf 0x80000000 EAX, 0 if absent */
  uint32_t family, model, stepping; /* display values */
  int tsc;                 /* CPUID.1:EDX[4] */
  int hypervisor;          /* CPUID.1:ECX[31] */
  int rdtscp;              /* CPUID.80000001H:EDX[27] */
  int invariant_tsc;       /* CPUID.80000007H:EDX[8] */
  int invariant_known;     /* leaf 0x80000007 exists */
} tickclock_x86_facts;

void tickclock_x86_decode(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out);

/* ---- evidence ------------------------------------------------------------ */
#define TICKCLOCK_PRCTL_UNKNOWN 0
#define TICKCLOCK_PRCTL_ENABLED 1
#define TICKCLOCK_PRCTL_SIGSEGV 2

typedef struct tickclock_calibration {
  int ok;
  uint64_t ticks, ns;      /* counter ticks over ns of CLOCK_MONOTONIC_RAW */
  uint64_t hz_num, hz_den; /* ticks*1e9/ns reduced */
  double hz;
  double uncertainty_ppm;  /* from the bracket widths and clock granularity */
  uint64_t bracket_start, bracket_end; /* tightest (counter, clock, counter) widths, ticks */
} tickclock_calibration;

typedef struct tickclock_evidence {
  int arch_counter;            /* the ISA's counter source, 0 if none */
  tickclock_x86_facts x86;     /* x86 only */
  int os_source;               /* the fallback: SYSTEM (POSIX) or QPC (Windows) */
  uint64_t os_hz;              /* its frequency: 1e9 for SYSTEM, QPF for QPC */
  int os_linux;                /* the Linux checks below apply */
  int tsc_prctl;               /* TICKCLOCK_PRCTL_* */
  int clocksource_known;
  char clocksource[32];        /* current_clocksource, e.g. "tsc" */
  double counter_read_ns;      /* measured, 0 if not measured */
  double os_read_ns;           /* measured, 0 if not measured */
  double os_resolution_ns;     /* clock_getres(CLOCK_MONOTONIC) */
  tickclock_calibration cal;   /* of the arch counter; ok=0 if not done */
  int cfg_source;              /* tickclock_config.source */
  int have_env;                /* TICKCLOCK_SOURCE was set (and honoured) */
  char env_value[40];          /* its value, truncated */
} tickclock_evidence;

/* Pure: evidence -> decision (a filled tickclock_info, conversion included).
 * Returns 1 if the decision needs a calibration of the arch counter that
 * the evidence does not yet hold (the caller calibrates and decides again),
 * 0 when final. */
int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out);

/* Can the arch counter be read without trapping? (pure; reason in why) */
int tickclock__counter_executable(const tickclock_evidence *ev, char *why, size_t n);

/* Impure gathering. */
void tickclock__gather(const tickclock_config *cfg, tickclock_evidence *ev);
int tickclock__calibrate(uint64_t (*read_ordered)(void), uint32_t ms,
                         tickclock_calibration *out);
uint64_t tickclock__os_now(void);      /* CLOCK_MONOTONIC (Windows: QPC) in ns */
uint64_t tickclock__os_read(void);     /* the fallback source's raw ticks */
uint64_t tickclock__qpc_hz(void);      /* QueryPerformanceFrequency; 0 off Windows */
void tickclock__sleep_ns(uint64_t ns);
uint64_t tickclock__os_now_raw(void);  /* CLOCK_MONOTONIC_RAW, ns */
double tickclock__os_resolution_ns(void); /* clock_getres(CLOCK_MONOTONIC) */
double tickclock__measure_read_ns(uint64_t (*rd)(void)); /* min over batches */
const char *tickclock__secure_getenv(const char *name);
void tickclock__ratio_hz(uint64_t ticks, uint64_t ns, uint64_t *num, uint64_t *den);

/* Bounded string copy/format helpers (always NUL-terminate). */
void tickclock__strlcpy(char *dst, const char *src, size_t n);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
void tickclock__fmt(char *dst, size_t n, const char *fmt, ...);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_INTERNAL_H */
