// tickclock-probe [--json]
//
// The report: the chosen source, its frequency (value, method, uncertainty),
// every candidate source with its read cost and why it was or wasn't
// chosen, every frequency source and how it compared, the hypervisor, the
// kernel's clocksource, invariant TSC and resolution.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "src/probe/commands.h"
#include "src/probe/json.h"
#include "src/probe/util.h"

namespace tickclock_probe {

namespace {
// The kernel's paravirtual clock page as the gatherer read it, and its
// checks' verdict (the claim the decider reads): null where the
// clocksource keeps no such page.
std::string pvclock_json(const tickclock_evidence &ev) {
  const tickclock_freq *c = tkt_pv_claim(&ev);
  const tickclock_pvclock_page &p = ev.pv;
  if (c == nullptr || (p.kind == 0 && p.absent == 0)) return "null";
  bool kvm = p.kind == TKT_PV_KVM, hv = p.kind == TKT_PV_HYPERV;
  double hz = c->ok ? (double)c->hz_num / (double)c->hz_den : 0;
  std::string o = "{\"kind\":" + std::string(kvm ? "\"pvclock\"" : hv ? "\"hyperv\"" : "null");
  o += ",\"read\":" + json_b(p.kind != 0);
  o += ",\"version\":" + (kvm ? json_u(p.version) : "null");
  o += ",\"flags\":" + (kvm ? json_u(p.flags) : "null");
  o += ",\"stable\":" + (kvm ? json_b((p.flags & TKT_PVCLOCK_STABLE) != 0) : "null");
  o += ",\"tsc_to_system_mul\":" + (kvm ? json_u(p.mul) : "null");
  o += ",\"tsc_shift\":" + (kvm ? std::to_string((int)p.shift) : "null");
  o += ",\"tsc_timestamp\":" + (kvm ? json_u(p.tsc_timestamp) : "null");
  o += ",\"system_time\":" + (kvm ? json_u(p.system_time) : "null");
  o += ",\"tsc_sequence\":" + (hv ? json_u(p.sequence) : "null");
  o += ",\"tsc_scale\":" + (hv ? json_u(p.scale) : "null");
  o += ",\"tsc_offset\":" + (hv ? std::to_string((long long)p.offset) : "null");
  o += ",\"valid\":" + json_b(c->ok != 0);
  o += ",\"hz\":" + (c->ok ? json_hz(hz) : "null");
  o +=
      ",\"reason\":" +
      json_str(c->ok ? "every check passed: even version, stable, mul and shift in range" : c->why);
  return o + "}";
}

void print_pvclock(const tickclock_evidence &ev) {
  const tickclock_freq *c = tkt_pv_claim(&ev);
  const tickclock_pvclock_page &p = ev.pv;
  if (c == nullptr || (p.kind == 0 && p.absent == 0)) return;
  if (p.kind == TKT_PV_KVM)
    std::printf("  %-22s version %u, flags 0x%x (%s), mul %u, shift %d, tsc_timestamp %" PRIu64
                ", system_time %" PRIu64 "\n",
                "clock page", (unsigned)p.version, (unsigned)p.flags,
                (p.flags & TKT_PVCLOCK_STABLE) ? "stable" : "not stable", (unsigned)p.mul,
                (int)p.shift, p.tsc_timestamp, p.system_time);
  else if (p.kind == TKT_PV_HYPERV)
    std::printf("  %-22s sequence %u, scale 0x%016" PRIx64 ", offset %lld\n", "clock page",
                (unsigned)p.sequence, p.scale, (long long)p.offset);
  if (c->ok)
    std::printf("  %-22s valid: %.6f MHz\n", "", (double)c->hz_num / (double)c->hz_den / 1e6);
  else
    std::printf("  %-22s %s\n", p.kind ? "" : "clock page", c->why);
}
}  // namespace

int cmd_report(int argc, char **argv) {
  bool json = false;
  parse_options(argc, argv, "--json, or a subcommand: try --help", [&](const Option &o) {
    if (!o.is_flag("--json")) return false;
    json = true;
    return true;
  });
  const tickclock_info *i = tickclock_info_get();
  tickclock_evidence ev;
  tkt_gather(&ev);
  const char *method = i->freq_detail ? i->freq_detail : i->freq_method_name;
#if defined(__x86_64__) || defined(__i386__)
  const bool x86 = true;
#else
  const bool x86 = false;
#endif
  std::string hv_sig = ev.x86.hypervisor && ev.x86.hv_signature[0] ? ev.x86.hv_signature : "";
  const tickclock_duration b1ms = bound_of_interval_now(UINT64_C(1000000));
  const tickclock_duration b1s = bound_of_interval_now(UINT64_C(1000000000));
  if (json) {
    std::string o = json_envelope("report") + ",\"source\":" + json_str(i->source_name);
    o += ",\"why\":" + json_str(i->why);
    o += ",\"forced\":" + json_b(i->forced);
    o += ",\"frequency\":{\"hz\":" + json_hz(i->hz) + ",\"num\":" + json_u(i->hz_num) +
         ",\"den\":" + json_u(i->hz_den) + ",\"method\":" + json_str(method) +
         ",\"uncertainty_ppm\":" + json_num(i->uncertainty_ppm) +
         ",\"baseline_ns\":" + json_u(i->baseline_ns) +
         ",\"pending_check\":" + json_b(i->freq_pending_check) + "}";
    o += ",\"resolution_ns\":" + json_num(i->resolution_ns);
    o += ",\"duration_bound_ns\":{\"interval_1ms\":" + json_u(b1ms.bound_ns) +
         ",\"interval_1s\":" + json_u(b1s.bound_ns) + "}";
    o += ",\"candidates\":[";
    for (unsigned k = 0; k < i->n_candidates; k++) {
      const tickclock_candidate &c = i->candidates[k];
      o += (k ? "," : "") + std::string("{\"source\":") + json_str(c.name) +
           ",\"usable\":" + json_b(c.usable) + ",\"chosen\":" + json_b(c.chosen) +
           ",\"read_ns\":" + (c.read_ns > 0 ? json_num(c.read_ns) : "null") +
           ",\"reason\":" + json_str(c.reason) + "}";
    }
    o += "],\"frequency_sources\":[";
    for (unsigned k = 0; k < i->n_freqs; k++) {
      const tickclock_freq_candidate &f = i->freqs[k];
      o += (k ? "," : "") + std::string("{\"name\":") + json_str(f.name) +
           ",\"available\":" + json_b(f.hz > 0) + ",\"hz\":" + (f.hz > 0 ? json_hz(f.hz) : "null") +
           ",\"num\":" + (f.hz > 0 ? json_u(f.hz_num) : "null") +
           ",\"den\":" + (f.hz > 0 ? json_u(f.hz_den) : "null") +
           ",\"checked\":" + json_b(f.checked) +
           ",\"ppm_vs_calibration\":" + (f.checked ? json_num(f.ppm_vs_calibration) : "null") +
           ",\"bound_ppm\":" + (f.checked ? json_num(f.bound_ppm) : "null") +
           ",\"usable\":" + json_b(f.usable) + ",\"chosen\":" + json_b(f.chosen) +
           ",\"reason\":" + json_str(f.reason) + "}";
    }
    o += "],\"max_disagreement_ppm\":" + json_num(i->max_disagreement_ppm);
    o += ",\"hypervisor\":" + (hv_sig.empty() ? std::string("null") : json_str(hv_sig));
    o += ",\"clocksource\":" + (ev.clocksource_known ? json_str(ev.clocksource) : "null");
    o += ",\"available_clocksource\":" +
         (ev.available_known ? json_str(ev.available_clocksource) : "null");
    o += ",\"invariant_tsc\":" +
         (x86 && ev.x86.invariant_known ? json_b(ev.x86.invariant_tsc) : "null");
    o += ",\"pvclock\":" + pvclock_json(ev);
    std::printf("%s}\n", o.c_str());
    return 0;
  }
  std::printf("tickclock-probe: %s\n\n", i->why);
  std::printf("  %-22s %s%s\n", "source", i->source_name, i->forced ? " (forced)" : "");
  std::printf("  %-22s %.6f MHz = %" PRIu64 "/%" PRIu64 " Hz, %s, +-%.2f ppm\n", "frequency",
              i->hz / 1e6, i->hz_num, i->hz_den, method, i->uncertainty_ppm);
  if (i->freq_pending_check)
    std::printf("  %-22s published, used at once; calibration cross-checks it from 1 ms on\n", "");
  else if (i->baseline_ns != 0)
    std::printf("  %-22s %.3f ms of calibration baseline (refined x4 up to 1 s)\n", "",
                (double)i->baseline_ns / 1e6);
  std::printf("  %-22s %.3f ns\n", "resolution", i->resolution_ns);
  std::printf("  %-22s +-%" PRIu64 " ns for 1 ms, +-%" PRIu64
              " ns for 1 s (an interval ending now; tickclock_duration_get)\n",
              "duration bound", b1ms.bound_ns, b1s.bound_ns);
  std::printf("  %-22s %s\n", "hypervisor", hv_sig.empty() ? "none reported" : hv_sig.c_str());
  std::printf("  %-22s %s (available: %s)\n", "clocksource",
              ev.clocksource_known ? ev.clocksource : "unknown",
              ev.available_known ? ev.available_clocksource : "unknown");
  if (x86)
    std::printf("  %-22s %s\n", "invariant TSC",
                !ev.x86.invariant_known ? "unknown"
                : ev.x86.invariant_tsc  ? "yes"
                                        : "no");
  print_pvclock(ev);
  std::printf("\n  candidates:\n    %-10s %-7s %-7s %10s  %s\n", "source", "usable", "chosen",
              "read", "reason");
  for (unsigned k = 0; k < i->n_candidates; k++) {
    const tickclock_candidate &c = i->candidates[k];
    std::string cost = c.read_ns > 0 ? fmt("%.1f ns", c.read_ns) : "-";
    std::printf("    %-10s %-7s %-7s %10s  %s\n", c.name, c.usable ? "yes" : "no",
                c.chosen ? "yes" : "", cost.c_str(), c.reason);
  }
  if (i->n_freqs) {
    std::printf("\n  frequency sources (max pairwise disagreement %.2f ppm):\n",
                i->max_disagreement_ppm);
    for (unsigned k = 0; k < i->n_freqs; k++) {
      const tickclock_freq_candidate &f = i->freqs[k];
      if (!(f.hz > 0)) {  // a source that gave nothing, with the reason
        std::printf("    %-24s %20s  %-26s %s\n", f.name, "-", "", f.reason);
        continue;
      }
      std::string cmp = f.checked
                            ? fmt("%+9.2f ppm (bound %.1f)", f.ppm_vs_calibration, f.bound_ppm)
                            : std::string("reference");
      std::printf("    %-24s %16.6f MHz  %-26s %s%s\n", f.name, f.hz / 1e6, cmp.c_str(),
                  f.chosen ? "[chosen] " : "", f.reason);
    }
  }
  return 0;
}

}  // namespace tickclock_probe
