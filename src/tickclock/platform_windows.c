/* tickclock — the native platform on Windows: the same interface as
 * platform_posix.c. Only platform.c calls in here (and the native clock
 * reads the published state uses).
 *
 * The OS clock: QueryPerformanceCounter is the fallback; its ticks are
 * QPC counts at QueryPerformanceFrequency, converted with the same exact
 * conversion as any counter. The reference is QPC converted to ns. There
 * is no kernel clocksource, prctl, perf page or /sys here: those answer
 * "unknown".
 */
#include "platform.h"

#if defined(_WIN32)

#include <string.h>
#include <stdlib.h>
#include <windows.h>

/* Set once RDTSC is known disabled (a fake platform can say so): the state
 * says it reads through the system call, though QPC never traps. */
static TKC_SHARED int tkc_g_os_syscall = 0;

void tkc_os_use_syscall(int on) { TKC_STORE_RELEASE(&tkc_g_os_syscall, on); }
int tkc_os_syscall_on(void) { return TKC_LOAD_RELAXED(&tkc_g_os_syscall); }

/* QPF is fixed at boot; read it once (benign race: every thread computes
 * the same value, and the publication is the conversion's own). */
static const tickclock_conv *tkc_qpc_conv(void) {
  static tickclock_conv conv;
  static TKC_SHARED int ready = 0;
  if (!TKC_LOAD_ACQUIRE(&ready)) {
    LARGE_INTEGER f;
    tickclock_conv c;
    if (!QueryPerformanceFrequency(&f) || f.QuadPart <= 0 ||
        tickclock_conv_init(&c, (uint64_t)f.QuadPart, 1) != TICKCLOCK_OK)
      tickclock_conv_init(&c, UINT64_C(1000000000), 1); /* cannot happen on XP+ */
    conv = c;
    TKC_STORE_RELEASE(&ready, 1);
  }
  return &conv;
}

int tkc_os_fallback(uint64_t *hz) {
  *hz = tkc_qpc_conv()->hz_num;
  return TICKCLOCK_SOURCE_QPC;
}

uint64_t tkc_os_read(void) {
  LARGE_INTEGER c;
  QueryPerformanceCounter(&c);
  return (uint64_t)c.QuadPart;
}

uint64_t tkc_os_now(void) { return tickclock_conv_ticks_to_ns(tkc_qpc_conv(), tkc_os_read()); }

uint64_t tkc_os_now_raw(void) { return tkc_os_now(); }

/* Not measured on Windows: a suspend is not recognised there. */
uint64_t tkc_os_suspended_ns(void) { return UINT64_MAX; }

uint64_t tkc_os_now_syscall(void) { return tkc_os_now(); } /* QPC never traps */

double tkc_os_resolution_ns(void) { return 1e9 / (double)tkc_qpc_conv()->hz_num; }

void tkc_sleep_ns(uint64_t ns) { Sleep((DWORD)(ns / UINT64_C(1000000))); }

const char *tkc_secure_getenv(const char *name) { return getenv(name); }

int tkc_native_read_line(const char *path, char *buf, size_t n) {
  (void)path;
  if (n > 0) buf[0] = '\0';
  return 0;
}

int tkc_native_find_line(const char *path, const char *prefix, char *buf, size_t n) {
  (void)path;
  (void)prefix;
  if (n > 0) buf[0] = '\0';
  return 0;
}

size_t tkc_native_read_bytes(const char *path, void *buf, size_t n) {
  (void)path;
  (void)buf;
  (void)n;
  return 0;
}

int tkc_native_prctl_get_tsc(void) { return TICKCLOCK_PRCTL_UNKNOWN; }
int tkc_native_stderr_writable(void) { return 1; }

void tkc_native_perf_page(tickclock_perf_page *pp) { (void)pp; }

/* Hyper-V's reference TSC page is the kernel's own on Windows: not mapped
 * into processes. */
void tkc_native_pvclock(int kind, tickclock_pvclock_page *pv) {
  (void)kind;
  memset(pv, 0, sizeof *pv);
  pv->absent = TKC_PV_ABSENT_NO_MAPPING;
}

#endif /* _WIN32 */
