// tickclock — C++ API over the C core (C++11 and later).
//
// ```c++
// auto t0 = tickclock::clock::now();
// work();
// auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
//     tickclock::clock::now() - t0).count();
// ```
//
// Durations with their error bound (tickclock_duration_get):
//
// ```c++
// tickclock::stopwatch sw;
// work();
// tickclock::bounded_duration b = sw.elapsed_bounded();  // b.value +- b.bound
// std::uint64_t t0 = tickclock_now_ordered();
// work();
// tickclock::bounded_duration c = tickclock::duration_between(t0, tickclock_now());
// ```
//
// tickclock::clock meets the TrivialClock requirements; its epoch is the
// counter's (boot, for the TSC), so compare its time_points with each other
// only. tickclock::stopwatch keeps raw ticks and converts on demand.
//
// The single header (src/amalgamate.sh) carries this file under
// #ifdef __cplusplus, so vendored C++ code includes only "tickclock.h".
#ifndef TICKCLOCK_HPP
#define TICKCLOCK_HPP

#include <chrono>
#include <cstdint>
#include <ratio>

#include "tickclock.h"

namespace tickclock {

struct clock {
  typedef std::int64_t rep;
  typedef std::nano period;
  typedef std::chrono::duration<rep, period> duration;
  typedef std::chrono::time_point<clock> time_point;
  static const bool is_steady = true;

  static time_point now() noexcept {
    return time_point(duration(static_cast<rep>(tickclock_to_ns(tickclock_now()))));
  }
  // The ordered read: not executed before earlier loads complete.
  static time_point now_ordered() noexcept {
    return time_point(duration(static_cast<rep>(tickclock_to_ns(tickclock_now_ordered()))));
  }
  // Raw ticks -> time_point (for values from tickclock_now()).
  static time_point from_ticks(std::uint64_t ticks) noexcept {
    return time_point(duration(static_cast<rep>(tickclock_to_ns(ticks))));
  }
  static const tickclock_info &info() noexcept { return *tickclock_info_get(); }
};

// An interval with its error bound (tickclock_duration_get): |value -
// the time that passed| <= bound; flags are TICKCLOCK_DURATION_*.
struct bounded_duration {
  clock::duration value;
  std::chrono::nanoseconds bound;  // INT64_MAX ns when saturated
  unsigned flags;
  unsigned spanned;  // publications the interval spans
};

// The interval between two ticks with its bound.
inline bounded_duration duration_between(std::uint64_t start, std::uint64_t end) noexcept {
  tickclock_duration d;
  bounded_duration r;
  (void)tickclock_duration_get(start, end, &d);
  r.value = clock::duration(d.ns);
  r.bound = std::chrono::nanoseconds(d.bound_ns > static_cast<std::uint64_t>(INT64_MAX)
                                         ? INT64_MAX
                                         : static_cast<std::int64_t>(d.bound_ns));
  r.flags = d.flags;
  r.spanned = d.spanned;
  return r;
}

// Measures elapsed time with raw counter reads; conversion happens only
// when asked, so start/lap cost one read each.
class stopwatch {
 public:
  stopwatch() noexcept : start_(tickclock_now()) {}
  void restart() noexcept { start_ = tickclock_now(); }
  std::uint64_t start_ticks() const noexcept { return start_; }
  std::uint64_t elapsed_ticks() const noexcept { return tickclock_now() - start_; }
  clock::duration elapsed() const noexcept {
    return clock::duration(tickclock_delta_ns(start_, tickclock_now()));
  }
  std::int64_t elapsed_ns() const noexcept { return tickclock_delta_ns(start_, tickclock_now()); }
  // The elapsed time with its error bound (tickclock_duration_get).
  bounded_duration elapsed_bounded() const noexcept {
    return duration_between(start_, tickclock_now());
  }
  // Returns the time since the last lap (or start) and starts a new lap.
  clock::duration lap() noexcept {
    std::uint64_t now = tickclock_now();
    clock::duration d(tickclock_delta_ns(start_, now));
    start_ = now;
    return d;
  }

 private:
  std::uint64_t start_;
};

}  // namespace tickclock

#endif  // TICKCLOCK_HPP
