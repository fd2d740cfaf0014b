// A re-implementation, from its published description, of the tick -> ns
// conversion PostgreSQL 19 uses for TSC-based instr_time (pgsql-hackers
// "Use TSC for instr_time" series; src/include/portability/instr_time.h).
// Written from the algorithm, not copied:
//
//   ticks_per_ns_scaled   = (1e6 << TICKS_TO_NS_SHIFT) / tsc_khz   (shift 14)
//   max_ticks_no_overflow = INT64_MAX / ticks_per_ns_scaled
//   ns(t) = t * ticks_per_ns_scaled >> 14            if t <= max_ticks_no_overflow
//   otherwise split: count = t / max_ticks_no_overflow,
//         ns = count * (max_ticks_no_overflow * scaled >> 14)
//            + ((t - count * max_ticks_no_overflow) * scaled >> 14)
//
// At 2.1 GHz: scaled = 7801 (exact 7801.9), so results are ~1.2e-4 low
// (about 120 us per second), and the fast path covers t <= ~1.18e15 ticks
// (~6.5 days of uptime); beyond that every conversion pays a 64-bit
// division. PostgreSQL applies it to intervals, where the split path is
// rare; tickclock_to_ns is also used on absolute readings, which is why the
// benchmark measures both sides at 1 s ... 100 years.
#ifndef TICKCLOCK_BENCH_PG_CONV_H
#define TICKCLOCK_BENCH_PG_CONV_H

#include <cstdint>

namespace tickclock {
namespace bench {

struct PgConv {
  static constexpr int kShift = 14;  // TICKS_TO_NS_SHIFT
  uint64_t ticks_per_ns_scaled = 0;
  uint64_t max_ticks_no_overflow = 0;

  void Init(uint64_t tsc_khz) {
    ticks_per_ns_scaled = (UINT64_C(1000000) << kShift) / tsc_khz;
    max_ticks_no_overflow = (uint64_t)INT64_MAX / ticks_per_ns_scaled;
  }

  // Unsigned arithmetic on non-negative ticks, as PostgreSQL's comment
  // recommends for better code.
  int64_t TicksToNs(int64_t ticks) const {
    uint64_t t = (uint64_t)ticks;
    uint64_t ns = 0;
    if (__builtin_expect(t > max_ticks_no_overflow, 0)) {
      uint64_t count = t / max_ticks_no_overflow;
      uint64_t max_ns = (max_ticks_no_overflow * ticks_per_ns_scaled) >> kShift;
      ns = max_ns * count;
      t -= count * max_ticks_no_overflow;
    }
    ns += (t * ticks_per_ns_scaled) >> kShift;
    return (int64_t)ns;
  }
};

}  // namespace bench
}  // namespace tickclock

#endif
