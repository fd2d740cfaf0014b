// The instrumented-executor scenario (EXPLAIN ANALYZE's case).
//
// A volcano pipeline  Agg(hash, 1024 groups) <- Filter <- Scan  over
// --rows rows (default 10^7), one virtual call per node per row, run in
// five modes that differ only in the instrumentation policy compiled into
// every node (a template parameter, so "untimed" carries no residue):
//
//   untimed        nothing
//   counting       calls and rows counted (EXPLAIN ANALYZE TIMING OFF)
//   tickclock      every call timed: two tickclock_now() (TSC forced)
//   clock_gettime  every call timed: two clock_gettime(CLOCK_MONOTONIC)
//   sampled        1 call in N timed with tickclock_now(), see below
//
// Each repetition runs the five modes round-robin; the figure per mode is
// the fastest repetition (the machine is shared; the minimum is the least
// disturbed), overhead = t(mode) / t(untimed) - 1.
//
// ---- Sampled timing and its bias ------------------------------------------
// Deterministic "every N-th call" sampling is biased whenever call cost is
// correlated with the call index modulo N (a filter that passes every
// other row, a join that probes in batches, an aggregate whose first call
// does all the work): it aliases. Instead each call is sampled
// independently with probability p = 1/N (a Bernoulli process), realised
// cheaply as a countdown with geometrically distributed gaps (mean N) drawn
// from a xorshift generator, so the unsampled path is a decrement and a
// predicted branch. The Horvitz-Thompson estimator
//       T_hat = sum_{sampled i} d_i / p_i
// is then unbiased for the node's total time *in the sampled run*:
// E[T_hat] = sum_i d_i. Two refinements:
//  - The first K (= 8) calls of every node are always timed with weight 1
//    (p_i = 1 is allowed in Horvitz-Thompson; still unbiased). Without it,
//    a node whose total is concentrated in few calls -- the aggregate's
//    first call consumes the whole input -- would be estimated as 0 or as
//    N times its total: unbiased, but useless (variance ~ N * T^2).
//  - What remains is measurement bias common to every timing mode: each
//    timed interval contains part of the timer's own cost (from the first
//    read's completion to the second's), and a parent's interval contains
//    whatever instrumentation its children ran. Full timing pays the
//    latter on every child call, so its inclusive totals for parents are
//    inflated by (child calls x timer pair cost); the sampled run pays it
//    on 1/N of them. So the two are compared where they measure the same
//    thing: the leaf node (Scan) against full timing, and the top node
//    (Agg, whose total is the query) against the untimed query's wall
//    time. The other nodes' differences are printed for information.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tickclock.h"

namespace {

struct Row {
  int64_t key;
  int64_t val;
};

struct Node {
  virtual ~Node() = default;
  virtual bool Next(Row* r) = 0;
};

// ---- instrumentation policies --------------------------------------------
struct NoInstr {
  void Begin() {}
  void End(bool) {}
};

struct CountInstr {
  uint64_t calls = 0, rows = 0;
  void Begin() { ++calls; }
  void End(bool ok) { rows += ok; }
};

struct TscInstr {
  uint64_t calls = 0, rows = 0, ticks = 0, t0 = 0;
  void Begin() {
    ++calls;
    t0 = tickclock_now();
  }
  void End(bool ok) {
    ticks += tickclock_now() - t0;
    rows += ok;
  }
  double TotalNs() const { return (double)tickclock_delta_ns(0, ticks); }
};

struct CgtInstr {
  uint64_t calls = 0, rows = 0, ns = 0, t0 = 0;
  static uint64_t Now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  void Begin() {
    ++calls;
    t0 = Now();
  }
  void End(bool ok) {
    ns += Now() - t0;
    rows += ok;
  }
  double TotalNs() const { return (double)ns; }
};

uint64_t g_sample_every = 1000;  // N
constexpr uint64_t kAlwaysFirst = 8;  // K

// Hot path: one decrement-and-branch in Begin, one flag test in End, plus
// the row count every mode except "untimed" keeps; everything else is out
// of line (a cold call) so the node's hot path needs no extra registers.
// The number of calls is derived: calls = next_at - countdown - 1.
struct SampledInstr {
  int64_t countdown = 0;   // calls until the next timed call (<= 0: time it)
  uint64_t rows = 0;
  bool timing = false;
  uint64_t t0 = 0;
  uint64_t next_at = 1;    // 1-based index of the next timed call
  uint64_t samples = 0, calls_at_begin = 0;
  uint64_t exact_ticks = 0;    // the first K calls, weight 1
  uint64_t sampled_ticks = 0;  // later sampled calls, weight N
  double sampled_sq = 0;       // sum of squared sampled durations (ns^2), for the variance
  uint64_t rng = 0x9E3779B97F4A7C15u;
  uint64_t calls = 0;          // filled in by Finish()

  int64_t Gap() {  // geometric(p = 1/N) on {1, 2, ...}
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    double u = (double)((rng * 0x2545F4914F6CDD1Du) >> 11) * 0x1.0p-53;  // [0, 1)
    double p = 1.0 / (double)g_sample_every;
    return 1 + (int64_t)std::floor(std::log1p(-u) / std::log1p(-p));
  }
  // The first K calls: countdown is handed out as 1 each time (all timed);
  // after the K-th, a geometric gap, so every later call is timed
  // independently with probability 1/N.
  __attribute__((noinline, cold)) void BeginSlow() {
    calls_at_begin = next_at;  // this call's 1-based index
    int64_t next = calls_at_begin < kAlwaysFirst ? 1 : Gap();
    countdown += next;
    next_at += next;
    timing = true;
    t0 = tickclock_now();
  }
  __attribute__((noinline, cold)) void EndSlow() {
    uint64_t d = tickclock_now() - t0;
    timing = false;
    if (calls_at_begin <= kAlwaysFirst) {
      exact_ticks += d;
    } else {
      sampled_ticks += d;
      double ns = (double)tickclock_delta_ns(0, d);
      sampled_sq += ns * ns;
      ++samples;
    }
  }
  void Begin() {
    if (__builtin_expect(--countdown < 0, 0)) BeginSlow();
  }
  void End(bool ok) {
    rows += ok;
    if (__builtin_expect(timing, 0)) EndSlow();
  }
  void Finish() { calls = next_at - (uint64_t)(countdown + 1); }
  double TotalNs() const {
    return (double)tickclock_delta_ns(0, exact_ticks) +
           (double)g_sample_every * (double)tickclock_delta_ns(0, sampled_ticks);
  }
  // Horvitz-Thompson variance estimate for Bernoulli(p) sampling:
  // Var(T_hat) = sum_i d_i^2 (1-p)/p, estimated by sum_sampled d_i^2 (1-p)/p^2.
  double Ci95Ns() const {
    double p = 1.0 / (double)g_sample_every;
    return 1.96 * std::sqrt(sampled_sq * (1 - p) / (p * p));
  }
};

// ---- nodes -----------------------------------------------------------------
struct Table {
  std::vector<uint32_t> key;
  std::vector<int32_t> val;
};

template <class I>
struct Scan final : Node {
  const Table* t;
  size_t i = 0;
  I ins;
  explicit Scan(const Table* tab) : t(tab) {}
  bool Next(Row* r) override {
    ins.Begin();
    bool ok = i < t->key.size();
    if (ok) {
      r->key = t->key[i];
      r->val = t->val[i];
      ++i;
    }
    ins.End(ok);
    return ok;
  }
};

template <class I>
struct Filter final : Node {
  Node* child;
  I ins;
  explicit Filter(Node* c) : child(c) {}
  static bool Pred(const Row& r) {  // about 60 % pass, data-dependent branch
    return (uint64_t)(r.val * 0x9E3779B1LL) % 5 < 3;
  }
  bool Next(Row* r) override {
    ins.Begin();
    bool ok;
    while ((ok = child->Next(r)) && !Pred(*r)) {
    }
    ins.End(ok);
    return ok;
  }
};

constexpr int kGroups = 1024;

template <class I>
struct Agg final : Node {
  Node* child;
  I ins;
  std::vector<int64_t> sum = std::vector<int64_t>(kGroups), cnt = std::vector<int64_t>(kGroups);
  bool done = false;
  int emit = 0;
  explicit Agg(Node* c) : child(c) {}
  bool Next(Row* r) override {
    ins.Begin();
    if (!done) {
      Row in;
      while (child->Next(&in)) {
        size_t g = (size_t)in.key & (kGroups - 1);
        sum[g] += in.val;
        cnt[g] += 1;
      }
      done = true;
    }
    bool ok = emit < kGroups;
    if (ok) {
      r->key = emit;
      r->val = sum[emit] + cnt[emit];
      ++emit;
    }
    ins.End(ok);
    return ok;
  }
};

struct NodeResult {
  uint64_t calls = 0, rows = 0, samples = 0;
  double total_ns = 0, ci95_ns = 0;
};

struct RunResult {
  double wall_ns = 0;
  int64_t checksum = 0;
  NodeResult node[3];  // scan, filter, agg
};

template <class I>
NodeResult Collect(const I& ins) {
  NodeResult n;
  if constexpr (!std::is_same_v<I, NoInstr>) {
    n.calls = ins.calls;
    n.rows = ins.rows;
  }
  if constexpr (std::is_same_v<I, TscInstr> || std::is_same_v<I, CgtInstr> ||
                std::is_same_v<I, SampledInstr>)
    n.total_ns = ins.TotalNs();
  if constexpr (std::is_same_v<I, SampledInstr>) {
    n.samples = ins.samples;
    n.ci95_ns = ins.Ci95Ns();
  }
  return n;
}

template <class I>
__attribute__((noinline)) RunResult RunPipeline(const Table& t) {
  Scan<I> scan(&t);
  Filter<I> filter(&scan);
  Agg<I> agg(&filter);
  Node* top = &agg;
  RunResult res;
  auto w0 = std::chrono::steady_clock::now();
  Row r;
  while (top->Next(&r)) res.checksum += r.key ^ r.val;
  auto w1 = std::chrono::steady_clock::now();
  res.wall_ns = (double)std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count();
  if constexpr (std::is_same_v<I, SampledInstr>) {
    scan.ins.Finish();
    filter.ins.Finish();
    agg.ins.Finish();
  }
  res.node[0] = Collect(scan.ins);
  res.node[1] = Collect(filter.ins);
  res.node[2] = Collect(agg.ins);
  return res;
}

const char* const kModes[] = {"untimed", "counting", "tickclock", "clock_gettime", "sampled"};
const char* const kNodes[] = {"scan", "filter", "agg"};

RunResult RunMode(int m, const Table& t) {
  switch (m) {
    case 0: return RunPipeline<NoInstr>(t);
    case 1: return RunPipeline<CountInstr>(t);
    case 2: return RunPipeline<TscInstr>(t);
    case 3: return RunPipeline<CgtInstr>(t);
    default: return RunPipeline<SampledInstr>(t);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 10000000;
  int reps = 5;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--rows=", 7)) rows = strtoull(argv[i] + 7, nullptr, 10);
    else if (!strncmp(argv[i], "--reps=", 7)) reps = atoi(argv[i] + 7);
    else if (!strncmp(argv[i], "--sample-every=", 15)) g_sample_every = strtoull(argv[i] + 15, nullptr, 10);
    else if (!strncmp(argv[i], "--json=", 7)) json = argv[i] + 7;
    else {
      fprintf(stderr, "executor_bench: unknown argument '%s'\n"
              "usage: executor_bench [--rows=N] [--reps=R] [--sample-every=N] [--json=FILE]\n", argv[i]);
      return 2;
    }
  }
  if (rows == 0 || reps < 1 || g_sample_every < 1) {
    fprintf(stderr, "executor_bench: --rows, --reps and --sample-every must be positive\n");
    return 2;
  }
  tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
  int rc = tickclock_init(&cfg);
  const tickclock_info* info = tickclock_info_get();
  if (info->source != TICKCLOCK_SOURCE_TSC)
    fprintf(stderr, "executor_bench: forced TSC refused (rc %d): %s; timing with %s\n", rc,
            info->why, info->source_name);

  Table t;
  t.key.resize(rows);
  t.val.resize(rows);
  uint64_t x = 88172645463325252u;
  for (uint64_t i = 0; i < rows; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.key[i] = (uint32_t)(x >> 40);
    t.val[i] = (int32_t)(x & 0xFFFFF);
  }

  const int kM = 5;
  std::vector<double> wall[kM];
  RunResult last[kM];
  // per repetition: sampled estimate vs full tickclock timing (each node),
  // agg (= the query) vs the untimed query's wall time, and the estimator's
  // own 95 % confidence half-width relative to the estimate (each node)
  double worst_vs_full[3] = {0, 0, 0}, worst_ci[3] = {0, 0, 0}, worst_truth = 0;
  RunResult warm = RunMode(0, t);  // page in the table
  for (int rep = 0; rep < reps; ++rep) {
    for (int m = 0; m < kM; ++m) {
      last[m] = RunMode(m, t);
      wall[m].push_back(last[m].wall_ns);
      if (last[m].checksum != warm.checksum) {
        fprintf(stderr, "executor_bench: checksum mismatch in mode %s\n", kModes[m]);
        return 1;
      }
    }
    for (int k = 0; k < 3; ++k) {
      if (last[4].node[k].calls != last[1].node[k].calls ||
          last[4].node[k].rows != last[1].node[k].rows) {
        fprintf(stderr, "executor_bench: sampled mode counted %llu calls / %llu rows for %s, "
                "counting mode %llu / %llu\n", (unsigned long long)last[4].node[k].calls,
                (unsigned long long)last[4].node[k].rows, kNodes[k],
                (unsigned long long)last[1].node[k].calls, (unsigned long long)last[1].node[k].rows);
        return 1;
      }
      const NodeResult& sn = last[4].node[k];
      worst_vs_full[k] = std::max(worst_vs_full[k], std::fabs(sn.total_ns / last[2].node[k].total_ns - 1));
      worst_ci[k] = std::max(worst_ci[k], sn.ci95_ns / sn.total_ns);
    }
    worst_truth = std::max(worst_truth, std::fabs(last[4].node[2].total_ns / last[0].wall_ns - 1));
  }
  double best[kM], med[kM];
  for (int m = 0; m < kM; ++m) {
    best[m] = *std::min_element(wall[m].begin(), wall[m].end());
    med[m] = Median(wall[m]);
  }
  double worst_full_any = std::max({worst_vs_full[0], worst_vs_full[1], worst_vs_full[2]});
  double worst_ci_any = std::max({worst_ci[0], worst_ci[1], worst_ci[2]});
  double for_target = std::max(worst_truth, worst_ci_any);

  printf("executor: %llu rows, %d repetitions, timer %s, sampling p = 1/%llu (first %llu calls exact)\n",
         (unsigned long long)rows, reps, info->source_name, (unsigned long long)g_sample_every,
         (unsigned long long)kAlwaysFirst);
  printf("%-14s %10s %10s %10s\n", "mode", "ns/row", "median", "overhead");
  for (int m = 0; m < kM; ++m)
    printf("%-14s %10.2f %10.2f %9.1f%%\n", kModes[m], best[m] / rows, med[m] / rows,
           100 * (best[m] / best[0] - 1));
  printf("node totals, last repetition (ms):\n  %-8s %10s %10s %12s %10s %9s %12s\n", "node", "calls",
         "tickclock", "clock_gettime", "sampled", "+-95%", "vs tickclock");
  for (int k = 0; k < 3; ++k)
    printf("  %-8s %10llu %10.2f %12.2f %10.2f %8.2f%% %+11.1f%%\n", kNodes[k],
           (unsigned long long)last[2].node[k].calls, last[2].node[k].total_ns / 1e6,
           last[3].node[k].total_ns / 1e6, last[4].node[k].total_ns / 1e6,
           100 * last[4].node[k].ci95_ns / last[4].node[k].total_ns,
           100 * (last[4].node[k].total_ns / last[2].node[k].total_ns - 1));
  printf("untimed query wall time %.2f ms; full tickclock timing says agg = %.2f ms (%+.1f%%), "
         "sampled says %.2f ms (%+.1f%%)\n",
         last[0].wall_ns / 1e6, last[2].node[2].total_ns / 1e6,
         100 * (last[2].node[2].total_ns / last[0].wall_ns - 1), last[4].node[2].total_ns / 1e6,
         100 * (last[4].node[2].total_ns / last[0].wall_ns - 1));
  printf("sampled estimate error, worst repetition: vs untimed truth (agg) %.2f%%, 95%% CI half-width "
         "(worst node) %.2f%%, vs full timing (worst node) %.1f%%\n",
         100 * worst_truth, 100 * worst_ci_any, 100 * worst_full_any);

  if (!json.empty()) {
    FILE* f = fopen(json.c_str(), "w");
    if (!f) {
      fprintf(stderr, "executor_bench: cannot write %s\n", json.c_str());
      return 2;
    }
    fprintf(f, "{\n \"rows\": %llu, \"reps\": %d, \"sample_every\": %llu, \"always_first\": %llu,\n"
            " \"timer_source\": \"%s\",\n \"modes\": {\n",
            (unsigned long long)rows, reps, (unsigned long long)g_sample_every,
            (unsigned long long)kAlwaysFirst, info->source_name);
    for (int m = 0; m < kM; ++m)
      fprintf(f, "  \"%s\": {\"ns_per_row\": %.4f, \"median_ns_per_row\": %.4f}%s\n", kModes[m],
              best[m] / rows, med[m] / rows, m + 1 < kM ? "," : "");
    fprintf(f, " },\n \"overhead\": {");
    for (int m = 1; m < kM; ++m)
      fprintf(f, "\"%s\": %.5f%s", kModes[m], best[m] / best[0] - 1, m + 1 < kM ? ", " : "");
    fprintf(f, "},\n \"nodes_last_rep\": {\n");
    for (int k = 0; k < 3; ++k)
      fprintf(f, "  \"%s\": {\"calls\": %llu, \"rows\": %llu, \"tickclock_ns\": %.0f, "
              "\"clock_gettime_ns\": %.0f, \"sampled_ns\": %.0f, \"sampled_ci95_ns\": %.0f, "
              "\"samples\": %llu, \"sampled_vs_full\": %.5f}%s\n",
              kNodes[k], (unsigned long long)last[2].node[k].calls,
              (unsigned long long)last[2].node[k].rows, last[2].node[k].total_ns,
              last[3].node[k].total_ns, last[4].node[k].total_ns, last[4].node[k].ci95_ns,
              (unsigned long long)last[4].node[k].samples,
              last[4].node[k].total_ns / last[2].node[k].total_ns - 1, k < 2 ? "," : "");
    fprintf(f, " },\n \"untimed_wall_ns_last_rep\": %.0f,\n", last[0].wall_ns);
    fprintf(f, " \"sampled_error\": {\n  \"agg_vs_untimed_wall_worst\": %.5f,\n"
            "  \"ci95_rel_worst\": {\"scan\": %.5f, \"filter\": %.5f, \"agg\": %.5f},\n"
            "  \"vs_full_timing_worst\": {\"scan\": %.5f, \"filter\": %.5f, \"agg\": %.5f},\n"
            "  \"vs_full_timing_worst_node\": %.5f,\n"
            "  \"full_agg_vs_untimed_wall_last\": %.5f,\n"
            "  \"for_target\": %.5f,\n"
            "  \"target_metric\": \"worst of agg vs untimed wall and 95%% CI half-width\"}\n}\n",
            worst_truth, worst_ci[0], worst_ci[1], worst_ci[2], worst_vs_full[0], worst_vs_full[1],
            worst_vs_full[2], worst_full_any, last[2].node[2].total_ns / last[0].wall_ns - 1,
            for_target);
    fclose(f);
  }
  return 0;
}
