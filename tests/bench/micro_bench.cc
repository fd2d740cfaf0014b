// tickclock micro benchmarks: clock reads, intervals, tick->ns conversion
// and the batch kernels, side by side with the peers, in one process so
// that ci/checks/bench can divide every figure by a baseline from the same run.
//
// Every benchmark iteration runs a fixed-count inner loop of kOps
// operations and publishes the count as the counter "ops_per_iter"
// (read_loop.h, shared with path_bench.cc); ci/checks/bench divides the time by
// it (ns per operation).
//
// Names: BM_read/<what>[/tsc|/auto], BM_interval/<what>/<mode>,
//        BM_conv/<scheme>/<uptime>, BM_batch/<kernel>/<impl>.
#include <benchmark/benchmark.h>
#include <cpuid.h>
#include <time.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "batch.h"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "hwy/nanobenchmark.h"
#include "pg_conv.h"
#include "tests/bench/read_loop.h"
#include "tickclock.h"

namespace {

using tickclock_bench::Finish;
using tickclock_bench::kOps;
using tickclock_bench::ReadLoop;

// ---- source selection ------------------------------------------------------
// "tsc": tickclock_init({TICKCLOCK_SOURCE_TSC}) (the automatic choice on this
// host is the OS clock because the kernel marked the TSC unstable);
// "auto": tickclock_init(NULL). Re-initialises only when the mode changes.
enum Mode { kAuto = 0, kTsc = 1 };

bool SelectMode(benchmark::State& st, Mode m) {
  static int current = -1;
  if (current != m) {
    tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
    tickclock_init(m == kTsc ? &cfg : nullptr);
    current = m;
  }
  const tickclock_info* info = tickclock_info_get();
  if (m == kTsc && info->source != TICKCLOCK_SOURCE_TSC) {
    st.SkipWithError(("forced TSC refused: " + std::string(info->why)).c_str());
    return false;
  }
  st.SetLabel(info->source_name);
  return true;
}

// ---- reads -------------------------------------------------------------------
bool HaveRdtscp() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000001u) return false;
  __get_cpuid(0x80000001u, &a, &b, &c, &d);
  return (d >> 27) & 1;
}

void BM_read_rdtsc(benchmark::State& st) {
  ReadLoop(st, [] { return __rdtsc(); });
}
void BM_read_lfence_rdtsc(benchmark::State& st) {
  ReadLoop(st, [] {
    _mm_lfence();
    return __rdtsc();
  });
}
void BM_read_rdtscp(benchmark::State& st) {
  if (!HaveRdtscp()) {
    st.SkipWithError("RDTSCP not available: CPUID.80000001H:EDX[27] = 0 (would raise #UD)");
    return;
  }
  ReadLoop(st, [] {
    unsigned aux;
    return __rdtscp(&aux);
  });
}
void BM_read_tickclock_now(benchmark::State& st, Mode m) {
  if (!SelectMode(st, m)) return;
  ReadLoop(st, [] { return tickclock_now(); });
}
void BM_read_tickclock_now_ordered(benchmark::State& st, Mode m) {
  if (!SelectMode(st, m)) return;
  ReadLoop(st, [] { return tickclock_now_ordered(); });
}
template <clockid_t C>
void BM_read_clock_gettime(benchmark::State& st) {
  ReadLoop(st, [] {
    struct timespec ts;
    clock_gettime(C, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  });
}
void BM_read_steady_clock(benchmark::State& st) {
  ReadLoop(st, [] { return std::chrono::steady_clock::now(); });
}
void BM_read_absl_now(benchmark::State& st) {
  ReadLoop(st, [] { return absl::Now(); });
}
void BM_read_hwy_now(benchmark::State& st) {
  ReadLoop(st, [] { return hwy::platform::Now(); });
}

BENCHMARK(BM_read_rdtsc)->Name("BM_read/rdtsc");
BENCHMARK(BM_read_rdtscp)->Name("BM_read/rdtscp");
BENCHMARK(BM_read_lfence_rdtsc)->Name("BM_read/lfence_rdtsc");
BENCHMARK_CAPTURE(BM_read_tickclock_now, tsc, kTsc)->Name("BM_read/tickclock_now/tsc");
BENCHMARK_CAPTURE(BM_read_tickclock_now_ordered, tsc, kTsc)
    ->Name("BM_read/tickclock_now_ordered/tsc");
BENCHMARK_CAPTURE(BM_read_tickclock_now, auto, kAuto) -> Name("BM_read/tickclock_now/auto");
BENCHMARK_CAPTURE(BM_read_tickclock_now_ordered, auto, kAuto)
    -> Name("BM_read/tickclock_now_ordered/auto");
BENCHMARK(BM_read_clock_gettime<CLOCK_MONOTONIC>)->Name("BM_read/clock_gettime_monotonic");
BENCHMARK(BM_read_clock_gettime<CLOCK_MONOTONIC_RAW>)->Name("BM_read/clock_gettime_monotonic_raw");
BENCHMARK(BM_read_clock_gettime<CLOCK_MONOTONIC_COARSE>)
    ->Name("BM_read/clock_gettime_monotonic_coarse");
BENCHMARK(BM_read_steady_clock)->Name("BM_read/steady_clock");
BENCHMARK(BM_read_absl_now)->Name("BM_read/absl_now");
BENCHMARK(BM_read_hwy_now)->Name("BM_read/hwy_platform_now");

// ---- intervals: two reads + delta -> ns ----------------------------------------
void BM_interval_tickclock(benchmark::State& st, Mode m) {
  if (!SelectMode(st, m)) return;
  ReadLoop(st, [] {
    uint64_t t0 = tickclock_now();
    uint64_t t1 = tickclock_now();
    return tickclock_delta_ns(t0, t1);
  });
}
void BM_interval_clock_gettime(benchmark::State& st) {
  ReadLoop(st, [] {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (int64_t)(b.tv_nsec - a.tv_nsec);
  });
}
BENCHMARK_CAPTURE(BM_interval_tickclock, tsc, kTsc)->Name("BM_interval/tickclock/tsc");
BENCHMARK_CAPTURE(BM_interval_tickclock, auto, kAuto) -> Name("BM_interval/tickclock/auto");
BENCHMARK(BM_interval_clock_gettime)->Name("BM_interval/clock_gettime_monotonic");

// ---- durations with a bound, sampled timing --------------------------------------
void BM_duration_get(benchmark::State& st, Mode m) {
  if (!SelectMode(st, m)) return;
  ReadLoop(st, [] {
    uint64_t t0 = tickclock_now();
    uint64_t t1 = tickclock_now();
    tickclock_duration d;
    tickclock_duration_get(t0, t1, &d);
    return d.ns + (int64_t)d.bound_ns;
  });
}
BENCHMARK_CAPTURE(BM_duration_get, tsc, kTsc)->Name("BM_interval/duration_get/tsc");
// The same with a second thread doing the same at the same time (both
// threads' figures; the shared state is read by both).
void BM_duration_get_threads(benchmark::State& st) {
  if (st.thread_index() == 0 && !SelectMode(st, kTsc)) return;
  ReadLoop(st, [] {
    uint64_t t0 = tickclock_now();
    uint64_t t1 = tickclock_now();
    tickclock_duration d;
    tickclock_duration_get(t0, t1, &d);
    return d.ns + (int64_t)d.bound_ns;
  });
  // per thread, as the time is (not the sum over both)
  st.counters["ops_per_iter"] = benchmark::Counter(kOps, benchmark::Counter::kAvgThreads);
}
BENCHMARK(BM_duration_get_threads)->Name("BM_interval/duration_get_2threads/tsc")->Threads(2);
// A long interval: its start taken 2 ms before the loop (long enough for
// a suspend to lie inside it), one read and a bounded duration per op.
void BM_duration_get_long(benchmark::State& st) {
  if (!SelectMode(st, kTsc)) return;
  uint64_t t0 = tickclock_now();
  struct timespec w = {0, 2000000};
  nanosleep(&w, nullptr);
  ReadLoop(st, [t0] {
    tickclock_duration d;
    tickclock_duration_get(t0, tickclock_now(), &d);
    return d.ns + (int64_t)d.bound_ns;
  });
}
BENCHMARK(BM_duration_get_long)->Name("BM_interval/duration_get_long/tsc");
// One read and the duration from it to a tick 100 years ahead (a deadline
// asked as a duration): as long an interval as above, and one in 64 goes
// out of line and reads the counter (the far ticks' check of a counter
// that jumped among them).
void BM_duration_get_far(benchmark::State& st) {
  if (!SelectMode(st, kTsc)) return;
  uint64_t ahead = (uint64_t)(100 * 365 * 86400.0 * tickclock_info_get()->unit_hz);
  ReadLoop(st, [ahead] {
    uint64_t t0 = tickclock_now();
    tickclock_duration d;
    tickclock_duration_get(t0, t0 + ahead, &d);
    return d.ns + (int64_t)d.bound_ns;
  });
}
BENCHMARK(BM_duration_get_far)->Name("BM_interval/duration_get_100y/tsc");

// The sampler's decision on a state in memory (a static, as a per-thread
// or per-node state would be; a local would live in a register). The
// baseline runs the same loop without the decision; not_sampled decides
// with p = 1e-12 (never timed in a run), so the difference is the cost of
// deciding "not timed".
tickclock_sampler g_sampler;
void BM_sampler_baseline(benchmark::State& st) {
  for (auto _ : st) {
    for (int i = 0; i < kOps; ++i) benchmark::DoNotOptimize(i);
  }
  Finish(st, kOps);
}
void BM_sampler_not_sampled(benchmark::State& st) {
  tickclock_sampler_init(&g_sampler, 1e-12, 1);
  tickclock_sampler* s = &g_sampler;
  benchmark::DoNotOptimize(s);
  for (auto _ : st) {
    for (int i = 0; i < kOps; ++i) {
      benchmark::DoNotOptimize(i);
      if (tickclock_sampler_should_time(s)) tickclock_sampler_add(s, 1, 0);
    }
  }
  Finish(st, kOps);
}
// 1 in 64 timed: two reads, a bounded duration and the sums for those.
void BM_sampler_one_in_64(benchmark::State& st) {
  if (!SelectMode(st, kTsc)) return;
  tickclock_sampler_init(&g_sampler, 1.0 / 64, 1);
  tickclock_sampler* s = &g_sampler;
  benchmark::DoNotOptimize(s);
  for (auto _ : st) {
    for (int i = 0; i < kOps; ++i) {
      benchmark::DoNotOptimize(i);
      if (tickclock_sampler_should_time(s)) {
        uint64_t t0 = tickclock_now();
        benchmark::DoNotOptimize(i);
        tickclock_duration d;
        tickclock_duration_get(t0, tickclock_now(), &d);
        tickclock_sampler_add(s, (double)d.ns, (double)d.bound_ns);
      }
    }
  }
  Finish(st, kOps);
}
BENCHMARK(BM_sampler_baseline)->Name("BM_sampler/baseline");
BENCHMARK(BM_sampler_not_sampled)->Name("BM_sampler/not_sampled");
BENCHMARK(BM_sampler_one_in_64)->Name("BM_sampler/one_in_64/tsc");

// ---- conversion: absolute ticks -> ns at a given uptime -----------------------
// 2.1 GHz (this host's TSC rate). Inputs: kConvN values spread over 1 ms
// above the uptime, built at run time from a volatile so nothing folds.
constexpr uint64_t kHz = 2100000000u;
constexpr int kConvN = 1024;
volatile uint64_t g_hz = kHz;

std::vector<uint64_t> ConvInputs(double seconds) {
  uint64_t hz = g_hz;
  uint64_t base = (uint64_t)(seconds * (double)hz);
  std::vector<uint64_t> v(kConvN);
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < kConvN; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v[i] = base + x % (hz / 1000);
  }
  return v;
}

// Peers' state lives in globals, as in PostgreSQL (loaded on every call).
tickclock::bench::PgConv g_pg;
double g_ns_per_tick;  // the double-precision scheme: ns = ticks * (1e9 / hz)

template <class F>
void ConvLoop(benchmark::State& st, double seconds, F conv) {
  std::vector<uint64_t> in = ConvInputs(seconds);
  for (auto _ : st) {
    for (int i = 0; i < kConvN; ++i) {
      auto r = conv(in[i]);
      benchmark::DoNotOptimize(r);
    }
  }
  Finish(st, kConvN);
}

void BM_conv_tickclock(benchmark::State& st, double seconds) {
  tickclock_conv c;
  tickclock_conv_init(&c, g_hz, 1);
  ConvLoop(st, seconds, [&c](uint64_t t) { return tickclock_conv_ticks_to_ns(&c, t); });
}
void BM_conv_pg(benchmark::State& st, double seconds) {
  g_pg.Init(g_hz / 1000);
  ConvLoop(st, seconds, [](uint64_t t) { return g_pg.TicksToNs((int64_t)t); });
}
void BM_conv_double(benchmark::State& st, double seconds) {
  g_ns_per_tick = 1e9 / (double)g_hz;
  ConvLoop(st, seconds, [](uint64_t t) { return (int64_t)((double)t * g_ns_per_tick); });
}

constexpr double kSec1 = 1, kDays3 = 3 * 86400.0, kYear1 = 365 * 86400.0,
                 kYears100 = 100 * 365 * 86400.0;
#define CONV_SET(fn, scheme)                                        \
  BENCHMARK_CAPTURE(fn, s1, kSec1)->Name("BM_conv/" scheme "/1s");  \
  BENCHMARK_CAPTURE(fn, d3, kDays3)->Name("BM_conv/" scheme "/3d"); \
  BENCHMARK_CAPTURE(fn, y1, kYear1)->Name("BM_conv/" scheme "/1y"); \
  BENCHMARK_CAPTURE(fn, y100, kYears100)->Name("BM_conv/" scheme "/100y");
CONV_SET(BM_conv_tickclock, "tickclock")
CONV_SET(BM_conv_pg, "pg19")
CONV_SET(BM_conv_double, "double")

// ---- tickclock_to_ns through the library (TSC forced) ----------------------
// Absolute readings converted by the published state: "now" are readings
// of the last millisecond (the common case), the others the same readings
// moved ahead by 1 s, 1 year or 100 years (a tick from the future: an
// interval converted as if it were a tick, a caller's arbitrary value).
// Every one costs the same (no slow path): 100y / now is the target.
void BM_to_ns(benchmark::State& st, double ahead_s) {
  if (!SelectMode(st, kTsc)) return;
  double hz = tickclock_info_get()->unit_hz;
  uint64_t now = tickclock_now(), span = (uint64_t)(hz / 1000);
  uint64_t ahead = (uint64_t)(ahead_s * hz);
  std::vector<uint64_t> in(kConvN);
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < kConvN; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    in[i] = now - x % span + ahead;
  }
  for (auto _ : st) {
    for (int i = 0; i < kConvN; ++i) {
      uint64_t r = tickclock_to_ns(in[i]);
      benchmark::DoNotOptimize(r);
    }
  }
  Finish(st, kConvN);
}
// Absolute ticks at an uptime, as BM_conv's inputs (1 s of uptime lies
// below the state's base here: converted by the history's walk).
void BM_to_ns_uptime(benchmark::State& st, double seconds) {
  if (!SelectMode(st, kTsc)) return;
  ConvLoop(st, seconds, [](uint64_t t) { return tickclock_to_ns(t); });
}
BENCHMARK_CAPTURE(BM_to_ns, now, 0.0)->Name("BM_to_ns/tickclock/now");
BENCHMARK_CAPTURE(BM_to_ns, s1, kSec1)->Name("BM_to_ns/tickclock/1s");
BENCHMARK_CAPTURE(BM_to_ns, y1, kYear1)->Name("BM_to_ns/tickclock/1y");
BENCHMARK_CAPTURE(BM_to_ns, y100, kYears100)->Name("BM_to_ns/tickclock/100y");
BENCHMARK_CAPTURE(BM_to_ns_uptime, s1, kSec1)->Name("BM_to_ns/tickclock/uptime_1s");
BENCHMARK_CAPTURE(BM_to_ns_uptime, y100, kYears100)->Name("BM_to_ns/tickclock/uptime_100y");

// ---- batch kernels: 4096 elements, per element ---------------------------------
// Input and output are 32 KiB each: L1-resident only where L1D holds 64 KiB
// (on a 48 KiB L1D they stream from L2).
// "scalar" is the plain loop over the inline tickclock_conv functions
// (tickclock::batch::scalar); "hwy_<TARGET>" forces one Highway target with
// SetSupportedTargetsForTest. Registered in main() for every target
// compiled in and supported here.
constexpr size_t kBatchN = 4096;

struct BatchData {
  // 2.1 GHz (ns_int = 0), 24 MHz (ns_int = 41), 2.6 GHz (ns_int = 0) and
  // 1 GHz (ns_int = 1, ns_frac = 0: Armv8.6's fixed counter rate)
  tickclock_conv c21, c24, c26, c1g;
  std::vector<uint64_t> ticks, sorted, durations;
  std::vector<int64_t> deltas;
  BatchData() : ticks(kBatchN), sorted(kBatchN), durations(kBatchN), deltas(kBatchN) {
    tickclock_conv_init(&c21, g_hz, 1);
    tickclock_conv_init(&c24, 24000000, 1);
    tickclock_conv_init(&c26, 2600000000u, 1);
    tickclock_conv_init(&c1g, 1000000000, 1);
    uint64_t x = 0x2545F4914F6CDD1Du, acc = 1ull << 50;
    for (size_t i = 0; i < kBatchN; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ticks[i] = (uint64_t)(kYears100 * 2.1e9) + (x >> 20);  // 100 years of uptime
      deltas[i] = (int64_t)(x >> 24) * ((x & 1) ? -1 : 1);
      durations[i] = x >> (x & 63);
      acc += x & 0xFFFF;
      sorted[i] = acc;
    }
  }
};
BatchData& Data() {
  static BatchData d;
  return d;
}

enum Kernel {
  kTicks21,
  kTicks24,
  kDeltas,
  kHist,
  kMono,
  kTicks26,
  kTicks1g,
  kDeltas24,
  kDeltas26,
  kDeltas1g,
  kLastKernel = kDeltas1g
};
const char* const kKernelNames[] = {
    "ticks_to_ns",          "ticks_to_ns_24mhz",   "deltas_to_ns",     "log2_histogram",
    "first_decrease",       "ticks_to_ns_2600mhz", "ticks_to_ns_1ghz", "deltas_to_ns_24mhz",
    "deltas_to_ns_2600mhz", "deltas_to_ns_1ghz"};

// The converter and kind of input of each conversion kernel (nullptr:
// not a conversion).
const tickclock_conv* KernelConv(const BatchData& d, Kernel k) {
  switch (k) {
    case kTicks21:
    case kDeltas:
      return &d.c21;
    case kTicks24:
    case kDeltas24:
      return &d.c24;
    case kTicks26:
    case kDeltas26:
      return &d.c26;
    case kTicks1g:
    case kDeltas1g:
      return &d.c1g;
    default:
      return nullptr;
  }
}

void BatchLoop(benchmark::State& st, Kernel k, bool use_scalar, int64_t target) {
  BatchData& d = Data();
  if (!use_scalar) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    st.SetLabel(tickclock::batch::ActiveTarget());
  }
  std::vector<uint64_t> out(kBatchN);
  std::vector<int64_t> dout(kBatchN);
  uint64_t hist[tickclock::batch::kHistBuckets] = {};
  namespace tb = tickclock::batch;
  const tickclock_conv* conv = KernelConv(d, k);
  for (auto _ : st) {
    switch (k) {
      case kTicks21:
      case kTicks24:
      case kTicks26:
      case kTicks1g:
        use_scalar ? tb::scalar::TicksToNs(*conv, d.ticks.data(), out.data(), kBatchN)
                   : tb::TicksToNs(*conv, d.ticks.data(), out.data(), kBatchN);
        benchmark::DoNotOptimize(out.data());
        break;
      case kDeltas:
      case kDeltas24:
      case kDeltas26:
      case kDeltas1g:
        use_scalar ? tb::scalar::DeltasToNs(*conv, d.deltas.data(), dout.data(), kBatchN)
                   : tb::DeltasToNs(*conv, d.deltas.data(), dout.data(), kBatchN);
        benchmark::DoNotOptimize(dout.data());
        break;
      case kHist:
        use_scalar ? tb::scalar::Log2Histogram(d.durations.data(), kBatchN, hist)
                   : tb::Log2Histogram(d.durations.data(), kBatchN, hist);
        benchmark::DoNotOptimize(hist);
        break;
      case kMono: {
        size_t r = use_scalar ? tb::scalar::FirstDecrease(d.sorted.data(), kBatchN)
                              : tb::FirstDecrease(d.sorted.data(), kBatchN);
        benchmark::DoNotOptimize(r);
        break;
      }
    }
    benchmark::ClobberMemory();
  }
  if (!use_scalar) {
    hwy::SetSupportedTargetsForTest(0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
  Finish(st, (int)kBatchN);
}

std::string RegisterBatch() {
  std::string names;
  for (int k = kTicks21; k <= kLastKernel; ++k) {
    std::string base = std::string("BM_batch/") + kKernelNames[k] + "/";
    benchmark::RegisterBenchmark((base + "scalar").c_str(), BatchLoop, (Kernel)k, true, (int64_t)0);
    for (int64_t m = hwy::SupportedTargets() & HWY_TARGETS; m != 0; m &= m - 1) {
      int64_t t = m & -m;
      if (t == HWY_SCALAR) continue;  // that one is the plain loop again
      if (k == kTicks21) names += std::string(names.empty() ? "" : " ") + hwy::TargetName(t);
      benchmark::RegisterBenchmark((base + "hwy_" + hwy::TargetName(t)).c_str(), BatchLoop,
                                   (Kernel)k, false, t);
    }
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Context for the reader of bench.json.
  const tickclock_info* info = tickclock_info_get();
  benchmark::AddCustomContext("tickclock_auto_source", info->source_name);
  benchmark::AddCustomContext("tickclock_auto_why", info->why);
  benchmark::AddCustomContext("rdtscp", HaveRdtscp() ? "yes" : "no");
  benchmark::AddCustomContext("hwy_targets", RegisterBatch());
  benchmark::AddCustomContext("hwy_dispatched", tickclock::batch::ActiveTarget());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
