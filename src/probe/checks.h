// Checks shared by `validate` and `warp`: cross-CPU warp, per-CPU
// monotonicity, drift against CLOCK_MONOTONIC_RAW. Each is bounded in time
// and stops early on Ctrl-C.
#ifndef TICKCLOCK_PROBE_CHECKS_H
#define TICKCLOCK_PROBE_CHECKS_H

#include <cstdint>
#include <vector>

namespace tickclock_probe {

std::vector<int> allowed_cpus();

struct WarpPair {
  int cpu_a, cpu_b;
  uint64_t iterations = 0;
  uint64_t backward = 0;  // observations of time going backwards
  uint64_t max_warp_ticks = 0;
  bool pinned = false;     // both threads were pinned as asked
  bool completed = false;  // ran its whole share (not cut short by Ctrl-C)
};

// Linux tsc_sync-style: two threads pinned to a pair of CPUs take a lock,
// read the previous reading another CPU published, take their own ordered
// reading and publish it; a reading earlier than the published one is a
// warp. Every pair of allowed CPUs, seconds split between the pairs.
std::vector<WarpPair> warp_test(uint64_t (*read_ordered)(), double seconds);

struct MonoCpu {
  int cpu;
  bool pinned = false;
  uint64_t reads = 0;
  uint64_t backward = 0;
  bool completed = false;  // ran its whole share (not cut short by Ctrl-C)
};
// A thread pinned to each CPU in turn reads in a tight loop (fast and
// ordered variants alternately), counting backward steps.
std::vector<MonoCpu> monotonic_per_cpu(uint64_t (*read_fast)(), uint64_t (*read_ordered)(),
                                       double seconds);

}  // namespace tickclock_probe

#endif
