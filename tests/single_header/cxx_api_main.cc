// A C++ program that has only the vendored tickclock.h: the C++ API
// (tickclock::clock, tickclock::stopwatch) comes from the same file as the
// C API. Compiled with the warnings users build with; the implementation
// is in another file (impl_after_stdio.c compiled as C++17).
#include <chrono>
#include <cstdio>
#include <ratio>
#include <type_traits>

#include "tickclock.h"

namespace {

int failures = 0;

// Waits by the standard library's steady clock (no std::thread: not every
// MinGW thread model has it).
void wait_for(std::chrono::milliseconds d) {
  const std::chrono::steady_clock::time_point end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

void expect(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;

  static_assert(tickclock::clock::is_steady, "tickclock::clock is steady");
  static_assert(std::is_same<tickclock::clock::period, std::nano>::value, "period is ns");
  static_assert(std::is_same<tickclock::clock::duration::rep, std::int64_t>::value, "rep");

  const tickclock_info &info = tickclock::clock::info();
  expect(info.source_name != nullptr && info.source_name[0] != '\0', "info().source_name");

  tickclock::clock::time_point t0 = tickclock::clock::now();
  tickclock::stopwatch sw;
  wait_for(milliseconds(20));
  tickclock::clock::time_point t1 = tickclock::clock::now_ordered();
  const long long waited = static_cast<long long>(duration_cast<nanoseconds>(t1 - t0).count());
  const long long sw_ns = static_cast<long long>(sw.elapsed_ns());
  // A 20 ms wait by steady_clock: at least 19.9 ms by tickclock (0.5% for
  // a calibrated frequency's error, far above its bound); 10 s bounds a
  // wrong frequency by a factor of 500 without failing a loaded machine.
  expect(waited >= 19900000 && waited < 10000000000LL, "clock::now() spans a 20 ms wait");
  expect(sw_ns >= 19900000 && sw_ns < 10000000000LL, "stopwatch spans a 20 ms wait");

  // The second lap lies inside [before, after]; one that started at the
  // stopwatch's start would be 20 ms longer. (Comparing it with the first
  // lap instead failed wherever the process stalled 20 ms between the two.)
  const std::uint64_t before = tickclock_now();
  tickclock::clock::duration lap1 = sw.lap();
  tickclock::clock::duration lap2 = sw.lap();
  const std::uint64_t after = tickclock_now();
  expect(lap1.count() >= sw_ns, "first lap covers the elapsed time");
  expect(lap2.count() >= 0 && lap2.count() <= tickclock_delta_ns(before, after) + 1000,
         "second lap starts at the first");

  const std::uint64_t raw = tickclock_now();
  expect(tickclock::clock::from_ticks(raw) >= t1, "from_ticks agrees with now()");

  std::printf("%s: source %s, 20 ms wait measured as %lld ns (clock) and %lld ns (stopwatch)\n",
              failures ? "FAIL" : "ok", info.source_name, waited, sw_ns);
  std::printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures != 0;
}
