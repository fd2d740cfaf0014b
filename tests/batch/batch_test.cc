// Batch kernels: bit identity with the scalar tickclock_conv functions on
// random and edge inputs, for every Highway target compiled in and
// supported by this CPU (each forced in turn with SetSupportedTargetsForTest).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "batch.h"
#include "doctest/doctest.h"
#include "tickclock.h"

#if TICKCLOCK_HAVE_HWY
#include "hwy/highway.h"
#include "hwy/targets.h"
#endif

namespace tb = tickclock::batch;

namespace {

struct Rng {
  uint64_t s;
  uint64_t operator()() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  }
};

// (name, target bit) for every target to test; {"scalar", 0} without Highway.
std::vector<std::pair<std::string, int64_t>> TargetsToTest() {
  std::vector<std::pair<std::string, int64_t>> out;
#if TICKCLOCK_HAVE_HWY
  hwy::SetSupportedTargetsForTest(0);
  for (int64_t m = hwy::SupportedTargets() & HWY_TARGETS; m != 0; m &= m - 1) {
    int64_t t = m & -m;
    out.emplace_back(hwy::TargetName(t), t);
  }
#else
  out.emplace_back("scalar", 0);
#endif
  return out;
}

void ForceTarget(int64_t t) {
#if TICKCLOCK_HAVE_HWY
  hwy::SetSupportedTargetsForTest(t);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
#else
  (void)t;
#endif
}

void ResetTargets() { ForceTarget(0); }

// Conversions to test: every frequency class from 24 MHz to 100 GHz plus
// the ends of the accepted range, rationals, and hand-built structs that
// reach the wide (ns_int >= 2^32) path.
std::vector<tickclock_conv> Convs() {
  const uint64_t hz[][2] = {
      {1, 1},           {1000, 1},         {32768, 1},         {1000000, 1},    {19200000, 1},
      {24000000, 1},    {25000000, 1},     {50000000, 1},      {62500000, 1},   {100000000, 1},
      {512000000, 1},   {999999999, 1},    {1000000000, 1},    {1000000001, 1}, {2100000000, 1},
      {2095999000, 1},  {3000000000, 7},   {2899999999, 1},    {3700000000, 1}, {5000000000, 1},
      {10000000000, 3}, {100000000000, 1}, {1000000000000, 1}, {7, 3},          {123456789012, 7},
      {2600000000, 1},  {1500000000, 1},   {1200000000, 1},    {1999999999, 1}, {2000000001, 1},
      {600000000, 1},   {500000001, 1}};
  std::vector<tickclock_conv> v;
  for (auto& h : hz) {
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, h[0], h[1]) == TICKCLOCK_OK);
    v.push_back(c);
  }
  tickclock_conv w{};
  w.ns_int = 0x123456789ull, w.ns_frac = 0xDEADBEEFCAFEF00Dull;  // wide integer part
  v.push_back(w);
  w.ns_int = ~0ull, w.ns_frac = ~0ull;
  v.push_back(w);
  w.ns_int = 1ull << 32, w.ns_frac = 0;
  v.push_back(w);
  w.ns_int = 0xFFFFFFFFull, w.ns_frac = 1;  // largest small integer part
  v.push_back(w);
  return v;
}

// Smallest t with ticks_to_ns(t) == UINT64_MAX (the function is monotone),
// or 0 if it never saturates.
uint64_t SaturationPoint(const tickclock_conv& c) {
  if (tickclock_conv_ticks_to_ns(&c, UINT64_MAX) != UINT64_MAX) return 0;
  uint64_t lo = 0, hi = UINT64_MAX;  // f(lo) < MAX <= f(hi)
  if (tickclock_conv_ticks_to_ns(&c, 0) == UINT64_MAX) return 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    (tickclock_conv_ticks_to_ns(&c, mid) == UINT64_MAX ? hi : lo) = mid;
  }
  return hi;
}

// Smallest magnitude m <= 2^63 with ticks_to_ns(m) >= 2^63 (the first
// saturating delta, either sign), or 0 if no delta saturates.
uint64_t Int64SaturationPoint(const tickclock_conv& c) {
  const uint64_t lim = 1ull << 63;
  if (tickclock_conv_ticks_to_ns(&c, lim) < lim) return 0;
  uint64_t lo = 0, hi = lim;  // f(lo) < 2^63 <= f(hi)
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    (tickclock_conv_ticks_to_ns(&c, mid) >= lim ? hi : lo) = mid;
  }
  return hi;
}

// Where the kernels' cheaper product column stops being exact, found here
// by its own means: the column sums t_hi*f_lo + t_lo*f_hi + (t_lo*f_lo >>
// 32) in one 64-bit lane, so it is exact for t exactly when that sum stays
// below 2^64. Returns the largest t_hi for which it does with the worst
// t_lo (2^32 - 1; the sum grows with t_lo), by bisection, with the
// overflow detected by carries (no 128-bit type needed).
bool ColumnFits(uint64_t f, uint64_t t_hi, uint64_t t_lo) {
  const uint64_t f_lo = f & 0xFFFFFFFFull, f_hi = f >> 32;
  const uint64_t a = t_hi * f_lo, b = t_lo * f_hi, c = (t_lo * f_lo) >> 32;
  const uint64_t ab = a + b;
  if (ab < a) return false;
  return ab + c >= ab;
}

// Largest t_hi whose every t_lo fits (t_hi <= 2^32 - 1), or -1 if none.
int64_t LastFittingHigh(uint64_t f) {
  const uint64_t m = 0xFFFFFFFFull;
  if (!ColumnFits(f, 0, m)) return -1;
  uint64_t lo = 0, hi = m + 1;  // fits(lo), !fits(hi) (hi = 2^32: none)
  if (ColumnFits(f, m, m)) return (int64_t)m;
  hi = m;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (ColumnFits(f, mid, m) ? lo : hi) = mid;
  }
  return (int64_t)lo;
}

std::vector<uint64_t> Inputs(const tickclock_conv& c, Rng& rng) {
  std::vector<uint64_t> v = {0,
                             1,
                             2,
                             3,
                             0xFFFFFFFFull,
                             0x100000000ull,
                             0x100000001ull,
                             (1ull << 62),
                             (1ull << 63) - 1,
                             1ull << 63,
                             (1ull << 63) + 1,
                             UINT64_MAX - 1,
                             UINT64_MAX};
  uint64_t s = SaturationPoint(c);
  for (uint64_t d = 0; d < 3 && s; ++d) {
    v.push_back(s - 1 + d);
    v.push_back(s - 2);
  }
  // the value whose |delta| saturates int64: around 2^63 ns
  for (int k = 0; k < 300; ++k) v.push_back(rng());
  for (int k = 0; k < 300; ++k) v.push_back(rng() >> (rng() & 63));
  for (int k = 0; k < 64; ++k) v.push_back(1ull << k), v.push_back((1ull << k) - 1);
  return v;
}

}  // namespace

TEST_CASE("batch kernels are bit-identical to the scalar conversion on every target") {
  auto targets = TargetsToTest();
  std::string names;
  for (auto& t : targets) names += (names.empty() ? "" : " ") + t.first;
  printf("batch_test: targets compiled and supported here: %s\n", names.c_str());
  MESSAGE("targets tested: " << names);
  REQUIRE(!targets.empty());
  const auto convs = Convs();
  for (auto& t : targets) {
    ForceTarget(t.second);
    INFO("target " << t.first);
    CHECK(std::string(tb::ActiveTarget()) == t.first);
    Rng rng{0x2545F4914F6CDD1Dull};
    for (const tickclock_conv& c : convs) {
      INFO("ns_int " << c.ns_int << " ns_frac " << c.ns_frac);
      std::vector<uint64_t> in = Inputs(c, rng);
      // unsigned
      std::vector<uint64_t> want(in.size()), got(in.size(), 0x5555);
      tb::scalar::TicksToNs(c, in.data(), want.data(), in.size());
      for (size_t k = 0; k < in.size(); ++k)
        REQUIRE(want[k] == tickclock_conv_ticks_to_ns(&c, in[k]));
      // every length up to 40 and offsets 0..3 (tails and unaligned starts)
      for (size_t off = 0; off < 4; ++off) {
        for (size_t n = 0; n <= 40 && off + n <= in.size(); ++n) {
          std::fill(got.begin(), got.end(), 0x5555);
          tb::TicksToNs(c, in.data() + off, got.data(), n);
          for (size_t k = 0; k < n; ++k) REQUIRE(got[k] == want[off + k]);
          for (size_t k = n; k < got.size(); ++k) REQUIRE(got[k] == 0x5555);  // no write past n
        }
      }
      tb::TicksToNs(c, in.data(), got.data(), in.size());
      for (size_t k = 0; k < in.size(); ++k) {
        INFO("t = " << in[k]);
        REQUIRE(got[k] == want[k]);
      }
      std::vector<uint64_t> inplace = in;  // out == in
      tb::TicksToNs(c, inplace.data(), inplace.data(), inplace.size());
      CHECK(inplace == want);
      // in place on every short length and offset: the first n converted,
      // everything after them (and before the offset) left as it was
      for (size_t off = 0; off < 4; ++off) {
        for (size_t n = 0; n <= 40 && off + n <= in.size(); ++n) {
          std::vector<uint64_t> buf = in;
          tb::TicksToNs(c, buf.data() + off, buf.data() + off, n);
          for (size_t k = 0; k < buf.size(); ++k)
            REQUIRE(buf[k] == (k >= off && k < off + n ? want[k] : in[k]));
        }
      }
      // signed: each input as is and negated, plus INT64_MIN/MAX
      std::vector<int64_t> din;
      for (uint64_t x : in) din.push_back((int64_t)x), din.push_back(-(int64_t)(x >> 1));
      din.push_back(INT64_MIN), din.push_back(INT64_MIN + 1), din.push_back(INT64_MAX);
      din.push_back(-1);
      // both signs around the magnitude that first converts to 2^63 ns or
      // more (where delta_to_ns starts to saturate; the SIMD kernels find
      // it once per call and compare against it)
      const uint64_t m = Int64SaturationPoint(c);
      for (uint64_t k = 0; m && k < 5; ++k) {
        const uint64_t mag = m - 2 + k;
        if (mag < (1ull << 63)) din.push_back((int64_t)mag);
        if (mag <= (1ull << 63)) din.push_back((int64_t)(0 - mag));
      }
      std::vector<int64_t> dwant(din.size()), dgot(din.size());
      tb::scalar::DeltasToNs(c, din.data(), dwant.data(), din.size());
      for (size_t k = 0; k < din.size(); ++k)
        REQUIRE(dwant[k] == tickclock_conv_delta_to_ns(&c, din[k]));
      for (size_t n = 0; n <= 40; ++n) {
        std::fill(dgot.begin(), dgot.end(), INT64_C(0x5555));
        tb::DeltasToNs(c, din.data() + 3, dgot.data(), n);
        for (size_t k = 0; k < n; ++k) REQUIRE(dgot[k] == dwant[3 + k]);
        for (size_t k = n; k < dgot.size(); ++k)
          REQUIRE(dgot[k] == INT64_C(0x5555));  // no write past n
        // in place
        std::vector<int64_t> buf = din;
        tb::DeltasToNs(c, buf.data() + 3, buf.data() + 3, n);
        for (size_t k = 0; k < buf.size(); ++k)
          REQUIRE(buf[k] == (k >= 3 && k < 3 + n ? dwant[k] : din[k]));
      }
      tb::DeltasToNs(c, din.data(), dgot.data(), din.size());
      for (size_t k = 0; k < din.size(); ++k) {
        INFO("d = " << din[k]);
        REQUIRE(dgot[k] == dwant[k]);
      }
    }
  }
  ResetTargets();
}

// The kernels take a cheaper product column wherever a per-conversion
// bound proves it exact, and check blocks of ticks against that bound
// when nothing else limits them. These inputs sit on both sides of the
// bound with the worst low half, as whole blocks and as one lane beyond
// the bound among lanes within it, at every position of a 64-element block
// (eight vectors of AVX-512; two such blocks of AVX2), and as deltas of
// both signs.
TEST_CASE("batch kernels stay exact on both sides of the cheaper column's bound") {
  auto targets = TargetsToTest();
  const uint64_t m = 0xFFFFFFFFull;
  size_t fitting_convs = 0, bounded_convs = 0;
  for (auto& t : targets) {
    ForceTarget(t.second);
    INFO("target " << t.first);
    for (const tickclock_conv& c : Convs()) {
      INFO("ns_int " << c.ns_int << " ns_frac " << c.ns_frac);
      const int64_t h = LastFittingHigh(c.ns_frac);
      if (h == (int64_t)m) {
        ++fitting_convs;  // every t fits: nothing beyond the bound
        continue;
      }
      ++bounded_convs;
      // the last t whose every smaller t fits, the first that does not
      const uint64_t inside = h < 0 ? 0 : ((uint64_t)h << 32) | m;
      const uint64_t beyond = ((uint64_t)(h + 1) << 32) | m;
      REQUIRE(!ColumnFits(c.ns_frac, beyond >> 32, beyond & m));
      std::vector<std::vector<uint64_t>> cases;
      cases.push_back(std::vector<uint64_t>(256, inside));
      cases.push_back(std::vector<uint64_t>(256, beyond));
      cases.push_back(std::vector<uint64_t>(256, UINT64_MAX));
      std::vector<uint64_t> below(256);
      for (size_t k = 0; k < below.size(); ++k) below[k] = inside - k * 977;
      cases.push_back(below);
      // one lane beyond among lanes within the bound: inside itself, and
      // half of it (below every power of two a check by bit width can use)
      for (uint64_t base : {inside, inside >> 1}) {
        for (size_t pos = 0; pos < 64; ++pos) {
          std::vector<uint64_t> one(64 + 3);
          for (size_t k = 0; k < one.size(); ++k) one[k] = base - k;
          one[pos] = beyond;
          cases.push_back(one);
        }
      }
      for (const auto& in : cases) {
        std::vector<uint64_t> want(in.size()), got(in.size()), inplace = in;
        tb::scalar::TicksToNs(c, in.data(), want.data(), in.size());
        tb::TicksToNs(c, in.data(), got.data(), in.size());
        REQUIRE(got == want);
        tb::TicksToNs(c, inplace.data(), inplace.data(), inplace.size());
        REQUIRE(inplace == want);
      }
      // deltas: magnitudes at the bound, both signs, within int64
      std::vector<int64_t> din;
      for (uint64_t mag : {inside, beyond, inside - 1, beyond + 1}) {
        if (mag > (1ull << 63)) continue;
        for (int k = 0; k < 40; ++k) din.push_back(k % 2 ? (int64_t)(0 - mag) : (int64_t)mag);
      }
      std::vector<int64_t> dwant(din.size()), dgot(din.size());
      tb::scalar::DeltasToNs(c, din.data(), dwant.data(), din.size());
      tb::DeltasToNs(c, din.data(), dgot.data(), din.size());
      REQUIRE(dgot == dwant);
    }
  }
  // the conversions above reach both kinds: bound-free and bounded ones
  CHECK(fitting_convs > 0);
  CHECK(bounded_convs > 0);
  ResetTargets();
}

// The delta kernels skip the per-lane saturation compare for a block
// whose magnitudes all lie below a power of two that is kept. One lane
// at the first saturating magnitude (or INT64_MIN), or at the last kept
// one, among lanes far below it, at every position of a 64-element block
// and with either sign, must come out as the scalar conversion has it; so
// must a block of magnitudes at the largest power of two below the
// threshold, where the block check's bit test and the lanes' compare
// meet.
TEST_CASE("delta kernels saturate a lone lane in a block of small deltas on every target") {
  size_t saturating = 0;
  for (auto& t : TargetsToTest()) {
    ForceTarget(t.second);
    INFO("target " << t.first);
    for (const tickclock_conv& c : Convs()) {
      INFO("ns_int " << c.ns_int << " ns_frac " << c.ns_frac);
      const uint64_t first_sat = Int64SaturationPoint(c);  // 0: nothing saturates
      if (first_sat == 0) continue;
      ++saturating;
      const uint64_t last_kept = first_sat - 1;
      std::vector<uint64_t> lone = {first_sat, last_kept, 1ull << 63};
      if (last_kept > 0) lone.push_back(1ull << (63 - __builtin_clzll(last_kept)));
      for (uint64_t odd : lone) {
        for (int sign : {1, -1}) {
          if (sign > 0 && odd > (uint64_t)INT64_MAX) continue;
          for (size_t pos = 0; pos < 64; ++pos) {
            std::vector<int64_t> din(64 + 3);
            for (size_t k = 0; k < din.size(); ++k)
              din[k] = (int64_t)((last_kept >> 8) + k) * (k % 3 ? 1 : -1);
            din[pos] = sign > 0 ? (int64_t)odd : (int64_t)(0 - odd);
            std::vector<int64_t> want(din.size()), got(din.size()), inplace = din;
            tb::scalar::DeltasToNs(c, din.data(), want.data(), din.size());
            tb::DeltasToNs(c, din.data(), got.data(), din.size());
            INFO("lane " << pos << " = " << din[pos]);
            REQUIRE(got == want);
            tb::DeltasToNs(c, inplace.data(), inplace.data(), inplace.size());
            REQUIRE(inplace == want);
          }
        }
      }
      // a whole block at the power of two just below the threshold, both signs
      if (last_kept > 0) {
        const uint64_t p2 = 1ull << (63 - __builtin_clzll(last_kept));
        std::vector<int64_t> din(67);
        for (size_t k = 0; k < din.size(); ++k)
          din[k] = k % 2 ? (int64_t)(0 - (p2 - k)) : (int64_t)(p2 - k);
        std::vector<int64_t> want(din.size()), got(din.size());
        tb::scalar::DeltasToNs(c, din.data(), want.data(), din.size());
        tb::DeltasToNs(c, din.data(), got.data(), din.size());
        REQUIRE(got == want);
      }
    }
  }
  CHECK(saturating > 0);  // the conversions above include ones that saturate
  ResetTargets();
}

TEST_CASE("log2 histogram matches the scalar one on every target") {
  auto targets = TargetsToTest();
  Rng rng{42};
  std::vector<uint64_t> in = {0, 1, 2, 3, 4, UINT64_MAX, 1ull << 63, (1ull << 63) - 1};
  for (int k = 0; k < 64; ++k)
    in.push_back(1ull << k), in.push_back((1ull << k) - 1), in.push_back((1ull << k) + 1);
  for (int k = 0; k < 5000; ++k) in.push_back(rng() >> (rng() & 63));
  for (auto& t : targets) {
    ForceTarget(t.second);
    INFO("target " << t.first);
    for (size_t n : {(size_t)0, (size_t)1, (size_t)7, (size_t)33, in.size()}) {
      uint64_t want[tb::kHistBuckets] = {}, got[tb::kHistBuckets] = {};
      tb::scalar::Log2Histogram(in.data(), n, want);
      got[5] = 10;  // adds to what is there
      tb::Log2Histogram(in.data(), n, got);
      got[5] -= 10;
      uint64_t total = 0;
      for (int b = 0; b < tb::kHistBuckets; ++b) {
        REQUIRE(got[b] == want[b]);
        total += got[b];
      }
      REQUIRE(total == n);  // exactly the first n values, none past them
    }
  }
  uint64_t h[tb::kHistBuckets] = {};
  const uint64_t probe[] = {0, 1, 2, 3, 4, UINT64_MAX};
  tb::scalar::Log2Histogram(probe, 6, h);
  CHECK(h[0] == 1);
  CHECK(h[1] == 1);
  CHECK(h[2] == 2);
  CHECK(h[3] == 1);
  CHECK(h[64] == 1);
  ResetTargets();
}

TEST_CASE("monotonicity scan finds the first decrease on every target") {
  auto targets = TargetsToTest();
  for (auto& t : targets) {
    ForceTarget(t.second);
    INFO("target " << t.first);
    CHECK(tb::FirstDecrease(nullptr, 0) == 0);
    uint64_t one = 5;
    CHECK(tb::FirstDecrease(&one, 1) == 1);
    for (size_t n = 2; n <= 70; ++n) {
      std::vector<uint64_t> a(n);
      for (size_t i = 0; i < n; ++i) a[i] = (1ull << 63) - 10 + i / 3;  // with repeats
      CHECK(tb::FirstDecrease(a.data(), n) == n);
      for (size_t pos = 0; pos + 1 < n; ++pos) {
        std::vector<uint64_t> b = a;
        b[pos + 1] = b[pos] - 1;                        // decrease between pos and pos + 1
        for (size_t j = pos + 2; j < n; ++j) b[j] = 0;  // later decreases too
        REQUIRE(tb::FirstDecrease(b.data(), n) == pos);
        REQUIRE(tb::scalar::FirstDecrease(b.data(), n) == pos);
      }
      // a decrease just past n is not seen: the scan stops at n
      std::vector<uint64_t> past = a;
      past.push_back(0);
      REQUIRE(tb::FirstDecrease(past.data(), n) == n);
      REQUIRE(tb::FirstDecrease(past.data(), n + 1) == n - 1);
      // unsigned order: 2^63 follows 2^63 - 1 (a signed compare would see a drop)
      std::vector<uint64_t> c(n);
      for (size_t i = 0; i < n; ++i) c[i] = (1ull << 63) - n / 2 + i;
      CHECK(tb::FirstDecrease(c.data(), n) == n);
    }
  }
  ResetTargets();
}
