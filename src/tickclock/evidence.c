/* tickclock — gathering evidence (impure, thin): every fact the decider
 * reads, each asked of the platform (platform.h) the safest way
 * available; nothing here executes a counter read unless
 * tkc_counter_executable() said it cannot trap. */
#include "evidence.h"
#include "decide.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* Cost of one read: the minimum over batches of 256 reads, timed with
 * CLOCK_MONOTONIC_RAW (a trapped read costs microseconds, a real one tens
 * of nanoseconds, so the batch is long enough to tell them apart). */
double tkc_measure_read_ns(uint64_t (*rd)(void)) {
  double best = 0;
  int batch, i;
  for (batch = 0; batch < 4; batch++) {
    uint64_t t0 = tkc_p_raw_ns(), t1;
    uint64_t sink = 0;
    double per;
    for (i = 0; i < 256; i++) sink += rd();
    t1 = tkc_p_raw_ns();
    per = (double)(t1 - t0) / 256.0;
    if (batch == 0 || per < best) best = per;
    if (sink == 1) best += 0; /* keep the reads */
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
  tickclock_x86_decode(tkc_p_cpuid, NULL, &ev->x86);
#endif

#if defined(__linux__)
  ev->os_linux = 1;
  ev->clocksource_known =
      tkc_p_read_line(TKC_SYSFS_CURRENT_CLOCKSOURCE, ev->clocksource, sizeof ev->clocksource);
  ev->available_known = tkc_p_read_line(TKC_SYSFS_AVAILABLE_CLOCKSOURCE, ev->available_clocksource,
                                        sizeof ev->available_clocksource);
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
