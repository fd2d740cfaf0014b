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
#include <unistd.h>

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
  Run r;
  r.seconds = seconds;
  pr_set_tsc_before(&r.tsc_faults);  // first: this process has not used the library yet
  if (!source.empty()) {
    try {
      force_source(source);  // the source under test
    } catch (...) {
      drop_fixture();
      throw;
    }
  }
  const tickclock_info *info = settled_info();
  const bool counter = info->source != TICKCLOCK_SOURCE_SYSTEM && info->source != TICKCLOCK_SOURCE_QPC;
  r.info = info;
  r.counter = counter;
  tkc_gather(nullptr, &r.ev);
  std::vector<Item> items;
  std::vector<std::string> unfinished;  // checks not run or cut short by a signal
  for (size_t k = 0; k < kNumChecks; k++) {
    const Check &c = kChecks[k];
    if (interrupted()) {  // a check the signal kept from starting is listed, not run
      items.push_back(Item{c.name, "INCOMPLETE", "not run: interrupted before it started", ""});
      unfinished.push_back(c.name);
      continue;
    }
    Item it{c.name, "SKIP", "", ""};
    if (!c.run(r, it)) {  // a timed check the signal ended early: its figures are partial
      it.status = "INCOMPLETE";
      it.detail += " (cut short by the interruption)";
      unfinished.push_back(it.name);
    }
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
