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

// Vector code lives between HWY_BEFORE_NAMESPACE/HWY_AFTER_NAMESPACE so it
// gets the static target's attributes (on aarch64 GCC refuses to inline
// Highway's NEON ops into a function without them: "target specific option
// mismatch").
HWY_BEFORE_NAMESPACE();
namespace tickclock_hwy_smoke {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

size_t LaneCount() { return hn::Lanes(hn::ScalableTag<std::uint32_t>()); }

// out[i] = a[i] + b[i] for the first LaneCount() elements.
void AddOneVector(const std::uint32_t *a, const std::uint32_t *b, std::uint32_t *out) {
  const hn::ScalableTag<std::uint32_t> d;
  hn::StoreU(hn::Add(hn::LoadU(d, a), hn::LoadU(d, b)), d, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace tickclock_hwy_smoke
HWY_AFTER_NAMESPACE();

namespace smoke = tickclock_hwy_smoke::HWY_NAMESPACE;

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
  const size_t n = smoke::LaneCount();
  REQUIRE(n >= 1);
  std::vector<std::uint32_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::uint32_t>(i);
    b[i] = 1000u;
  }
  smoke::AddOneVector(a.data(), b.data(), out.data());
  for (size_t i = 0; i < n; ++i) CHECK(out[i] == 1000u + i);
}
