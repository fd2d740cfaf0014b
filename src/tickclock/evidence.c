/* tickclock — gathering evidence (impure, thin): every fact the decider
 * reads, each asked of the platform (platform.h) the safest way
 * available; nothing here executes a counter read unless
 * tickclock__counter_executable() said it cannot trap. */
#include "evidence.h"
#include "decide.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* Cost of one read: the minimum over batches of 256 reads, timed with
 * CLOCK_MONOTONIC_RAW (a trapped read costs microseconds, a real one tens
 * of nanoseconds, so the batch is long enough to tell them apart). */
double tickclock__measure_read_ns(uint64_t (*rd)(void)) {
  double best = 0;
  int batch, i;
  for (batch = 0; batch < 4; batch++) {
    uint64_t t0 = tickclock__p_raw_ns(), t1;
    uint64_t sink = 0;
    double per;
    for (i = 0; i < 256; i++) sink += rd();
    t1 = tickclock__p_raw_ns();
    per = (double)(t1 - t0) / 256.0;
    if (batch == 0 || per < best) best = per;
    if (sink == 1) best += 0; /* keep the reads */
  }
  return best;
}

/* The stated frequency of a non-x86 counter, each read the safest way:
 * a register the architecture defines, or a file the kernel publishes. */
static void tickclock__nominal(tickclock_freq *f, const char *name, int method, uint64_t hz) {
  if (hz == 0) return;
  f->ok = 1;
  f->hz_num = hz;
  f->hz_den = 1;
  f->method = method;
  f->name = name;
  f->uncertainty_ppm = 0;
}

/* The readers an ISA's header asks for (arch/<isa>.h defines
 * TICKCLOCK__NOMINAL_HZ/_NAME for a register or an architectural constant,
 * TICKCLOCK__NOMINAL_DT_TIMEBASE / _CPUINFO_TIMEBASE for the files Linux
 * publishes), tried in that order. */
#if defined(__linux__) && defined(TICKCLOCK__NOMINAL_CPUINFO_TIMEBASE)
/* "timebase\t: 512000000" in /proc/cpuinfo (POWER) */
static uint64_t tickclock__cpuinfo_timebase(void) {
  char line[256];
  const char *p;
  if (!tickclock__p_find_line("/proc/cpuinfo", "timebase", line, sizeof line)) return 0;
  p = strchr(line, ':');
  return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}
#endif

#if defined(__linux__) && defined(TICKCLOCK__NOMINAL_DT_TIMEBASE)
/* /proc/device-tree/cpus/timebase-frequency: a big-endian u32 (or u64) */
static uint64_t tickclock__dt_timebase(void) {
  unsigned char b[8];
  size_t n, i;
  uint64_t hz = 0;
  n = tickclock__p_read_bytes("/proc/device-tree/cpus/timebase-frequency", b, sizeof b);
  if (n != 4 && n != 8) return 0;
  for (i = 0; i < n; i++) hz = (hz << 8) | b[i];
  return hz;
}
#endif

static void tickclock__gather_nominal(tickclock_freq *f) {
  memset(f, 0, sizeof *f);
  (void)tickclock__nominal;
#if defined(TICKCLOCK__NOMINAL_HZ)
  tickclock__nominal(f, TICKCLOCK__NOMINAL_NAME, TICKCLOCK_FREQ_ARCH_REGISTER,
                     TICKCLOCK__NOMINAL_HZ());
#endif
#if defined(__linux__) && defined(TICKCLOCK__NOMINAL_DT_TIMEBASE)
  if (!f->ok)
    tickclock__nominal(f, "device_tree_timebase", TICKCLOCK_FREQ_OS, tickclock__dt_timebase());
#endif
#if defined(__linux__) && defined(TICKCLOCK__NOMINAL_CPUINFO_TIMEBASE)
  if (!f->ok)
    tickclock__nominal(f, "cpuinfo_timebase", TICKCLOCK_FREQ_OS, tickclock__cpuinfo_timebase());
#endif
}

void tickclock__gather(const tickclock_config *cfg, tickclock_evidence *ev) {
  const char *env;
  char dummy[TICKCLOCK_REASON_LEN];
  memset(ev, 0, sizeof *ev);
#if defined(__linux__)
  /* First, before any clock read: with RDTSC disabled the vDSO's
   * clock_gettime may trap too, so every read after this is a system call. */
  ev->tsc_prctl = tickclock__p_prctl_get_tsc();
  if (ev->tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV) tickclock__os_use_syscall(1);
#endif
  ev->cfg_source = cfg ? cfg->source : TICKCLOCK_SOURCE_AUTO;
  tickclock__gather_nominal(&ev->arch_nominal);
#if defined(_WIN32)
  ev->os_source = TICKCLOCK_SOURCE_QPC;
  ev->os_hz = tickclock__qpc_hz();
#else
  ev->os_source = TICKCLOCK_SOURCE_SYSTEM;
  ev->os_hz = UINT64_C(1000000000);
#endif

#if defined(TICKCLOCK__ARCH_COUNTER)
  ev->arch_counter = TICKCLOCK__ARCH_COUNTER;
#endif
#if defined(TICKCLOCK__X86)
  tickclock_x86_decode(tickclock__p_cpuid, NULL, &ev->x86);
#endif

#if defined(__linux__)
  ev->os_linux = 1;
  ev->clocksource_known = tickclock__p_read_line(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE,
                                                 ev->clocksource, sizeof ev->clocksource);
  ev->available_known = tickclock__p_read_line(TICKCLOCK__SYSFS_AVAILABLE_CLOCKSOURCE,
                                               ev->available_clocksource,
                                               sizeof ev->available_clocksource);
#if defined(TICKCLOCK__X86)
  /* ~100 us (a syscall, an mmap): only where the page can hold a TSC
   * conversion, i.e. when the kernel's clock runs on the TSC (with a
   * paravirtual or fallback clocksource cap_user_time is 0). */
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->clocksource_known &&
      strcmp(ev->clocksource, "tsc") == 0)
    tickclock__p_perf_page(&ev->perf);
#endif
#endif

  env = tickclock__p_getenv("TICKCLOCK_SOURCE");
  if (env != NULL) {
    ev->have_env = 1;
    tickclock__strlcpy(ev->env_value, env, sizeof ev->env_value);
  }

  ev->os_resolution_ns = tickclock__os_resolution_ns();
  ev->os_read_ns = tickclock__measure_read_ns(tickclock__p_os_ns);
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__counter_executable(ev, dummy, sizeof dummy))
    ev->counter_read_ns = tickclock__measure_read_ns(tickclock__p_counter);
#else
  (void)dummy;
#endif
}
