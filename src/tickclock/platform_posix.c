/* tickclock — the native platform on POSIX systems (Linux, the BSDs,
 * macOS): the OS clock (the fallback source and the calibration
 * reference) and every other fact the library asks the operating system
 * for (prctl, /sys, /proc/cpuinfo, the device tree, the environment;
 * the kernel's pages, perf's and the paravirtual clock's, are
 * platform_pages.c's). Only platform.c calls in here (and the native clock reads
 * the published state uses); platform_windows.c is the same interface on
 * Windows.
 *
 * The OS clock: clock_gettime(CLOCK_MONOTONIC) is the fallback (ticks are
 * ns); CLOCK_MONOTONIC_RAW (not slewed by NTP) is the calibration
 * reference.
 */
#include "platform.h"

#if !defined(_WIN32)

#include "platform_os.h"

/* Set once RDTSC is known disabled: the OS clock is then read through the
 * system call (its vDSO may execute RDTSC too; read on the OS clock's read
 * path, so a variable here, not a call). */
static TKC_SHARED int tkc_g_os_syscall = 0;

void tkc_os_use_syscall(int on) {
  TKC_STORE_RELEASE(&tkc_g_os_syscall, on);
  tkc_os_vdso_publish(); /* the vDSO's function off the read path while on */
}
int tkc_os_syscall_on(void) { return TKC_LOAD_RELAXED(&tkc_g_os_syscall); }

static uint64_t tkc_ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * UINT64_C(1000000000) + (uint64_t)ts->tv_nsec;
}

#if !defined(CLOCK_BOOTTIME) && defined(__linux__)
#define CLOCK_BOOTTIME 7 /* the kernel's id; hidden in strict ISO C modes */
#endif

#if defined(TKC_HAVE_CLOCK_SYSCALL)
#if defined(__x86_64__)
typedef struct {
  long long sec, nsec;
} tkc_kernel_timespec;
/* the kernel writes 16 bytes, x32 (ILP32 on x86-64) included */
typedef char tkc_kernel_timespec_is_16_bytes[sizeof(tkc_kernel_timespec) == 16 ? 1 : -1];
#else
typedef struct {
  long sec, nsec;
} tkc_kernel_timespec;
#endif

/* clock_gettime through the system call, into the kernel's own timespec:
 * two longs on i386, two 64-bit integers on x86-64 and on x32 (where long
 * is 32 bits and the kernel still writes 16 bytes), whatever time_t the C
 * library uses. 0 when it failed. */
static int tkc_clock_syscall(int id, uint64_t *ns) {
  tkc_kernel_timespec k;
  if (syscall(SYS_clock_gettime, (long)id, &k) != 0 || k.sec < 0 || k.nsec < 0) return 0;
  *ns = (uint64_t)k.sec * UINT64_C(1000000000) + (uint64_t)k.nsec;
  return 1;
}
#endif

/* One clock read into *ns; 0 when the clock could not be read (a seccomp
 * filter or a sandbox that denies the clock: the caller must not use a
 * value it was never given). With clocksource tsc, kvm-clock or the
 * Hyper-V TSC page the vDSO's clock_gettime executes RDTSC itself, so
 * once RDTSC is disabled (prctl PR_SET_TSC) the vDSO traps like a direct
 * read: then the system call, which reads the clock in the kernel. */
int tkc_os_clock(int id, uint64_t *ns) {
  struct timespec ts;
#if defined(TKC_HAVE_CLOCK_SYSCALL)
  if (TKC_LOAD_RELAXED(&tkc_g_os_syscall)) return tkc_clock_syscall(id, ns);
#endif
  if (clock_gettime(id, &ts) != 0 || ts.tv_sec < 0 || ts.tv_nsec < 0) return 0;
  *ns = tkc_ts_ns(&ts);
  return 1;
}

/* A clock that must be read (the fallback source): 0 if it cannot be. */
static uint64_t tkc_clock_ns(int id) {
  uint64_t ns = 0;
  return tkc_os_clock(id, &ns) ? ns : 0;
}

uint64_t tkc_os_now(void) { return tkc_clock_ns(CLOCK_MONOTONIC); }

/* The OS clock's read path where no vDSO function is called directly
 * (tkc_os_read_inline): libc's clock_gettime, with no call in between,
 * while RDTSC is not known disabled. */
uint64_t tkc_os_read_libc(void) {
  struct timespec ts;
  if (TKC_LIKELY(!TKC_LOAD_RELAXED(&tkc_g_os_syscall)) &&
      clock_gettime(CLOCK_MONOTONIC, &ts) == 0 && ts.tv_sec >= 0 && ts.tv_nsec >= 0)
    return tkc_ts_ns(&ts);
  return tkc_os_now();
}

/* The vDSO's function where one is called directly, else libc's. */
uint64_t tkc_os_read(void) {
#if defined(TKC_HAVE_VDSO)
  return tkc_os_read_inline();
#else
  return tkc_os_read_libc();
#endif
}

/* CLOCK_MONOTONIC through the system call whatever is known yet: what a
 * signal handler that interrupted the first initialisation reads, before
 * the initialisation has asked whether RDTSC (and with it the vDSO) may
 * trap. */
uint64_t tkc_os_now_syscall(void) {
#if defined(TKC_HAVE_CLOCK_SYSCALL)
  uint64_t ns = 0;
  return tkc_clock_syscall(CLOCK_MONOTONIC, &ns) ? ns : 0;
#else
  return tkc_os_now();
#endif
}

/* Time spent suspended since boot: CLOCK_BOOTTIME - CLOCK_MONOTONIC (the
 * kernel adds each suspend to the first only; both are slewed alike), its
 * two reads bracketed by two of CLOCK_MONOTONIC. UINT64_MAX when unknown. */
uint64_t tkc_os_suspended_ns(void) {
#if defined(__linux__)
  /* the reading is good to half its bracket: a preempted one (wider than
   * a quarter of the suspend threshold) is taken again, and after four
   * such the answer is "unknown" (no suspend is judged from it) */
  int tries;
  for (tries = 0; tries < 4; tries++) {
    uint64_t m0, b, m1;
    if (!tkc_os_clock(CLOCK_MONOTONIC, &m0) || !tkc_os_clock(CLOCK_BOOTTIME, &b) ||
        !tkc_os_clock(CLOCK_MONOTONIC, &m1) || m1 < m0)
      return UINT64_MAX;
    if (m1 - m0 > TKC_SUSPEND_MIN_NS / 4) continue;
    m0 += (m1 - m0) / 2;
    return b > m0 ? b - m0 : 0;
  }
  return UINT64_MAX;
#else
  return UINT64_MAX;
#endif
}

int tkc_os_fallback(uint64_t *hz) {
  *hz = UINT64_C(1000000000);
  return TICKCLOCK_SOURCE_SYSTEM;
}

uint64_t tkc_os_now_raw(void) {
#if defined(CLOCK_MONOTONIC_RAW)
  return tkc_clock_ns(CLOCK_MONOTONIC_RAW);
#else
  return tkc_clock_ns(CLOCK_MONOTONIC);
#endif
}

double tkc_os_resolution_ns(void) {
  struct timespec ts;
  if (clock_getres(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (double)tkc_ts_ns(&ts);
}

void tkc_sleep_ns(uint64_t ns) {
  struct timespec req;
  req.tv_sec = (time_t)(ns / UINT64_C(1000000000));
  req.tv_nsec = (long)(ns % UINT64_C(1000000000));
  nanosleep(&req, NULL);
}

/* secure_getenv semantics: ignore the environment in setuid/setgid (and
 * other AT_SECURE) processes. The check is glibc's own (getauxval), which
 * is declared in every mode, unlike secure_getenv. */
const char *tkc_secure_getenv(const char *name) {
#if defined(__linux__)
  if (getauxval(AT_SECURE)) return NULL;
  return getenv(name);
#else
  return getenv(name);
#endif
}

/* Files are read with open/read/close, never stdio: nothing allocated (a
 * process's first fopen also sets up malloc, 0.1-0.2 ms where a page fault
 * costs 10 us), nothing shared with the program's streams, and safe where
 * re-validation runs in a signal handler. Each file is opened, read and
 * closed in one call (close-on-exec): a descriptor kept open between
 * calls could be closed by the program (daemonising, closefrom) and its
 * number reused for one of the program's own files, which the next check
 * would then seek and read. */
#if defined(__linux__)
int tkc_native_open(const char *path) {
  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

/* One read(2), EINTR retried. */
static ssize_t tkc_read_some(int fd, char *buf, size_t n) {
  ssize_t r;
  do {
    r = read(fd, buf, n);
  } while (r < 0 && errno == EINTR);
  return r;
}

/* Up to n bytes from fd into buf, *got of them: reads until n, the end
 * or (line != 0) a newline; 0 if a read failed (what came before is not to
 * be trusted as the file's content). */
static int tkc_read_upto(int fd, char *buf, size_t n, int line, size_t *got) {
  *got = 0;
  while (*got < n) {
    ssize_t r = tkc_read_some(fd, buf + *got, n - *got);
    if (r < 0) return 0;
    if (r == 0) break;
    *got += (size_t)r;
    if (line && memchr(buf + *got - (size_t)r, '\n', (size_t)r) != NULL) break;
  }
  return 1;
}

int tkc_native_scan_lines(const char *path, char *line, size_t n, tkc_line_fn fn, void *ctx) {
  char chunk[512];
  size_t ll = 0;
  int cut = 0, rc = 0, fd;
  if (n == 0) return 0;
  fd = tkc_native_open(path);
  if (fd < 0) return -1;
  while (rc == 0) {
    ssize_t got = tkc_read_some(fd, chunk, sizeof chunk), i;
    if (got < 0) {
      rc = -1; /* a failed read: the line it cut is not passed on */
      break;
    }
    if (got == 0) break;
    for (i = 0; i < got && rc == 0; i++) {
      if (chunk[i] != '\n') {
        if (ll + 1 < n)
          line[ll++] = chunk[i];
        else
          cut = 1;
        continue;
      }
      line[ll] = '\0';
      rc = fn(line, strlen(line), cut, ctx); /* a NUL ends the line */
      ll = 0;
      cut = 0;
    }
  }
  if (rc == 0 && (ll > 0 || cut)) { /* a last line without its newline */
    line[ll] = '\0';
    rc = fn(line, strlen(line), cut, ctx);
  }
  close(fd);
  return rc;
}
#endif

/* The first line of a /sys or /proc file (native platform), without its
 * trailing newline and spaces; 1 if not empty. */
int tkc_native_read_line(const char *path, char *buf, size_t n) {
#if defined(__linux__)
  size_t len;
  const char *nl;
  int fd, ok;
  if (n == 0) return 0;
  buf[0] = '\0';
  fd = tkc_native_open(path);
  if (fd < 0) return 0;
  ok = tkc_read_upto(fd, buf, n - 1, 1, &len);
  close(fd);
  if (!ok) len = 0;
  nl = (const char *)memchr(buf, '\0', len); /* a NUL ends the line too */
  if (nl != NULL) len = (size_t)(nl - buf);
  nl = (const char *)memchr(buf, '\n', len);
  if (nl != NULL) len = (size_t)(nl - buf);
  buf[len] = '\0';
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
  return len > 0;
#else
  (void)path;
  if (n > 0) buf[0] = '\0';
  return 0;
#endif
}

/* prctl(PR_GET_TSC) (native platform): TICKCLOCK_PRCTL_*. The setting is
 * per thread (inherited by threads created later). */
int tkc_native_stderr_writable(void) {
  struct stat st;
  int fl = fcntl(2, F_GETFL);
  if (fl < 0 || fstat(2, &st) != 0 || (fl & O_ACCMODE) == O_RDONLY) return 0;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return 1;
  return S_ISREG(st.st_mode) && (fl & O_APPEND) != 0;
}

int tkc_native_prctl_get_tsc(void) {
#if defined(__linux__) && defined(PR_GET_TSC)
  int mode = 0;
  if (prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0)
    return mode == PR_TSC_SIGSEGV ? TICKCLOCK_PRCTL_SIGSEGV : TICKCLOCK_PRCTL_ENABLED;
#endif
  return TICKCLOCK_PRCTL_UNKNOWN;
}

/* Up to n bytes of a file (native platform); 0 if missing or unreadable. */
size_t tkc_native_read_bytes(const char *path, void *buf, size_t n) {
#if defined(__linux__)
  size_t got;
  int ok, fd = tkc_native_open(path);
  if (fd < 0) return 0;
  ok = tkc_read_upto(fd, (char *)buf, n, 0, &got);
  close(fd);
  return ok ? got : 0;
#else
  (void)path;
  (void)buf;
  (void)n;
  return 0;
#endif
}

#if defined(__linux__)
typedef struct tkc_prefix_ctx {
  const char *prefix;
  size_t k;
} tkc_prefix_ctx;
static int tkc_line_has_prefix(const char *line, size_t len, int cut, void *ctx) {
  const tkc_prefix_ctx *c = (const tkc_prefix_ctx *)ctx;
  (void)cut;
  return len >= c->k && strncmp(line, c->prefix, c->k) == 0;
}
#endif

/* The first line of a file that starts with prefix (native platform),
 * without its newline and cut to n - 1 bytes; 1 if found. */
int tkc_native_find_line(const char *path, const char *prefix, char *buf, size_t n) {
#if defined(__linux__)
  tkc_prefix_ctx c;
  if (n == 0) return 0;
  c.prefix = prefix;
  c.k = strlen(prefix);
  if (tkc_native_scan_lines(path, buf, n, tkc_line_has_prefix, &c) == 1) return 1;
  buf[0] = '\0';
  return 0;
#else
  (void)path;
  (void)prefix;
  if (n > 0) buf[0] = '\0';
  return 0;
#endif
}

#endif /* !_WIN32 */
