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
#endif

/* secure_getenv semantics: ignore the environment in setuid/setgid (and
 * other AT_SECURE) processes. glibc's secure_getenv is used where the
 * declaration is visible; otherwise the same check through getauxval. */
const char *tickclock__secure_getenv(const char *name) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 17))
  return secure_getenv(name);
#elif defined(__linux__)
  if (getauxval(AT_SECURE)) return NULL;
  return getenv(name);
#else
  return getenv(name);
#endif
}

#if defined(__linux__)
static void tickclock__read_sys_line(const char *path, char *buf, size_t n, int *known) {
  FILE *f = fopen(path, "re");
  *known = 0;
  buf[0] = '\0';
  if (f == NULL) return;
  if (fgets(buf, (int)n, f) != NULL) {
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
    *known = len > 0;
  }
  fclose(f);
}
#endif

/* Cost of one read: the minimum over batches of 256 reads, timed with
 * CLOCK_MONOTONIC_RAW (a trapped read costs microseconds, a real one tens
 * of nanoseconds, so the batch is long enough to tell them apart). */
double tickclock__measure_read_ns(uint64_t (*rd)(void)) {
  double best = 0;
  int batch, i;
  for (batch = 0; batch < 4; batch++) {
    uint64_t t0 = tickclock__os_now_raw(), t1;
    uint64_t sink = 0;
    double per;
    for (i = 0; i < 256; i++) sink += rd();
    t1 = tickclock__os_now_raw();
    per = (double)(t1 - t0) / 256.0;
    if (batch == 0 || per < best) best = per;
    if (sink == 1) best += 0; /* keep the reads */
  }
  return best;
}

#if defined(TICKCLOCK__ARCH_COUNTER)
static uint64_t tickclock__arch_read_fn(void) { return tickclock__arch_read(); }
#endif

void tickclock__gather(const tickclock_config *cfg, tickclock_evidence *ev) {
  const char *env;
  char dummy[TICKCLOCK_REASON_LEN];
  memset(ev, 0, sizeof *ev);
  ev->cfg_source = cfg ? cfg->source : TICKCLOCK_SOURCE_AUTO;
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
  tickclock_x86_decode(tickclock_cpuid_native, NULL, &ev->x86);
#endif

#if defined(__linux__)
  ev->os_linux = 1;
#if defined(PR_GET_TSC)
  {
    int mode = 0;
    if (prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0)
      ev->tsc_prctl = mode == PR_TSC_SIGSEGV ? TICKCLOCK_PRCTL_SIGSEGV : TICKCLOCK_PRCTL_ENABLED;
  }
#endif
  tickclock__read_sys_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                           ev->clocksource, sizeof ev->clocksource, &ev->clocksource_known);
#endif

  env = tickclock__secure_getenv("TICKCLOCK_SOURCE");
  if (env != NULL) {
    ev->have_env = 1;
    tickclock__strlcpy(ev->env_value, env, sizeof ev->env_value);
  }

  ev->os_resolution_ns = tickclock__os_resolution_ns();
  ev->os_read_ns = tickclock__measure_read_ns(tickclock__os_read);
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__counter_executable(ev, dummy, sizeof dummy))
    ev->counter_read_ns = tickclock__measure_read_ns(tickclock__arch_read_fn);
#else
  (void)dummy;
#endif
}
