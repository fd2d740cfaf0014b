// A C++ user of the CMake package: the C++ API comes from the same header.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tickclock.h"

int main() {
  tickclock::stopwatch sw;
  const tickclock::clock::time_point t0 = tickclock::clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const long long ns = static_cast<long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(tickclock::clock::now() - t0).count());
  const long long sw_ns = static_cast<long long>(sw.elapsed_ns());
  const bool ok = ns >= 5000000 && ns < 10000000000LL && sw_ns >= ns;
  std::printf("%s: C++ consumer, source %s, 5 ms sleep = %lld ns\n", ok ? "ok" : "FAIL",
              tickclock::clock::info().source_name, ns);
  return ok ? 0 : 1;
}
