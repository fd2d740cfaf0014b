/* tickclock — the platform indirection (see tickclock_platform in
 * platform.h): each call goes to the installed platform's member, or to
 * the native implementation (platform_native.c) where there is none.
 * Init-time only: nothing here is on the read path. */
#include "platform.h"

#include <stddef.h>
#include <string.h>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#if !defined(O_CLOEXEC) /* hidden in strict ISO C modes; the kernel's value */
#define O_CLOEXEC 02000000
#endif
#endif

static const tickclock_platform *tickclock__plat = NULL;

/* A platform is a fresh world: RDTSC not known disabled in it (the
 * caller, tickclock__set_platform, also forgets the published state). */
void tickclock__platform_install(const tickclock_platform *p) {
  tickclock__plat = p;
  tickclock__os_use_syscall(0);
}

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

int tickclock__p_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  (void)ctx;
  if (TICKCLOCK__P(cpuid)) return tickclock__plat->cpuid(tickclock__plat->ctx, leaf, subleaf, out);
  return tickclock_cpuid_native(NULL, leaf, subleaf, out);
}

int tickclock__p_find_line(const char *path, const char *prefix, char *buf, size_t n) {
  if (TICKCLOCK__P(find_line)) {
    if (n > 0) buf[0] = '\0';
    return tickclock__plat->find_line(tickclock__plat->ctx, path, prefix, buf, n);
  }
  return tickclock__native_find_line(path, prefix, buf, n);
}

size_t tickclock__p_read_bytes(const char *path, void *buf, size_t n) {
  if (TICKCLOCK__P(read_bytes)) return tickclock__plat->read_bytes(tickclock__plat->ctx, path, buf, n);
  return tickclock__native_read_bytes(path, buf, n);
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

/* Once RDTSC is known disabled, a fake's system-call clocks stand in for
 * its vDSO ones (the native clocks switch by themselves). */
static uint64_t tickclock__p_clock(uint64_t (*vdso)(void *), uint64_t (*sys)(void *),
                                   uint64_t (*native)(void)) {
  if (tickclock__os_syscall_on() && sys != NULL) return sys(tickclock__plat->ctx);
  if (vdso != NULL) return vdso(tickclock__plat->ctx);
  return native();
}

uint64_t tickclock__p_raw_ns(void) {
  if (tickclock__plat == NULL) return tickclock__p_clock(NULL, NULL, tickclock__os_now_raw);
  return tickclock__p_clock(tickclock__plat->raw_ns, tickclock__plat->raw_ns_sys,
                            tickclock__os_now_raw);
}

uint64_t tickclock__p_os_ns(void) {
  if (tickclock__plat == NULL) return tickclock__p_clock(NULL, NULL, tickclock__os_read);
  return tickclock__p_clock(tickclock__plat->os_ns, tickclock__plat->os_ns_sys, tickclock__os_read);
}

/* The sysfs file stays open (close-on-exec) after the first read: the
 * periodic re-validation re-reads it (lseek, read): no fopen, no malloc. */
int tickclock__p_clocksource(char *buf, size_t n) {
#if defined(__linux__)
  static int fd = -1; /* only touched under the initialisation lock */
  ssize_t got;
  size_t len;
  if (TICKCLOCK__P(read_line)) return tickclock__p_read_line(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE, buf, n);
  if (n == 0) return 0;
  buf[0] = '\0';
  if (fd < 0) fd = open(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  got = lseek(fd, 0, SEEK_SET) == 0 ? read(fd, buf, n - 1) : -1;
  if (got <= 0) return 0;
  len = (size_t)got;
  buf[len] = '\0';
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
  return len > 0;
#else
  return tickclock__p_read_line(TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE, buf, n);
#endif
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
