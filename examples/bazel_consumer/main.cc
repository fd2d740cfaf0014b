// The C++ API from another workspace.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tickclock.hpp"

int main() {
  tickclock::stopwatch sw;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const long long ns = static_cast<long long>(sw.elapsed_ns());
  const bool ok = ns >= 5000000 && ns < 10000000000LL;
  std::printf("%s: 5 ms sleep measured as %lld ns with %s\n", ok ? "ok" : "FAIL", ns,
              tickclock::clock::info().source_name);
  return ok ? 0 : 1;
}
