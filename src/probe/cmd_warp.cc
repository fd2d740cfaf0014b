// tickclock-probe warp [--seconds S] [--source NAME] [--json]
//
// The cross-CPU ordering test alone (as Linux's tsc_sync does at boot):
// threads pinned to each pair of CPUs hand a lock back and forth, each
// taking an ordered reading inside it; a reading earlier than the one the
// other CPU published is a warp. Exit 1 on any warp; 4 (INCONCLUSIVE) when
// one CPU is allowed while others are online (no pair to test). --seconds S
// is the total, split between the pairs. Ctrl-C: the pairs not (fully)
// tested are listed, INCOMPLETE, exit 130.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "src/probe/checks.h"
#include "src/probe/commands.h"
#include "src/probe/json.h"
#include "src/probe/util.h"

namespace tickclock_probe {
int cmd_warp(int argc, char **argv) {
  double seconds = 2.0;
  std::string source;
  bool json = false;
  parse_options(argc, argv, "--seconds S, --source NAME, --json",
                [&](const Option &o) { return common_option(o, &seconds, &source, &json); });
  if (!source.empty()) force_source(source);
  progress_enable(json);
  progress_prefix("warp: ");
  const tickclock_info *info = tickclock_info_get();
  std::vector<WarpPair> w = warp_test(read_now_ordered, seconds);
  progress_clear();
  double ns_tick = ns_per_tick(info);
  uint64_t back = 0;
  for (const WarpPair &p : w) back += p.backward;
  // pairs a Ctrl-C cut short or kept from starting, in warp_test's order
  Unfinished unfinished;
  std::vector<int> cpus = allowed_cpus();
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < cpus.size(); i++)
    for (size_t j = i + 1; j < cpus.size(); j++) pairs.push_back({cpus[i], cpus[j]});
  const bool incomplete = interrupted();
  if (incomplete) {
    for (const WarpPair &p : w)
      if (!p.completed) unfinished.cut_short(fmt("cpus %d-%d", p.cpu_a, p.cpu_b));
    for (size_t k = w.size(); k < pairs.size(); k++)
      unfinished.not_started(fmt("cpus %d-%d", pairs[k].first, pairs[k].second));
    if (unfinished.empty()) unfinished.add("summary", "interrupted after the last pair");
  }
  // one CPU allowed while others are online: per-CPU offsets not checked
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  const bool inconclusive = !incomplete && w.empty() && online > 1;
  const char *verdict = incomplete     ? "INCOMPLETE"
                        : back         ? "WARP"
                        : inconclusive ? "INCONCLUSIVE"
                                       : "PASS";
  std::string advice =
      inconclusive ? fmt("1 CPU allowed to this process of %ld online: no pair to test, per-CPU "
                         "offsets NOT checked; run with >= 2 CPUs (no taskset, a larger cpuset)",
                         online)
                   : std::string();
  if (json) {
    std::string o =
        json_envelope("warp") + ",\"source\":" + json_str(info->source_name) +
        ",\"interrupted\":" + json_b(incomplete) + ",\"cpus\":" + json_u(cpus.size()) +
        ",\"online_cpus\":" + (online > 0 ? json_u((unsigned long long)online) : "null") +
        ",\"pairs\":[";
    for (size_t k = 0; k < w.size(); k++)
      o += (k ? "," : "") +
           fmt("{\"cpu_a\":%d,\"cpu_b\":%d,\"pinned\":%s,", w[k].cpu_a, w[k].cpu_b,
               w[k].pinned ? "true" : "false") +
           "\"iterations\":" + json_u(w[k].iterations) + ",\"backward\":" + json_u(w[k].backward) +
           ",\"max_warp_ns\":" + json_num((double)w[k].max_warp_ticks * ns_tick) +
           ",\"completed\":" + json_b(w[k].completed) + "}";
    o += "],\"backward\":" + json_u(back) + ",\"complete\":" + json_b(!incomplete) +
         ",\"unfinished\":" + unfinished.json();
    o += ",\"verdict\":" + json_str(verdict) + ",\"summary\":" +
         json_str(inconclusive ? "INCONCLUSIVE: " + advice : std::string(verdict)) + "}";
    std::printf("%s\n", o.c_str());
  } else {
    std::printf("tickclock-probe warp: %s, %zu CPU pair(s)\n", info->source_name, w.size());
    std::printf("  %5s %5s %14s %10s %16s\n", "cpu", "cpu", "hand-offs", "backward",
                "largest warp");
    for (const WarpPair &p : w)
      std::printf("  %5d %5d %14" PRIu64 " %10" PRIu64 " %13.1f ns%s\n", p.cpu_a, p.cpu_b,
                  p.iterations, p.backward, (double)p.max_warp_ticks * ns_tick,
                  p.pinned ? "" : "  (not pinned)");
    if (w.empty() && !incomplete) std::printf("  one CPU: nothing to compare\n");
    if (incomplete)
      std::printf("%s%s\n", unfinished.line().c_str(), back ? " (WARP seen before that)" : "");
    else if (back)
      std::printf("WARP: readings went backwards across CPUs\n");
    else if (inconclusive)
      std::printf("INCONCLUSIVE: %s\n", advice.c_str());
    else
      std::printf("no warp observed\n");
  }
  if (incomplete) return unfinished.finish("warp");
  return back ? kExitFail : inconclusive ? kExitInconclusive : kExitOk;
}

}  // namespace tickclock_probe
