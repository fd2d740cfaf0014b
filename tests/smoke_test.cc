// Toolchain smoke test: the C++ runtime a cross or alternative toolchain
// links must work — exceptions unwind, std::string allocates, a std::thread
// runs (pthread linked). ci/matrix also checks this binary is linked with
// libstdc++ when CC is clang. Fails on a toolchain with a broken runtime.
#include <stdexcept>
#include <string>
#include <thread>

#include "doctest/doctest.h"

TEST_CASE("C++ runtime: exceptions, allocation, threads") {
  std::string caught;
  try {
    throw std::runtime_error(std::string("unwound through ") + "the runtime");
  } catch (const std::exception &e) {
    caught = e.what();
  }
  CHECK(caught == "unwound through the runtime");
  int ran = 0;
  std::thread t([&] { ran = 42; });
  t.join();
  CHECK(ran == 42);
}
