// tickclock-probe timing [--seconds S] [--source NAME|all] [--json] [--svg F]
//
// --seconds S is the whole run's measuring time, split evenly between the
// sources measured (a quarter of each share for the fixed-count loop, the
// rest for the timed loop).
//
// pg_test_timing's job, for every read this machine has:
//  - a fixed-count loop measuring just the read (the per-read cost without
//    loop or histogram overhead, as suggested on pgsql-hackers);
//  - a timed loop like pg_test_timing's: read, subtract the previous
//    reading, count the duration in a histogram; the per-loop time
//    includes that overhead and is comparable with pg_test_timing's
//    "Per loop time including overhead";
//  - a log2 histogram, exact-ns buckets up to the 99.99th percentile, the
//    largest duration, and every backward step (reported; exit status 1);
//    each log2 bucket with the library's error bound for an interval of
//    its upper edge ending now (tickclock_duration_get).
// The text ends with a summary table (one line per source). On a terminal
// a progress line names the source being measured (stderr, not with
// --json). Every loop is bounded in time; Ctrl-C stops early, prints what
// was gathered, says INCOMPLETE with the sources not (fully) measured and
// exits 130.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/probe/commands.h"
#include "src/probe/json.h"
#include "src/probe/util.h"

namespace tickclock_probe {
namespace {

struct Result {
  const Reader *r = nullptr;
  double read_ns = 0;  // fixed-count loop
  uint64_t fixed_reads = 0;
  double fixed_seconds = 0;  // the fixed-count loop's time
  double loop_ns = 0;        // timed loop, per iteration
  uint64_t loops = 0;
  double seconds = 0;
  Histogram h;
};

uint64_t to_ns(const Reader &r, uint64_t ticks) {
  return r.ticks_are_ns ? ticks : tickclock_conv_ticks_to_ns(&r.conv, ticks);
}

void measure(const Reader &r, double seconds, Result *out) {
  out->r = &r;
  // 1. fixed count: 10^6 reads, at most a quarter of the time budget
  const uint64_t fixed_target = 1000000;
  const uint64_t budget = (uint64_t)(seconds * 0.25e9);
  uint64_t sink = 0, n = 0;
  uint64_t t0 = mono_raw_ns(), t1 = t0;
  while (n < fixed_target && !interrupted()) {
    for (int i = 0; i < 1000; i++) sink += r.read();
    n += 1000;
    t1 = mono_raw_ns();
    if (t1 - t0 > budget) break;
  }
  out->fixed_reads = n;
  out->fixed_seconds = (double)(t1 - t0) / 1e9;
  out->read_ns = n ? (double)(t1 - t0) / (double)n : 0;
  if (sink == 42) std::fputs("", stdout);  // keep the reads

  // 2. timed loop (pg_test_timing): each iteration is one read, one
  // subtraction, one histogram update; the clock is checked every 1024.
  const uint64_t limit = (uint64_t)(seconds * 0.75e9);
  uint64_t start = mono_raw_ns(), now = start;
  uint64_t prev = r.read(), loops = 0;
  while (!interrupted()) {
    for (int i = 0; i < 1024; i++) {
      uint64_t cur = r.read();
      if (cur < prev) {
        out->h.backward++;
        uint64_t back = to_ns(r, prev - cur);
        if (back > out->h.worst_backward_ns) out->h.worst_backward_ns = back;
      } else {
        out->h.add(to_ns(r, cur - prev));
      }
      prev = cur;
    }
    loops += 1024;
    now = mono_raw_ns();
    if (now - start >= limit) break;
  }
  out->loops = loops;
  out->seconds = (double)(now - start) / 1e9;
  out->loop_ns = loops ? (double)(now - start) / (double)loops : 0;
}

void print_text(const Result &res) {
  const Reader &r = *res.r;
  const Histogram &h = res.h;
  std::printf("\n%s  (--source %s)\n", r.what.c_str(), r.name.c_str());
  std::printf("  read cost, fixed %" PRIu64 "-read loop: %10.2f ns per read\n", res.fixed_reads,
              res.read_ns);
  std::printf("  per loop time including overhead:  %10.2f ns   (%" PRIu64 " loops in %.2f s)\n",
              res.loop_ns, res.loops, res.seconds);
  std::printf("  histogram of timing durations:\n");
  std::printf("    %12s %12s %12s  %s\n", "< ns", "% of total", "count",
              "(bound: tickclock_duration_get's for an interval of the edge, ending now)");
  uint64_t maxc = 1;
  for (int b = 0; b < 65; b++)
    if (h.log2[b] > maxc) maxc = h.log2[b];
  for (int b = 0, last = h.last_bucket(); b <= last; b++) {
    double pct = h.count ? 100.0 * (double)h.log2[b] / (double)h.count : 0;
    std::printf("    %12" PRIu64 " %11.5f%% %12" PRIu64 "  %-40s +-%" PRIu64 " ns\n",
                Histogram::bucket_edge(b), pct, h.log2[b],
                bar((double)h.log2[b] / (double)maxc, 40).c_str(),
                bound_of_interval_now(Histogram::bucket_edge(b)).bound_ns);
  }
  uint64_t p9999 = h.percentile(99.99);
  std::printf("  observed timing durations up to 99.99%% (p50 %" PRIu64 " ns, p99 %" PRIu64
              " ns, p99.99 %" PRIu64 " ns):\n",
              h.percentile(50), h.percentile(99), p9999);
  std::printf("    %12s %12s %12s %12s\n", "ns", "% of total", "cumulative %", "count");
  uint64_t cum = 0;
  int lines = 0;
  for (uint64_t ns = 0; ns < Histogram::kExact && ns <= p9999; ns++) {
    if (!h.exact[ns]) continue;
    cum += h.exact[ns];
    if (++lines > 60) {  // keep the terminal readable
      std::printf("    ... (%s for all buckets)\n", "--json");
      break;
    }
    std::printf("    %12" PRIu64 " %11.5f%% %11.5f%% %12" PRIu64 "\n", ns,
                100.0 * (double)h.exact[ns] / (double)h.count,
                100.0 * (double)cum / (double)h.count, h.exact[ns]);
  }
  std::printf("  largest duration: %" PRIu64 " ns\n", h.max_ns);
  if (h.backward)
    std::printf("  BACKWARD STEPS: %" PRIu64 " (worst %" PRIu64 " ns)\n", h.backward,
                h.worst_backward_ns);
  else
    std::printf("  backward steps: 0\n");
}

// One line per source, after the per-source sections: the figures to compare.
void print_summary(const std::vector<Result> &results, const std::vector<const Reader *> &skipped) {
  std::printf("\nsummary:\n  %-22s %10s %10s %8s %8s %10s %12s %9s\n", "source", "read ns",
              "loop ns", "p50 ns", "p99 ns", "max ns", "loops", "backward");
  for (const Result &r : results)
    std::printf("  %-22s %10.2f %10.2f %8" PRIu64 " %8" PRIu64 " %10" PRIu64 " %12" PRIu64
                " %9" PRIu64 "\n",
                r.r->name.c_str(), r.read_ns, r.loop_ns, r.h.percentile(50), r.h.percentile(99),
                r.h.max_ns, r.loops, r.h.backward);
  for (const Reader *r : skipped)
    std::printf("  %-22s %10s  not usable here\n", r->name.c_str(), "-");
}

std::string to_json(const Result &res) {
  const Histogram &h = res.h;
  std::string o = "{";
  o += "\"name\":" + json_str(res.r->name) + ",\"description\":" + json_str(res.r->what);
  o += ",\"usable\":true,\"reason\":null";
  o += ",\"read_ns\":" + json_num(res.read_ns) + ",\"fixed_reads\":" + json_u(res.fixed_reads);
  o += ",\"loop_ns\":" + json_num(res.loop_ns) + ",\"loops\":" + json_u(res.loops);
  o += ",\"seconds\":" + json_num(res.seconds);
  o += ",\"max_ns\":" + json_u(h.max_ns) + ",\"backward_steps\":" + json_u(h.backward);
  o += ",\"worst_backward_ns\":" + json_u(h.worst_backward_ns);
  o += ",\"p50_ns\":" + json_u(h.percentile(50)) + ",\"p99_ns\":" + json_u(h.percentile(99)) +
       ",\"p9999_ns\":" + json_u(h.percentile(99.99));
  o += ",\"histogram_log2\":[";
  bool first = true;
  for (int b = 0; b < 65; b++) {
    if (!h.log2[b]) continue;
    o += std::string(first ? "" : ",") + "{\"lt_ns\":" + json_u(Histogram::bucket_edge(b)) +
         ",\"count\":" + json_u(h.log2[b]) +
         ",\"bound_ns\":" + json_u(bound_of_interval_now(Histogram::bucket_edge(b)).bound_ns) + "}";
    first = false;
  }
  o += "],\"exact\":[";
  first = true;
  uint64_t p9999 = h.percentile(99.99);
  for (uint64_t ns = 0; ns < Histogram::kExact && ns <= p9999; ns++) {
    if (!h.exact[ns]) continue;
    o += std::string(first ? "" : ",") + "{\"ns\":" + json_u(ns) +
         ",\"count\":" + json_u(h.exact[ns]) + "}";
    first = false;
  }
  return o + "]}";
}

std::string xml_text(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

// One horizontal-bar chart per source: log2 duration buckets, bar length
// on a log scale of the count (tails are rare but are the point).
bool write_svg(FILE *f, const std::vector<Result> &results) {
  const int bar_w = 420, row_h = 16, left = 110, chart_gap = 40;
  std::vector<int> lastb;
  int total_rows = 0;
  for (const Result &r : results) {
    lastb.push_back(r.h.last_bucket());
    total_rows += lastb.back() + 1;
  }
  int height = 40 + total_rows * row_h + (int)results.size() * (chart_gap + 30);
  std::fprintf(f,
               "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
               "font-family='monospace' font-size='12'>\n"
               "<rect width='100%%' height='100%%' fill='white'/>\n"
               "<text x='10' y='22' font-size='15' font-weight='bold'>tickclock-probe timing: "
               "duration histograms (log2 buckets; bar length = log10 count)</text>\n",
               left + bar_w + 260, height);
  int y = 50;
  for (size_t i = 0; i < results.size(); i++) {
    const Result &r = results[i];
    std::fprintf(f,
                 "<text x='10' y='%d' font-weight='bold'>%s: %.2f ns per read, %.2f ns per "
                 "loop, max %llu ns%s</text>\n",
                 y, xml_text(r.r->what).c_str(), r.read_ns, r.loop_ns,
                 (unsigned long long)r.h.max_ns, r.h.backward ? ", BACKWARD STEPS" : "");
    y += 10;
    double maxlog = 0;
    for (int b = 0; b <= lastb[i]; b++)
      if (r.h.log2[b]) maxlog = std::fmax(maxlog, std::log10((double)r.h.log2[b]) + 1);
    for (int b = 0; b <= lastb[i]; b++) {
      double len =
          r.h.log2[b] && maxlog > 0 ? (std::log10((double)r.h.log2[b]) + 1) / maxlog * bar_w : 0;
      std::fprintf(f, "<text x='%d' y='%d' text-anchor='end'>&lt; %" PRIu64 " ns</text>\n",
                   left - 8, y + 12, Histogram::bucket_edge(b));
      std::fprintf(f, "<rect x='%d' y='%d' width='%.1f' height='%d' fill='#3b7dd8'/>\n", left,
                   y + 2, len, row_h - 4);
      if (r.h.log2[b])
        std::fprintf(f, "<text x='%.1f' y='%d'>%llu</text>\n", left + len + 6, y + 12,
                     (unsigned long long)r.h.log2[b]);
      y += row_h;
    }
    y += chart_gap;
  }
  std::fprintf(f, "</svg>\n");
  return std::fclose(f) == 0;
}

}  // namespace

int cmd_timing(int argc, char **argv) {
  double seconds = 1.0;
  std::string source = "all", svg;
  bool json = false;
  parse_options(argc, argv, "--seconds S, --source NAME|all, --json, --svg FILE",
                [&](const Option &o) {
                  if (common_option(o, &seconds, &source, &json)) return true;
                  if (o.name != "--svg" && o.name != "--html") return false;
                  svg = o.value();
                  return true;
                });
  // the chart's file is opened before anything is measured: a bad path
  // fails at once, not after the run
  FILE *svg_file = svg.empty() ? nullptr : open_output("--svg", svg);
  std::vector<Reader> readers = all_readers();
  std::vector<const Reader *> chosen;
  std::string names;
  // --source: all, one read by its name, or a source's reads (the
  // vocabulary validate and warp take: tsc = rdtsc, lfence_rdtsc, rdtscp)
  bool one_read = false;
  for (const Reader &r : readers) one_read = one_read || source == r.name;
  const int family = source == "all" || one_read ? -1 : source_of_name(source);
  for (const Reader &r : readers) {
    names += (names.empty() ? "" : ", ") + r.name;
    if (source == "all" || source == r.name || (family >= 0 && source_of_name(r.name) == family))
      chosen.push_back(&r);
  }
  auto fail_usage = [&](const std::string &m) {
    if (svg_file) std::fclose(svg_file);
    throw UsageError{m};
  };
  if (chosen.empty() && family >= 0)
    fail_usage("--source " + source +
               ": not usable here: not a source of this machine (its reads: " + names + ")");
  if (chosen.empty())
    fail_usage("--source: unknown source '" + source + "' (expected all, " + source_vocabulary() +
               "; this machine's reads: " + names + ")");
  bool any_usable = false;
  for (const Reader *r : chosen) any_usable = any_usable || r->usable;
  if (source != "all" && !any_usable)
    fail_usage("--source " + source + ": not usable here: " + chosen[0]->why_not);

  size_t n_usable = 0;
  for (const Reader *r : chosen) n_usable += r->usable;
  const double per_source = seconds / (double)(n_usable ? n_usable : 1);
  std::vector<Result> results;
  std::vector<const Reader *> skipped;
  Unfinished unfinished;  // sources not measured, or cut short
  progress_enable(json);
  size_t n_done = 0;
  for (const Reader *r : chosen) {
    if (!r->usable) {
      skipped.push_back(r);
      continue;
    }
    if (interrupted()) {
      unfinished.not_started(r->name);
      continue;
    }
    progress("timing [%zu/%zu] %s (%.2f s)", ++n_done, n_usable, r->name.c_str(), per_source);
    results.emplace_back();
    measure(*r, per_source, &results.back());
    if (interrupted()) unfinished.cut_short(r->name);
    progress_clear();
    if (!json) print_text(results.back());
  }
  progress_clear();
  uint64_t backward = 0;
  double measured_s = 0;
  for (const Result &r : results) {
    backward += r.h.backward;
    measured_s += r.seconds + r.fixed_seconds;
  }
  const bool incomplete = interrupted();
  if (json) {
    std::string o = json_envelope("timing") + ",\"seconds\":" + json_num(seconds) +
                    ",\"seconds_per_source\":" + json_num(per_source) +
                    ",\"measured_seconds\":" + json_num(measured_s);
    o += ",\"interrupted\":" + json_b(incomplete);
    o += ",\"complete\":" + json_b(!incomplete) + ",\"unfinished\":" + unfinished.json();
    o += ",\"backward_steps\":" + json_u(backward) + ",\"sources\":[";
    for (size_t i = 0; i < results.size(); i++) o += (i ? "," : "") + to_json(results[i]);
    for (size_t i = 0; i < skipped.size(); i++)
      o += std::string(results.empty() && i == 0 ? "" : ",") +
           "{\"name\":" + json_str(skipped[i]->name) +
           ",\"description\":" + json_str(skipped[i]->what) +
           ",\"usable\":false,\"reason\":" + json_str(skipped[i]->why_not) + "}";
    std::printf("%s]}\n", o.c_str());
  } else {
    for (const Reader *r : skipped)
      std::printf("\n%s  (--source %s): SKIPPED: %s\n", r->what.c_str(), r->name.c_str(),
                  r->why_not.c_str());
    print_summary(results, skipped);
    if (incomplete) std::printf("\n%s\n", unfinished.line().c_str());
  }
  if (svg_file && (!write_svg(svg_file, results))) {
    std::fprintf(stderr, "tickclock-probe timing: --svg %s: cannot write the chart\n",
                 esc(svg).c_str());
    return 3;
  }
  if (incomplete) return unfinished.finish("timing");
  return backward ? 1 : 0;
}

}  // namespace tickclock_probe
