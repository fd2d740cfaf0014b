// The native reader of the paravirtual clock page (platform_pages.c): its
// consistency loop raced against a writer that updates a page the way a
// host does (version odd while writing), and the finder on the machine at
// hand: it never raises a signal, whether the page is mapped or not, and
// leaves no descriptor behind; its two ways of finding the page agree, and
// its two proofs of readability agree, on pages of every kind.
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <initializer_list>
#include <pthread.h>
#include <signal.h>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/host_facts.h"

namespace {
// A page as the host writes it: version odd, the fields, version even.
// Every field follows from system_time, so a torn read shows.
struct alignas(64) Page {
  unsigned char b[64];
};
void put32(Page *p, int off, uint32_t v) {
  __atomic_store_n(reinterpret_cast<uint32_t *>(p->b + off), v, __ATOMIC_RELAXED);
}
void put64(Page *p, int off, uint64_t v) {
  __atomic_store_n(reinterpret_cast<uint64_t *>(p->b + off), v, __ATOMIC_RELAXED);
}

int open_fds() {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) n++;
  closedir(d);
  return n;
}
}  // namespace

TEST_CASE("the page reader never returns a torn read while the host writes") {
  static Page page;
  memset(&page, 0, sizeof page);
  std::atomic<bool> stop(false);
  std::atomic<uint64_t> writes(0);
  std::thread writer([&] {
    uint32_t version = 0;
    for (uint64_t k = 1; !stop.load(std::memory_order_relaxed); k++) {
      put32(&page, 0, ++version);  // odd: writing
      __atomic_thread_fence(__ATOMIC_RELEASE);
      put64(&page, 8, 3 * k);                   // tsc_timestamp
      put64(&page, 16, k);                      // system_time
      put32(&page, 24, (uint32_t)(k * 7 + 1));  // mul
      // shift and flags: atomic byte stores, as the reader's loads are
      __atomic_store_n(&page.b[28], (unsigned char)(int8_t)(k % 5 - 2), __ATOMIC_RELAXED);
      __atomic_store_n(&page.b[29], (unsigned char)(k & 1), __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_RELEASE);
      put32(&page, 0, ++version);  // even: done
      writes.fetch_add(1, std::memory_order_relaxed);
    }
  });
  long ok = 0, torn = 0, failed = 0;
  while (writes.load() < 1000) std::this_thread::yield();
  for (int i = 0; i < 200000; i++) {
    tickclock_pvclock_page pv;
    memset(&pv, 0, sizeof pv);
    if (!tkc_pv_read_at((uintptr_t)&page, TKC_PV_KVM, &pv)) {
      failed++;
      continue;
    }
    ok++;
    uint64_t k = pv.system_time;
    bool same = (pv.version & 1u) == 0 && pv.tsc_timestamp == 3 * k &&
                pv.mul == (uint32_t)(k * 7 + 1) && pv.shift == (int8_t)(k % 5 - 2) &&
                pv.flags == (k & 1);
    if (!same) torn++;
  }
  stop = true;
  writer.join();
  MESSAGE("reads " << ok << " consistent of " << ok + failed << ", " << writes.load()
                   << " writes meanwhile");
  CHECK(torn == 0);
  CHECK(ok > 0);
}

TEST_CASE("a page the host is always writing (odd version): no reading") {
  static Page page;
  memset(&page, 0, sizeof page);
  put32(&page, 0, 7);
  tickclock_pvclock_page pv;
  CHECK(tkc_pv_read_at((uintptr_t)&page, TKC_PV_KVM, &pv) == 0);
}

TEST_CASE("the native finder on this machine: no signal, no descriptor left, a verdict") {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool vclock = false, vvar = false;
  while (std::getline(maps, line)) {
    if (line.find("[vvar_vclock]") != std::string::npos) vclock = true;
    if (line.size() >= 6 && line.compare(line.size() - 6, 6, "[vvar]") == 0) vvar = true;
  }
  for (int kind : {TKC_PV_KVM, TKC_PV_HYPERV}) {
    CAPTURE(kind);
    int before = open_fds();
    tickclock_pvclock_page pv;
    tkc_native_pvclock(kind, &pv);  // a SIGBUS here would end the test
    CHECK(open_fds() == before);
    if (!vclock && !vvar) CHECK(pv.absent == TKC_PV_ABSENT_NO_MAPPING);
    if (pv.kind == TKC_PV_NONE) {
      CHECK(pv.absent != TKC_PV_ABSENT_NOT_TRIED);
      MESSAGE("kind " << kind << ": no page (absent " << pv.absent << ")");
      continue;
    }
    CHECK(pv.kind == kind);
    // a page read: a second read (the cached address, no system call) agrees
    tickclock_pvclock_page again;
    tkc_native_pvclock(kind, &again);
    CHECK(again.kind == kind);
    CHECK(tkc_pv_same(&pv, &again) == 1);
    tickclock_freq c;
    tkc_pv_claim(&pv, kind == TKC_PV_KVM ? "kvm-clock" : "hyperv_clocksource_tsc_page", &c);
    MESSAGE("kind " << kind << ": version " << pv.version << " flags " << (unsigned)pv.flags
                    << " mul " << pv.mul << " shift " << (int)pv.shift << ": "
                    << (c.ok ? "claims " + std::to_string((double)c.hz_num / (double)c.hz_den)
                             : "refused: " + std::string(c.why)));
  }
}

namespace {
// The mapping named name in /proc/self/maps as its text says: start, end.
bool maps_entry(const char *name, uintptr_t *start, uintptr_t *end) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  size_t k = strlen(name);
  while (std::getline(maps, line)) {
    if (line.size() < k || line.compare(line.size() - k, k, name) != 0) continue;
    unsigned long a = 0, b = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &a, &b) != 2) return false;
    *start = a;
    *end = b;
    return true;
  }
  return false;
}

// Whether this kernel answers PROCMAP_QUERY at all (6.11 on): asked
// about this function's own code.
bool kernel_answers_query() {
  struct {
    uint64_t size, flags, addr, start, end, vflags, psize, off, inode;
    uint32_t maj, min, name_size, bid_size;
    uint64_t name_addr, bid_addr;
  } q;
  memset(&q, 0, sizeof q);
  q.size = sizeof q;
  q.addr = (uint64_t)(uintptr_t)&kernel_answers_query;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int r = ioctl(fd, 0xC0686611u, &q);
  close(fd);
  return r == 0 && q.start <= q.addr && q.addr < q.end;
}

// Pages of every kind a proof can meet: readable (zeros, and bytes set:
// the copy's set is never applied), a mask's worth before a PROT_NONE
// page, PROT_NONE.
struct Pages {
  unsigned char *base = nullptr;
  size_t pg = 0;
  Pages() {
    pg = (size_t)sysconf(_SC_PAGESIZE);
    base = static_cast<unsigned char *>(
        mmap(nullptr, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) {
      base = nullptr;
      return;
    }
    memset(base, 0, 4 * pg);
    memset(base + pg, 0xff, pg);             // page 1: every signal, were it applied
    mprotect(base + 3 * pg, pg, PROT_NONE);  // page 3
  }
  ~Pages() {
    if (base != nullptr) munmap(base, 4 * pg);
  }
  uintptr_t at(int i) const { return (uintptr_t)(base + (size_t)i * pg); }
};

// A page that is mapped but raises SIGBUS when read, as the clock pages
// the kernel will not fill do: a page of an empty file (0: none).
uintptr_t sigbus_page() {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  int fd = (int)syscall(SYS_memfd_create, "tctest-empty", 0);
  if (fd < 0) return 0;
  void *p = mmap(nullptr, pg, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? 0 : (uintptr_t)p;
}

// A page that is not mapped at all: mapped, then unmapped.
uintptr_t unmapped_page() {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  void *p = mmap(nullptr, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  munmap(p, pg);
  return (uintptr_t)p;
}
}  // namespace

TEST_CASE("the finder: the kernel asked by address finds what the maps' text names") {
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  uintptr_t vs = 0, ve = 0;
  bool vclock = maps_entry("[vvar_vclock]", &vs, &ve);
  bool answers = kernel_answers_query();
  long pg = sysconf(_SC_PAGESIZE);
  std::string seen = std::string("PROCMAP_QUERY ") + (answers ? "answered" : "not answered") +
                     "; [vvar_vclock] " + (vclock ? "present" : "absent") +
                     (vclock && ve == vdso ? ", right below the vDSO" : "");
  MESSAGE(seen);
  for (int kind : {TKC_PV_KVM, TKC_PV_HYPERV}) {
    CAPTURE(kind);
    int before = open_fds();
    int absent_q = -1, absent_s = -1, absent_a = -1;
    uintptr_t q = tkc_pv_locate(kind, TKC_PV_FIND_QUERY, &absent_q);
    uintptr_t s = tkc_pv_locate(kind, TKC_PV_FIND_SCAN, &absent_s);
    uintptr_t a = tkc_pv_locate(kind, TKC_PV_FIND_ANY, &absent_a);
    CHECK(open_fds() == before);
    // the text finds the named mapping's page whenever the text names it
    if (vclock) CHECK(s == vs + (kind == TKC_PV_KVM ? 0 : (uintptr_t)pg));
    // asked by address: the same page, or no answer (never another page)
    if (q != 0) CHECK(q == s);
    if (q == 0) CHECK(absent_q == TKC_PV_ABSENT_NO_MAPPING);
    // and it answers wherever it can: a kernel that answers, the named
    // mapping right below the vDSO
    if (answers && vclock && ve == vdso) CHECK(q == s);
    MESSAGE("kind " << kind << ": by address " << q << ", by the text " << s);
    CHECK(a == s);
    if (s == 0) CHECK(absent_s != TKC_PV_ABSENT_NOT_TRIED);
  }
}

TEST_CASE("the readability proofs: a copy and a pipe agree, and the signal mask never moves") {
  Pages p;
  REQUIRE(p.base != nullptr);
  uintptr_t gone = unmapped_page();
  REQUIRE(gone != 0);
  struct Case {
    const char *what;
    uintptr_t addr;
    int readable;
  } cases[] = {
      {"a zero page", p.at(0), 1},
      {"a page of 0xff bytes", p.at(1), 1},
      {"a PROT_NONE page", p.at(3), 0},
      {"an unmapped page", gone, 0},
      {"a kernel address", ~(uintptr_t)0 - 4095u, 0},
      // not under QEMU's user mode: it copies from its own map of the
      // memory and dies of the SIGBUS (the library asks the pipe there:
      // QEMU answers PR_GET_SECCOMP with EINVAL, taken for a filter)
      {"a page past an empty file's end (SIGBUS when read)",
       tctest::qemu_user_x86() ? 0 : sigbus_page(), 0},
  };
  sigset_t before_mask, after_mask;
  REQUIRE(pthread_sigmask(SIG_SETMASK, nullptr, &before_mask) == 0);
  int before = open_fds();
  for (const Case &c : cases) {
    CAPTURE(c.what);
    if (c.addr == 0) {
      MESSAGE("skipped here: " << c.what << " (emulated, or memfd_create refused)");
      continue;
    }
    int copy = tkc_pv_readable(c.addr, TKC_PV_PROVE_COPY);
    int pipe = tkc_pv_readable(c.addr, TKC_PV_PROVE_PIPE);
    int any = tkc_pv_readable(c.addr, TKC_PV_PROVE_ANY);
    CHECK(copy == c.readable);
    CHECK(pipe == c.readable);
    CHECK(any == c.readable);
  }
  // the machine's own clock pages, where the maps name them: both proofs
  // give one answer (page 1 is mapped only under Hyper-V's clocksource)
  uintptr_t vs = 0, ve = 0;
  if (maps_entry("[vvar_vclock]", &vs, &ve)) {
    long pg = sysconf(_SC_PAGESIZE);
    for (uintptr_t a = vs; a < ve; a += (uintptr_t)pg) {
      int copy = tkc_pv_readable(a, TKC_PV_PROVE_COPY);
      int pipe = tkc_pv_readable(a, TKC_PV_PROVE_PIPE);
      MESSAGE("[vvar_vclock] page " << (a - vs) / (uintptr_t)pg << ": readable " << pipe);
      CHECK(copy == pipe);
    }
  }
  CHECK(open_fds() == before);
  REQUIRE(pthread_sigmask(SIG_SETMASK, nullptr, &after_mask) == 0);
  for (int sig = 1; sig < 32; sig++) {
    CAPTURE(sig);
    CHECK(sigismember(&before_mask, sig) == sigismember(&after_mask, sig));
  }
}

namespace {
// A filter for rt_sigprocmask called with the proof's invalid how (0x7fff)
// only: action for it, everything else allowed. 0: installed.
int filter_bad_how(uint32_t action) {
  struct sock_filter prog[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigprocmask, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args)),  // low word
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x7fff, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog fp = {(unsigned short)(sizeof prog / sizeof prog[0]), prog};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp);
}

// SIGSYS (the default action: the process dies) for each system call in
// nrs and for the proof's rt_sigprocmask; everything else allowed.
int trap_calls(std::initializer_list<long> nrs) {
  std::vector<struct sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  for (long nr : nrs) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  }
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigprocmask, 0, 3));
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x7fff, 0, 1));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  struct sock_fprog fp = {(unsigned short)prog.size(), prog.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp);
}

// fn's three ints, computed in a child; false if the child failed.
template <class F>
bool in_child3(F fn, int out[3]) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fd[0]);
    int res[3] = {-9, -9, -9};
    fn(res);
    ssize_t w = write(fd[1], res, sizeof res);
    _exit(w == (ssize_t)sizeof res ? 0 : 1);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], out, 3 * sizeof(int));
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  INFO("child status " << st);
  CHECK(WIFEXITED(st));
  return got == (ssize_t)(3 * sizeof(int)) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
}  // namespace

TEST_CASE("a filter that answers the copy itself: the pipe decides, not its errno") {
  uintptr_t gone = unmapped_page();
  REQUIRE(gone != 0);
  static char page[64];
  // EINVAL for every copy (a readable page's answer): the control shows
  // the copy is not the kernel's, and the pipe says no for the unmapped page
  int r[3];
  REQUIRE(in_child3(
      [gone](int *res) {
        if (filter_bad_how(SECCOMP_RET_ERRNO | EINVAL) != 0) return;
        res[0] = tkc_pv_readable(gone, TKC_PV_PROVE_COPY);
        res[1] = tkc_pv_readable(gone, TKC_PV_PROVE_ANY);
        res[2] = tkc_pv_readable((uintptr_t)page, TKC_PV_PROVE_ANY);
      },
      r));
  if (r[0] == -9) {
    MESSAGE("skipped: no seccomp filter could be installed here (an emulator, or a sandbox)");
    return;
  }
  CHECK(r[0] == -1);  // the copy has no answer
  CHECK(r[1] == 0);   // the pipe's: not readable
  CHECK(r[2] == 1);   // and a readable page still is
  // EFAULT for every copy (a tool that emulates the call by reading this
  // process from outside, and cannot read the clock pages): the control
  // passes, the copy says no for a readable page, and the pipe says yes
  REQUIRE(in_child3(
      [gone](int *res) {
        if (filter_bad_how(SECCOMP_RET_ERRNO | EFAULT) != 0) return;
        res[0] = tkc_pv_readable((uintptr_t)page, TKC_PV_PROVE_COPY);
        res[1] = tkc_pv_readable((uintptr_t)page, TKC_PV_PROVE_ANY);
        res[2] = tkc_pv_readable(gone, TKC_PV_PROVE_ANY);
      },
      r));
  CHECK(r[0] == 0);  // the copy's no, misled
  CHECK(r[1] == 1);  // the first use's proof: the pipe's yes
  CHECK(r[2] == 0);
}

TEST_CASE(
    "under a filter that traps what it does not expect, the first search makes only the old "
    "calls") {
  // What the first search finds unfiltered, then in a child whose filter
  // kills it for ioctl, faccessat or the copy (calls the search did not
  // make before those faster ways came): it must live and find the same.
  for (int kind : {TKC_PV_KVM, TKC_PV_HYPERV}) {
    CAPTURE(kind);
    // the search in a child, under the filter or not: kind, absent, filtered
    auto search = [kind](bool filter) {
      return [kind, filter](int *res) {
        if (filter && trap_calls({SYS_ioctl, SYS_faccessat}) != 0) return;
        tickclock_pvclock_page pv;
        tkc_native_pvclock(kind, &pv);
        res[0] = pv.kind;
        res[1] = pv.absent;
        res[2] = filter ? 1 : 0;
      };
    };
    int plain[3], filtered[3];
    REQUIRE(in_child3(search(false), plain));
    REQUIRE(in_child3(search(true), filtered));
    if (filtered[2] == -9) {
      MESSAGE("skipped: no seccomp filter could be installed here (an emulator, or a sandbox)");
      return;
    }
    CHECK(filtered[0] == plain[0]);
    CHECK(filtered[1] == plain[1]);
  }
  // and a whole first use under it
  int r[3];
  REQUIRE(in_child3(
      [](int *res) {
        if (trap_calls({SYS_ioctl, SYS_faccessat}) != 0) return;
        res[0] = (int)(tickclock_now() != 0);
        res[1] = tickclock_info_get()->source;
        res[2] = 0;
      },
      r));
  CHECK(r[0] == 1);
}
