/* tickclock — the platform indirection (see tickclock_platform in
 * platform.h): each call goes to the installed platform's member, or to
 * the native implementation (platform_posix.c or platform_windows.c)
 * where there is none.
 * Init-time only: nothing here is on the read path. */
#include "platform.h"

#include <stddef.h>
#include <string.h>

static const tickclock_platform *tkc_plat = NULL;

/* A platform is a fresh world: RDTSC not known disabled in it (the
 * caller, tkc_set_platform, also forgets the published state). */
void tkc_platform_install(const tickclock_platform *p) {
  tkc_plat = p;
  tkc_os_use_syscall(0);
}

#define TKC_P(member) (tkc_plat != NULL && tkc_plat->member != NULL)

int tkc_p_read_line(const char *path, char *buf, size_t n) {
  if (TKC_P(read_line)) {
    if (n > 0) buf[0] = '\0';
    return tkc_plat->read_line(tkc_plat->ctx, path, buf, n);
  }
  return tkc_native_read_line(path, buf, n);
}

int tkc_p_prctl_get_tsc(void) {
  if (TKC_P(prctl_get_tsc)) return tkc_plat->prctl_get_tsc(tkc_plat->ctx);
  return tkc_native_prctl_get_tsc();
}

void tkc_p_perf_page(tickclock_perf_page *pp) {
  if (TKC_P(perf_page)) {
    tkc_plat->perf_page(tkc_plat->ctx, pp);
    return;
  }
  tkc_native_perf_page(pp);
}

void tkc_p_pvclock(int kind, tickclock_pvclock_page *pv) {
  memset(pv, 0, sizeof *pv);
  if (TKC_P(pvclock)) {
    tkc_plat->pvclock(tkc_plat->ctx, kind, pv);
    return;
  }
  if (tkc_plat != NULL && tkc_plat->counter != NULL) {
    pv->absent = TKC_PV_ABSENT_NO_MAPPING; /* a fake counter has no page of its own */
    return;
  }
  tkc_native_pvclock(kind, pv);
}

int tkc_p_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  (void)ctx;
  if (TKC_P(cpuid)) return tkc_plat->cpuid(tkc_plat->ctx, leaf, subleaf, out);
  return tickclock_cpuid_native(NULL, leaf, subleaf, out);
}

int tkc_p_find_line(const char *path, const char *prefix, char *buf, size_t n) {
  if (TKC_P(find_line)) {
    if (n > 0) buf[0] = '\0';
    return tkc_plat->find_line(tkc_plat->ctx, path, prefix, buf, n);
  }
  return tkc_native_find_line(path, prefix, buf, n);
}

size_t tkc_p_read_bytes(const char *path, void *buf, size_t n) {
  if (TKC_P(read_bytes)) return tkc_plat->read_bytes(tkc_plat->ctx, path, buf, n);
  return tkc_native_read_bytes(path, buf, n);
}

/* The native counter (ordered or not); the OS clock where there is none. */
static uint64_t tkc_native_counter(int ordered) {
#if defined(TKC_ARCH_COUNTER) && !defined(TICKCLOCK_TEST_FAKE_COUNTER)
  return ordered ? tkc_arch_read_ordered() : tkc_arch_read();
#else
  (void)ordered;
  return tkc_os_read();
#endif
}

uint64_t tkc_p_counter(void) {
  if (TKC_P(counter)) return tkc_plat->counter(tkc_plat->ctx);
  return tkc_native_counter(0);
}

uint64_t tkc_p_counter_ordered(void) {
  if (TKC_P(counter_ordered)) return tkc_plat->counter_ordered(tkc_plat->ctx);
  if (TKC_P(counter)) return tkc_plat->counter(tkc_plat->ctx);
  return tkc_native_counter(1);
}

/* Once RDTSC is known disabled, a fake's system-call clocks stand in for
 * its vDSO ones (the native clocks switch by themselves). */
static uint64_t tkc_p_clock(uint64_t (*vdso)(void *), uint64_t (*sys)(void *),
                            uint64_t (*native)(void)) {
  if (tkc_os_syscall_on() && sys != NULL) return sys(tkc_plat->ctx);
  if (vdso != NULL) return vdso(tkc_plat->ctx);
  return native();
}

uint64_t tkc_p_raw_ns(void) {
  if (tkc_plat == NULL) return tkc_p_clock(NULL, NULL, tkc_os_now_raw);
  return tkc_p_clock(tkc_plat->raw_ns, tkc_plat->raw_ns_sys, tkc_os_now_raw);
}

uint64_t tkc_p_os_ns(void) {
  if (tkc_plat == NULL) return tkc_p_clock(NULL, NULL, tkc_os_read);
  return tkc_p_clock(tkc_plat->os_ns, tkc_plat->os_ns_sys, tkc_os_read);
}

uint64_t tkc_p_os_ns_reentry(void) {
  if (TKC_P(os_ns_sys)) return tkc_plat->os_ns_sys(tkc_plat->ctx);
  return tkc_os_now_syscall();
}

uint64_t tkc_p_suspended_ns(void) {
  if (TKC_P(suspended_ns)) return tkc_plat->suspended_ns(tkc_plat->ctx);
  if (tkc_plat != NULL && (tkc_plat->raw_ns != NULL || tkc_plat->os_ns != NULL))
    return UINT64_MAX; /* a fake time line without suspends of its own */
  return tkc_os_suspended_ns();
}

/* The kernel's clocksource, read fresh on every call. */
int tkc_p_clocksource(char *buf, size_t n) {
  return tkc_p_read_line(TKC_SYSFS_CURRENT_CLOCKSOURCE, buf, n);
}

void tkc_p_sleep_ns(uint64_t ns) {
  if (TKC_P(sleep_ns)) {
    tkc_plat->sleep_ns(tkc_plat->ctx, ns);
    return;
  }
  tkc_sleep_ns(ns);
}

int tkc_p_stderr_writable(void) { return tkc_native_stderr_writable(); }

const char *tkc_p_getenv(const char *name) {
  if (TKC_P(getenv)) return tkc_plat->getenv(tkc_plat->ctx, name);
  return tkc_secure_getenv(name);
}

#if defined(TICKCLOCK_TEST_FAKE_COUNTER)
uint64_t tkc_platform_read(void) { return tkc_p_counter(); }
uint64_t tkc_platform_read_ordered(void) { return tkc_p_counter_ordered(); }
#if defined(TKC_NOMINAL_FREQ_REGISTER)
uint64_t tkc_platform_freq_register(void) {
  if (TKC_P(freq_register)) return tkc_plat->freq_register(tkc_plat->ctx);
  return TKC_NOMINAL_FREQ_REGISTER();
}
#endif
#endif
