// Highway links and runs on the target: runtime target detection (libhwy's
// SupportedTargets) and one statically dispatched vector add. Built only
// where a libhwy for the target is installed (//platforms:defs.bzl
// HIGHWAY_COMPATIBLE); SKIPPED elsewhere.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "hwy/highway.h"

namespace hn = hwy::HWY_NAMESPACE;

TEST_CASE("hwy::SupportedTargets is nonzero and includes the static target") {
  const auto targets = hwy::SupportedTargets();
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(targets));
  MESSAGE("supported targets: " << std::string(hex)
                                << ", static target: " << std::string(hwy::TargetName(HWY_TARGET)));
  CHECK(targets != 0);
  CHECK((targets & HWY_TARGET) != 0);
}

TEST_CASE("statically dispatched vector add") {
  const hn::ScalableTag<std::uint32_t> d;
  const size_t n = hn::Lanes(d);
  REQUIRE(n >= 1);
  std::vector<std::uint32_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::uint32_t>(i);
    b[i] = 1000u;
  }
  hn::StoreU(hn::Add(hn::LoadU(d, a.data()), hn::LoadU(d, b.data())), d, out.data());
  for (size_t i = 0; i < n; ++i) CHECK(out[i] == 1000u + i);
}
