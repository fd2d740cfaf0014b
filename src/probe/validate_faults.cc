// tickclock-probe validate: PR_SET_TSC in forked children, and the host's
// package count (what the decider uses where the kernel gives no sync
// verdict).
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/prctl.h>
#define TICKCLOCK_PROBE_PR_SET_TSC 1
#endif

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/probe/checks.h"
#include "src/probe/util.h"
#include "src/probe/validate.h"

namespace tickclock_probe {

// ---- PR_SET_TSC in forked children ------------------------------------------
// Each fault is injected in a child so it cannot affect this process. Exit
// codes of the children: 0 every expectation held, 77 the fault could not
// be injected (prctl refused), others name the expectation that failed.
enum { kCannotInject = 77 };

// Runs fn in a child and returns its wait status (-1 if fork failed).
template <typename F>
int in_child(F fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    _exit(fn());
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return st;
}

std::string describe_status(int st) {
  if (st == -1) return "fork failed";
  if (WIFSIGNALED(st)) return fmt("died of signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return fmt("exit %d", WEXITSTATUS(st));
}

bool child_ok(int st) { return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0; }
bool child_cannot(int st) { return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == kCannotInject; }
bool child_segv(int st) { return st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV; }
// "yes" (SIGSEGV), "no" (kept working), "unknown"
const char *traps(int st) { return child_segv(st) ? "yes" : child_ok(st) ? "no" : "unknown"; }

#if defined(TICKCLOCK_PROBE_PR_SET_TSC)
bool disable_tsc() { return prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) == 0; }

// Must run before this process uses the library at all: the child's first
// tickclock_info_get() happens with RDTSC already disabled.
int child_before_first_use() {
  // the automatic path is what this child judges: a TICKCLOCK_SOURCE the
  // operator set for the run would only be refused here, aloud
  unsetenv("TICKCLOCK_SOURCE");
  if (!disable_tsc()) return kCannotInject;
  const tickclock_info *i = tickclock_info_get();
  if (i->source == TICKCLOCK_SOURCE_TSC) return 10;  // chose the disabled TSC
  bool named = false;
  for (unsigned k = 0; k < i->n_candidates; k++)
    if (i->candidates[k].source == TICKCLOCK_SOURCE_TSC)
      named = std::strstr(i->candidates[k].reason, "PR_SET_TSC") != nullptr;
  if (!named) return 11;  // the reason does not say why
  uint64_t a = tickclock_now(), b = tickclock_now_ordered();
  if (tickclock_delta_ns(a, b) < 0) return 12;
  tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
  if (tickclock_init(&cfg) != TICKCLOCK_EUNAVAILABLE) return 13;  // a forced TSC must be refused
  if (tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC) return 14;
  (void)tickclock_now();
  return 0;
}

// The TSC in use (forced if it was not chosen), then PR_SET_TSC: the next
// tickclock_revalidate() must switch to the OS clock before any read traps.
int child_after_init() {
  if (tickclock_info_get()->source != TICKCLOCK_SOURCE_TSC) {
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    if (tickclock_init(&cfg) != TICKCLOCK_OK) return kCannotInject;
  }
  if (tickclock_revalidate() != 0) return 20;  // nothing changed yet
  uint64_t before = tickclock_to_ns(tickclock_now());
  if (!disable_tsc()) return kCannotInject;
  if (tickclock_revalidate() != TICKCLOCK_SWITCHED) return 21;
  const tickclock_info *i = tickclock_info_get();
  if (i->source != TICKCLOCK_SOURCE_SYSTEM) return 22;
  if (std::strstr(i->why, "PR_SET_TSC") == nullptr) return 23;
  uint64_t after = tickclock_to_ns(tickclock_now());  // no trap
  if (after < before) return 24;                      // no backward step
  if (tickclock_to_ns(tickclock_now_ordered()) < after) return 25;
  return 0;
}

// Deliberately executed only in a disposable child: whether the kernel
// (and the hypervisor under it) turns RDTSC into SIGSEGV after PR_SET_TSC.
int child_bare_rdtsc() {
  if (!disable_tsc()) return kCannotInject;
  volatile uint64_t t = tkt_counter_read();  // RDTSC itself
  (void)t;
  return 0;
}

// The same for libc's clock_gettime, which the vDSO may serve by reading
// the TSC itself (clocksource tsc, kvm-clock, the Hyper-V TSC page).
int child_vdso_clock_gettime() {
  if (!disable_tsc()) return kCannotInject;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 0;
}
#endif

// Before anything else in this process touches the library. A sanitizer
// build cannot run the children: its runtime traps after PR_SET_TSC
// whatever tickclock does (AddressSanitizer's allocator reads the clock
// through the vDSO; ThreadSanitizer's runtime traps inside fopen).
#if defined(__SANITIZE_ADDRESS__)
#define PROBE_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define PROBE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROBE_ASAN 1
#elif __has_feature(thread_sanitizer)
#define PROBE_TSAN 1
#endif
#endif
#if defined(PROBE_ASAN)
constexpr const char *kSanitizer =
    "AddressSanitizer, whose allocator reads the clock through "
    "the vDSO";
#elif defined(PROBE_TSAN)
constexpr const char *kSanitizer = "ThreadSanitizer, whose runtime traps inside fopen";
#else
constexpr const char *kSanitizer = nullptr;
#endif

void pr_set_tsc_before(TscFaults *f) {
#if defined(TICKCLOCK_PROBE_PR_SET_TSC)
  tickclock_x86_facts x;
  tickclock_x86_decode(tickclock_cpuid_native, nullptr, &x);
  if (kSanitizer != nullptr) {
    f->not_why = std::string("this probe is built with ") + kSanitizer +
                 ": after PR_SET_TSC a child would trap inside the sanitizer whatever "
                 "tickclock does";
  } else if (!x.tsc) {
    f->not_why = "CPUID.01H:EDX[4] (TSC) is clear: no RDTSC to disable";
  } else if (x.hv_valid && std::strcmp(x.hv_signature, "TCGTCGTCGTCG") == 0 &&
             cpu_model().find("QEMU") == std::string::npos) {
    // QEMU user mode: the CPUID is the emulator's, the kernel (and its
    // /proc/cpuinfo) the host's, and the prctl would reach the emulator
    // process itself. Under QEMU system emulation the guest's own kernel
    // names the emulated CPU ("QEMU TCG CPU", "QEMU Virtual CPU") and
    // enforces PR_SET_TSC: the check applies there.
    f->not_why =
        "under QEMU user-mode emulation: PR_SET_TSC would reach the emulator, not this program";
  } else {
    f->applicable = true;
    f->before = in_child(child_before_first_use);
  }
#else
  f->not_why = "PR_SET_TSC exists only on x86 Linux";
#endif
}

void pr_set_tsc_after(TscFaults *f) {
#if defined(TICKCLOCK_PROBE_PR_SET_TSC)
  if (!f->applicable) return;
  f->after = in_child(child_after_init);
  f->rdtsc = in_child(child_bare_rdtsc);
  f->vdso = in_child(child_vdso_clock_gettime);
#else
  (void)f;
#endif
}

// Physical packages among the CPUs this process may run on (Linux sysfs);
// 0 when unknown.
int count_packages() {
  std::vector<int> seen;
  for (int cpu : allowed_cpus()) {
    char path[96], buf[32];
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                  cpu);
    if (!tkt_read_line(path, buf, sizeof buf)) return 0;
    int id = std::atoi(buf);
    bool known = false;
    for (int s : seen) known = known || s == id;
    if (!known) seen.push_back(id);
  }
  return (int)seen.size();
}

}  // namespace tickclock_probe
