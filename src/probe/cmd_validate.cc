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
//   monotonic    consecutive reads on every CPU never step back
//   warp         cross-CPU ordering, Linux tsc_sync style, every CPU pair
//   read_cost    a read costs less than clock_gettime (not trapped)
// --fixture-out writes a fixture (CPUID dump, observed facts, expected
// decision) ready for tests/fixtures/cpuid/.
#include <time.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
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
  if (!source.empty()) force_source(source);  // the source under test
  FILE *fx = nullptr;
  if (!fixture_out.empty()) {
    fx = std::fopen(fixture_out.c_str(), "w");
    if (!fx) {
      std::fprintf(stderr, "tickclock-probe validate: %s: cannot open for writing: %s\n",
                   fixture_out.c_str(), std::strerror(errno));
      return 2;
    }
  }
  install_sigint();
  const tickclock_info *info = tickclock_info_get();
  const bool counter = info->source != TICKCLOCK_SOURCE_SYSTEM && info->source != TICKCLOCK_SOURCE_QPC;
  tickclock_evidence ev;
  tickclock__gather(nullptr, &ev);
  std::vector<Item> items;

  // cpuid
  {
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
  {
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
  {
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
      it.json_extra = ",\"hz\":" + json_num(info->hz) + ",\"uncertainty_ppm\":" +
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
  {
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
    it.json_extra = ",\"ppm\":" + json_num(drift_ppm) + ",\"bound_ppm\":" + json_num(bound) +
                    ",\"seconds\":" + json_num(raw / 1e9);
    items.push_back(it);
  }
  // monotonic on every CPU
  uint64_t mono_back = 0;
  {
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
    items.push_back(it);
  }
  // warp
  uint64_t warp_back = 0, warp_max = 0;
  {
    Item it{"warp", "PASS", "", ""};
    std::vector<WarpPair> w = warp_test(read_now_ordered, seconds * 0.3);
    uint64_t iters = 0;
    for (const WarpPair &p : w) {
      iters += p.iterations;
      warp_back += p.backward;
      if (p.max_warp_ticks > warp_max) warp_max = p.max_warp_ticks;
    }
    double warp_ns = (double)warp_max * (counter ? ns_per_tick(info) : 1.0);
    if (w.empty()) {
      it.status = "SKIP";
      it.detail = "one CPU: no pair to compare";
    } else {
      it.status = warp_back ? "FAIL" : "PASS";
      it.detail = fmt("%zu CPU pairs, %" PRIu64 " ordered hand-offs, %" PRIu64
                      " backward, largest warp %.1f ns",
                      w.size(), iters, warp_back, warp_ns);
    }
    it.json_extra = ",\"pairs\":" + json_u(w.size()) + ",\"iterations\":" + json_u(iters) +
                    ",\"backward\":" + json_u(warp_back) + ",\"max_warp_ns\":" + json_num(warp_ns);
    items.push_back(it);
  }
  // read cost vs the OS clock
  {
    Item it{"read_cost", "SKIP", "", ""};
    double mine = tickclock__measure_read_ns(read_now);
    double os = tickclock__measure_read_ns(tickclock__os_read);
    it.json_extra = ",\"read_ns\":" + json_num(mine) + ",\"os_read_ns\":" + json_num(os);
    if (counter) {
      it.status = mine <= os ? "PASS" : "FAIL";
      it.detail = fmt("%.1f ns per read vs %.1f ns for clock_gettime (%.2fx)%s", mine, os,
                      mine / os, mine <= os ? "" : ": trapped or emulated?");
    } else {
      it.detail = fmt("the OS clock itself: %.1f ns per read", os);
    }
    items.push_back(it);
  }

  bool pass = true;
  for (const Item &it : items) pass = pass && it.status != "FAIL";
  std::string verdict =
      fmt("%s: %s (%s) %s every check that applies", pass ? "PASS" : "FAIL", info->source_name,
          info->forced ? "forced" : "tickclock's choice", pass ? "passed" : "did not pass");

  if (fx) {
    std::fprintf(fx, "# tickclock fixture from `tickclock-probe validate`\n");
    std::fprintf(fx, "# validate.verdict: %s\n", pass ? "pass" : "fail");
    std::fprintf(fx, "# observed.drift_ppm: %.3f\n", drift_ppm);
    std::fprintf(fx, "# observed.warp_backward: %" PRIu64 "\n", warp_back);
    std::fprintf(fx, "# observed.warp_max_ticks: %" PRIu64 "\n", warp_max);
    std::fprintf(fx, "# observed.monotonic_backward: %" PRIu64 "\n", mono_back);
    if (counter) std::fprintf(fx, "# calibration_hz: %" PRIu64 "/%" PRIu64 "\n", info->hz_num, info->hz_den);
    for (unsigned k = 0; k < info->n_candidates; k++)
      if (info->candidates[k].read_ns > 0)
        std::fprintf(fx, "# read_ns.%s: %.1f\n", info->candidates[k].name, info->candidates[k].read_ns);
    if (!info->forced) {
      std::fprintf(fx, "# expect.source: %s\n", info->source_name);
      if (counter && info->freq_detail && std::strcmp(info->freq_detail, "calibration") != 0)
        std::fprintf(fx, "# expect.hz: %.0f\n", info->hz);
    }
    write_cpuid_dump(fx);
    if (std::fclose(fx) != 0) {
      std::fprintf(stderr, "tickclock-probe validate: %s: write failed\n", fixture_out.c_str());
      return 2;
    }
  }

  if (json) {
    std::string o = "{\"command\":\"validate\",\"source\":" + json_str(info->source_name) +
                    ",\"forced\":" + json_b(info->forced) + ",\"seconds\":" + json_num(seconds) +
                    ",\"interrupted\":" + json_b(interrupted()) + ",\"checks\":[";
    for (size_t k = 0; k < items.size(); k++)
      o += (k ? "," : "") + std::string("{\"name\":") + json_str(items[k].name) +
           ",\"status\":" + json_str(items[k].status) + ",\"detail\":" +
           json_str(items[k].detail) + items[k].json_extra + "}";
    o += "],\"verdict\":" + json_str(pass ? "PASS" : "FAIL") + ",\"summary\":" + json_str(verdict) +
         "}";
    std::printf("%s\n", o.c_str());
  } else {
    std::printf("tickclock-probe validate: %s (%s)\n", info->source_name, info->why);
    for (const Item &it : items)
      std::printf("  [%-4s] %-12s %s\n", it.status.c_str(), it.name.c_str(), it.detail.c_str());
    if (interrupted()) std::printf("  (interrupted: checks after Ctrl-C are partial)\n");
    std::printf("verdict: %s\n", verdict.c_str());
    if (fx) std::printf("fixture written to %s\n", fixture_out.c_str());
  }
  return pass ? 0 : 1;
}

}  // namespace tickclock_probe
