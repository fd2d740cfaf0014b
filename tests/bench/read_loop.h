// The fixed-count inner loop of the read benchmarks (micro_bench.cc,
// path_bench.cc): each benchmark iteration runs kOps operations and
// publishes the count as the counter "ops_per_iter"; ci/checks/bench
// (tests/bench/ratios.py) divides cpu_time by it: nanoseconds per operation.
#ifndef TICKCLOCK_TESTS_BENCH_READ_LOOP_H_
#define TICKCLOCK_TESTS_BENCH_READ_LOOP_H_

#include <benchmark/benchmark.h>

namespace tickclock_bench {

constexpr int kOps = 64;  // reads per benchmark iteration

// Publishes how many operations one iteration of st ran.
inline void Finish(benchmark::State& st, int ops) { st.counters["ops_per_iter"] = ops; }

// kOps calls of read() per iteration, each result kept from the optimiser.
template <class F>
void ReadLoop(benchmark::State& st, F read) {
  for (auto _ : st) {
    for (int i = 0; i < kOps; ++i) {
      auto v = read();
      benchmark::DoNotOptimize(v);
    }
  }
  Finish(st, kOps);
}

}  // namespace tickclock_bench

#endif  // TICKCLOCK_TESTS_BENCH_READ_LOOP_H_
