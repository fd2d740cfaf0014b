/* tickclock — the platform indirection (see tickclock_platform in
 * internal.h). Init-time only: nothing here is on the read path. */
#include "internal.h"

#include <stddef.h>

static const tickclock_platform *tickclock__plat = NULL;

#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only entry */
void tickclock__set_platform(const tickclock_platform *p) { tickclock__plat = p; }
#endif

#define TICKCLOCK__P(member) (tickclock__plat != NULL && tickclock__plat->member != NULL)

int tickclock__p_read_line(const char *path, char *buf, size_t n) {
  if (TICKCLOCK__P(read_line)) {
    if (n > 0) buf[0] = '\0';
    return tickclock__plat->read_line(tickclock__plat->ctx, path, buf, n);
  }
  return tickclock__native_read_line(path, buf, n);
}

int tickclock__p_prctl_get_tsc(void) {
  if (TICKCLOCK__P(prctl_get_tsc)) return tickclock__plat->prctl_get_tsc(tickclock__plat->ctx);
  return tickclock__native_prctl_get_tsc();
}

void tickclock__p_perf_page(tickclock_perf_page *pp) {
  if (TICKCLOCK__P(perf_page)) {
    tickclock__plat->perf_page(tickclock__plat->ctx, pp);
    return;
  }
  tickclock__native_perf_page(pp);
}

void tickclock__p_cpuid_decode(tickclock_x86_facts *out) {
  if (TICKCLOCK__P(cpuid)) {
    tickclock_x86_decode(tickclock__plat->cpuid, tickclock__plat->ctx, out);
    return;
  }
  tickclock_x86_decode(tickclock_cpuid_native, NULL, out);
}

uint64_t tickclock__p_counter(void) {
  if (TICKCLOCK__P(counter)) return tickclock__plat->counter(tickclock__plat->ctx);
#if defined(TICKCLOCK__ARCH_COUNTER) && !defined(TICKCLOCK_TEST_FAKE_COUNTER)
  return tickclock__arch_read();
#else
  return tickclock__os_read();
#endif
}

uint64_t tickclock__p_counter_ordered(void) {
  if (TICKCLOCK__P(counter_ordered))
    return tickclock__plat->counter_ordered(tickclock__plat->ctx);
  if (TICKCLOCK__P(counter)) return tickclock__plat->counter(tickclock__plat->ctx);
#if defined(TICKCLOCK__ARCH_COUNTER) && !defined(TICKCLOCK_TEST_FAKE_COUNTER)
  return tickclock__arch_read_ordered();
#else
  return tickclock__os_read();
#endif
}

uint64_t tickclock__p_raw_ns(void) {
  if (TICKCLOCK__P(raw_ns)) return tickclock__plat->raw_ns(tickclock__plat->ctx);
  return tickclock__os_now_raw();
}

uint64_t tickclock__p_os_ns(void) {
  if (TICKCLOCK__P(os_ns)) return tickclock__plat->os_ns(tickclock__plat->ctx);
  return tickclock__os_read();
}

void tickclock__p_sleep_ns(uint64_t ns) {
  if (TICKCLOCK__P(sleep_ns)) {
    tickclock__plat->sleep_ns(tickclock__plat->ctx, ns);
    return;
  }
  tickclock__sleep_ns(ns);
}

const char *tickclock__p_getenv(const char *name) {
  if (TICKCLOCK__P(getenv)) return tickclock__plat->getenv(tickclock__plat->ctx, name);
  return tickclock__secure_getenv(name);
}

#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
uint64_t tickclock__platform_read(void) { return tickclock__p_counter(); }
uint64_t tickclock__platform_read_ordered(void) { return tickclock__p_counter_ordered(); }
#endif
