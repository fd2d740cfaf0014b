// tickclock-probe warp [--seconds S] [--source NAME] [--json]
//
// The cross-CPU ordering test alone (as Linux's tsc_sync does at boot):
// threads pinned to each pair of CPUs hand a lock back and forth, each
// taking an ordered reading inside it; a reading earlier than the one the
// other CPU published is a warp. Exit 1 on any warp. --seconds S is the
// total, split between the pairs. Ctrl-C: the pairs not (fully) tested are
// listed, INCOMPLETE, exit 130.
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
  parse_options(argc, argv, "--seconds S, --source NAME, --json", [&](const Option &o) {
    if (o.name == "--seconds") seconds = parse_seconds(o.name, o.value(), 600);
    else if (o.name == "--source") source = o.value();
    else if (o.is_flag("--json")) json = true;
    else return false;
    return true;
  });
  if (!source.empty()) force_source(source);
  const tickclock_info *info = tickclock_info_get();
  std::vector<WarpPair> w = warp_test(read_now_ordered, seconds);
  double ns_tick = ns_per_tick(info);
  uint64_t back = 0;
  for (const WarpPair &p : w) back += p.backward;
  // pairs a Ctrl-C cut short or kept from starting
  std::string unfinished;
  size_t n_cpus = allowed_cpus().size();
  size_t n_pairs = n_cpus * (n_cpus - 1) / 2;
  const bool incomplete = interrupted();
  if (incomplete) {
    for (const WarpPair &p : w)
      if (!p.completed) unfinished += fmt("%s%d-%d (cut short)", unfinished.empty() ? "" : ", ", p.cpu_a, p.cpu_b);
    if (w.size() < n_pairs)
      unfinished += fmt("%s%zu pair(s) not started", unfinished.empty() ? "" : ", ", n_pairs - w.size());
    if (unfinished.empty()) unfinished = "the summary";
  }
  if (json) {
    std::string o = "{\"command\":\"warp\",\"source\":" + json_str(info->source_name) +
                    ",\"interrupted\":" + json_b(interrupted()) + ",\"pairs\":[";
    for (size_t k = 0; k < w.size(); k++)
      o += (k ? "," : "") + fmt("{\"cpu_a\":%d,\"cpu_b\":%d,\"pinned\":%s,", w[k].cpu_a, w[k].cpu_b,
                                w[k].pinned ? "true" : "false") +
           "\"iterations\":" + json_u(w[k].iterations) + ",\"backward\":" +
           json_u(w[k].backward) + ",\"max_warp_ns\":" +
           json_num((double)w[k].max_warp_ticks * ns_tick) + "}";
    std::printf("%s],\"backward\":%" PRIu64 ",\"complete\":%s,\"unfinished\":%s}\n", o.c_str(), back,
                incomplete ? "false" : "true", incomplete ? json_str(unfinished).c_str() : "null");
  } else {
    std::printf("tickclock-probe warp: %s, %zu CPU pair(s)\n", info->source_name, w.size());
    std::printf("  %5s %5s %14s %10s %16s\n", "cpu", "cpu", "hand-offs", "backward", "largest warp");
    for (const WarpPair &p : w)
      std::printf("  %5d %5d %14" PRIu64 " %10" PRIu64 " %13.1f ns%s\n", p.cpu_a, p.cpu_b,
                  p.iterations, p.backward, (double)p.max_warp_ticks * ns_tick,
                  p.pinned ? "" : "  (not pinned)");
    if (w.empty()) std::printf("  one CPU: nothing to compare\n");
    if (incomplete)
      std::printf("INCOMPLETE: interrupted by %s; not finished: %s%s\n", interrupt_name(),
                  unfinished.c_str(), back ? " (WARP seen before that)" : "");
    else
      std::printf("%s\n", back ? "WARP: readings went backwards across CPUs"
                               : "no warp observed");
  }
  if (incomplete) {
    std::fprintf(stderr, "tickclock-probe warp: INCOMPLETE: interrupted by %s; not finished: %s\n",
                 interrupt_name(), unfinished.c_str());
    return interrupted_exit();
  }
  return back ? 1 : 0;
}

}  // namespace tickclock_probe
