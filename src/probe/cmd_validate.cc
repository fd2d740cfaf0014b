// tickclock-probe validate [--seconds S] [--source NAME] [--fixture-out F] [--json]
//
// The checklist for a new machine or hypervisor. Every item is PASS, FAIL
// or SKIP (with the reason) and carries its numbers; the verdict is PASS,
// and the exit status 0, only when the source tickclock chose (or the one
// named with --source) passes every item that applies to it.
//   cpuid        the CPUID flags the TSC needs (x86)
//   clocksource  the kernel's verdict on the counter
//   frequency    every frequency source agrees within the stated bound
//   drift        converted counter time vs CLOCK_MONOTONIC_RAW over S s
//                (with clocksource tsc that clock is the same TSC on the
//                same CPU: blind to per-CPU offsets, as calibration is)
//   monotonic    consecutive reads on every CPU never step back
//   warp         cross-CPU ordering, Linux tsc_sync style, every CPU pair:
//                the check that covers per-CPU offsets
//   read_cost    a read costs less than clock_gettime (not trapped); nearly
//                vacuous where the vDSO itself executes RDTSC (clocksource
//                tsc, kvm-clock, the Hyper-V TSC page): a trap slows both
//   pr_set_tsc   prctl(PR_SET_TSC, PR_TSC_SIGSEGV) in forked children: before
//                the library's first use (the OS clock, no trap) and after
//                init (tickclock_revalidate() switches, no trap); and whether
//                this kernel enforces it (does a bare RDTSC, does the vDSO's
//                clock_gettime, raise SIGSEGV afterwards) -- recorded as a
//                fact of the host, not a pass/fail
// --fixture-out writes a fixture (CPUID dump, observed facts, expected
// decision) ready for tests/fixtures/hosts/; its path is checked before
// anything is measured. Ctrl-C (or SIGTERM) ends the run early: the verdict
// is INCOMPLETE, the checks not finished are listed, no fixture is kept,
// and the exit status is 128 + the signal (130).
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/prctl.h>
#define TICKCLOCK_PROBE_PR_SET_TSC 1
#include "arch/x86.h"
#endif

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/probe/checks.h"
#include "src/probe/commands.h"
#include "src/probe/json.h"
#include "src/probe/util.h"

namespace tickclock_probe {
namespace {

struct Item {
  std::string name, status, detail;  // status: PASS FAIL SKIP
  std::string json_extra;           // ,"key":value...
};

// (counter, raw, counter) with the tightest bracket, as calibration takes it.
void bracket(uint64_t *counter_mid, uint64_t *raw, uint64_t *width) {
  tickclock__bracket b = tickclock__tightest_bracket(read_now_ordered);
  *counter_mid = b.mid;
  *raw = b.ns;
  *width = b.width;
}

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

struct TscFaults {
  bool applicable = false;   // x86 Linux, a TSC, not under emulation
  std::string not_why;       // when !applicable
  int before = -2;           // wait status of the before-first-use child
  int after = -2;            // ... of the after-init child
  int rdtsc = -2;            // ... of the bare-RDTSC-after-PR_SET_TSC child
  int vdso = -2;             // ... of the vDSO-clock_gettime-after child
};

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
  if (!disable_tsc()) return kCannotInject;
  const tickclock_info *i = tickclock_info_get();
  if (i->source == TICKCLOCK_SOURCE_TSC) return 10;           // chose the disabled TSC
  bool named = false;
  for (unsigned k = 0; k < i->n_candidates; k++)
    if (i->candidates[k].source == TICKCLOCK_SOURCE_TSC)
      named = std::strstr(i->candidates[k].reason, "PR_SET_TSC") != nullptr;
  if (!named) return 11;                                       // the reason does not say why
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
  volatile uint64_t t = tickclock__x86_rdtsc();
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

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Before anything else in this process touches the library.
void pr_set_tsc_before(TscFaults *f) {
#if defined(TICKCLOCK_PROBE_PR_SET_TSC)
  tickclock_x86_facts x;
  tickclock_x86_decode(tickclock_cpuid_native, nullptr, &x);
  if (kAddressSanitizer) {
    f->not_why = "this probe is built with AddressSanitizer, whose allocator reads the clock "
                 "through the vDSO: a child would trap inside malloc whatever tickclock does";
  } else if (!x.tsc) {
    f->not_why = "CPUID.01H:EDX[4] (TSC) is clear: no RDTSC to disable";
  } else if (x.hv_valid && std::strcmp(x.hv_signature, "TCGTCGTCGTCG") == 0) {
    // QEMU user mode would pass the prctl to the emulator process itself
    f->not_why = "under QEMU's TCG emulation: PR_SET_TSC would reach the emulator, not this program";
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

// Does the kernel's clock (and so the vDSO's clock_gettime) read the TSC
// itself? Then a trapped RDTSC slows both.
bool vdso_reads_tsc(const tickclock_evidence &ev) {
  if (!ev.clocksource_known) return false;
  for (const char *cs : {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"})
    if (std::strcmp(ev.clocksource, cs) == 0) return true;
  return false;
}

// Physical packages among the CPUs this process may run on (Linux sysfs);
// 0 when unknown.
int count_packages() {
  std::vector<int> seen;
  for (int cpu : allowed_cpus()) {
    char path[96], buf[32];
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                  cpu);
    if (!tickclock__p_read_line(path, buf, sizeof buf)) return 0;
    int id = std::atoi(buf);
    bool known = false;
    for (int s : seen) known = known || s == id;
    if (!known) seen.push_back(id);
  }
  return (int)seen.size();
}

}  // namespace

int cmd_validate(int argc, char **argv) {
  double seconds = 2.0;
  std::string fixture_out, source;
  bool json = false;
  parse_options(argc, argv, "--seconds S, --source NAME, --fixture-out FILE, --json",
                [&](const Option &o) {
                  if (o.name == "--seconds") seconds = parse_seconds(o.name, o.value(), 600);
                  else if (o.name == "--fixture-out") fixture_out = o.value();
                  else if (o.name == "--source") source = o.value();
                  else if (o.is_flag("--json")) json = true;
                  else return false;
                  return true;
                });
  if (!source.empty() && tickclock_source_from_name(source.c_str()) < 0)
    throw UsageError{"--source: unknown source '" + source + "' (expected one of " +
                     source_names() + ")"};
  // the fixture's file is opened before anything is measured: a bad path
  // fails at once
  FILE *fx = fixture_out.empty() ? nullptr : open_output("--fixture-out", fixture_out);
  auto drop_fixture = [&] {
    if (!fx) return;
    std::fclose(fx);
    fx = nullptr;
    if (fixture_out != "/dev/null") unlink(fixture_out.c_str());
  };
  TscFaults tsc_faults;
  pr_set_tsc_before(&tsc_faults);  // first: this process has not used the library yet
  if (!source.empty()) {
    try {
      force_source(source);  // the source under test
    } catch (...) {
      drop_fixture();
      throw;
    }
  }
  const tickclock_info *info = tickclock_info_get();
  const bool counter = info->source != TICKCLOCK_SOURCE_SYSTEM && info->source != TICKCLOCK_SOURCE_QPC;
  tickclock_evidence ev;
  tickclock__gather(nullptr, &ev);
  std::vector<Item> items;
  std::vector<std::string> unfinished;  // checks not run or cut short by a signal
  // A check the signal kept from starting is listed, not run.
  auto not_started = [&](const char *name) {
    if (!interrupted()) return false;
    items.push_back(Item{name, "INCOMPLETE", "not run: interrupted before it started", ""});
    unfinished.push_back(name);
    return true;
  };
  // A timed check whose loop the signal ended early: its figures are partial.
  auto cut_short = [&](Item *it, bool completed) {
    if (completed) return;
    it->status = "INCOMPLETE";
    it->detail += " (cut short by the interruption)";
    unfinished.push_back(it->name);
  };

  // cpuid
  if (!not_started("cpuid")) {
    Item it{"cpuid", "SKIP", "", ""};
#if defined(__x86_64__) || defined(__i386__)
    const tickclock_x86_facts &x = ev.x86;
    it.detail = fmt("%s family %u model 0x%x: TSC %s, invariant TSC %s, RDTSCP %s, hypervisor %s",
                    x.vendor, x.family, x.model, x.tsc ? "yes" : "no",
                    x.invariant_tsc ? "yes" : "no", x.rdtscp ? "yes" : "no",
                    x.hypervisor ? "yes" : "no");
    it.json_extra = fmt(",\"tsc\":%s,\"invariant_tsc\":%s,\"rdtscp\":%s,\"hypervisor_bit\":%s",
                        x.tsc ? "true" : "false", x.invariant_tsc ? "true" : "false",
                        x.rdtscp ? "true" : "false", x.hypervisor ? "true" : "false");
    if (info->source == TICKCLOCK_SOURCE_TSC)
      it.status = (x.tsc && x.invariant_tsc) ? "PASS" : "FAIL";
    else
      it.detail = "not the TSC (" + std::string(info->source_name) + "); " + it.detail;
#else
    it.detail = "not x86";
#endif
    items.push_back(it);
  }
  // clocksource
  if (!not_started("clocksource")) {
    Item it{"clocksource", "SKIP", "", ""};
    it.detail = ev.clocksource_known ? fmt("current %s, available: %s", ev.clocksource,
                                           ev.available_known ? ev.available_clocksource : "?")
                                     : std::string("not readable");
    it.json_extra = ",\"current\":" + (ev.clocksource_known ? json_str(ev.clocksource) : "null") +
                    ",\"available\":" +
                    (ev.available_known ? json_str(ev.available_clocksource) : "null");
    if (info->source == TICKCLOCK_SOURCE_TSC && ev.os_linux) {
      // the decider's own reading of the kernel's verdict (incl. paravirt clocks)
      bool ok = ev.clocksource_known && (std::strcmp(ev.clocksource, "tsc") == 0 ||
                                         std::strstr(ev.available_clocksource, "tsc") != nullptr);
      it.status = ok ? "PASS" : "FAIL";
      if (!ok) it.detail += ": the kernel does not offer the TSC";
    } else if (!counter) {
      it.detail += " (the OS clock is in use)";
    }
    items.push_back(it);
  }
  // frequency
  if (!not_started("frequency")) {
    Item it{"frequency", "SKIP", "", ""};
    if (counter) {
      bool ok = true;
      std::string list;
      for (unsigned k = 0; k < info->n_freqs; k++) {
        const tickclock_freq_candidate &f = info->freqs[k];
        if (!(f.hz > 0)) {  // a source that gave nothing: say so, not "0 MHz"
          list += fmt("%s%s none", list.empty() ? "" : "; ", f.name);
          continue;
        }
        list += fmt("%s%s %.6f MHz", list.empty() ? "" : "; ", f.name, f.hz / 1e6);
        if (f.checked) {
          list += fmt(" (%+.2f ppm, bound %.1f)", f.ppm_vs_calibration, f.bound_ppm);
          if (!f.usable) ok = false;
        }
      }
      it.status = ok ? "PASS" : "FAIL";
      it.detail = fmt("using %.6f MHz (%s, +-%.2f ppm); max pairwise disagreement %.2f ppm; %s",
                      info->hz / 1e6, info->freq_detail ? info->freq_detail : info->freq_method_name,
                      info->uncertainty_ppm, info->max_disagreement_ppm, list.c_str());
      it.json_extra = ",\"hz\":" + json_hz(info->hz) + ",\"hz_num\":" + json_u(info->hz_num) +
                      ",\"hz_den\":" + json_u(info->hz_den) + ",\"uncertainty_ppm\":" +
                      json_num(info->uncertainty_ppm) + ",\"max_disagreement_ppm\":" +
                      json_num(info->max_disagreement_ppm);
      if (!ok) it.detail += " — a source disagrees beyond its bound";
    } else {
      it.detail = "ticks are nanoseconds (the OS clock)";
    }
    items.push_back(it);
  }
  // drift over S seconds
  double drift_ppm = NAN;
  if (!not_started("drift")) {
    Item it{"drift", "SKIP", "", ""};
    double span = seconds * 0.4;
    uint64_t c0, r0, w0, c1, r1, w1;
    bracket(&c0, &r0, &w0);
    uint64_t end = r0 + (uint64_t)(span * 1e9);
    while (mono_raw_ns() < end && !interrupted()) {
      struct timespec req = {0, 5000000};
      nanosleep(&req, nullptr);
    }
    bracket(&c1, &r1, &w1);
    double counter_ns = (double)tickclock_delta_ns(c0, c1);
    double raw = (double)(r1 - r0);
    drift_ppm = (counter_ns - raw) / raw * 1e6;
    // the bound: the frequency's own uncertainty, the brackets, 2 ns of
    // clock granularity, plus 5 ppm; CLOCK_MONOTONIC may be slewed by NTP
    // (at most 500 ppm) relative to MONOTONIC_RAW.
    double bracket_ppm = ((double)(w0 + w1) / 2.0 * (counter ? ns_per_tick(info) : 1.0) + 2.0) /
                         raw * 1e6;
    double bound = counter ? 3 * info->uncertainty_ppm + bracket_ppm + 5.0 : 500.0;
    it.status = std::fabs(drift_ppm) <= bound ? "PASS" : "FAIL";
    it.detail = fmt("%+.3f ppm over %.2f s against CLOCK_MONOTONIC_RAW (bound %.2f ppm%s)",
                    drift_ppm, raw / 1e9, bound, counter ? "" : ": NTP slew allowance");
    if (info->source == TICKCLOCK_SOURCE_TSC && ev.clocksource_known &&
        std::strcmp(ev.clocksource, "tsc") == 0)
      it.detail += "; CLOCK_MONOTONIC_RAW is this TSC (clocksource tsc): blind to per-CPU "
                   "offsets, which the warp check covers";
    it.json_extra = ",\"ppm\":" + json_num(drift_ppm) + ",\"bound_ppm\":" + json_num(bound) +
                    ",\"seconds\":" + json_num(raw / 1e9);
    cut_short(&it, r1 >= end);
    items.push_back(it);
  }
  // monotonic on every CPU
  uint64_t mono_back = 0;
  if (!not_started("monotonic")) {
    Item it{"monotonic", "PASS", "", ""};
    std::vector<MonoCpu> m = monotonic_per_cpu(read_now, read_now_ordered, seconds * 0.2);
    uint64_t reads = 0;
    int unpinned = 0;
    for (const MonoCpu &c : m) {
      reads += c.reads;
      mono_back += c.backward;
      unpinned += !c.pinned;
    }
    it.status = mono_back ? "FAIL" : "PASS";
    it.detail = fmt("%" PRIu64 " reads on %zu CPUs, %" PRIu64 " backward steps%s", reads, m.size(),
                    mono_back, unpinned ? " (some threads could not be pinned)" : "");
    it.json_extra = ",\"reads\":" + json_u(reads) + ",\"cpus\":" + json_u(m.size()) +
                    ",\"backward\":" + json_u(mono_back);
    bool all_done = m.size() == allowed_cpus().size();
    for (const MonoCpu &c : m) all_done = all_done && c.completed;
    cut_short(&it, all_done);
    items.push_back(it);
  }
  // warp
  uint64_t warp_back = 0, warp_max = 0;
  double warp_max_ns = 0;
  bool warp_ran = false;
  if (!not_started("warp")) {
    Item it{"warp", "PASS", "", ""};
    std::vector<WarpPair> w = warp_test(read_now_ordered, seconds * 0.3);
    uint64_t iters = 0;
    for (const WarpPair &p : w) {
      iters += p.iterations;
      warp_back += p.backward;
      if (p.max_warp_ticks > warp_max) warp_max = p.max_warp_ticks;
    }
    double warp_ns = (double)warp_max * (counter ? ns_per_tick(info) : 1.0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (w.empty()) {
      it.status = "SKIP";
      it.detail = online > 1 && counter
                      ? fmt("one CPU allowed to this process of %ld online: per-CPU offsets NOT "
                            "checked (drift and calibration cannot see them)",
                            online)
                      : std::string("one CPU: no pair to compare");
    } else {
      it.status = warp_back ? "FAIL" : "PASS";
      it.detail = fmt("%zu CPU pairs, %" PRIu64 " ordered hand-offs, %" PRIu64
                      " backward, largest warp %.1f ns%s",
                      w.size(), iters, warp_back, warp_ns,
                      counter ? "; the check that covers per-CPU offsets" : "");
      if (counter && online > 0 && (size_t)online > allowed_cpus().size())
        it.detail += fmt(" (on %zu of %ld online CPUs)", allowed_cpus().size(), online);
    }
    // every pair of every online CPU: what the decider may take as a verdict
    warp_ran = !w.empty() && online > 0 && allowed_cpus().size() == (size_t)online;
    it.json_extra = ",\"pairs\":" + json_u(w.size()) + ",\"iterations\":" + json_u(iters) +
                    ",\"backward\":" + json_u(warp_back) + ",\"max_warp_ns\":" + json_num(warp_ns);
    warp_max_ns = warp_ns;
    size_t n_cpus = allowed_cpus().size();
    bool all_done = w.size() == n_cpus * (n_cpus - 1) / 2;
    for (const WarpPair &p : w) all_done = all_done && p.completed;
    cut_short(&it, all_done);
    items.push_back(it);
  }
  // read cost vs the OS clock
  if (!not_started("read_cost")) {
    Item it{"read_cost", "SKIP", "", ""};
    double mine = tickclock__measure_read_ns(read_now);
    double os = tickclock__measure_read_ns(tickclock__os_read);
    it.json_extra = ",\"read_ns\":" + json_num(mine) + ",\"os_read_ns\":" + json_num(os) +
                    ",\"vdso_reads_tsc\":" + json_b(vdso_reads_tsc(ev));
    if (counter) {
      it.status = mine <= os ? "PASS" : "FAIL";
      it.detail = fmt("%.1f ns per read vs %.1f ns for clock_gettime (%.2fx)%s", mine, os,
                      mine / os, mine <= os ? "" : ": trapped or emulated?");
      if (info->source == TICKCLOCK_SOURCE_TSC && vdso_reads_tsc(ev))
        it.detail += fmt("; nearly vacuous here: the vDSO's clock_gettime executes RDTSC too "
                         "(clocksource %s), so a trapped RDTSC would slow both",
                         ev.clocksource);
    } else {
      it.detail = fmt("the OS clock itself: %.1f ns per read", os);
    }
    items.push_back(it);
  }
  // PR_SET_TSC: the library's behaviour in forked children, and whether
  // this host enforces it
  if (!not_started("pr_set_tsc")) {
    Item it{"pr_set_tsc", "SKIP", "", ""};
    TscFaults &f = tsc_faults;
    pr_set_tsc_after(&f);
    if (!f.applicable) {
      it.detail = f.not_why;
    } else if (child_cannot(f.before) && child_cannot(f.after)) {
      it.detail = "prctl(PR_SET_TSC) refused here: nothing to check";
    } else {
      bool before_ok = child_ok(f.before) || child_cannot(f.before);
      bool after_ok = child_ok(f.after) || child_cannot(f.after);
      it.status = before_ok && after_ok ? "PASS" : "FAIL";
      std::string enforced = child_segv(f.rdtsc)
                                 ? std::string("enforced here: RDTSC raises SIGSEGV afterwards")
                                 : child_ok(f.rdtsc)
                                       ? std::string("NOT enforced here: RDTSC keeps working afterwards")
                                       : "RDTSC afterwards: " + describe_status(f.rdtsc);
      enforced += child_segv(f.vdso) ? ", and so does the vDSO's clock_gettime"
                  : child_ok(f.vdso) ? "; the vDSO's clock_gettime keeps working"
                                     : "; vDSO clock_gettime: " + describe_status(f.vdso);
      it.detail = enforced + "; before first use: " +
                  (child_ok(f.before) ? "the OS clock, reason names PR_SET_TSC, no trap"
                   : child_cannot(f.before) ? "could not be injected"
                                            : "FAILED (" + describe_status(f.before) + ")") +
                  "; after init: " +
                  (child_ok(f.after) ? "tickclock_revalidate() switched to the OS clock, no trap"
                   : child_cannot(f.after) ? "the TSC could not be put in use"
                                           : "FAILED (" + describe_status(f.after) + ")");
    }
    it.json_extra = std::string(",\"enforced\":") +
                    (child_segv(f.rdtsc) ? "true" : child_ok(f.rdtsc) ? "false" : "null") +
                    ",\"vdso_traps\":" +
                    (child_segv(f.vdso) ? "true" : child_ok(f.vdso) ? "false" : "null") +
                    ",\"before_first_use\":" + json_str(f.applicable ? describe_status(f.before) : "not run") +
                    ",\"after_init\":" + json_str(f.applicable ? describe_status(f.after) : "not run");
    items.push_back(it);
  }

  const bool incomplete = interrupted();
  std::string unfinished_list;
  for (const std::string &u : unfinished) unfinished_list += (unfinished_list.empty() ? "" : ", ") + u;
  bool pass = true;
  for (const Item &it : items) pass = pass && it.status != "FAIL";
  std::string verdict =
      incomplete
          ? fmt("INCOMPLETE: interrupted by %s; not finished: %s%s", interrupt_name(),
                unfinished_list.c_str(), pass ? "" : " (and a check FAILED before that)")
          : fmt("%s: %s (%s) %s every check that applies", pass ? "PASS" : "FAIL",
                info->source_name, info->forced ? "forced" : "tickclock's choice",
                pass ? "passed" : "did not pass");
  if (incomplete) drop_fixture();  // an unfinished run is no record of the host

  if (fx) {
    std::fprintf(fx, "# tickclock fixture from `tickclock-probe validate`\n");
    std::fprintf(fx, "# validate.verdict: %s\n", pass ? "pass" : "fail");
    std::fprintf(fx, "# validate.source: %s (%s)\n", info->source_name,
                 info->forced ? "forced" : "tickclock's choice");
    std::fprintf(fx, "# validate.seconds: %g\n", seconds);
    std::fprintf(fx, "# observed.cpus: %zu\n", allowed_cpus().size());
    std::fprintf(fx, "# observed.drift_ppm: %.3f\n", drift_ppm);
    std::fprintf(fx, "# observed.warp_backward: %" PRIu64 "\n", warp_back);
    std::fprintf(fx, "# observed.warp_max_ticks: %" PRIu64 "\n", warp_max);
    std::fprintf(fx, "# observed.warp_max_ns: %.1f\n", warp_max_ns);
    std::fprintf(fx, "# observed.monotonic_backward: %" PRIu64 "\n", mono_back);
    // what the decider uses where the kernel gives no sync verdict
    int packages = count_packages();
    if (packages > 0) std::fprintf(fx, "# cpu_packages: %d\n", packages);
    if (warp_ran && counter) {
      std::fprintf(fx, "# warp_check: %s\n", warp_back ? "fail" : "pass");
      std::fprintf(fx, "# warp_max_ns: %.1f\n", warp_max_ns);
    }
    std::fprintf(fx, "# observed.pr_set_tsc_traps: %s\n",
                 tsc_faults.applicable ? traps(tsc_faults.rdtsc) : "unknown");
    std::fprintf(fx, "# observed.vdso_traps_after_pr_set_tsc: %s\n",
                 tsc_faults.applicable ? traps(tsc_faults.vdso) : "unknown");
    // the status as metadata (short), the detail as a plain comment (a
    // metadata value is limited in length)
    for (const Item &it : items) {
      std::fprintf(fx, "# validate.%s: %s\n", it.name.c_str(), it.status.c_str());
      std::fprintf(fx, "#   [%s] %s %s\n", it.status.c_str(), it.name.c_str(), esc(it.detail).c_str());
    }
    if (counter) std::fprintf(fx, "# calibration_hz: %" PRIu64 "/%" PRIu64 "\n", info->hz_num, info->hz_den);
    for (unsigned k = 0; k < info->n_candidates; k++)
      if (info->candidates[k].read_ns > 0)
        std::fprintf(fx, "# read_ns.%s: %.1f\n", info->candidates[k].name, info->candidates[k].read_ns);
    if (!info->forced) {
      std::fprintf(fx, "# expect.source: %s\n", info->source_name);
      std::fprintf(fx, "# expect.freq: %s\n",
                   info->freq_detail ? info->freq_detail : info->freq_method_name);
      if (counter && info->freq_detail && std::strcmp(info->freq_detail, "calibration") != 0)
        std::fprintf(fx, "# expect.hz: %.0f\n", info->hz);
    }
    write_cpuid_dump(fx);
    if (std::ferror(fx) || std::fclose(fx) != 0) {
      std::fprintf(stderr, "tickclock-probe validate: --fixture-out %s: write failed\n",
                   esc(fixture_out).c_str());
      return 3;
    }
  }

  if (json) {
    std::string o = "{\"command\":\"validate\",\"source\":" + json_str(info->source_name) +
                    ",\"forced\":" + json_b(info->forced) + ",\"seconds\":" + json_num(seconds) +
                    ",\"interrupted\":" + json_b(incomplete) + ",\"unfinished\":[";
    for (size_t k = 0; k < unfinished.size(); k++) o += (k ? "," : "") + json_str(unfinished[k]);
    o += "],\"checks\":[";
    for (size_t k = 0; k < items.size(); k++)
      o += (k ? "," : "") + std::string("{\"name\":") + json_str(items[k].name) +
           ",\"status\":" + json_str(items[k].status) + ",\"detail\":" +
           json_str(items[k].detail) + items[k].json_extra + "}";
    o += "],\"verdict\":" + json_str(incomplete ? "INCOMPLETE" : pass ? "PASS" : "FAIL") +
         ",\"summary\":" + json_str(verdict) + "}";
    std::printf("%s\n", o.c_str());
  } else {
    std::printf("tickclock-probe validate: %s (%s)\n", info->source_name, info->why);
    for (const Item &it : items)
      std::printf("  [%-4s] %-12s %s\n", it.status.c_str(), it.name.c_str(), it.detail.c_str());
    std::printf("verdict: %s\n", verdict.c_str());
    if (fx) std::printf("fixture written to %s\n", esc(fixture_out).c_str());
    else if (incomplete && !fixture_out.empty())
      std::printf("fixture not written: the run did not finish\n");
  }
  if (incomplete) {
    std::fprintf(stderr, "tickclock-probe validate: %s\n", verdict.c_str());
    return interrupted_exit();
  }
  return pass ? 0 : 1;
}

}  // namespace tickclock_probe
