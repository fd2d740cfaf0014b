/* tickclock — the kernel's pages the native platform reads on x86 Linux:
 * the perf_event mmap page (the kernel's own TSC -> ns conversion, where
 * its clock is the TSC) and the paravirtual clock page (kvm-clock's
 * pvclock_vcpu_time_info, Hyper-V's TSC page), found without risking a
 * signal. Only platform.c calls in here; everything else the OS is asked
 * is platform_posix.c's.
 */
#include "platform.h"

#if !defined(_WIN32)

#include "platform_os.h"

#if defined(TKC_HAVE_PERF)
#if !defined(PERF_FLAG_FD_CLOEXEC)
#define PERF_FLAG_FD_CLOEXEC (1UL << 3)
#endif

/* The perf_event mmap page of a self-monitoring dummy event: the kernel's
 * own TSC -> ns parameters (time_mult, time_shift), valid when
 * cap_user_time says the kernel's clock is the TSC. Read under the page's
 * seqlock (the lock word is odd while the kernel writes). */
static void tkc_read_perf_page(tickclock_perf_page *pp) {
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
  /* close-on-exec, like every descriptor the library opens (kernels
   * before 3.14 refuse the flag: then without it, closed at once below) */
  fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && errno == EINVAL) {
    fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd >= 0) (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
  }
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
    const volatile struct perf_event_mmap_page *p =
        (const volatile struct perf_event_mmap_page *)map;
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

void tkc_native_perf_page(tickclock_perf_page *pp) {
#if defined(TKC_HAVE_PERF)
  tkc_read_perf_page(pp);
#else
  (void)pp;
#endif
}

#if defined(__linux__) && defined(TKC_X86)
/* The page found by the first call that proved it readable; 0: none yet.
 * Once the kernel has mapped it for a process it maps it again on every
 * later fault (the paravirtual clock, once used, stays usable by the
 * vDSO), so a page read once can be read again from a signal handler. */
static TKC_SHARED uintptr_t tkc_g_pv_addr[3] = {0, 0, 0};

/* The start of the mapping named name ("[vvar_vclock]", "[vvar]") in
 * /proc/self/maps (read without stdio: this runs under the library's
 * lock); 0 if there is none, UINTPTR_MAX if the file could not be read. */
typedef struct tkc_maps_ctx {
  const char *name;
  size_t k;
  uintptr_t at;
} tkc_maps_ctx;
static int tkc_maps_line(const char *line, size_t len, int cut, void *ctx) {
  tkc_maps_ctx *c = (tkc_maps_ctx *)ctx;
  if (cut || len < c->k || strcmp(line + len - c->k, c->name) != 0) return 0; /* not ours */
  c->at = (uintptr_t)strtoull(line, NULL, 16);
  return 1;
}
static uintptr_t tkc_maps_find(const char *name) {
  char line[256];
  tkc_maps_ctx c;
  c.name = name;
  c.k = strlen(name);
  c.at = 0;
  if (tkc_native_scan_lines("/proc/self/maps", line, sizeof line, tkc_maps_line, &c) < 0)
    return UINTPTR_MAX;
  return c.at;
}

/* Linux 6.11's PROCMAP_QUERY: one mapping, asked of /proc/self/maps by
 * address with an ioctl (the uapi's struct procmap_query, 104 bytes;
 * _IOWR('f', 17, ...)). */
typedef struct tkc_procmap_query {
  uint64_t size, query_flags, query_addr;
  uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
  uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
  uint64_t vma_name_addr, build_id_addr;
} tkc_procmap_query;
#define TKC_PROCMAP_QUERY 0xC0686611u

/* "[vvar_vclock]" by address: the kernel maps it right below the vDSO
 * (from 6.13), so the mapping that ends where the vDSO starts is asked
 * for by name, without reading the maps' text (on the PVM guest ~40 us
 * less in the first use). Its start, or 0 when the kernel cannot answer
 * (no vDSO, a kernel before 6.11) or the mapping there is another one:
 * then the text is read. Only the named mapping is taken: "[vvar]" right
 * below the vDSO would not say where the clock pages are. */
static uintptr_t tkc_vclock_by_query(void) {
#if defined(SYS_ioctl) && defined(AT_SYSINFO_EHDR)
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  tkc_procmap_query q;
  char name[32];
  long r;
  int fd;
  if (vdso == 0) return 0;
  fd = tkc_native_open("/proc/self/maps");
  if (fd < 0) return 0;
  memset(&q, 0, sizeof q);
  memset(name, 0, sizeof name);
  q.size = sizeof q;
  q.query_addr = (uint64_t)(vdso - 1); /* flags 0: the mapping covering it, or ENOENT */
  q.vma_name_addr = (uint64_t)(uintptr_t)name;
  q.vma_name_size = (uint32_t)sizeof name;
  do {
    r = syscall(SYS_ioctl, fd, (unsigned long)TKC_PROCMAP_QUERY, &q);
  } while (r < 0 && errno == EINTR);
  close(fd);
  name[sizeof name - 1] = '\0';
  if (r != 0 || q.vma_end != (uint64_t)vdso || strcmp(name, "[vvar_vclock]") != 0) return 0;
  return (uintptr_t)q.vma_start;
#else
  return 0;
#endif
}

/* Where the page of kind is mapped (0 and why not in *absent): how
 * TKC_PV_FIND_QUERY asks the kernel by address only, TKC_PV_FIND_SCAN
 * reads the maps' text only, TKC_PV_FIND_ANY asks and then reads. Kernels
 * from 6.13 map the paravirtual pages as "[vvar_vclock]" (page 0: pvclock,
 * page 1: Hyper-V); before, they were pages 1 and 2 of "[vvar]". */
uintptr_t tkc_pv_locate(int kind, int how, int *absent) {
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096u, v, o;
  *absent = TKC_PV_ABSENT_NOT_TRIED;
  if (how != TKC_PV_FIND_SCAN) {
    v = tkc_vclock_by_query();
    if (v != 0) return v + (kind == TKC_PV_KVM ? 0 : page);
    if (how == TKC_PV_FIND_QUERY) {
      *absent = TKC_PV_ABSENT_NO_MAPPING;
      return 0;
    }
  }
  v = tkc_maps_find("[vvar_vclock]");
  if (v != 0 && v != UINTPTR_MAX) return v + (kind == TKC_PV_KVM ? 0 : page);
  o = tkc_maps_find("[vvar]");
  if (o == UINTPTR_MAX || v == UINTPTR_MAX) {
    *absent = TKC_PV_ABSENT_NO_MAPS;
    return 0;
  }
  if (o == 0) {
    *absent = TKC_PV_ABSENT_NO_MAPPING;
    return 0;
  }
  return o + (kind == TKC_PV_KVM ? page : 2 * page);
}

/* Is the page at addr readable? Asked of the kernel, never by touching
 * it: a page the kernel will not map raises SIGBUS when read. 1 yes, 0
 * no, -1 no answer.
 *   TKC_PV_PROVE_COPY: rt_sigprocmask copies the 8-byte set at addr before
 *   it looks at how, so with an invalid how it fails with EINVAL where the
 *   page is readable and EFAULT where it is not, raising no signal and
 *   changing no mask. No path, no descriptor, and a call every sandbox
 *   allows and no path supervisor answers. A kernel address is asked
 *   first: its EFAULT shows the copy comes before the check (a filter
 *   answering with an errno of its own, or QEMU's user mode, which checks
 *   how first, has no answer). An emulator that checks only its own map
 *   of the memory and then how (valgrind) can say yes for a page that
 *   would raise SIGBUS; it counts the clock pages as unaddressable, so
 *   there its no sends the question to the pipe.
 *   TKC_PV_PROVE_PIPE: the kernel copies the page into a pipe, EFAULT
 *   likewise; both ends closed before returning.
 *   TKC_PV_PROVE_ANY: the copy's yes; its no, or no answer, is asked of
 *   the pipe (a tool that emulates the call by reading this process's
 *   memory from outside cannot read the clock pages, and would say no). */
#define TKC_PV_BAD_HOW 0x7fff
int tkc_pv_readable(uintptr_t addr, int how) {
  int p[2];
  ssize_t w;
  if (how != TKC_PV_PROVE_PIPE) {
    int r = -1;
#if defined(SYS_rt_sigprocmask)
    long c;
    errno = 0;
    c = syscall(SYS_rt_sigprocmask, TKC_PV_BAD_HOW, (const void *)(~(uintptr_t)0 - 4095u), NULL,
                (size_t)8);
    if (c < 0 && errno == EFAULT) {
      errno = 0;
      c = syscall(SYS_rt_sigprocmask, TKC_PV_BAD_HOW, (const void *)addr, NULL, (size_t)8);
      r = c < 0 && errno == EINVAL ? 1 : c < 0 && errno == EFAULT ? 0 : -1;
    }
#endif
    if (how == TKC_PV_PROVE_COPY || r == 1) return r;
  }
#if defined(SYS_pipe2)
  if (syscall(SYS_pipe2, p, O_CLOEXEC) != 0) return -1;
#else
  if (pipe(p) != 0) return -1;
#endif
  do {
    w = write(p[1], (const void *)addr, 64);
  } while (w < 0 && errno == EINTR);
  close(p[0]);
  close(p[1]);
  return w == 64;
}

/* Whether a seccomp filter judges this process's system calls (Linux
 * 3.5): 1 also when the kernel will not say. There the first search
 * makes only the calls it made before the faster ways came (the maps'
 * text and the pipe): a filter that traps what it did not expect (an
 * ioctl it does not know) would kill the program. */
static int tkc_filtered(void) {
#if defined(PR_GET_SECCOMP)
  return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0;
#else
  return 1;
#endif
}

/* A field of a page another writer (the host) changes under us, read as
 * an atomic load: the version check around the reads is what makes them
 * consistent, and an atomic load makes the race it settles a defined one
 * (ThreadSanitizer sees the writer of the native test as one too). */
#if defined(__LP64__)
#define TKC_PV_LOAD(type, b, off) \
  __atomic_load_n((const volatile type *)((b) + (off)), __ATOMIC_RELAXED)
#else
/* 32-bit: an 8-byte type is 4-byte aligned there, and an atomic load of
 * one is a misaligned (or libatomic) operation; a volatile read, which
 * the version check settles all the same (ThreadSanitizer is 64-bit) */
#define TKC_PV_LOAD(type, b, off) (*(const volatile type *)((b) + (off)))
#endif

/* One consistent read of a page at addr: the version (Hyper-V: sequence)
 * is even and the same before and after the fields. 0 if the host kept
 * writing it. */
int tkc_pv_read_at(uintptr_t addr, int kind, tickclock_pvclock_page *pv) {
  int tries;
  for (tries = 0; tries < 1000; tries++) {
    const volatile unsigned char *b = (const volatile unsigned char *)addr;
    if (kind == TKC_PV_KVM) {
      uint32_t v1 = TKC_PV_LOAD(uint32_t, b, 0), v2;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      pv->tsc_timestamp = TKC_PV_LOAD(uint64_t, b, 8);
      pv->system_time = TKC_PV_LOAD(uint64_t, b, 16);
      pv->mul = TKC_PV_LOAD(uint32_t, b, 24);
      pv->shift = TKC_PV_LOAD(int8_t, b, 28);
      pv->flags = TKC_PV_LOAD(uint8_t, b, 29);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      v2 = TKC_PV_LOAD(uint32_t, b, 0);
      pv->version = v1;
      if (v1 == v2 && !(v1 & 1u)) return 1;
    } else {
      uint32_t s1 = TKC_PV_LOAD(uint32_t, b, 0), s2;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      pv->scale = TKC_PV_LOAD(uint64_t, b, 8);
      pv->offset = TKC_PV_LOAD(int64_t, b, 16);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      s2 = TKC_PV_LOAD(uint32_t, b, 0);
      pv->sequence = s1;
      if (s1 == s2) return 1;
    }
  }
  return 0;
}
#endif

void tkc_native_pvclock(int kind, tickclock_pvclock_page *pv) {
#if defined(__linux__) && defined(TKC_X86)
  uintptr_t a;
  int r;
  memset(pv, 0, sizeof *pv);
  if (kind != TKC_PV_KVM && kind != TKC_PV_HYPERV) return;
  /* found before: read it, nothing else (the checks may run in a signal
   * handler) */
  a = TKC_LOAD_ACQUIRE(&tkc_g_pv_addr[kind]);
  if (a == 0) {
    int filtered = tkc_filtered();
    a = tkc_pv_locate(kind, filtered ? TKC_PV_FIND_SCAN : TKC_PV_FIND_ANY, &pv->absent);
    if (a == 0) return;
    r = tkc_pv_readable(a, filtered ? TKC_PV_PROVE_PIPE : TKC_PV_PROVE_ANY);
    if (r != 1) {
      pv->absent = r < 0 ? TKC_PV_ABSENT_NO_MAPS : TKC_PV_ABSENT_UNMAPPED;
      return;
    }
    TKC_STORE_RELEASE(&tkc_g_pv_addr[kind], a);
  }
  if (!tkc_pv_read_at(a, kind, pv)) {
    pv->absent = TKC_PV_ABSENT_TORN;
    return;
  }
  pv->kind = kind;
#else
  (void)kind;
  memset(pv, 0, sizeof *pv);
  pv->absent = TKC_PV_ABSENT_NO_MAPPING;
#endif
}

#endif /* !_WIN32 */
