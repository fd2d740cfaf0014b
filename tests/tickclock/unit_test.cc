// unit.c: the tick unit's continuity arithmetic, alone (no clock read, no
// lock, no global): states built by hand, readings handed in.
#include <cstdint>
#include <cstring>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"

namespace {

// A state on a source of hz, its base at (base_ticks, base_ns).
tickclock_info state(int source, uint64_t hz, uint64_t base_ticks, uint64_t base_ns) {
  tickclock_info s;
  std::memset(&s, 0, sizeof s);
  s.source = source;
  s.scaled = 1;
  REQUIRE(tickclock_conv_init(&s.conv, hz, 1) == TICKCLOCK_OK);
  s.src_conv = s.conv;
  s.base_ticks = base_ticks;
  s.base_ns = base_ns;
  s.src_base = base_ticks;
  s.src_is_unit = 1;
  s.read_path = TICKCLOCK_READ_COUNTER_MAPPED;
  return s;
}

const uint64_t kGHz = UINT64_C(1000000000);

}  // namespace

TEST_CASE("tkc_map: the raw counter is the unit; an offset source adds; another source converts") {
  tickclock_info s = state(TICKCLOCK_SOURCE_TSC, 2 * kGHz, 1000, 500);
  s.read_path = TICKCLOCK_READ_COUNTER;
  CHECK(tkc_map(&s, 12345) == 12345u);
  s.read_path = TICKCLOCK_READ_COUNTER_MAPPED;
  s.src_base = 700;
  CHECK(tkc_map(&s, 900) == 1200u);  // base + (r - src_base)
  CHECK(tkc_map(&s, 100) == 1000u);  // a reading below src_base: the base, never below
  // the OS clock (ns) in a 2 GHz counter's unit: ns -> unit ticks
  tickclock_info os = s;
  os.src_is_unit = 0;
  os.src_base = 0;
  REQUIRE(tickclock_conv_init(&os.src_conv, kGHz, 1) == TICKCLOCK_OK);
  CHECK(tkc_map(&os, 1000) == 1000u + 2000u);
  os.scaled = 0;  // unit ticks are ns: no conversion
  CHECK(tkc_map(&os, 1000) == 2000u);
}

TEST_CASE("tkc_map: a source in nanoseconds skips its own conversion and maps exactly as before") {
  // the OS clock (1 GHz: the identity) in a 2.1 GHz counter's unit
  tickclock_info os = state(TICKCLOCK_SOURCE_TSC, UINT64_C(2100000000), 5000, 0);
  os.read_path = TICKCLOCK_READ_OS;
  os.src_is_unit = 0;
  os.src_base = 100;
  REQUIRE(tickclock_conv_init(&os.src_conv, kGHz, 1) == TICKCLOCK_OK);
  tickclock_info slow = os;  // a rate a hair off 1 GHz takes the general path
  REQUIRE(tickclock_conv_init(&slow.src_conv, kGHz + 1, 1) == TICKCLOCK_OK);
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (int k = 0; k < 2000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t r = (k < 64) ? (UINT64_C(1) << k) : x >> (x & 31);
    uint64_t d = r >= os.src_base ? r - os.src_base : 0;
    CAPTURE(r);
    CHECK(tkc_map(&os, r) == os.base_ticks + tickclock_conv_ns_to_ticks(&os.conv, d));
    uint64_t ns = tickclock_conv_ticks_to_ns(&slow.src_conv, d);
    CHECK(tkc_map(&slow, r) == slow.base_ticks + tickclock_conv_ns_to_ticks(&slow.conv, ns));
  }
  // a source of 750 MHz (1.33 ns a tick: an integer part of 1 too) converts
  tickclock_info m = os;
  REQUIRE(tickclock_conv_init(&m.src_conv, UINT64_C(750000000), 1) == TICKCLOCK_OK);
  CHECK(tkc_map(&m, 100 + 3000) == m.base_ticks + tickclock_conv_ns_to_ticks(&m.conv, 4000));
}

TEST_CASE("tkc_after: ns ahead in unit ticks, saturating below UINT64_MAX") {
  tickclock_info s = state(TICKCLOCK_SOURCE_TSC, 3 * kGHz, 0, 0);
  CHECK(tkc_after(&s, 10, 1000) == 10u + 3000u);
  CHECK(tkc_after(&s, UINT64_MAX - 5, 1000) == UINT64_MAX - 1);
  s.scaled = 0;
  CHECK(tkc_after(&s, 10, 1000) == 1010u);
  CHECK(tkc_max_u64(3, 7) == 7u);
  CHECK(tkc_max_u64(7, 3) == 7u);
}

TEST_CASE("tkc_ns_before: a tick below a base converts with the newest state at or below it") {
  // a chain of 100 states, every one at 1 GHz, each base 1000 ticks above
  // the last, with its own ns offset so the state used shows in the result
  std::vector<tickclock_info> chain(100);
  for (unsigned g = 0; g < chain.size(); g++) {
    chain[g] = state(TICKCLOCK_SOURCE_TSC, kGHz, 1000u * g, 1000u * g + 7u * g);
    chain[g].generation = g + 1;
    chain[g].prev = g ? &chain[g - 1] : nullptr;
    tkc_link_history(&chain[g]);
  }
  const tickclock_info *last = &chain.back();
  for (uint64_t t = 0; t < 1000u * 99; t += 333) {
    uint64_t g = t / 1000;  // the state whose base lies at or below t
    CHECK(tkc_ns_before(last, t) == t + 7u * g);
  }
  // the history's jumps: the skip of generation 96 (0b1100000) is 64's
  CHECK(chain[95].skip == &chain[63]);
}

TEST_CASE("tkc_extrapolate: the last sample plus the raw time at drift + uncertainty") {
  tickclock_info s = state(TICKCLOCK_SOURCE_TSC, kGHz, 0, 0);
  s.uncertainty_ppm = 10;
  tkc_bracket prev = {1000000, 5000, 200, 0};  // mid, ns, width, susp
  double allow = 0;
  uint64_t dt = kGHz;  // one second of raw time since the sample
  uint64_t c = tkc_extrapolate(&s, prev, prev.ns + dt, 0, &allow);
  double slack =
      (double)dt * (TICKCLOCK_REVALIDATE_DRIFT_PPM + 10) * 1e-6 + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS;
  CHECK(c == prev.mid + prev.width / 2 + dt + (uint64_t)slack);
  CHECK(allow == doctest::Approx(slack + (double)dt * 10e-6 + 200 + 2.0));
  // a suspend since the sample counts: the counter may have run through it
  double allow2 = 0;
  uint64_t c2 = tkc_extrapolate(&s, prev, prev.ns + dt, kGHz, &allow2);
  CHECK(c2 > c + kGHz - 1);
  CHECK(allow2 > allow);
  // unknown suspended time at either end: no suspend assumed
  prev.susp = UINT64_MAX;
  double allow3 = 0;
  CHECK(tkc_extrapolate(&s, prev, prev.ns + dt, kGHz, &allow3) == c);
}

TEST_CASE(
    "tkc_unit_first / keep / same_counter: the first state fixes the unit; a new rate a guard "
    "ahead") {
  tickclock_info first = state(TICKCLOCK_SOURCE_TSC, 2 * kGHz, 99, 99);
  tkc_unit_first(&first, TICKCLOCK_READ_COUNTER);
  CHECK(first.unit_source == TICKCLOCK_SOURCE_TSC);
  CHECK(first.scaled == 1);
  CHECK(first.base_ticks == 0u);
  CHECK(first.base_ns == 0u);
  CHECK(first.read_path == TICKCLOCK_READ_COUNTER);
  tickclock_info sys = state(TICKCLOCK_SOURCE_SYSTEM, kGHz, 5, 5);
  tkc_unit_first(&sys, TICKCLOCK_READ_OS);
  CHECK(sys.scaled == 0);  // ticks are ns

  tickclock_info next = state(TICKCLOCK_SOURCE_TSC, 2 * kGHz + 2000, 0, 0);
  tkc_unit_keep(&first, &next);
  CHECK(next.src_is_unit == 1);
  tkc_unit_same_counter(&first, &next, 4 * kGHz);
  uint64_t guard = tickclock_conv_ns_to_ticks(&next.conv, TKC_REPUBLISH_GUARD_NS);
  CHECK(next.base_ticks == 4 * kGHz + guard);
  CHECK(next.src_base == next.base_ticks);
  CHECK(next.base_ns == tkc_ns_in(&first, next.base_ticks));
  // the guard holds: nothing moves; the counter came within half of it: the base moves
  tickclock_info moved = next;
  CHECK(tkc_unit_guard(&first, &moved, 4 * kGHz) == 0);
  CHECK(moved.base_ticks == next.base_ticks);
  CHECK(tkc_unit_guard(&first, &moved, next.base_ticks - guard / 4) == 1);
  CHECK(moved.base_ticks > next.base_ticks);
  CHECK(moved.base_ns == tkc_ns_in(&first, moved.base_ticks));
}

TEST_CASE("tkc_unit_mapped: the continuity bound is the step plus the time between the readings") {
  tickclock_info old = state(TICKCLOCK_SOURCE_TSC, kGHz, 0, 0);
  tickclock_info os =
      state(TICKCLOCK_SOURCE_SYSTEM, 3 * kGHz, 0, 0);  // a conv the unit must not take
  tkc_unit_keep(&old, &os);
  CHECK(os.src_is_unit == 0);
  // base above the old reading by 500 ticks (= ns at 1 GHz), readings 40 ns apart
  tkc_unit_mapped(&old, &os, 10500, 10000, 1000, 1040, 0, 0, TICKCLOCK_READ_OS);
  CHECK(os.base_ticks == 10500u);
  CHECK(os.base_ns == 10500u);
  CHECK(os.tkc_cont_bound_ns == 500u + 40u + 2u);
  CHECK(os.tkc_bounded_switch == 0);
  CHECK(os.read_path == TICKCLOCK_READ_OS);
  CHECK(os.conv.hz_num == old.conv.hz_num);  // the unit keeps its frequency
  // the raw clock unreadable: a read's worth (100 us)
  tkc_unit_mapped(&old, &os, 10000, 10000, 0, 0, 0, 0, TICKCLOCK_READ_OS);
  CHECK(os.tkc_cont_bound_ns == 100000u + 2u);
  // extrapolated away from a failed counter: the allowance counts ...
  tkc_unit_mapped(&old, &os, 10000, 10000, 1000, 1000, 300.0, 1, TICKCLOCK_READ_OS);
  CHECK(os.tkc_cont_bound_ns == 300u + 2u);
  CHECK(os.tkc_bounded_switch == 1);
  // ... and with no sample to extrapolate from, nothing bounds it
  tkc_unit_mapped(&old, &os, 10000, 10000, 1000, 1000, 0, 1, TICKCLOCK_READ_OS);
  CHECK(os.tkc_cont_bound_ns == UINT64_MAX / 2);
}
