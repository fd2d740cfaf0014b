/* tickclock internals — the evidence the decider reads, and the
 * gatherer that fills it through the platform (evidence.c). */
#ifndef TICKCLOCK_EVIDENCE_H
#define TICKCLOCK_EVIDENCE_H

#include "sys.h"
#include "tickclock.h"
#include "freq.h"
#include "cpuid_x86.h"
#include "platform.h"
#include "calibrate.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TKC_MAX_CLAIMS (3 + TKC_X86_CLAIMS) /* calibration, perf page, the decoder's, pvclock */

/* A published frequency a cross-check refused in this process: the claim
 * (its source and rate) and the calibration it disagreed with. */
typedef struct tkc_refusal {
  int source; /* TKC_SRC_* */
  uint64_t hz_num, hz_den;
  double cal_hz, cal_ppm;
} tkc_refusal;
#define TKC_MAX_REFUSALS 4

typedef struct tickclock_evidence {
  int arch_counter;        /* the ISA's counter source, 0 if none */
  tickclock_x86_facts x86; /* x86 only */
  int os_source;           /* the fallback: SYSTEM (POSIX) or QPC (Windows) */
  uint64_t os_hz;          /* its frequency: 1e9 for SYSTEM, QPF for QPC */
  int os_linux;            /* the Linux checks below apply */
  int tsc_prctl;           /* TICKCLOCK_PRCTL_* */
  int clocksource_known;
  char clocksource[32]; /* current_clocksource, e.g. "tsc" */
  int available_known;
  char available_clocksource[128]; /* available_clocksource, e.g. "tsc hpet acpi_pm" */
  tickclock_perf_page perf;        /* x86 Linux only */
  tickclock_pvclock_page pv;       /* x86 Linux under a paravirtual clocksource only */
  tickclock_freq arch_nominal;     /* non-x86 counters: the stated frequency
                                      (CNTFRQ_EL0, the TOD architecture, the
                                      device tree, /proc/cpuinfo timebase) */
  double counter_read_ns;          /* measured, 0 if not measured */
  uint64_t counter_at;             /* one reading of the counter when gathered ... */
  int counter_at_known;            /* ... taken (0: not read, as in a replayed fixture) */
  double os_read_ns;               /* measured, 0 if not measured */
  const char *os_read_how;         /* how the OS clock is read (the vDSO's
                                      function or libc's, and why), or NULL */
  double os_resolution_ns;         /* clock_getres(CLOCK_MONOTONIC) */
  tickclock_calibration cal;       /* of the arch counter; ok=0 if not done */
  int cal_deferrable;              /* the caller lets a published frequency be used
                                      before calibration (the first refinement
                                      cross-checks it); 0: calibrate first */
  int cfg_source;                  /* tickclock_config.source */
  int have_env;                    /* TICKCLOCK_SOURCE was set (and honoured) */
  char env_value[40];              /* its value, truncated */
  /* What stands in for the kernel's TSC sync verdict where there is none
   * (off Linux): filled where the gatherer can, else left 0 (unknown). */
  int cpu_packages;   /* physical packages (sockets) counted; 0 unknown */
  int warp_checked;   /* a cross-CPU warp check ran on every CPU pair */
  int warp_ok;        /* ... and no read stepped back across CPUs */
  double warp_max_ns; /* its largest backward step, ns */
  /* Every frequency source's claim, in the order the decision lists them
   * (tkc_list_claims): calibration (cal above), then on x86 the perf page
   * and the decoder's claims (leaf 0x15, hypervisor, leaf 0x16) and the
   * paravirtual clock page, on other
   * ISAs the architecture's statement where there is one. */
  tickclock_freq claims[TKC_MAX_CLAIMS];
  unsigned n_claims;
  /* The claims a cross-check refused earlier in this process (the
   * bookkeeping's record, copied in by the initialisation): never used
   * again before a calibration confirms them. */
  tkc_refusal refused[TKC_MAX_REFUSALS];
  unsigned n_refused;
} tickclock_evidence;

/* Pure: the claims list from the facts gathered above (claims.c); the
 * gatherer and the fixture reader end with it, and so must whatever
 * changes the facts afterwards (a calibration, a test's edit). */
TKC_INTERNAL void tkc_list_claims(tickclock_evidence *ev);
/* The clock page a paravirtual clocksource cs keeps (TKC_PV_*), 0 none. */
TKC_INTERNAL int tkc_pv_kind_of(const char *cs);
/* Pure: the page's frequency claim (TKC_SRC_PVCLOCK), or which of its
 * checks failed (version even, stable bit, mul and shift in range; on
 * Hyper-V a valid sequence and a scale in range). */
TKC_INTERNAL void tkc_pv_claim(const tickclock_pvclock_page *pv, const char *cs, tickclock_freq *c);
/* Do two readings of the page describe the same clock (version aside)? */
TKC_INTERNAL int tkc_pv_same(const tickclock_pvclock_page *a, const tickclock_pvclock_page *b);

/* Impure gathering, through the platform. */
TKC_INTERNAL void tkc_gather(const tickclock_config *cfg, tickclock_evidence *ev);
/* What tkc_gather leaves out because no decision reads it (the kernel's
 * list of clocksources where the TSC is its clock or a clock page states
 * the rate, CPUID's brand string): the probe's report asks for it. */
TKC_INTERNAL void tkc_gather_rest(tickclock_evidence *ev);
TKC_INTERNAL double tkc_measure_read_ns(uint64_t (*rd)(void)); /* min over batches */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_EVIDENCE_H */
