// A re-initialisation that cannot publish changes nothing: the core
// compiled in with the fake counter (x86: a kvm-clock guest whose timing
// leaf states the TSC's rate, which the first refinement cross-checks), calloc made to
// fail on demand so that a re-initialisation finds no slot and returns
// TICKCLOCK_ENOMEM. The live state, its rate still pending its
// cross-check, must then be judged on the evidence it was published with,
// not on the failed attempt's (a leaf stating 2.4 GHz): it stays on the
// TSC. Its own binary: calloc is interposed, and the states a process
// takes are never given back.
#include <stddef.h>

#include <atomic>
#include <cmath>
#include <string>

#include "doctest/doctest.h"
#include "tests/support/fake_platform.h"
#include "tests/support/skip.h"

#if defined(TCTEST_ASAN) || defined(TCTEST_TSAN)
#define TCTEST_SANITIZED_ALLOCATOR 1  // a sanitizer owns calloc
#else
static std::atomic<bool> g_calloc_fails(false);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *calloc(size_t a, size_t b) {
  if (g_calloc_fails.load()) return nullptr;
  return __libc_calloc(a, b);
}
#endif

TEST_CASE("a re-initialisation that fails for want of memory leaves the live cross-check alone" *
          doctest::test_suite("x86")) {
  if (fake::x86_only("a KVM timing leaf's rate cross-checked")) return;
#if defined(TCTEST_SANITIZED_ALLOCATOR)
  tctest::skip(
      "a re-initialisation without memory: a sanitizer's allocator cannot be made to fail");
  return;
#else
  FakeWorld w;
  tickclock_platform p = fake::full(&w);
  w.hypervisor = 1;
  w.hv_tsc_khz = 2500000;  // the fake TSC's own 2.5 GHz
  // a kvm-clock guest: the TSC is trusted only while the hypervisor's rate
  // agrees with calibration, so the evidence judged decides the source
  w.clocksource = "kvm-clock";
  w.available = "kvm-clock tsc hpet acpi_pm";
  tkc_set_platform(&p);
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  REQUIRE(tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC);
  REQUIRE(tickclock_info_get()->freq_pending_check == 1);
  // no memory from here: each re-initialisation takes a slot kept ready,
  // until none is left
  g_calloc_fails = true;
  int rc = TICKCLOCK_OK, ok = 0;
  for (int k = 0; k < 64 && rc == TICKCLOCK_OK; k++) {
    w.now_ns += 10000;
    rc = tickclock_init(NULL);
    if (rc == TICKCLOCK_OK) ok++;
  }
  REQUIRE(rc == TICKCLOCK_ENOMEM);
  const tickclock_info *live = tickclock_info_get();
  REQUIRE(live->source == TICKCLOCK_SOURCE_TSC);
  REQUIRE(live->freq_pending_check == 1);
  // the hypervisor now states 2.4 GHz; that re-initialisation fails too
  w.hv_tsc_khz = 2400000;
  CHECK(tickclock_init(NULL) == TICKCLOCK_ENOMEM);
  CHECK(tickclock_info_get() == live);
  g_calloc_fails = false;
  // the live state's cross-check: its own 2.5 GHz against the counter
  w.now_ns += 5000000;
  int r = tickclock_revalidate();
  const tickclock_info *after = tickclock_info_get();
  MESSAGE(ok << " re-initialisations on ready slots, then ENOMEM; after the cross-check: "
             << after->why);
  CHECK(r == 0);
  CHECK(after->source == TICKCLOCK_SOURCE_TSC);
  CHECK(std::fabs(after->hz - 2.5e9) < 2.5e9 * 1e-6);
  CHECK(std::string(after->freq_detail) == "hypervisor_40000010");
  tkc_set_platform(NULL);
#endif
}
