/* tickclock internals — the platform: everything the library asks the
 * outside world (platform.c dispatches to an installed fake or to the
 * native implementation: platform_posix.c, or platform_windows.c). Only evidence gathering,
 * calibration, initialisation and re-validation call it. */
#ifndef TICKCLOCK_PLATFORM_H
#define TICKCLOCK_PLATFORM_H

#include "sys.h"
#include "tickclock.h"
#include "cpuid_x86.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Two suspended-time readings (tickclock_platform.suspended_ns) further
 * apart than this: a suspend lies between them (a reading is good to half
 * its own bracket of two clock reads, kept under a quarter of this even
 * where clock reads are slow, as under emulation; no suspend and resume
 * takes less than tens of milliseconds). */
#define TKC_SUSPEND_MIN_NS UINT64_C(1000000)
/* How far the kernel's own account of a suspend may be off: where the
 * clocksource stops in the suspend, the kernel measures it with the
 * persistent clock (the RTC: whole seconds). */
#define TKC_SUSPEND_ACCOUNT_NS 2000000000.0

#define TICKCLOCK_PRCTL_UNKNOWN 0
#define TICKCLOCK_PRCTL_ENABLED 1
#define TICKCLOCK_PRCTL_SIGSEGV 2

/* The perf_event mmap page of a self-monitoring event: the kernel's own
 * TSC -> ns conversion (ns = (tsc * time_mult) >> time_shift), valid only
 * when cap_user_time is set (the kernel's clocksource is the TSC). */
typedef struct tickclock_perf_page {
  int attempted;    /* perf_event_open was tried */
  int ok;           /* the page was mapped and read consistently */
  int err;          /* errno of the failing call, 0 if none */
  uint32_t version; /* the page's version field (as the kernel left it) */
  int cap_user_time, cap_user_time_zero;
  uint32_t time_mult;
  uint32_t time_shift;
} tickclock_perf_page;

/* The paravirtual clock page the kernel maps into every process for its
 * vDSO when its clocksource is kvm-clock (KVM's pvclock_vcpu_time_info;
 * Xen's vcpu_time_info has the same layout) or Hyper-V's TSC page. The
 * kernel's clock there is the TSC scaled by this page:
 *   pvclock: ns = system_time + (((tsc - tsc_timestamp) << shift) * mul >> 32)
 *            (a negative shift shifts right), valid while version is even,
 *            trusted by the vDSO only while flags has the stable bit;
 *   Hyper-V: ns100 = (tsc * scale >> 64) + offset, sequence 0: invalid. */
#define TKC_PV_NONE 0   /* no page looked for, or none found */
#define TKC_PV_KVM 1    /* pvclock_vcpu_time_info (kvm-clock, Xen) */
#define TKC_PV_HYPERV 2 /* ms_hyperv_tsc_page */
/* PVCLOCK_TSC_STABLE_BIT: the host promises one TSC for every vCPU (KVM's
 * master clock), the condition under which the vDSO reads the page. */
#define TKC_PVCLOCK_STABLE 0x01u
/* Why no page was read (tickclock_pvclock_page.absent). */
#define TKC_PV_ABSENT_NOT_TRIED 0
#define TKC_PV_ABSENT_NO_MAPPING 1 /* no [vvar_vclock] / [vvar] in /proc/self/maps */
#define TKC_PV_ABSENT_UNMAPPED 2   /* the mapping is there, its page faults (EFAULT) */
#define TKC_PV_ABSENT_TORN 3       /* never read twice with the same even version */
#define TKC_PV_ABSENT_NO_MAPS 4    /* /proc/self/maps or a pipe could not be opened */
typedef struct tickclock_pvclock_page {
  int kind;   /* TKC_PV_* (0 with absent saying why) */
  int absent; /* TKC_PV_ABSENT_* when kind is 0 */
  /* pvclock_vcpu_time_info */
  uint32_t version;
  uint8_t flags;
  int8_t shift;
  uint32_t mul;
  uint64_t tsc_timestamp, system_time;
  /* Hyper-V's page */
  uint32_t sequence;
  uint64_t scale;
  int64_t offset;
} tickclock_pvclock_page;

/* ---- the platform: everything the gatherer asks the outside world ------
 * Tests install a fake (tkc_set_platform) to replay per-CPU offsets,
 * jumps, wrap, clocksource flips, denied syscalls, trapped reads; a NULL
 * member (or no platform at all) means the native one. Only initialisation,
 * calibration and tickclock_revalidate() go through it: the inline read
 * path never does, except in a test-only build of the core compiled with
 * -DTICKCLOCK_TEST_FAKE_COUNTER, where tkc_arch_read() calls
 * counter(). */
typedef struct tickclock_platform {
  void *ctx;
  tickclock_cpuid_fn cpuid; /* CPUID (ctx passed) */
  /* The first line of a /sys or /proc file, trailing newline/blanks
   * removed, into buf; returns 1 if a non-empty line was read, 0 if the
   * file is missing or unreadable. */
  int (*read_line)(void *ctx, const char *path, char *buf, size_t n);
  /* prctl(PR_GET_TSC): TICKCLOCK_PRCTL_* */
  int (*prctl_get_tsc)(void *ctx);
  /* Fills the perf_event mmap page evidence (attempted/ok/err/...). */
  void (*perf_page)(void *ctx, tickclock_perf_page *pp);
  uint64_t (*counter)(void *ctx);         /* the arch counter */
  uint64_t (*counter_ordered)(void *ctx); /* ... not before earlier loads */
  uint64_t (*raw_ns)(void *ctx);          /* CLOCK_MONOTONIC_RAW (vDSO) */
  uint64_t (*os_ns)(void *ctx);           /* the OS clock's ticks (CLOCK_MONOTONIC, vDSO) */
  /* The same two clocks through the system call: what every read uses once
   * RDTSC is known to be disabled (the vDSO may execute RDTSC itself). */
  uint64_t (*raw_ns_sys)(void *ctx);
  uint64_t (*os_ns_sys)(void *ctx);
  void (*sleep_ns)(void *ctx, uint64_t ns);
  const char *(*getenv)(void *ctx, const char *name); /* already secure */
  /* The first line of a file starting with prefix, without its newline
   * and cut to n - 1 bytes, into buf; 1 if found. /proc/cpuinfo. */
  int (*find_line)(void *ctx, const char *path, const char *prefix, char *buf, size_t n);
  /* Up to n bytes of a file; 0 if missing or unreadable. The device tree. */
  size_t (*read_bytes)(void *ctx, const char *path, void *buf, size_t n);
  /* Time the system spent suspended since boot (Linux: CLOCK_BOOTTIME -
   * CLOCK_MONOTONIC); UINT64_MAX when unknown. It moves only across a
   * suspend: a calibration or check sample whose two ends see different
   * values spans one. */
  uint64_t (*suspended_ns)(void *ctx);
  /* Test-only build (-DTICKCLOCK_TEST_FAKE_COUNTER): the frequency register
   * the ISA's header reads (CNTFRQ_EL0), so a fake counter states its rate. */
  uint64_t (*freq_register)(void *ctx);
  /* The paravirtual clock page of kind (TKC_PV_KVM or TKC_PV_HYPERV),
   * read consistently (an even version unchanged across the read; the
   * kind set only then), or kind 0 with absent saying why. Called by the
   * gatherer, and by the checks once a page was found: then it must be
   * async-signal-safe (no allocation, no lock, no descriptor). */
  void (*pvclock)(void *ctx, int kind, tickclock_pvclock_page *pv);
} tickclock_platform;

/* Installs p (NULL: the native platform) and clears the system-call flag
 * (tkc_os_syscall_on). Tests reach it through
 * tkc_set_platform (state.h), which also forgets the published
 * state. */
TKC_INTERNAL void tkc_platform_install(const tickclock_platform *p);
TKC_INTERNAL int tkc_p_read_line(const char *path, char *buf, size_t n);
TKC_INTERNAL int tkc_p_prctl_get_tsc(void);
TKC_INTERNAL void tkc_p_perf_page(tickclock_perf_page *pp);
TKC_INTERNAL void tkc_p_pvclock(int kind, tickclock_pvclock_page *pv);
/* A tickclock_cpuid_fn (ctx unused): the installed platform's CPUID. */
TKC_INTERNAL int tkc_p_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out);
TKC_INTERNAL int tkc_p_find_line(const char *path, const char *prefix, char *buf, size_t n);
TKC_INTERNAL size_t tkc_p_read_bytes(const char *path, void *buf, size_t n);
TKC_INTERNAL uint64_t tkc_p_counter(void);
TKC_INTERNAL uint64_t tkc_p_counter_ordered(void);
TKC_INTERNAL uint64_t tkc_p_raw_ns(void);
TKC_INTERNAL uint64_t tkc_p_os_ns(void);
/* CLOCK_MONOTONIC through the system call whatever is known yet (a fake's
 * system-call reader when one is installed): a handler's reading during
 * the first initialisation. */
TKC_INTERNAL uint64_t tkc_p_os_ns_reentry(void);
TKC_INTERNAL uint64_t tkc_p_suspended_ns(void);
TKC_INTERNAL void tkc_p_sleep_ns(uint64_t ns);
TKC_INTERNAL const char *tkc_p_getenv(const char *name);
/* ---- the native platform (platform_posix.c, platform_windows.c) ---- */
TKC_INTERNAL int tkc_native_read_line(const char *path, char *buf, size_t n);
#if defined(__linux__)
/* open(path, O_RDONLY | O_CLOEXEC), EINTR retried; -1 if it cannot. */
TKC_INTERNAL int tkc_native_open(const char *path);
/* Calls fn on each line of path, without its newline, in line (n bytes; a
 * longer line is cut to n - 1 and fn is told), until fn returns non-zero:
 * that value; 0 at the end, -1 if the file could not be opened. */
typedef int (*tkc_line_fn)(const char *line, size_t len, int cut, void *ctx);
TKC_INTERNAL int tkc_native_scan_lines(const char *path, char *line, size_t n, tkc_line_fn fn,
                                       void *ctx);
#endif
TKC_INTERNAL int tkc_native_find_line(const char *path, const char *prefix, char *buf, size_t n);
TKC_INTERNAL size_t tkc_native_read_bytes(const char *path, void *buf, size_t n);
TKC_INTERNAL int tkc_native_prctl_get_tsc(void);
/* fd 2 is a terminal, a pipe, a socket or a character device, or a file
 * opened for appending (2>>): a one-line complaint may go there. A regular
 * file open for plain writing is not written: after close(2) the program
 * may have reused the descriptor for its own data (2> redirects are such
 * files too, and lose the line: tickclock_info.env_error keeps it). */
TKC_INTERNAL int tkc_native_stderr_writable(void);
TKC_INTERNAL int tkc_p_stderr_writable(void);
TKC_INTERNAL void tkc_native_perf_page(tickclock_perf_page *pp);
/* The paravirtual clock page (see tickclock_platform.pvclock): the first
 * call finds it through /proc/self/maps and proves it readable without
 * touching it (the kernel maps it only while a paravirtual clocksource has
 * been used, and a read of it unmapped raises SIGBUS); every descriptor
 * it opened is closed before returning; under a seccomp filter only with
 * the system calls it always made (the maps' text, a pipe); later calls
 * read the page found, without a system call. */
TKC_INTERNAL void tkc_native_pvclock(int kind, tickclock_pvclock_page *pv);
#if defined(__linux__) && defined(TKC_X86)
/* The two steps of the first call, each way exposed for the tests:
 * where the page of kind is mapped (0 and why not in *absent), and
 * whether the page at addr is readable (1, 0, or -1: no answer). */
#define TKC_PV_FIND_ANY 0   /* the kernel by address, then the maps' text */
#define TKC_PV_FIND_QUERY 1 /* PROCMAP_QUERY for the mapping below the vDSO */
#define TKC_PV_FIND_SCAN 2  /* the text of /proc/self/maps */
TKC_INTERNAL uintptr_t tkc_pv_locate(int kind, int how, int *absent);
#define TKC_PV_PROVE_ANY 0  /* the copy's yes, else the pipe's answer */
#define TKC_PV_PROVE_COPY 1 /* rt_sigprocmask's copy of a signal set from it */
#define TKC_PV_PROVE_PIPE 2 /* write(2) of it into a pipe */
TKC_INTERNAL int tkc_pv_readable(uintptr_t addr, int how);
/* One consistent read of a page of kind at addr (an even version, the
 * same before and after the fields; up to 1000 tries while the host
 * writes it); 0 if none was had. The native reader's loop, exposed so
 * that a test can race it against a writer. */
TKC_INTERNAL int tkc_pv_read_at(uintptr_t addr, int kind, tickclock_pvclock_page *pv);
#endif

/* The kernel's clocksource verdict (Linux), read at initialisation, by
 * re-validation and by the probe. */
#define TKC_SYSFS_CURRENT_CLOCKSOURCE \
  "/sys/devices/system/clocksource/clocksource0/current_clocksource"
#define TKC_SYSFS_AVAILABLE_CLOCKSOURCE \
  "/sys/devices/system/clocksource/clocksource0/available_clocksource"

/* Sticky: set once RDTSC was seen disabled (PR_GET_TSC =
 * PR_TSC_SIGSEGV). From then on every OS clock read in the library is a
 * system call. */
TKC_INTERNAL void tkc_os_use_syscall(int on); /* 0: tests only */
TKC_INTERNAL int tkc_os_syscall_on(void);
/* The kernel's current clocksource into buf (opened, read and closed each
 * time with open/read/close: no descriptor is kept that the program could
 * close and reuse, no stdio, no allocation); 1 if read. */
TKC_INTERNAL int tkc_p_clocksource(char *buf, size_t n);
TKC_INTERNAL uint64_t tkc_os_now(void); /* CLOCK_MONOTONIC (Windows: QPC) in ns */
/* The fallback source's raw ticks (async-signal-safe); every native clock
 * read here is a system call once tkc_os_syscall_on(). */
TKC_INTERNAL uint64_t tkc_os_read(void);
#if !defined(_WIN32)
/* The same through libc's clock_gettime (the system call once
 * tkc_os_syscall_on()): what tkc_os_read falls back to. */
TKC_INTERNAL uint64_t tkc_os_read_libc(void);
#endif

/* ---- the vDSO's clock_gettime, called directly (vdso.c) ----------------
 * Linux on x86-64 and AArch64 (LP64): the kernel's function and the
 * version it is defined at, found in the vDSO the auxiliary vector names.
 * TICKCLOCK_NO_VDSO leaves libc's clock_gettime on the read path. */
#if defined(__linux__) && defined(__LP64__) && !defined(TICKCLOCK_NO_VDSO) && \
    (defined(__x86_64__) || defined(__aarch64__))
#define TKC_HAVE_VDSO 1
#if defined(__x86_64__)
#define TKC_VDSO_NAME "__vdso_clock_gettime"
#define TKC_VDSO_VERSION "LINUX_2.6"
#define TKC_VDSO_MACHINE 62 /* EM_X86_64 */
#else
#define TKC_VDSO_NAME "__kernel_clock_gettime"
#define TKC_VDSO_VERSION "LINUX_2.6.39"
#define TKC_VDSO_MACHINE 183 /* EM_AARCH64 */
#endif
/* The kernel's timespec as the vDSO writes it: two 64-bit integers,
 * whatever time_t the C library uses. */
typedef struct tkc_vdso_ts {
  long long sec, nsec;
} tkc_vdso_ts;
typedef int (*tkc_vdso_gettime_fn)(int clock_id, tkc_vdso_ts *ts);
/* The function the OS clock's read path calls: NULL until found, while
 * none was found or it was refused (tkc_os_vdso_setup says why), and
 * while tkc_os_syscall_on() (the vDSO executes RDTSC, which may trap). */
#if defined(TICKCLOCK_STATIC)
static TKC_UNUSED TKC_SHARED tkc_vdso_gettime_fn tkc_g_os_vdso = NULL;
#else
extern TKC_SHARED tkc_vdso_gettime_fn tkc_g_os_vdso;
#endif
/* The address of the function name defined at version (where the image
 * has versions) in the ELF image of size readable bytes at image, as the
 * image is mapped; 0 with why set if it has none or anything in it lies
 * out of place (every offset and count is checked against size). */
TKC_INTERNAL uintptr_t tkc_vdso_symbol(const void *image, size_t size, const char *name,
                                       const char *version, char *why, size_t n);
#endif
/* Under the lock, once RDTSC is known enabled or disabled: the first
 * call looks the vDSO's clock_gettime up and checks its first reading
 * between two of libc's; every call publishes it for the read path
 * (NULL while tkc_os_syscall_on()). Returns how the OS clock is read,
 * one phrase (NULL where there is no vDSO to call). */
TKC_INTERNAL const char *tkc_os_vdso_setup(void);
/* tkc_g_os_vdso again after the system-call flag changed. */
TKC_INTERNAL void tkc_os_vdso_publish(void);

/* The OS clock's read, inline: the vDSO's function where one was found
 * (one load, one call), else tkc_os_read. Async-signal-safe. */
TKC_INLINE uint64_t tkc_os_read_inline(void) {
#if defined(TKC_HAVE_VDSO)
  tkc_vdso_ts ts;
  tkc_vdso_gettime_fn f = TKC_LOAD_RELAXED(&tkc_g_os_vdso);
  if (TKC_LIKELY(f != NULL && f(CLOCK_MONOTONIC, &ts) == 0 && (ts.sec | ts.nsec) >= 0))
    return TKC_CAST(uint64_t, ts.sec) * UINT64_C(1000000000) + TKC_CAST(uint64_t, ts.nsec);
  return tkc_os_read_libc();
#else
  return tkc_os_read();
#endif
}
/* 1 while the published state reads the OS clock and hands its
 * nanoseconds out unchanged (its unit, no offset: the OS clock first):
 * tickclock_now() is then the OS clock's read and nothing else. Cleared
 * before any other state is published, set after such a state is. */
#if defined(TICKCLOCK_STATIC)
static TKC_UNUSED TKC_SHARED int tkc_g_os_direct = 0;
#else
extern TKC_SHARED int tkc_g_os_direct;
#endif
/* The OS clock the library falls back to (TICKCLOCK_SOURCE_SYSTEM, or
 * TICKCLOCK_SOURCE_QPC on Windows) and its ticks' rate into *hz (1e9 for
 * CLOCK_MONOTONIC's ns, QueryPerformanceFrequency for QPC). */
TKC_INTERNAL int tkc_os_fallback(uint64_t *hz);
TKC_INTERNAL void tkc_sleep_ns(uint64_t ns);
TKC_INTERNAL uint64_t tkc_os_now_raw(void); /* CLOCK_MONOTONIC_RAW, ns; 0 if unreadable */
#if !defined(_WIN32)
/* One POSIX clock into *ns (checked: 0 when the clock could not be read,
 * *ns untouched); the system call once tkc_os_syscall_on(). */
TKC_INTERNAL int tkc_os_clock(int id, uint64_t *ns);
#endif
TKC_INTERNAL uint64_t tkc_os_suspended_ns(void); /* see tickclock_platform */
/* CLOCK_MONOTONIC (Windows: QPC) through the system call, whatever the
 * flag says: the re-entry read during the first initialisation. */
TKC_INTERNAL uint64_t tkc_os_now_syscall(void);
TKC_INTERNAL double tkc_os_resolution_ns(void); /* clock_getres(CLOCK_MONOTONIC) */
TKC_INTERNAL const char *tkc_secure_getenv(const char *name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_PLATFORM_H */
