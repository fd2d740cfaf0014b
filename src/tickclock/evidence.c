/* tickclock — gathering evidence (impure, thin): every fact the decider
 * reads, each asked of the platform (platform.h) the safest way
 * available; nothing here executes a counter read unless
 * tkc_counter_executable() said it cannot trap. */
#include "evidence.h"
#include "decide.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* Cost of one read: the least over batches of 128 reads, timed with
 * CLOCK_MONOTONIC_RAW (a trapped read costs microseconds, a real one tens
 * of nanoseconds, so a batch is long enough to tell them apart). An
 * interrupt or a preemption only lengthens a batch, so once the two least
 * of at least three batches lie within 10 % of each other, the least is
 * an undisturbed one unless every batch so far was disturbed alike (two
 * batches would stop on two alike disturbed ones): it stops there (384
 * reads, 4 us of TSC reads on the PVM guest where the four batches of 256
 * before took 11 us); else up to 8 batches, the 1024 reads of before. */
#define TKC_READ_BATCH 128
#define TKC_READ_BATCHES 8
double tkc_measure_read_ns(uint64_t (*rd)(void)) {
  double best = 0, second = 0;
  int batch, i;
  for (batch = 0; batch < TKC_READ_BATCHES; batch++) {
    uint64_t t0 = tkc_p_raw_ns(), t1;
    uint64_t sink = 0;
    double per;
    for (i = 0; i < TKC_READ_BATCH; i++) sink += rd();
    t1 = tkc_p_raw_ns();
    per = (double)(t1 - t0) / (double)TKC_READ_BATCH;
    if (sink == 1) per += 0; /* keep the reads */
    if (batch == 0 || per < best) {
      second = best;
      best = per;
    } else if (batch == 1 || per < second) {
      second = per;
    }
    if (batch >= 2 && second <= best * 1.1) break;
  }
  return best;
}

/* The stated frequency of a non-x86 counter, each read the safest way:
 * a register the architecture defines, or a file the kernel publishes. */
static void tkc_nominal(tickclock_freq *f, const char *name, int method, uint64_t hz) {
  if (hz == 0) return;
  f->ok = 1;
  f->source = method == TICKCLOCK_FREQ_ARCH_REGISTER ? TKC_SRC_ARCH_REGISTER : TKC_SRC_ARCH_FILE;
  f->hz_num = hz;
  f->hz_den = 1;
  f->method = method;
  f->name = name;
  f->uncertainty_ppm = 0;
}

/* The readers an ISA's header asks for (arch/<isa>.h defines
 * TKC_NOMINAL_HZ/_NAME for a register or an architectural constant,
 * TKC_NOMINAL_DT_TIMEBASE / _CPUINFO_TIMEBASE for the files Linux
 * publishes), tried in that order. */
#if defined(__linux__) && defined(TKC_NOMINAL_CPUINFO_TIMEBASE)
/* "timebase\t: 512000000" in /proc/cpuinfo (POWER) */
static uint64_t tkc_cpuinfo_timebase(void) {
  char line[256];
  const char *p;
  if (!tkc_p_find_line("/proc/cpuinfo", "timebase", line, sizeof line)) return 0;
  p = strchr(line, ':');
  return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}
#endif

#if defined(__linux__) && defined(TKC_NOMINAL_DT_TIMEBASE)
/* /proc/device-tree/cpus/timebase-frequency: a big-endian u32 (or u64) */
static uint64_t tkc_dt_timebase(void) {
  unsigned char b[8];
  size_t n, i;
  uint64_t hz = 0;
  n = tkc_p_read_bytes("/proc/device-tree/cpus/timebase-frequency", b, sizeof b);
  if (n != 4 && n != 8) return 0;
  for (i = 0; i < n; i++) hz = (hz << 8) | b[i];
  return hz;
}
#endif

static void tkc_gather_nominal(tickclock_freq *f) {
  memset(f, 0, sizeof *f);
  (void)tkc_nominal;
#if defined(TKC_NOMINAL_HZ)
  tkc_nominal(f, TKC_NOMINAL_NAME, TICKCLOCK_FREQ_ARCH_REGISTER, TKC_NOMINAL_HZ());
#endif
#if defined(__linux__) && defined(TKC_NOMINAL_DT_TIMEBASE)
  if (!f->ok) tkc_nominal(f, "device_tree_timebase", TICKCLOCK_FREQ_OS, tkc_dt_timebase());
#endif
#if defined(__linux__) && defined(TKC_NOMINAL_CPUINFO_TIMEBASE)
  if (!f->ok) tkc_nominal(f, "cpuinfo_timebase", TICKCLOCK_FREQ_OS, tkc_cpuinfo_timebase());
#endif
}

#if defined(__linux__)
static void tkc_read_available(tickclock_evidence *ev) {
  ev->available_known = tkc_p_read_line(TKC_SYSFS_AVAILABLE_CLOCKSOURCE, ev->available_clocksource,
                                        sizeof ev->available_clocksource);
}

/* Whether the decision reads the kernel's list of clocksources: the TSC
 * refused as the kernel's clocksource, and no paravirtual page that
 * states its rate (trust.c: whether the kernel still offers 'tsc'). */
static int tkc_available_needed(const tickclock_evidence *ev) {
  tickclock_freq c;
  if (ev->arch_counter != TICKCLOCK_SOURCE_TSC || !ev->clocksource_known ||
      strcmp(ev->clocksource, "tsc") == 0)
    return 0;
  tkc_pv_claim(&ev->pv, ev->clocksource, &c);
  return !c.ok;
}
#endif

/* What gathering leaves out because no decision reads it (the kernel's
 * list of clocksources where the TSC is its clock, CPUID's brand string),
 * for the probe's report. */
void tkc_gather_rest(tickclock_evidence *ev) {
#if defined(__linux__)
  if (!ev->available_known) tkc_read_available(ev);
#endif
#if defined(TKC_X86)
  tkc_x86_decode_brand(tkc_p_cpuid, NULL, &ev->x86);
#endif
  (void)ev;
}

void tkc_gather(const tickclock_config *cfg, tickclock_evidence *ev) {
  const char *env;
  char dummy[TICKCLOCK_REASON_LEN];
  memset(ev, 0, sizeof *ev);
#if defined(__linux__)
  /* First, before any clock read: with RDTSC disabled the vDSO's
   * clock_gettime may trap too, so every read after this is a system call. */
  ev->tsc_prctl = tkc_p_prctl_get_tsc();
  if (ev->tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV) tkc_os_use_syscall(1);
#endif
  /* then the vDSO's clock_gettime for the OS clock's reads (none while
   * RDTSC is disabled) */
  ev->os_read_how = tkc_os_vdso_setup();
  ev->cfg_source = cfg ? cfg->source : TICKCLOCK_SOURCE_AUTO;
  ev->cal_deferrable = cfg == NULL || cfg->calibration_ms == 0;
  tkc_gather_nominal(&ev->arch_nominal);
  ev->os_source = tkc_os_fallback(&ev->os_hz);

#if defined(TKC_ARCH_COUNTER)
  ev->arch_counter = TKC_ARCH_COUNTER;
#endif
#if defined(TKC_X86)
  /* the brand string is three more exits to the hypervisor, and no
   * decision reads it: tkc_gather_rest's */
  tkc_x86_decode_timing(tkc_p_cpuid, NULL, &ev->x86);
#endif

#if defined(__linux__)
  ev->os_linux = 1;
  ev->clocksource_known =
      tkc_p_read_line(TKC_SYSFS_CURRENT_CLOCKSOURCE, ev->clocksource, sizeof ev->clocksource);
#if defined(TKC_X86)
  /* ~100 us (a syscall, an mmap): only where the page can hold a TSC
   * conversion, i.e. when the kernel's clock runs on the TSC (with a
   * paravirtual or fallback clocksource cap_user_time is 0). */
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->clocksource_known &&
      strcmp(ev->clocksource, "tsc") == 0)
    tkc_p_perf_page(&ev->perf);
  /* under a paravirtual clocksource, the page the kernel's clock scales
   * the TSC with (one /proc/self/maps scan and a pipe, ~30 us) */
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->clocksource_known &&
      tkc_pv_kind_of(ev->clocksource) != TKC_PV_NONE)
    tkc_p_pvclock(tkc_pv_kind_of(ev->clocksource), &ev->pv);
#endif
  /* the kernel's list of clocksources: only where the decision reads it */
  if (tkc_available_needed(ev)) tkc_read_available(ev);
#endif

  env = tkc_p_getenv("TICKCLOCK_SOURCE");
  if (env != NULL) {
    ev->have_env = 1;
    tkc_strlcpy(ev->env_value, env, sizeof ev->env_value);
  }

  ev->os_resolution_ns = tkc_os_resolution_ns();
  ev->os_read_ns = tkc_measure_read_ns(tkc_p_os_ns);
#if defined(TKC_ARCH_COUNTER)
  if (tkc_counter_executable(ev, dummy, sizeof dummy)) {
    ev->counter_read_ns = tkc_measure_read_ns(tkc_p_counter);
    ev->counter_at = tkc_p_counter(); /* how far it is from wrapping */
    ev->counter_at_known = 1;
  }
#else
  (void)dummy;
#endif
  tkc_list_claims(ev);
}
