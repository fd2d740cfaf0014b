/* tickclock — gathering evidence (impure, thin). Each fact is read the
 * safest way available; nothing here executes a counter read unless
 * tickclock__counter_executable() said it cannot trap. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <errno.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#if (defined(__x86_64__) || defined(__i386__)) && defined(SYS_perf_event_open) && \
    !defined(TICKCLOCK_NO_PERF)
#include <linux/perf_event.h>
#define TICKCLOCK__HAVE_PERF 1
#endif
#endif

/* secure_getenv semantics: ignore the environment in setuid/setgid (and
 * other AT_SECURE) processes. The check is glibc's own (getauxval), which
 * is declared in every mode, unlike secure_getenv. */
const char *tickclock__secure_getenv(const char *name) {
#if defined(__linux__)
  if (getauxval(AT_SECURE)) return NULL;
  return getenv(name);
#else
  return getenv(name);
#endif
}

/* The first line of a /sys or /proc file (native platform). */
int tickclock__native_read_line(const char *path, char *buf, size_t n) {
#if defined(__linux__)
  FILE *f;
  int known = 0;
  if (n == 0) return 0;
  buf[0] = '\0';
  f = fopen(path, "re");
  if (f == NULL) return 0;
  if (fgets(buf, (int)n, f) != NULL) {
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
    known = len > 0;
  }
  fclose(f);
  return known;
#else
  (void)path;
  if (n > 0) buf[0] = '\0';
  return 0;
#endif
}

/* prctl(PR_GET_TSC) (native platform): TICKCLOCK_PRCTL_*. The setting is
 * per thread (inherited by threads created later). */
int tickclock__native_prctl_get_tsc(void) {
#if defined(__linux__) && defined(PR_GET_TSC)
  int mode = 0;
  if (prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0)
    return mode == PR_TSC_SIGSEGV ? TICKCLOCK_PRCTL_SIGSEGV : TICKCLOCK_PRCTL_ENABLED;
#endif
  return TICKCLOCK_PRCTL_UNKNOWN;
}

#if defined(TICKCLOCK__HAVE_PERF)
/* The perf_event mmap page of a self-monitoring dummy event: the kernel's
 * own TSC -> ns parameters (time_mult, time_shift), valid when
 * cap_user_time says the kernel's clock is the TSC. Read under the page's
 * seqlock (the lock word is odd while the kernel writes). */
static void tickclock__read_perf_page(tickclock_perf_page *pp) {
  struct perf_event_attr attr;
  long fd;
  long page = sysconf(_SC_PAGESIZE);
  void *map;
  int tries;
  memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  pp->attempted = 1;
  fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) {
    pp->err = errno;
    return;
  }
  map = mmap(NULL, page > 0 ? (size_t)page : 4096u, PROT_READ, MAP_SHARED, (int)fd, 0);
  if (map == MAP_FAILED) {
    pp->err = errno;
    close((int)fd);
    return;
  }
  for (tries = 0; tries < 1000; tries++) {
    const volatile struct perf_event_mmap_page *p = (const volatile struct perf_event_mmap_page *)map;
    uint32_t seq = p->lock, seq2;
    uint64_t caps;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    pp->version = p->version;
    caps = p->capabilities;
    pp->time_mult = p->time_mult;
    pp->time_shift = p->time_shift;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    seq2 = p->lock;
    if (seq == seq2 && !(seq & 1u)) {
      /* capability bits: 2 cap_user_rdpmc, 3 cap_user_time, 4 cap_user_time_zero */
      pp->cap_user_time = (int)((caps >> 3) & 1u);
      pp->cap_user_time_zero = (int)((caps >> 4) & 1u);
      pp->ok = 1;
      break;
    }
  }
  munmap(map, page > 0 ? (size_t)page : 4096u);
  close((int)fd);
}
#endif

void tickclock__native_perf_page(tickclock_perf_page *pp) {
#if defined(TICKCLOCK__HAVE_PERF)
  tickclock__read_perf_page(pp);
#else
  (void)pp;
#endif
}

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

#if defined(__linux__) && (defined(__powerpc64__) || (defined(__riscv) && __riscv_xlen == 64))
/* "timebase\t: 512000000" in /proc/cpuinfo (POWER) */
static uint64_t tickclock__cpuinfo_timebase(void) {
  char line[256];
  uint64_t hz = 0;
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "timebase", 8) == 0) {
      const char *p = strchr(line, ':');
      if (p != NULL) hz = strtoull(p + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return hz;
}

#endif

#if defined(__linux__) && defined(__riscv) && __riscv_xlen == 64
/* /proc/device-tree/cpus/timebase-frequency: a big-endian u32 (or u64) */
static uint64_t tickclock__dt_timebase(void) {
  unsigned char b[8];
  size_t n, i;
  uint64_t hz = 0;
  FILE *f = fopen("/proc/device-tree/cpus/timebase-frequency", "rbe");
  if (f == NULL) return 0;
  n = fread(b, 1, sizeof b, f);
  fclose(f);
  if (n != 4 && n != 8) return 0;
  for (i = 0; i < n; i++) hz = (hz << 8) | b[i];
  return hz;
}
#endif

static void tickclock__gather_nominal(tickclock_freq *f) {
  memset(f, 0, sizeof *f);
#if defined(__aarch64__) && !defined(TICKCLOCK_NO_ARCH_COUNTER)
  tickclock__nominal(f, "cntfrq_el0", TICKCLOCK_FREQ_ARCH_REGISTER, tickclock__a64_cntfrq());
#elif defined(__s390x__) && !defined(TICKCLOCK_NO_ARCH_COUNTER)
  tickclock__nominal(f, "tod_architecture", TICKCLOCK_FREQ_ARCH_REGISTER, TICKCLOCK__TOD_HZ);
#elif defined(__linux__) && defined(__powerpc64__)
  tickclock__nominal(f, "cpuinfo_timebase", TICKCLOCK_FREQ_OS, tickclock__cpuinfo_timebase());
#elif defined(__linux__) && defined(__riscv) && __riscv_xlen == 64
  tickclock__nominal(f, "device_tree_timebase", TICKCLOCK_FREQ_OS, tickclock__dt_timebase());
  if (!f->ok)
    tickclock__nominal(f, "cpuinfo_timebase", TICKCLOCK_FREQ_OS, tickclock__cpuinfo_timebase());
#else
  (void)tickclock__nominal;
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
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
  tickclock__p_cpuid_decode(&ev->x86);
#endif

#if defined(__linux__)
  ev->os_linux = 1;
  ev->clocksource_known = tickclock__p_read_line(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE,
                                                 ev->clocksource, sizeof ev->clocksource);
  ev->available_known = tickclock__p_read_line(TICKCLOCK__SYSFS_AVAILABLE_CLOCKSOURCE,
                                               ev->available_clocksource,
                                               sizeof ev->available_clocksource);
#if defined(__x86_64__) || defined(__i386__)
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
