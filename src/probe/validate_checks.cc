// tickclock-probe validate: every check, in the order they run. Each one
// is PASS, FAIL or SKIP with the reason and carries its numbers (see
// cmd_validate.cc for what each covers).
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/probe/checks.h"
#include "src/probe/json.h"
#include "src/probe/util.h"
#include "src/probe/validate.h"

namespace tickclock_probe {
namespace {

// (counter, raw, counter) with the tightest bracket, as calibration takes it.
void bracket(uint64_t *counter_mid, uint64_t *raw, uint64_t *width) {
  tkt_tightest_bracket(read_now_ordered, counter_mid, raw, width);
}

// Does the kernel's clock (and so the vDSO's clock_gettime) read the TSC
// itself? Then a trapped RDTSC slows both.
bool vdso_reads_tsc(const tickclock_evidence &ev) {
  if (!ev.clocksource_known) return false;
  for (const char *cs : {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"})
    if (std::strcmp(ev.clocksource, cs) == 0) return true;
  return false;
}

bool check_cpuid(Run &r, Item &it) {
#if defined(__x86_64__) || defined(__i386__)
  const tickclock_x86_facts &x = r.ev.x86;
  it.detail = fmt("%s family %u model 0x%x: TSC %s, invariant TSC %s, RDTSCP %s, hypervisor %s",
                  x.vendor, x.family, x.model, x.tsc ? "yes" : "no", x.invariant_tsc ? "yes" : "no",
                  x.rdtscp ? "yes" : "no", x.hypervisor ? "yes" : "no");
  it.json_extra = fmt(",\"tsc\":%s,\"invariant_tsc\":%s,\"rdtscp\":%s,\"hypervisor_bit\":%s",
                      x.tsc ? "true" : "false", x.invariant_tsc ? "true" : "false",
                      x.rdtscp ? "true" : "false", x.hypervisor ? "true" : "false");
  if (r.info->source == TICKCLOCK_SOURCE_TSC)
    it.status = (x.tsc && x.invariant_tsc) ? "PASS" : "FAIL";
  else
    it.detail = "not the TSC (" + std::string(r.info->source_name) + "); " + it.detail;
#else
  it.detail = "not x86";
#endif
  return true;
}

}  // namespace

// The kernel's verdict on the TSC, read as the decider reads it: the kernel
// runs on or offers the TSC, or (an automatic choice only) its clock is the
// TSC scaled by a paravirtual page that passes the page's own checks (a
// kvm-clock page's even version, stable bit, multiplier, shift and rate; a
// Hyper-V page's valid sequence), which the library took as the TSC's
// trust at the page's rate. A host that marks the TSC unstable to restore
// snapshots offers only the page (tsc=unstable). The page judged is the
// one read now, after the run's choice: one found unstable since fails.
std::string clocksource_verdict(const tickclock_info &info, const tickclock_evidence &ev,
                                std::string *detail) {
  if (info.source != TICKCLOCK_SOURCE_TSC || !ev.os_linux) return "SKIP";
  bool offered = ev.clocksource_known &&
                 (std::strcmp(ev.clocksource, "tsc") == 0 ||
                  (ev.available_known && tkt_has_word(ev.available_clocksource, "tsc")));
  if (offered) return "PASS";
  if (!ev.clocksource_known) {
    *detail += ": the kernel's clocksource could not be read, so its verdict on the TSC is unknown";
    return "FAIL";
  }
  const tickclock_freq *claim = tkt_pv_claim(&ev);
  bool page_ok = claim != nullptr && claim->ok;
  bool by_page =
      page_ok && info.forced == TICKCLOCK_FORCED_NO && info.freq_method == TICKCLOCK_FREQ_PVCLOCK;
  if (by_page) {
    *detail += ev.pv.kind == TKT_PV_HYPERV
                   ? ": the kernel does not offer the TSC, but its clock is the TSC scaled by a "
                     "valid Hyper-V TSC page, which the library took as the TSC's trust"
                   : std::string(
                         ": the kernel does not offer the TSC, but its clock is the TSC "
                         "scaled by a stable '") +
                         ev.clocksource +
                         "' page, which the library took as the TSC's trust (warp checks the "
                         "host's promise of one TSC for every vCPU)";
    return "PASS";
  }
  *detail += ": the kernel does not offer the TSC";
  if (claim != nullptr && !claim->ok && claim->why[0] != '\0')
    *detail += std::string(", and its clock page fails: ") + claim->why;
  return "FAIL";
}

namespace {

bool check_clocksource(Run &r, Item &it) {
  it.detail = r.ev.clocksource_known ? fmt("current %s, available: %s", r.ev.clocksource,
                                           r.ev.available_known ? r.ev.available_clocksource : "?")
                                     : std::string("not readable");
  it.json_extra =
      ",\"current\":" + (r.ev.clocksource_known ? json_str(r.ev.clocksource) : "null") +
      ",\"available\":" + (r.ev.available_known ? json_str(r.ev.available_clocksource) : "null");
  std::string v = clocksource_verdict(*r.info, r.ev, &it.detail);
  if (v != "SKIP")
    it.status = v;
  else if (!r.counter)
    it.detail += " (the OS clock is in use)";
  return true;
}

bool check_frequency(Run &r, Item &it) {
  if (r.counter) {
    bool ok = true;
    std::string list;
    for (unsigned k = 0; k < r.info->n_freqs; k++) {
      const tickclock_freq_candidate &f = r.info->freqs[k];
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
    it.detail =
        fmt("using %.6f MHz (%s, +-%.2f ppm); max pairwise disagreement %.2f ppm; %s",
            r.info->hz / 1e6, r.info->freq_detail ? r.info->freq_detail : r.info->freq_method_name,
            r.info->uncertainty_ppm, r.info->max_disagreement_ppm, list.c_str());
    it.json_extra = ",\"hz\":" + json_hz(r.info->hz) + ",\"hz_num\":" + json_u(r.info->hz_num) +
                    ",\"hz_den\":" + json_u(r.info->hz_den) +
                    ",\"uncertainty_ppm\":" + json_num(r.info->uncertainty_ppm) +
                    ",\"max_disagreement_ppm\":" + json_num(r.info->max_disagreement_ppm);
    if (!ok) it.detail += " — a source disagrees beyond its bound";
  } else {
    it.detail = "ticks are nanoseconds (the OS clock)";
  }
  return true;
}

bool check_drift(Run &r, Item &it) {
  double span = r.seconds * 0.4;
  uint64_t c0, r0, w0, c1, r1, w1;
  bracket(&c0, &r0, &w0);
  uint64_t end = r0 + (uint64_t)(span * 1e9);
  for (uint64_t now = mono_raw_ns(); now < end && !interrupted(); now = mono_raw_ns()) {
    progress("%.1f of %.1f s", (double)(now - r0) / 1e9, span);
    struct timespec req = {0, 5000000};
    nanosleep(&req, nullptr);
  }
  bracket(&c1, &r1, &w1);
  double counter_ns = (double)tickclock_delta_ns(c0, c1);
  double raw = (double)(r1 - r0);
  r.drift_ppm = (counter_ns - raw) / raw * 1e6;
  // the bound: the frequency's own uncertainty, the brackets, 2 ns of
  // clock granularity, plus 5 ppm; CLOCK_MONOTONIC may be slewed by NTP
  // (at most 500 ppm) relative to MONOTONIC_RAW.
  double bracket_ppm =
      ((double)(w0 + w1) / 2.0 * (r.counter ? ns_per_tick(r.info) : 1.0) + 2.0) / raw * 1e6;
  double bound = r.counter ? 3 * r.info->uncertainty_ppm + bracket_ppm + 5.0 : 500.0;
  it.status = std::fabs(r.drift_ppm) <= bound ? "PASS" : "FAIL";
  it.detail = fmt("%+.3f ppm over %.2f s against CLOCK_MONOTONIC_RAW (bound %.2f ppm%s)",
                  r.drift_ppm, raw / 1e9, bound, r.counter ? "" : ": NTP slew allowance");
  if (r.info->source == TICKCLOCK_SOURCE_TSC && r.ev.clocksource_known &&
      std::strcmp(r.ev.clocksource, "tsc") == 0)
    it.detail +=
        "; CLOCK_MONOTONIC_RAW is this TSC (clocksource tsc): blind to per-CPU "
        "offsets, which the warp check covers";
  it.json_extra = ",\"ppm\":" + json_num(r.drift_ppm) + ",\"bound_ppm\":" + json_num(bound) +
                  ",\"seconds\":" + json_num(raw / 1e9);
  return r1 >= end;
}

bool check_monotonic(Run &r, Item &it) {
  std::vector<MonoCpu> m = monotonic_per_cpu(read_now, read_now_ordered, r.seconds * 0.2);
  uint64_t reads = 0;
  int unpinned = 0;
  for (const MonoCpu &c : m) {
    reads += c.reads;
    r.mono_back += c.backward;
    unpinned += !c.pinned;
  }
  it.status = r.mono_back ? "FAIL" : "PASS";
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  it.detail = fmt("%" PRIu64 " reads on %zu CPUs, %" PRIu64 " backward steps%s", reads, m.size(),
                  r.mono_back, unpinned ? " (some threads could not be pinned)" : "");
  if (online > 0 && (size_t)online > allowed_cpus().size())
    it.detail +=
        fmt(" (on the %zu of %ld online CPUs this process may use)", allowed_cpus().size(), online);
  it.json_extra = ",\"reads\":" + json_u(reads) + ",\"cpus\":" + json_u(m.size()) +
                  ",\"backward\":" + json_u(r.mono_back);
  bool all_done = m.size() == allowed_cpus().size();
  for (const MonoCpu &c : m) all_done = all_done && c.completed;
  return all_done;
}

bool check_warp(Run &r, Item &it) {
  std::vector<WarpPair> w = warp_test(read_now_ordered, r.seconds * 0.3);
  uint64_t iters = 0;
  for (const WarpPair &p : w) {
    iters += p.iterations;
    r.warp_back += p.backward;
    if (p.max_warp_ticks > r.warp_max) r.warp_max = p.max_warp_ticks;
  }
  double warp_ns = (double)r.warp_max * (r.counter ? ns_per_tick(r.info) : 1.0);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (w.empty() && online > 1) {
    // the check applies (this program may run on the other CPUs) but has no
    // pair here: not a pass
    it.status = "NOT_RUN";
    it.detail =
        fmt("one CPU allowed to this process of %ld online: per-CPU offsets NOT "
            "checked (drift and calibration cannot see them)",
            online);
    it.advice = "run with >= 2 CPUs (no taskset, a cpuset or container with more CPUs)";
  } else if (w.empty()) {
    it.status = "SKIP";
    it.detail = "one CPU online: no pair to compare, no per-CPU offset possible";
  } else {
    it.status = r.warp_back ? "FAIL" : "PASS";
    it.detail = fmt("%zu CPU pairs, %" PRIu64 " ordered hand-offs, %" PRIu64
                    " backward, largest warp %.1f ns%s",
                    w.size(), iters, r.warp_back, warp_ns,
                    r.counter ? "; the check that covers per-CPU offsets" : "");
    if (r.counter && online > 0 && (size_t)online > allowed_cpus().size())
      it.detail += fmt(" (on %zu of %ld online CPUs)", allowed_cpus().size(), online);
  }
  // every pair of every online CPU: what the decider may take as a verdict
  r.warp_ran = !w.empty() && online > 0 && allowed_cpus().size() == (size_t)online;
  it.json_extra = ",\"pairs\":" + json_u(w.size()) + ",\"iterations\":" + json_u(iters) +
                  ",\"backward\":" + json_u(r.warp_back) + ",\"max_warp_ns\":" + json_num(warp_ns);
  r.warp_max_ns = warp_ns;
  size_t n_cpus = allowed_cpus().size();
  bool all_done = w.size() == n_cpus * (n_cpus - 1) / 2;
  for (const WarpPair &p : w) all_done = all_done && p.completed;
  return all_done;
}

bool check_read_cost(Run &r, Item &it) {
  double mine = tkt_measure_read_ns(read_now);
  double os = tkt_measure_read_ns(tkt_os_read);
  it.json_extra = ",\"read_ns\":" + json_num(mine) + ",\"os_read_ns\":" + json_num(os) +
                  ",\"vdso_reads_tsc\":" + json_b(vdso_reads_tsc(r.ev));
  if (r.counter) {
    it.status = mine <= os ? "PASS" : "FAIL";
    it.detail = fmt("%.1f ns per read vs %.1f ns for clock_gettime (%.2fx)%s", mine, os, mine / os,
                    mine <= os ? "" : ": trapped or emulated?");
    if (r.info->source == TICKCLOCK_SOURCE_TSC && vdso_reads_tsc(r.ev))
      it.detail +=
          fmt("; nearly vacuous here: the vDSO's clock_gettime executes RDTSC too "
              "(clocksource %s), so a trapped RDTSC would slow both",
              r.ev.clocksource);
  } else {
    it.detail = fmt("the OS clock itself: %.1f ns per read", os);
  }
  return true;
}

bool check_pr_set_tsc(Run &r, Item &it) {
  TscFaults &f = r.tsc_faults;
  pr_set_tsc_after(&f);
  if (!f.applicable) {
    it.detail = f.not_why;
  } else if (child_cannot(f.before) && child_cannot(f.after)) {
    it.detail = "prctl(PR_SET_TSC) refused here: nothing to check";
  } else {
    bool before_ok = child_ok(f.before) || child_cannot(f.before);
    bool after_ok = child_ok(f.after) || child_cannot(f.after);
    it.status = before_ok && after_ok ? "PASS" : "FAIL";
    std::string enforced =
        child_segv(f.rdtsc) ? std::string("enforced here: RDTSC raises SIGSEGV afterwards")
        : child_ok(f.rdtsc) ? std::string("NOT enforced here: RDTSC keeps working afterwards")
                            : "RDTSC afterwards: " + describe_status(f.rdtsc);
    enforced += child_segv(f.vdso) ? ", and so does the vDSO's clock_gettime"
                : child_ok(f.vdso) ? "; the vDSO's clock_gettime keeps working"
                                   : "; vDSO clock_gettime: " + describe_status(f.vdso);
    it.detail = enforced + "; before first use: " +
                (child_ok(f.before)       ? "the OS clock, reason names PR_SET_TSC, no trap"
                 : child_cannot(f.before) ? "could not be injected"
                                          : "FAILED (" + describe_status(f.before) + ")") +
                "; after init: " +
                (child_ok(f.after) ? "tickclock_revalidate() switched to the OS clock, no trap"
                 : child_cannot(f.after) ? "the TSC could not be put in use"
                                         : "FAILED (" + describe_status(f.after) + ")");
  }
  it.json_extra =
      std::string(",\"enforced\":") +
      (child_segv(f.rdtsc) ? "true"
       : child_ok(f.rdtsc) ? "false"
                           : "null") +
      ",\"vdso_traps\":" +
      (child_segv(f.vdso) ? "true"
       : child_ok(f.vdso) ? "false"
                          : "null") +
      ",\"before_first_use\":" + json_str(f.applicable ? describe_status(f.before) : "not run") +
      ",\"after_init\":" + json_str(f.applicable ? describe_status(f.after) : "not run");
  return true;
}

}  // namespace

// essential: the checks without which the source cannot be trusted (a
// counter's flags and the kernel's verdict, its frequency, its rate against
// the OS, its order on one CPU and across CPUs). read_cost and pr_set_tsc
// are about cost and a fault path: their SKIP never makes a run inconclusive.
const Check kChecks[] = {
    {"cpuid", check_cpuid, true,
     "the CPU does not state an invariant TSC: use the OS clock here (TICKCLOCK_SOURCE=system)"},
    {"clocksource", check_clocksource, true,
     "the kernel does not trust the TSC (see `dmesg | grep -i -E 'tsc|clocksource'`): use the "
     "OS clock here (TICKCLOCK_SOURCE=system)"},
    {"frequency", check_frequency, true,
     "frequency sources disagree: keep TICKCLOCK_SOURCE=system and send the fixture "
     "(--fixture-out) with the report (tickclock-probe --json)"},
    {"drift", check_drift, true,
     "the converted counter drifts from CLOCK_MONOTONIC_RAW: rerun with --seconds 10 on an idle "
     "host; if it persists, use TICKCLOCK_SOURCE=system and send the fixture"},
    {"monotonic", check_monotonic, true,
     "reads stepped back on one CPU: use TICKCLOCK_SOURCE=system and send the fixture"},
    {"warp", check_warp, true,
     "per-CPU offsets (reads went back across CPUs): use TICKCLOCK_SOURCE=system on this host "
     "and send the fixture"},
    {"read_cost", check_read_cost, false,
     "a read costs more than clock_gettime (trapped or emulated): use TICKCLOCK_SOURCE=system"},
    {"pr_set_tsc", check_pr_set_tsc, false,
     "the PR_SET_TSC fallback misbehaved: send the fixture and the JSON output with a bug "
     "report"},
};
const size_t kNumChecks = sizeof kChecks / sizeof kChecks[0];

}  // namespace tickclock_probe
