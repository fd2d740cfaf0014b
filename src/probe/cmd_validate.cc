// tickclock-probe validate [--seconds S] [--source NAME] [--fixture-out F] [--json]
//
// The checklist for a new machine or hypervisor. Every item is PASS, FAIL,
// SKIP (does not apply, with the reason) or NOT_RUN (applies but could not
// run here) and carries its numbers. The verdict: FAIL (exit 1) naming the
// failed checks and the next step; else INCONCLUSIVE (exit 4) when an
// essential check (kChecks[].essential) is NOT_RUN, naming it and what to
// do; else PASS (exit 0): the source tickclock chose (or the one named with
// --source) passed every item that applies to it.
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
// decision, the kernel command line's clock words) ready for
// tests/fixtures/hosts/; its path is checked before
// anything is measured, and it is written to a temporary file renamed over
// the path only at the end. Ctrl-C (or SIGTERM) ends the run early: the
// verdict is INCOMPLETE, the checks not finished are listed, the fixture
// path is left as it was, and the exit status is 128 + the signal (130).
// Where the OS clock was chosen over an x86 TSC, the verdict is followed by
// why (what the host states), what it costs and what the operator may do
// (validate_advice.cc; "refusal" in --json).
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/probe/checks.h"
#include "src/probe/commands.h"
#include "src/probe/json.h"
#include "src/probe/util.h"
#include "src/probe/validate.h"

namespace tickclock_probe {

int cmd_validate(int argc, char **argv) {
  double seconds = 2.0;
  std::string fixture_out, source;
  bool json = false;
  parse_options(argc, argv, "--seconds S, --source NAME, --fixture-out FILE, --json",
                [&](const Option &o) {
                  if (common_option(o, &seconds, &source, &json)) return true;
                  if (o.name != "--fixture-out") return false;
                  fixture_out = o.value();
                  return true;
                });
  if (!source.empty() && source_of_name(source) < 0)
    throw UsageError{"--source: unknown source '" + source + "' (expected " + source_vocabulary() +
                     ")"};
  // the fixture's file is opened before anything is measured: a bad path
  // fails at once. It is a temporary file until the run finishes: an
  // interrupted or failed run leaves whatever the path held.
  AtomicOutput fixture;
  if (!fixture_out.empty()) fixture.open("--fixture-out", fixture_out);
  progress_enable(json);
  Run r;
  r.seconds = seconds;
  pr_set_tsc_before(&r.tsc_faults);  // first: this process has not used the library yet
  if (!source.empty())
    force_source(source);  // the source under test (a UsageError drops the fixture)
  const tickclock_info *info = settled_info();
  const bool counter =
      info->source != TICKCLOCK_SOURCE_SYSTEM && info->source != TICKCLOCK_SOURCE_QPC;
  r.info = info;
  r.counter = counter;
  tkt_gather(&r.ev);
  std::vector<Item> items;
  // checks not run or cut short by a signal: (check, reason)
  Unfinished unfinished;
  for (size_t k = 0; k < kNumChecks; k++) {
    const Check &c = kChecks[k];
    if (interrupted()) {  // a check the signal kept from starting is listed, not run
      items.push_back(Item{c.name, "INCOMPLETE", "not run: interrupted before it started", "", ""});
      unfinished.not_started(c.name);
      continue;
    }
    progress_prefix(fmt("validate [%zu/%zu] %s: ", k + 1, kNumChecks, c.name));
    progress("running");
    Item it{c.name, "SKIP", "", "", ""};
    if (!c.run(r, it)) {  // a timed check the signal ended early: its figures are partial
      it.status = "INCOMPLETE";
      it.detail += " (cut short by the interruption)";
      unfinished.cut_short(it.name);
    }
    items.push_back(it);
  }
  progress_clear();

  const bool incomplete = interrupted();
  // FAIL: any check failed. INCONCLUSIVE: none failed, but an essential one
  // could not run. PASS: every check that applies ran and passed.
  std::vector<size_t> failed, not_run;
  for (size_t k = 0; k < items.size(); k++) {
    if (items[k].status == "FAIL") failed.push_back(k);
    if (items[k].status == "NOT_RUN" && kChecks[k].essential) not_run.push_back(k);
  }
  const bool pass = failed.empty();
  std::string verdict_name = incomplete         ? "INCOMPLETE"
                             : !failed.empty()  ? "FAIL"
                             : !not_run.empty() ? "INCONCLUSIVE"
                                                : "PASS";
  std::string who =
      fmt("%s (%s)", info->source_name, info->forced ? "forced" : "tickclock's choice");
  std::string names, next, nr_names, nr_next;
  for (size_t k : failed) {
    names += (names.empty() ? "" : ", ") + items[k].name;
    next += (next.empty() ? "" : "; ") + items[k].name + ": " + kChecks[k].next_step;
  }
  for (size_t k : not_run) {
    nr_names += (nr_names.empty() ? "" : ", ") + items[k].name;
    nr_next += (nr_next.empty() ? "" : "; ") + items[k].name + ": " + items[k].advice;
  }
  std::string verdict =
      incomplete ? unfinished.line() + (pass ? "" : " (and a check FAILED before that)")
      : !failed.empty()
          ? "FAIL: " + who + " failed: " + names + ". Next: " + next +
                (not_run.empty() ? "" : ". Also NOT run: " + nr_names + " (" + nr_next + ")")
      : !not_run.empty()
          ? "INCONCLUSIVE: " + who + " passed what ran, but the essential check" +
                (not_run.size() > 1 ? "s " : " ") + nr_names +
                (not_run.size() > 1 ? " were" : " was") + " NOT run. Next: " + nr_next
          : "PASS: " + who + " passed every check that applies";
  if (incomplete) fixture.abandon();  // an unfinished run is no record of the host
  const Advice advice = incomplete ? Advice() : explain_refusal(r);

  if (FILE *fx = fixture.file()) {
    std::string lower = verdict_name;
    for (char &ch : lower) ch = (char)std::tolower((unsigned char)ch);
    std::fprintf(fx, "# tickclock fixture from `tickclock-probe validate`\n");
    std::fprintf(fx, "# validate.verdict: %s\n", lower.c_str());
    std::fprintf(fx, "# validate.source: %s\n", who.c_str());
    std::fprintf(fx, "# validate.seconds: %g\n", seconds);
    std::fprintf(fx, "# observed.cpus: %zu\n", allowed_cpus().size());
    // the kernel's clock words (a value is at most 207 characters)
    std::string words = kernel_clock_words(200);
    if (!words.empty()) std::fprintf(fx, "# kernel.cmdline_clock: %s\n", words.c_str());
    std::fprintf(fx, "# observed.drift_ppm: %.3f\n", r.drift_ppm);
    std::fprintf(fx, "# observed.warp_backward: %" PRIu64 "\n", r.warp_back);
    std::fprintf(fx, "# observed.warp_max_ticks: %" PRIu64 "\n", r.warp_max);
    std::fprintf(fx, "# observed.warp_max_ns: %.1f\n", r.warp_max_ns);
    std::fprintf(fx, "# observed.monotonic_backward: %" PRIu64 "\n", r.mono_back);
    // what the decider uses where the kernel gives no sync verdict
    int packages = count_packages();
    if (packages > 0) std::fprintf(fx, "# cpu_packages: %d\n", packages);
    if (r.warp_ran && counter) {
      std::fprintf(fx, "# warp_check: %s\n", r.warp_back ? "fail" : "pass");
      std::fprintf(fx, "# r.warp_max_ns: %.1f\n", r.warp_max_ns);
    }
    std::fprintf(fx, "# observed.pr_set_tsc_traps: %s\n",
                 r.tsc_faults.applicable ? traps(r.tsc_faults.rdtsc) : "unknown");
    std::fprintf(fx, "# observed.vdso_traps_after_pr_set_tsc: %s\n",
                 r.tsc_faults.applicable ? traps(r.tsc_faults.vdso) : "unknown");
    // the status as metadata (short), the detail as a plain comment (a
    // metadata value is limited in length)
    for (const Item &it : items) {
      std::fprintf(fx, "# validate.%s: %s\n", it.name.c_str(), it.status.c_str());
      std::fprintf(fx, "#   [%s] %s %s\n", it.status.c_str(), it.name.c_str(),
                   esc(it.detail).c_str());
    }
    if (counter)
      std::fprintf(fx, "# calibration_hz: %" PRIu64 "/%" PRIu64 "\n", info->hz_num, info->hz_den);
    // the kvm-clock page as read here: a replay decides from it again
    if (r.ev.pv.kind == TKT_PV_KVM) {
      std::fprintf(fx, "# pvclock.version: %u\n# pvclock.flags: 0x%x\n", (unsigned)r.ev.pv.version,
                   (unsigned)r.ev.pv.flags);
      std::fprintf(fx, "# pvclock.mul: %u\n# pvclock.shift: %d\n", (unsigned)r.ev.pv.mul,
                   (int)r.ev.pv.shift);
      std::fprintf(fx, "# pvclock.tsc_timestamp: %" PRIu64 "\n# pvclock.system_time: %" PRIu64 "\n",
                   r.ev.pv.tsc_timestamp, r.ev.pv.system_time);
    } else if (tkt_pv_claim(&r.ev) != nullptr && r.ev.pv.absent != 0) {
      std::fprintf(fx, "# pvclock.absent: %s\n",
                   r.ev.pv.absent == TKT_PV_ABSENT_UNMAPPED  ? "unmapped"
                   : r.ev.pv.absent == TKT_PV_ABSENT_TORN    ? "torn"
                   : r.ev.pv.absent == TKT_PV_ABSENT_NO_MAPS ? "no_maps"
                                                             : "no_mapping");
    }
    for (unsigned k = 0; k < info->n_candidates; k++)
      if (info->candidates[k].read_ns > 0)
        std::fprintf(fx, "# read_ns.%s: %.1f\n", info->candidates[k].name,
                     info->candidates[k].read_ns);
    if (!info->forced) {
      std::fprintf(fx, "# expect.source: %s\n", info->source_name);
      std::fprintf(fx, "# expect.freq: %s\n",
                   info->freq_detail ? info->freq_detail : info->freq_method_name);
      if (counter && info->freq_detail && std::strcmp(info->freq_detail, "calibration") != 0)
        std::fprintf(fx, "# expect.hz: %.0f\n", info->hz);
    }
    write_cpuid_dump(fx);
    if (!fixture.commit()) {
      std::fprintf(stderr, "tickclock-probe validate: --fixture-out %s: write failed: %s\n",
                   esc(fixture_out).c_str(), std::strerror(errno));
      return kExitWrite;
    }
  }

  if (json) {
    std::string o = json_envelope("validate") + ",\"source\":" + json_str(info->source_name) +
                    ",\"forced\":" + json_b(info->forced) + ",\"seconds\":" + json_num(seconds) +
                    ",\"cpus\":" + json_u(allowed_cpus().size()) +
                    ",\"interrupted\":" + json_b(incomplete) +
                    ",\"unfinished\":" + unfinished.json() + ",\"refusal\":" + advice.json();
    o += ",\"checks\":[";
    for (size_t k = 0; k < items.size(); k++)
      o += (k ? "," : "") + std::string("{\"name\":") + json_str(items[k].name) +
           ",\"status\":" + json_str(items[k].status) +
           ",\"essential\":" + json_b(kChecks[k].essential) +
           ",\"detail\":" + json_str(items[k].detail) + items[k].json_extra + "}";
    o += "],\"failed\":[";
    for (size_t k = 0; k < failed.size(); k++)
      o += (k ? "," : "") + json_unfinished(items[failed[k]].name, kChecks[failed[k]].next_step);
    o += "],\"not_run\":[";
    for (size_t k = 0; k < not_run.size(); k++)
      o += (k ? "," : "") +
           json_unfinished(items[not_run[k]].name,
                           items[not_run[k]].detail + "; " + items[not_run[k]].advice);
    o += "],\"verdict\":" + json_str(verdict_name) + ",\"summary\":" + json_str(verdict) + "}";
    std::printf("%s\n", o.c_str());
  } else {
    std::printf("tickclock-probe validate: %s (%s)\n", info->source_name, info->why);
    for (const Item &it : items)
      std::printf("  [%-4s] %-12s %s%s\n", it.status.c_str(), it.name.c_str(), it.detail.c_str(),
                  it.advice.empty() ? "" : (" -- " + it.advice).c_str());
    std::printf("verdict: %s\n", verdict.c_str());
    for (const std::string &l : advice.lines) std::printf("  %s\n", l.c_str());
    if (!fixture_out.empty() && !incomplete)
      std::printf("fixture written to %s\n", esc(fixture_out).c_str());
    else if (incomplete && !fixture_out.empty())
      std::printf("fixture not written: the run did not finish (%s left as it was)\n",
                  esc(fixture_out).c_str());
  }
  if (incomplete) return unfinished.finish("validate", verdict);
  return !failed.empty() ? kExitFail : !not_run.empty() ? kExitInconclusive : kExitOk;
}

}  // namespace tickclock_probe
