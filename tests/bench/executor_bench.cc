// The instrumented-executor scenario (EXPLAIN ANALYZE's case).
//
// A volcano pipeline  Agg(hash, 1024 groups) <- Filter <- Scan  over
// --rows rows (default 10^7), one virtual call per node per row, run in
// six modes that differ only in the instrumentation policy compiled into
// every node (a template parameter, so "untimed" carries no residue):
//
//   untimed        nothing
//   counting       calls and rows counted (EXPLAIN ANALYZE TIMING OFF)
//   tickclock      every call timed: two tickclock_now() (TSC forced)
//   clock_gettime  every call timed: two clock_gettime(CLOCK_MONOTONIC)
//   sampled        1 call in N timed with tickclock_now(), see below
//   sampled_blocks the same, and each call counted when it reached a
//                  block, as the PostgreSQL patch does (one counter of
//                  blocks reached, bumped beside the buffer counts, read
//                  before and after the call; the scan moves to a new
//                  "page" every kRowsPerPage rows in every mode): the cost
//                  of that count, against sampled
//   (shadow)       full timing plus the sampler's picks, for the error only
//
// Each repetition runs the modes round-robin; the figure per mode is the
// thread's CPU time in the fastest repetition (the machine is shared: CPU
// time leaves out other processes, the minimum is the least disturbed),
// overhead = t(mode) / t(untimed) - 1; wall time is reported alongside.
//
// ---- Sampled timing and its bias ------------------------------------------
// Deterministic "every N-th call" sampling is biased whenever call cost is
// correlated with the call index modulo N (a filter that passes every
// other row, a join that probes in batches, an aggregate whose first call
// does all the work): it aliases. Instead each call is sampled
// independently with probability p = 1/N (a Bernoulli process), realised
// cheaply as a countdown with geometrically distributed gaps (mean N,
// pre-drawn from a xorshift generator), so the unsampled path is a
// decrement and a predicted branch, and a sampled call leaves the hot path
// by a tail call (no stack frame on the hot path; see Instrumented()).
// The Horvitz-Thompson estimator
//       T_hat = sum_{sampled i} d_i / p_i
// is then unbiased for the node's total time *in the sampled run*:
// E[T_hat] = sum_i d_i. Refinements and caveats:
//  - The first K (= 8) calls of every node are always timed with weight 1
//    (p_i = 1 is allowed in Horvitz-Thompson; still unbiased). Without it,
//    a node whose total is concentrated in few calls -- the aggregate's
//    first call consumes the whole input -- would be estimated as 0 or as
//    N times its total: unbiased, but useless (variance ~ N * T^2).
//  - Preemption. A shared machine deschedules the process for milliseconds,
//    and the gap lands inside whichever intervals are open: a 20 ns call
//    measures 4 ms, and a sampled one is then multiplied by N. Intervals
//    longer than --outlier-us (default 10 us, hundreds of times a normal
//    call) among the calls after the first K are dropped from the sampled
//    sum and counted (the first K are exact and hold the legitimately long
//    calls here). This is a (small, stated) bias traded for variance.
//  - Measurement bias common to every timing mode: each timed interval
//    contains part of the timer's own cost, and a parent's interval
//    contains whatever instrumentation its children ran. Full timing pays
//    the latter on every child call (its totals here are several times the
//    untimed query's time), the sampled run on 1/N of them; so the sampled
//    mode's figures are not comparable with the full-timing run's.
//
// The sampling error is therefore measured in a seventh run, "shadow": every
// call is timed, and the calls the sampler would pick (same K, same gaps)
// are summed on the side, so estimate and full total come from the very
// same durations; the error is |estimate / full - 1| per node, with the
// same outlier rule applied to both (raw figures reported too).
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

// ---- blocks reached ----------------------------------------------------------
// A buffer hit counted (pgBufferUsage.shared_blks_hit's stand-in) and the
// one counter of blocks reached bumped beside it (the patch's
// InstrCountBlock); the scan does both on every new page, in every mode,
// so the node bodies are the same everywhere, as the patch bumps it for
// every query: the ratio is the cost of reading the counter around each
// call (tests/bench/README.md has the figures).
constexpr uint64_t kRowsPerPage = 226;
}  // namespace
// external linkage, as pgBufferUsage's: the stores cannot be left out
int64_t g_executor_shared_hit, g_executor_blocks_reached;
namespace {
inline void CountBlock(int64_t* count) {
  ++*count;
  ++g_executor_blocks_reached;
}
inline int64_t BlocksReached() { return g_executor_blocks_reached; }

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

uint64_t g_sample_every = 1000;       // N
constexpr uint64_t kAlwaysFirst = 8;  // K

// Geometric(p = 1/N) gaps on {1, 2, ...}, pre-drawn at start-up (xorshift
// + inverse CDF) so that the sampling slow path is integer-only and
// call-free; each node starts at its own offset in the table. The table
// repeats after kGapTable gaps (about kGapTable * N calls per node).
constexpr size_t kGapTable = 1 << 14;
std::vector<int64_t> g_gaps;
void DrawGaps() {
  g_gaps.resize(kGapTable);
  uint64_t rng = 0x9E3779B97F4A7C15u;
  double p = 1.0 / (double)g_sample_every;
  for (auto& g : g_gaps) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    double u = (double)((rng * 0x2545F4914F6CDD1Du) >> 11) * 0x1.0p-53;  // [0, 1)
    g = g_sample_every == 1 ? 1 : 1 + (int64_t)std::floor(std::log1p(-u) / std::log1p(-p));
  }
}
unsigned g_gap_seed = 0;
uint64_t g_outlier_ticks = UINT64_MAX;  // --outlier-us in ticks (see ShadowInstr)

// Bookkeeping for the sampled mode; the hot path is in Instrumented()
// below. The number of calls is derived: calls = next_at - countdown - 1.
struct SampledInstr {
  int64_t countdown = 0;  // calls until the next timed call (< 0: time this one)
  uint64_t rows = 0;
  uint64_t t0 = 0;
  uint64_t next_at = 1;  // 1-based index of the next timed call
  uint64_t samples = 0, calls_at_begin = 0;
  uint64_t exact_ticks = 0;    // the first K calls, weight 1
  uint64_t sampled_ticks = 0;  // later sampled calls, weight N
  double sampled_sq = 0;       // sum of squared sampled durations (ticks^2)
  uint64_t outliers = 0;       // sampled intervals over --outlier-us, dropped
  size_t gap_i = (g_gap_seed += 5003) % kGapTable;
  uint64_t calls = 0;  // filled in by Finish()

  // The first K calls: countdown is handed out as 1 each time (all timed);
  // after the K-th, a geometric gap, so every later call is timed
  // independently with probability 1/N.
  void BeginSlow() {
    calls_at_begin = next_at;  // this call's 1-based index
    int64_t next = calls_at_begin < kAlwaysFirst ? 1 : g_gaps[gap_i++ % kGapTable];
    countdown += next;
    next_at += (uint64_t)next;
    t0 = tickclock_now();
  }
  void EndSlow() {
    uint64_t d = tickclock_now() - t0;
    if (calls_at_begin <= kAlwaysFirst) {
      exact_ticks += d;
    } else if (d > g_outlier_ticks) {
      ++outliers;  // a preemption, not the node's work (see ShadowInstr)
    } else {
      sampled_ticks += d;
      sampled_sq += (double)d * (double)d;
      ++samples;
    }
  }
  // A timed call: the whole node body between the two reads. Reached by
  // a tail call from the hot path (see Instrumented below).
  template <class F>
  __attribute__((noinline, cold)) bool RunTimed(F body) {
    BeginSlow();
    bool ok = body();
    EndSlow();
    rows += ok;
    return ok;
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
    double ns_per_tick = (double)tickclock_delta_ns(0, 1000000000) / 1e9;
    double sq_ns = (double)sampled_sq * ns_per_tick * ns_per_tick;
    return 1.96 * std::sqrt(sq_ns * (1 - p) / (p * p));
  }
};

// The sampled mode, and its untimed calls counted when they reached a
// block (the count of timed calls is taken in RunTimed's caller alike).
struct SampledBlocksInstr : SampledInstr {
  uint64_t block_calls = 0;
};

// Full timing with the sampler run in its shadow: every call is timed (as
// in "tickclock"), and the calls the sampler would have picked -- the first
// K, then the same geometric gaps -- are also summed on the side. Both
// totals come from the very same durations, so their difference is the
// estimator's sampling error alone, free of run-to-run noise and of the
// perturbation full timing causes (which the "sampled" mode avoids).
//
// On a shared machine the process is preempted for milliseconds at a time,
// and in full timing every preemption lands inside some node's interval: a
// 20 ns call measures as 4 ms. Such rare huge values are real wall time
// but not the node's work, and a 1-in-N sample catches them only with
// probability 1/N (and then multiplies them by N): the estimate stays
// unbiased but its error is dominated by the scheduler. So both totals are
// also kept without the intervals longer than --outlier-us (default 10 us,
// hundreds of times a normal call) among the calls after the first K (which
// are timed exactly in both, and hold the legitimately long ones here: the
// aggregate's first call is the whole query); the raw figures are
// reported too.
struct ShadowInstr {
  uint64_t calls = 0, rows = 0, ticks = 0, t0 = 0;
  uint64_t next_sample = 1, samples = 0, exact_ticks = 0, sampled_ticks = 0;
  uint64_t out_ticks = 0, out_exact = 0, out_sampled = 0, outliers = 0;
  size_t gap_i = (g_gap_seed += 5003) % kGapTable;
  void Begin() {
    ++calls;
    t0 = tickclock_now();
  }
  void End(bool ok) {
    uint64_t d = tickclock_now() - t0;
    ticks += d;
    rows += ok;
    bool outlier = d > g_outlier_ticks && calls > kAlwaysFirst;  // the first K are exact anyway
    if (__builtin_expect(outlier, 0)) {
      out_ticks += d;
      ++outliers;
    }
    if (calls == next_sample) {
      if (calls <= kAlwaysFirst) {
        exact_ticks += d;
        out_exact += outlier ? d : 0;
        next_sample += calls < kAlwaysFirst ? 1 : (uint64_t)g_gaps[gap_i++ % kGapTable];
      } else {
        sampled_ticks += d;
        out_sampled += outlier ? d : 0;
        ++samples;
        next_sample += (uint64_t)g_gaps[gap_i++ % kGapTable];
      }
    }
  }
  static double Ns(uint64_t t) { return (double)tickclock_delta_ns(0, t); }
  double TotalNs() const { return Ns(ticks); }
  double EstimateNs() const { return Ns(exact_ticks) + (double)g_sample_every * Ns(sampled_ticks); }
  double TrimmedTotalNs() const { return Ns(ticks - out_ticks); }
  double TrimmedEstimateNs() const {
    return Ns(exact_ticks - out_exact) + (double)g_sample_every * Ns(sampled_ticks - out_sampled);
  }
};

// The node body wrapped in its mode's instrumentation. For the sampled
// mode the unsampled path is a decrement, a predicted branch and the row
// count; a sampled call leaves through a tail call (a jump) to RunTimed,
// so the hot path keeps no extra registers and builds no stack frame.
template <class I, class F>
inline bool Instrumented(I& ins, F body) {
  ins.Begin();
  bool ok = body();
  ins.End(ok);
  return ok;
}
template <class F>
inline bool Instrumented(SampledInstr& ins, F body) {
  if (__builtin_expect(--ins.countdown < 0, 0)) return ins.RunTimed(body);
  bool ok = body();
  ins.rows += ok;
  return ok;
}
template <class F>
inline bool Instrumented(SampledBlocksInstr& ins, F body) {
  int64_t reached = BlocksReached();
  bool ok;
  if (__builtin_expect(--ins.countdown < 0, 0))
    ok = ins.RunTimed(body);
  else {
    ok = body();
    ins.rows += ok;
  }
  ins.block_calls += BlocksReached() != reached;
  return ok;
}

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
    return Instrumented(ins, [this, r] {
      bool ok = i < t->key.size();
      if (ok) {
        if (i % kRowsPerPage == 0) CountBlock(&g_executor_shared_hit);  // a new page
        r->key = t->key[i];
        r->val = t->val[i];
        ++i;
      }
      return ok;
    });
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
    return Instrumented(ins, [this, r] {
      bool ok;
      while ((ok = child->Next(r)) && !Pred(*r)) {
      }
      return ok;
    });
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
    return Instrumented(ins, [this, r] { return Body(r); });
  }
  bool Body(Row* r) {
    if (!done) {
      Row in;
      int64_t* s = sum.data();  // locals: the virtual call below would force reloads
      int64_t* c = cnt.data();
      Node* ch = child;
      while (ch->Next(&in)) {
        size_t g = (size_t)in.key & (kGroups - 1);
        s[g] += in.val;
        c[g] += 1;
      }
      done = true;
    }
    bool ok = emit < kGroups;
    if (ok) {
      r->key = emit;
      r->val = sum[emit] + cnt[emit];
      ++emit;
    }
    return ok;
  }
};

struct NodeResult {
  uint64_t calls = 0, rows = 0, samples = 0, block_calls = 0;
  double total_ns = 0, ci95_ns = 0, shadow_est_ns = 0, trimmed_total_ns = 0, trimmed_est_ns = 0;
  uint64_t outliers = 0;
};

struct RunResult {
  double wall_ns = 0, cpu_ns = 0;  // wall: steady_clock; cpu: this thread's CPU time
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
                std::is_base_of_v<SampledInstr, I> || std::is_same_v<I, ShadowInstr>)
    n.total_ns = ins.TotalNs();
  if constexpr (std::is_same_v<I, ShadowInstr>) {
    n.shadow_est_ns = ins.EstimateNs();
    n.trimmed_total_ns = ins.TrimmedTotalNs();
    n.trimmed_est_ns = ins.TrimmedEstimateNs();
    n.outliers = ins.outliers;
    n.samples = ins.samples;
  }
  if constexpr (std::is_base_of_v<SampledInstr, I>) {
    n.samples = ins.samples;
    n.ci95_ns = ins.Ci95Ns();
  }
  if constexpr (std::is_same_v<I, SampledBlocksInstr>) n.block_calls = ins.block_calls;
  return n;
}

template <class I>
__attribute__((noinline)) RunResult RunPipeline(const Table& t) {
  Scan<I> scan(&t);
  Filter<I> filter(&scan);
  Agg<I> agg(&filter);
  Node* top = &agg;
  RunResult res;
  struct timespec c0, c1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto w0 = std::chrono::steady_clock::now();
  Row r;
  while (top->Next(&r)) res.checksum += r.key ^ r.val;
  auto w1 = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  res.wall_ns = (double)std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count();
  res.cpu_ns = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
  if constexpr (std::is_base_of_v<SampledInstr, I>) {
    scan.ins.Finish();
    filter.ins.Finish();
    agg.ins.Finish();
  }
  res.node[0] = Collect(scan.ins);
  res.node[1] = Collect(filter.ins);
  res.node[2] = Collect(agg.ins);
  return res;
}

// The last run, "shadow", is not an overhead figure: it measures the
// sampling error (see ShadowInstr).
const char* const kModes[] = {"untimed", "counting",       "tickclock", "clock_gettime",
                              "sampled", "sampled_blocks", "shadow"};
constexpr int kSampled = 4, kSampledBlocks = 5, kShadow = 6;
const char* const kNodes[] = {"scan", "filter", "agg"};

RunResult RunMode(int m, const Table& t) {
  switch (m) {
    case 0:
      return RunPipeline<NoInstr>(t);
    case 1:
      return RunPipeline<CountInstr>(t);
    case 2:
      return RunPipeline<TscInstr>(t);
    case 3:
      return RunPipeline<CgtInstr>(t);
    case kSampled:
      return RunPipeline<SampledInstr>(t);
    case kSampledBlocks:
      return RunPipeline<SampledBlocksInstr>(t);
    default:
      return RunPipeline<ShadowInstr>(t);
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
  double outlier_us = 10;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--rows=", 7))
      rows = strtoull(argv[i] + 7, nullptr, 10);
    else if (!strncmp(argv[i], "--reps=", 7))
      reps = atoi(argv[i] + 7);
    else if (!strncmp(argv[i], "--sample-every=", 15))
      g_sample_every = strtoull(argv[i] + 15, nullptr, 10);
    else if (!strncmp(argv[i], "--json=", 7))
      json = argv[i] + 7;
    else if (!strncmp(argv[i], "--outlier-us=", 13))
      outlier_us = strtod(argv[i] + 13, nullptr);
    else {
      fprintf(stderr,
              "executor_bench: unknown argument '%s'\n"
              "usage: executor_bench [--rows=N] [--reps=R] [--sample-every=N] [--outlier-us=U] "
              "[--json=FILE]\n",
              argv[i]);
      return 2;
    }
  }
  if (rows == 0 || reps < 1 || g_sample_every < 1) {
    fprintf(stderr, "executor_bench: --rows, --reps and --sample-every must be positive\n");
    return 2;
  }
  DrawGaps();
  tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
  int rc = tickclock_init(&cfg);
  const tickclock_info* info = tickclock_info_get();
  if (info->source != TICKCLOCK_SOURCE_TSC)
    fprintf(stderr, "executor_bench: forced TSC refused (rc %d): %s; timing with %s\n", rc,
            info->why, info->source_name);

  g_outlier_ticks = tickclock_conv_ns_to_ticks(&info->conv, (uint64_t)(outlier_us * 1000));
  if (info->source == TICKCLOCK_SOURCE_SYSTEM) g_outlier_ticks = (uint64_t)(outlier_us * 1000);

  Table t;
  t.key.resize(rows);
  t.val.resize(rows);
  uint64_t x = 88172645463325252u;
  for (uint64_t i = 0; i < rows; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.key[i] = (uint32_t)(x >> 40);
    t.val[i] = (int32_t)(x & 0xFFFFF);
  }

  const int kM = 6;     // modes with an overhead figure
  const int kRuns = 7;  // plus the shadow run
  std::vector<double> wall[kRuns], cpu[kRuns];
  RunResult last[kRuns];
  // Per repetition and node: the sampling error (shadow estimate vs the full
  // timing of the same calls), the sampled mode's 95 % confidence half-width
  // relative to its estimate, and the sampled mode's estimate vs the full
  // tickclock run (different runs: includes full timing's perturbation).
  double worst_err[3] = {0, 0, 0}, worst_raw[3] = {0, 0, 0}, worst_ci[3] = {0, 0, 0},
         worst_cross[3] = {0, 0, 0};
  std::vector<double> rep_err;     // worst node's error in each repetition
  RunResult warm = RunMode(0, t);  // page in the table
  for (int rep = 0; rep < reps; ++rep) {
    for (int m = 0; m < kRuns; ++m) {
      last[m] = RunMode(m, t);
      wall[m].push_back(last[m].wall_ns);
      cpu[m].push_back(last[m].cpu_ns);
      if (last[m].checksum != warm.checksum) {
        fprintf(stderr, "executor_bench: checksum mismatch in mode %s\n", kModes[m]);
        return 1;
      }
    }
    double rep_worst = 0;
    for (int k = 0; k < 3; ++k) {
      for (int m : {kSampled, kSampledBlocks, kShadow}) {
        if (last[m].node[k].calls != last[1].node[k].calls ||
            last[m].node[k].rows != last[1].node[k].rows) {
          fprintf(stderr,
                  "executor_bench: %s mode counted %llu calls / %llu rows for %s, "
                  "counting mode %llu / %llu\n",
                  kModes[m], (unsigned long long)last[m].node[k].calls,
                  (unsigned long long)last[m].node[k].rows, kNodes[k],
                  (unsigned long long)last[1].node[k].calls,
                  (unsigned long long)last[1].node[k].rows);
          return 1;
        }
      }
      const NodeResult& sh = last[kShadow].node[k];
      const NodeResult& sn = last[kSampled].node[k];
      worst_err[k] = std::max(worst_err[k], std::fabs(sh.trimmed_est_ns / sh.trimmed_total_ns - 1));
      rep_worst = std::max(rep_worst, std::fabs(sh.trimmed_est_ns / sh.trimmed_total_ns - 1));
      worst_raw[k] = std::max(worst_raw[k], std::fabs(sh.shadow_est_ns / sh.total_ns - 1));
      worst_ci[k] = std::max(worst_ci[k], sn.ci95_ns / sn.total_ns);
      worst_cross[k] =
          std::max(worst_cross[k], std::fabs(sn.total_ns / last[2].node[k].total_ns - 1));
    }
    rep_err.push_back(rep_worst);
    // every call that reached a block counted, timed or not: the scan's
    // calls that moved to a new page, and as many of the filter's
    uint64_t pages = (rows + kRowsPerPage - 1) / kRowsPerPage;
    if (last[kSampledBlocks].node[0].block_calls != pages ||
        last[kSampledBlocks].node[1].block_calls != pages) {
      fprintf(stderr, "executor_bench: sampled_blocks counted %llu / %llu block calls, want %llu\n",
              (unsigned long long)last[kSampledBlocks].node[0].block_calls,
              (unsigned long long)last[kSampledBlocks].node[1].block_calls,
              (unsigned long long)pages);
      return 1;
    }
  }
  double median_err = Median(rep_err);
  // Figures: this thread's CPU time (other tenants' processes and our own
  // preemptions excluded), fastest repetition; wall time kept alongside.
  double best[kRuns], med[kRuns], best_wall[kRuns];
  for (int m = 0; m < kRuns; ++m) {
    best[m] = *std::min_element(cpu[m].begin(), cpu[m].end());
    med[m] = Median(cpu[m]);
    best_wall[m] = *std::min_element(wall[m].begin(), wall[m].end());
  }
  double worst_err_any = std::max({worst_err[0], worst_err[1], worst_err[2]});
  double worst_raw_any = std::max({worst_raw[0], worst_raw[1], worst_raw[2]});

  printf(
      "executor: %llu rows, %d repetitions, timer %s, sampling p = 1/%llu (first %llu calls "
      "exact)\n",
      (unsigned long long)rows, reps, info->source_name, (unsigned long long)g_sample_every,
      (unsigned long long)kAlwaysFirst);
  printf("%-14s %10s %10s %10s %12s\n", "mode", "cpu ns/row", "median", "overhead", "wall ns/row");
  for (int m = 0; m < kM; ++m)
    printf("%-14s %10.2f %10.2f %9.1f%% %12.2f\n", kModes[m], best[m] / rows, med[m] / rows,
           100 * (best[m] / best[0] - 1), best_wall[m] / rows);
  printf("sampled_blocks / sampled, cpu time: %.4f (best), %.4f (median)\n",
         best[kSampledBlocks] / best[kSampled], med[kSampledBlocks] / med[kSampled]);
  printf(
      "node totals, last repetition (ms); shadow run: full timing vs the sampled estimate "
      "from the same calls, raw and without intervals > %.0f us\n",
      outlier_us);
  printf("  %-7s %9s %10s %11s %9s %7s | %9s %9s %8s | %6s %9s %9s %8s\n", "node", "calls",
         "tickclock", "clk_gettime", "sampled", "+-95%", "full", "estimate", "error", ">thr",
         "full", "estimate", "error");
  for (int k = 0; k < 3; ++k) {
    const NodeResult& sh = last[kShadow].node[k];
    printf(
        "  %-7s %9llu %10.2f %11.2f %9.2f %6.2f%% | %9.2f %9.2f %+7.2f%% | %6llu %9.2f %9.2f "
        "%+7.2f%%\n",
        kNodes[k], (unsigned long long)last[2].node[k].calls, last[2].node[k].total_ns / 1e6,
        last[3].node[k].total_ns / 1e6, last[kSampled].node[k].total_ns / 1e6,
        100 * last[kSampled].node[k].ci95_ns / last[kSampled].node[k].total_ns, sh.total_ns / 1e6,
        sh.shadow_est_ns / 1e6, 100 * (sh.shadow_est_ns / sh.total_ns - 1),
        (unsigned long long)sh.outliers, sh.trimmed_total_ns / 1e6, sh.trimmed_est_ns / 1e6,
        100 * (sh.trimmed_est_ns / sh.trimmed_total_ns - 1));
  }
  printf(
      "untimed query %.2f ms; full tickclock timing of agg %.2f ms (%+.0f%%: timer cost inside "
      "the intervals); sampled mode %.2f ms (%+.1f%%)\n",
      last[0].wall_ns / 1e6, last[2].node[2].total_ns / 1e6,
      100 * (last[2].node[2].total_ns / last[0].wall_ns - 1), last[kSampled].node[2].total_ns / 1e6,
      100 * (last[kSampled].node[2].total_ns / last[0].wall_ns - 1));
  printf(
      "sampling error vs full timing of the same calls, worst node and repetition: %.2f%% "
      "without intervals > %.0f us (scan %.2f%%, filter %.2f%%, agg %.2f%%); raw %.2f%%\n",
      100 * worst_err_any, outlier_us, 100 * worst_err[0], 100 * worst_err[1], 100 * worst_err[2],
      100 * worst_raw_any);
  printf("median over repetitions of the worst node's error: %.2f%%\n", 100 * median_err);

  if (!json.empty()) {
    FILE* f = fopen(json.c_str(), "w");
    if (!f) {
      fprintf(stderr, "executor_bench: cannot write %s\n", json.c_str());
      return 2;
    }
    fprintf(f,
            "{\n \"rows\": %llu, \"reps\": %d, \"sample_every\": %llu, \"always_first\": %llu,\n"
            " \"timer_source\": \"%s\",\n \"modes\": {\n",
            (unsigned long long)rows, reps, (unsigned long long)g_sample_every,
            (unsigned long long)kAlwaysFirst, info->source_name);
    for (int m = 0; m < kM; ++m)
      fprintf(f,
              "  \"%s\": {\"ns_per_row\": %.4f, \"median_ns_per_row\": %.4f, "
              "\"wall_ns_per_row\": %.4f}%s\n",
              kModes[m], best[m] / rows, med[m] / rows, best_wall[m] / rows, m + 1 < kM ? "," : "");
    fprintf(f, " },\n \"overhead\": {");
    for (int m = 1; m < kM; ++m)
      fprintf(f, "\"%s\": %.5f%s", kModes[m], best[m] / best[0] - 1, m + 1 < kM ? ", " : "");
    fprintf(f, "},\n \"sampled_blocks_over_sampled\": %.5f,\n",
            best[kSampledBlocks] / best[kSampled]);
    fprintf(f, " \"nodes_last_rep\": {\n");
    for (int k = 0; k < 3; ++k)
      fprintf(f,
              "  \"%s\": {\"calls\": %llu, \"rows\": %llu, \"tickclock_ns\": %.0f, "
              "\"clock_gettime_ns\": %.0f, \"sampled_ns\": %.0f, \"sampled_ci95_ns\": %.0f, "
              "\"sampled_samples\": %llu, \"shadow_full_ns\": %.0f, \"shadow_estimate_ns\": %.0f, "
              "\"shadow_outliers\": %llu, \"shadow_trimmed_full_ns\": %.0f, "
              "\"shadow_trimmed_estimate_ns\": %.0f}%s\n",
              kNodes[k], (unsigned long long)last[2].node[k].calls,
              (unsigned long long)last[2].node[k].rows, last[2].node[k].total_ns,
              last[3].node[k].total_ns, last[kSampled].node[k].total_ns,
              last[kSampled].node[k].ci95_ns, (unsigned long long)last[kSampled].node[k].samples,
              last[kShadow].node[k].total_ns, last[kShadow].node[k].shadow_est_ns,
              (unsigned long long)last[kShadow].node[k].outliers,
              last[kShadow].node[k].trimmed_total_ns, last[kShadow].node[k].trimmed_est_ns,
              k < 2 ? "," : "");
    fprintf(f, " },\n \"untimed_wall_ns_last_rep\": %.0f,\n", last[0].wall_ns);
    fprintf(
        f,
        " \"sampled_error\": {\n"
        "  \"outlier_us\": %.1f,\n"
        "  \"sampling_error_worst\": {\"scan\": %.5f, \"filter\": %.5f, \"agg\": %.5f},\n"
        "  \"sampling_error_raw_worst\": %.5f,\n"
        "  \"sampling_error_median_rep\": %.5f,\n"
        "  \"ci95_rel_worst\": {\"scan\": %.5f, \"filter\": %.5f, \"agg\": %.5f},\n"
        "  \"sampled_run_vs_full_run_worst\": {\"scan\": %.5f, \"filter\": %.5f, \"agg\": %.5f},\n"
        "  \"full_agg_vs_untimed_wall_last\": %.5f,\n"
        "  \"for_target\": %.5f,\n"
        "  \"target_metric\": \"vs full timing of the same calls, worst node, w/o preemption-size "
        "intervals\"}\n}\n",
        outlier_us, worst_err[0], worst_err[1], worst_err[2], worst_raw_any, median_err,
        worst_ci[0], worst_ci[1], worst_ci[2], worst_cross[0], worst_cross[1], worst_cross[2],
        last[2].node[2].total_ns / last[0].wall_ns - 1, worst_err_any);
    fclose(f);
  }
  return 0;
}
