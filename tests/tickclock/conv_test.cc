// Conversion contract (src/tickclock/README.md, "Conversion"), checked against an exact
// 128-bit reference computed here, independently of the library's fixed
// point. Built twice: with the compiler's __int128 multiply and with the
// portable 32-bit-halves multiply (TICKCLOCK_NO_INT128).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "doctest/doctest.h"
#include "tickclock.h"

namespace {

const uint64_t kGiga = 1000000000ull;

// Exact unsigned 128-bit arithmetic for the reference, portable: i686,
// armv7 and MIPS o32 have no unsigned __int128, and the reference must not
// share the library's multiply. 64x64->128 by 32-bit halves; 128/64 by
// long division (Hacker's Delight divlu, 32-bit digits). Checked against
// __int128 where the compiler has it (test case at the end).
struct U128 {
  uint64_t hi, lo;
};
U128 u128(uint64_t v) { return U128{0, v}; }
bool operator==(U128 a, U128 b) { return a.hi == b.hi && a.lo == b.lo; }
bool operator<(U128 a, U128 b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }
bool operator>(U128 a, U128 b) { return b < a; }
bool operator>=(U128 a, U128 b) { return !(a < b); }
bool operator<=(U128 a, U128 b) { return !(b < a); }
U128 operator+(U128 a, U128 b) {
  U128 r{a.hi + b.hi, a.lo + b.lo};
  if (r.lo < a.lo) r.hi++;
  return r;
}
U128 operator-(U128 a, U128 b) {
  U128 r{a.hi - b.hi, a.lo - b.lo};
  if (a.lo < b.lo) r.hi--;
  return r;
}
U128 mul(uint64_t a, uint64_t b) {
  const uint64_t m = 0xffffffffull;
  uint64_t a0 = a & m, a1 = a >> 32, b0 = b & m, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & m) + (p10 & m);  // < 3 * 2^32
  return U128{p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (p00 & m)};
}
// (u1:u0) / v with u1 < v (the quotient fits in 64 bits); remainder in *r.
uint64_t divlu(uint64_t u1, uint64_t u0, uint64_t v, uint64_t *r) {
  const uint64_t b = 1ull << 32;
  int s = 0;
  while (!(v & (1ull << 63))) {
    v <<= 1;
    s++;
  }
  uint64_t vn1 = v >> 32, vn0 = v & 0xffffffffull;
  uint64_t un32 = (u1 << s) | (s ? u0 >> (64 - s) : 0);
  uint64_t un10 = u0 << s;
  uint64_t un1 = un10 >> 32, un0 = un10 & 0xffffffffull;
  uint64_t q1 = un32 / vn1, rhat = un32 - q1 * vn1;
  while (q1 >= b || q1 * vn0 > b * rhat + un1) {
    q1--;
    rhat += vn1;
    if (rhat >= b) break;
  }
  uint64_t un21 = un32 * b + un1 - q1 * v;  // wraps mod 2^64 by design
  uint64_t q0 = un21 / vn1;
  rhat = un21 - q0 * vn1;
  while (q0 >= b || q0 * vn0 > b * rhat + un0) {
    q0--;
    rhat += vn1;
    if (rhat >= b) break;
  }
  *r = (un21 * b + un0 - q0 * v) >> s;
  return q1 * b + q0;
}
// n / d (d != 0), remainder in *rem.
U128 divmod(U128 n, uint64_t d, uint64_t *rem) {
  U128 q{n.hi / d, 0};
  q.lo = divlu(n.hi % d, n.lo, d, rem);
  return q;
}
U128 operator/(U128 n, uint64_t d) {
  uint64_t r;
  return divmod(n, d, &r);
}
uint64_t operator%(U128 n, uint64_t d) {
  uint64_t r;
  divmod(n, d, &r);
  return r;
}
const U128 kU64Max = u128(UINT64_MAX);
const U128 kI64Max = u128((uint64_t)INT64_MAX);
const U128 k2p63 = u128(1ull << 63);

struct Freq {
  const char *name;
  uint64_t num, den;
};

// 1 kHz .. 100 GHz, the crystals and counters we meet in practice, two
// real TSC frequencies that are not round numbers, and a rational.
const Freq kFreqs[] = {
    {"1 kHz", 1000, 1},
    {"24 MHz", 24000000, 1},
    {"25 MHz", 25000000, 1},
    {"62.5 MHz", 62500000, 1},
    {"100 MHz", 100000000, 1},
    {"512 MHz", 512000000, 1},
    {"1 GHz", 1000000000, 1},
    {"2.1 GHz", 2100000000, 1},
    {"2449228 kHz", 2449228000ull, 1},
    {"3493458 kHz", 3493458000ull, 1},
    {"4.096 GHz", 4096000000ull, 1},
    {"5 GHz", 5000000000ull, 1},
    {"100 GHz", 100000000000ull, 1},
    {"2.1 GHz*7/3", 2100000000ull * 7, 3},
    {"calibrated-like 2096024137/1000", 2096024137ull, 1000},
    // denominators above 2^63 / 1e9: 1e9 * den has its top bit set, the
    // division's carry path
    {"1.5 GHz over a 1e10 denominator", 10000000019ull * 1500000000ull + 1, 10000000019ull},
    {"2 kHz over a 1e10 denominator", 10000000019ull * 2000ull + 1, 10000000019ull},
};

// floor(t * 1e9 * den / num); t*1e9*den < 2^128 since 1e9*den < 2^64.
U128 ref_ns(uint64_t t, const Freq &f) { return mul(t, kGiga * f.den) / f.num; }
// floor(ns * num / (1e9 * den)); ns*num < 2^128.
U128 ref_ticks(uint64_t ns, const Freq &f) { return mul(ns, f.num) / (kGiga * f.den); }

uint64_t sat(U128 v) { return v > kU64Max ? UINT64_MAX : v.lo; }

// Contract: floor(x) <= got <= floor(x) + 1, saturating at UINT64_MAX.
void check_ticks_to_ns(const tickclock_conv &c, const Freq &f, uint64_t t) {
  U128 exact = ref_ns(t, f);
  uint64_t got = tickclock_conv_ticks_to_ns(&c, t);
  if (exact >= kU64Max) {
    REQUIRE_MESSAGE(got == UINT64_MAX, f.name << " t=" << t << " must saturate");
    return;
  }
  uint64_t lo = exact.lo;
  REQUIRE_MESSAGE((got == lo || got == lo + 1),
                  f.name << " t=" << t << " got " << got << " exact floor " << lo);
  // exact whenever the product is an integer
  if (mul(t, kGiga * f.den) % f.num == 0) REQUIRE_MESSAGE(got == lo, f.name << " t=" << t);
}

void check_ns_to_ticks(const tickclock_conv &c, const Freq &f, uint64_t ns) {
  U128 exact = ref_ticks(ns, f);
  uint64_t got = tickclock_conv_ns_to_ticks(&c, ns);
  if (exact >= kU64Max) {
    REQUIRE(got == UINT64_MAX);
    return;
  }
  uint64_t lo = exact.lo;
  REQUIRE_MESSAGE((got == lo || got == lo + 1),
                  f.name << " ns=" << ns << " got " << got << " exact " << lo);
}

// trunc(d * 1e9 / f) for signed d, as a clamped 128-bit value
void check_delta(const tickclock_conv &c, const Freq &f, int64_t d) {
  bool neg = d < 0;
  uint64_t mag = neg ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
  U128 m = ref_ns(mag, f);  // trunc of |x|
  int64_t got = tickclock_conv_delta_to_ns(&c, d);
  if (!neg) {
    if (m > kI64Max) {
      REQUIRE(got == INT64_MAX);
      return;
    }
    REQUIRE_MESSAGE((got - (int64_t)m.lo >= 0 && got - (int64_t)m.lo <= 1), f.name << " d=" << d);
  } else {
    if (m > k2p63) {
      REQUIRE(got == INT64_MIN);
      return;
    }
    // -m may be exactly INT64_MIN
    int64_t want = m == k2p63 ? INT64_MIN : -(int64_t)m.lo;
    REQUIRE_MESSAGE((want - got >= 0 && want - got <= 1), f.name << " d=" << d << " got " << got);
  }
  // symmetric wherever neither side saturates
  if (d != INT64_MIN) {
    int64_t g2 = tickclock_conv_delta_to_ns(&c, -d);
    if (got != INT64_MAX && got != INT64_MIN && g2 != INT64_MAX && g2 != INT64_MIN)
      REQUIRE(g2 == -got);
  }
}

std::vector<uint64_t> edge_ticks(const Freq &f) {
  const uint64_t day = 86400ull;
  uint64_t hz = f.num / f.den;
  std::vector<uint64_t> v = {0,
                             1,
                             2,
                             hz,                 // 1 s
                             hz * day,           // 1 day
                             hz * day * 3,       // 3 days
                             hz * day * 13 / 2,  // 6.5 days
                             hz * day * 365,     // 1 year
                             (1ull << 62),
                             (1ull << 63),
                             (1ull << 63) - 1,
                             (1ull << 63) + 1,
                             UINT64_MAX,
                             UINT64_MAX - 1};
  U128 hundred_years = mul(hz * day, 36525);
  v.push_back(sat(hundred_years));
  // around the saturation boundary: largest t whose ns fits
  U128 tmax = mul(UINT64_MAX, f.num) / (kGiga * f.den);
  for (int k = -2; k <= 2; k++) {
    if (k < 0 && tmax < u128((uint64_t)-k)) continue;
    U128 t = k < 0 ? tmax - u128((uint64_t)-k) : tmax + u128((uint64_t)k);
    if (t <= kU64Max) v.push_back(t.lo);
  }
  return v;
}

}  // namespace

TEST_CASE("conv_init rejects bad frequencies") {
  tickclock_conv c;
  CHECK(tickclock_conv_init(&c, 0, 1) == TICKCLOCK_EINVAL);
  CHECK(tickclock_conv_init(&c, 1, 0) == TICKCLOCK_EINVAL);
  CHECK(tickclock_conv_init(&c, 1, 2) == TICKCLOCK_EINVAL);                       // 0.5 Hz
  CHECK(tickclock_conv_init(&c, 1000000000001000ull, 1000) == TICKCLOCK_EINVAL);  // > 1 THz
  CHECK(tickclock_conv_init(&c, UINT64_MAX, 1ull << 40) == TICKCLOCK_EINVAL);     // den too big
  CHECK(tickclock_conv_init(NULL, 1000, 1) == TICKCLOCK_EINVAL);
  CHECK(tickclock_conv_init(&c, 1, 1) == TICKCLOCK_OK);     // 1 Hz
  CHECK(tickclock_conv_init(&c, 2000, 2) == TICKCLOCK_OK);  // reduced
  CHECK(c.hz_num == 1000);
  CHECK(c.hz_den == 1);
}

TEST_CASE("ticks_to_ns: edge tick values at every frequency") {
  for (const Freq &f : kFreqs) {
    CAPTURE(f.name);
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    for (uint64_t t : edge_ticks(f)) {
      check_ticks_to_ns(c, f, t);
      check_ns_to_ticks(c, f, t);
    }
  }
}

TEST_CASE("1 s of ticks is exactly 1e9 ns at integer frequencies") {
  for (const Freq &f : kFreqs) {
    if (f.den != 1) continue;
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    CHECK_MESSAGE(tickclock_conv_ticks_to_ns(&c, f.num) == kGiga, f.name);
    CHECK_MESSAGE(tickclock_conv_ns_to_ticks(&c, kGiga) == f.num, f.name);
  }
}

TEST_CASE("ticks_to_ns and ns_to_ticks: 10^6 random values against the exact reference") {
  std::mt19937_64 rng(20261129);
  const int per_freq = 1000000 / (int)(sizeof kFreqs / sizeof kFreqs[0]) + 1;
  for (const Freq &f : kFreqs) {
    CAPTURE(f.name);
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    for (int i = 0; i < per_freq; i++) {
      uint64_t r = rng();
      // half uniform over 64 bits, half log-uniform (realistic uptimes)
      uint64_t t = (i & 1) ? r : (r >> (r % 64));
      check_ticks_to_ns(c, f, t);
      check_ns_to_ticks(c, f, t);
    }
  }
}

TEST_CASE("conversion never decreases as ticks grow") {
  std::mt19937_64 rng(7);
  for (const Freq &f : kFreqs) {
    CAPTURE(f.name);
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    // consecutive runs at random places, including near saturation
    for (int run = 0; run < 200; run++) {
      uint64_t t = run == 0 ? 0 : run == 1 ? UINT64_MAX - 2000 : rng() >> (rng() % 64);
      uint64_t prev = tickclock_conv_ticks_to_ns(&c, t);
      for (int k = 1; k < 1000 && t + k > t; k++) {
        uint64_t cur = tickclock_conv_ticks_to_ns(&c, t + k);
        REQUIRE(cur >= prev);
        prev = cur;
      }
    }
    // and across widely spaced sorted values
    std::vector<uint64_t> v;
    for (int i = 0; i < 20000; i++) v.push_back(rng() >> (rng() % 64));
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); i++)
      REQUIRE(tickclock_conv_ticks_to_ns(&c, v[i]) >= tickclock_conv_ticks_to_ns(&c, v[i - 1]));
  }
}

TEST_CASE("delta_to_ns: signed, symmetric, saturating") {
  std::mt19937_64 rng(99);
  for (const Freq &f : kFreqs) {
    CAPTURE(f.name);
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    int64_t hz = (int64_t)(f.num / f.den);
    const int64_t ds[] = {0, 1, -1, hz, -hz, INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1};
    for (int64_t d : ds) check_delta(c, f, d);
    for (int i = 0; i < 20000; i++) {
      int64_t d = (int64_t)(rng() >> (rng() % 64));
      check_delta(c, f, d);
      check_delta(c, f, -d);
    }
    CHECK(tickclock_conv_delta_to_ns(&c, -1) == -tickclock_conv_delta_to_ns(&c, 1));
  }
}

TEST_CASE("round trips are within one unit of the coarser of tick and ns") {
  std::mt19937_64 rng(4242);
  for (const Freq &f : kFreqs) {
    CAPTURE(f.name);
    tickclock_conv c;
    REQUIRE(tickclock_conv_init(&c, f.num, f.den) == TICKCLOCK_OK);
    bool ticks_coarser = f.num <= kGiga * f.den;  // a tick lasts >= 1 ns
    for (int i = 0; i < 50000; i++) {
      uint64_t x = rng() >> (rng() % 64);
      if (ticks_coarser) {
        uint64_t ns = tickclock_conv_ticks_to_ns(&c, x);
        if (ns == UINT64_MAX) continue;
        uint64_t back = tickclock_conv_ns_to_ticks(&c, ns);
        REQUIRE_MESSAGE((back + 1 >= x && back <= x + 1), "t=" << x << " back=" << back);
      } else {
        uint64_t t = tickclock_conv_ns_to_ticks(&c, x);
        if (t == UINT64_MAX) continue;
        uint64_t back = tickclock_conv_ticks_to_ns(&c, t);
        REQUIRE_MESSAGE((back + 1 >= x && back <= x + 1), "ns=" << x << " back=" << back);
      }
    }
  }
}

TEST_CASE("cost does not depend on magnitude: no data-dependent slow path") {
  // Timing is never asserted. Instead, at every magnitude (each bit width
  // 2^0..2^63, and its neighbours) the result must be exactly the one
  // fixed-point expression t*ns_int + floor(t*ns_frac / 2^64), saturated,
  // computed here with the test's own 128-bit multiply: a second path
  // taken for large inputs (a division, a split) would differ somewhere in
  // the sweep, or would have to reproduce the fixed point bit for bit.
  tickclock_conv c;
  REQUIRE(tickclock_conv_init(&c, 2100000000ull, 1) == TICKCLOCK_OK);
  uint64_t one_s = tickclock_conv_ticks_to_ns(&c, 2100000000ull);
  uint64_t century = tickclock_conv_ticks_to_ns(&c, 2100000000ull * 86400ull * 36525ull);
  CHECK(one_s == 1000000000ull);
  CHECK(century == 1000000000ull * 86400ull * 36525ull);
  const uint64_t freqs[][2] = {{2100000000ull, 1},   {24000000ull, 1},   {1000ull, 1},
                               {100000000000ull, 1}, {1920000000ull, 7}, {1000000000ull, 1}};
  for (const auto &f : freqs) {
    CAPTURE(f[0]);
    REQUIRE(tickclock_conv_init(&c, f[0], f[1]) == TICKCLOCK_OK);
    for (int k = 0; k < 64; k++) {
      for (int64_t delta : {-1, 0, 1}) {
        uint64_t t = (1ull << k) + (uint64_t)delta;
        CAPTURE(t);
        U128 fr = mul(t, c.ns_frac), in = mul(t, c.ns_int);
        U128 sum = in + u128(fr.hi);
        uint64_t want = sum.hi != 0 ? UINT64_MAX : sum.lo;
        CHECK(tickclock_conv_ticks_to_ns(&c, t) == want);
        U128 fr2 = mul(t, c.tk_frac), in2 = mul(t, c.tk_int);
        U128 sum2 = in2 + u128(fr2.hi);
        CHECK(tickclock_conv_ns_to_ticks(&c, t) == (sum2.hi != 0 ? UINT64_MAX : sum2.lo));
      }
    }
  }
}

TEST_CASE("conv_init: the fixed-point fractions are rounded up (hard-coded values)") {
  tickclock_conv c;
  REQUIRE(tickclock_conv_init(&c, 3000000000ull, 1) == TICKCLOCK_OK);
  CHECK(c.ns_int == 0);
  CHECK(c.ns_frac == 0x5555555555555556ull);  // ceil(2^64 / 3)
  CHECK(c.tk_int == 3);
  CHECK(c.tk_frac == 0);
  REQUIRE(tickclock_conv_init(&c, 24000000ull, 1) == TICKCLOCK_OK);
  CHECK(c.ns_int == 41);
  CHECK(c.ns_frac == 0xaaaaaaaaaaaaaaabull);  // ceil(2^64 * 2/3)
  CHECK(c.tk_int == 0);
  CHECK(c.tk_frac == 0x0624dd2f1a9fbe77ull);  // ceil(2^64 * 0.024)
  CHECK(c.hz_num == 24000000ull);
  CHECK(c.hz_den == 1);
  REQUIRE(tickclock_conv_init(&c, 6002, 4) == TICKCLOCK_OK);  // reduced to 3001/2
  CHECK(c.hz_num == 3001);
  CHECK(c.hz_den == 2);
}

TEST_CASE("conv_init: input limits, each just inside and just outside") {
  tickclock_conv c;
  const uint64_t T = 1000000000000ull;                                  // 1 THz
  CHECK(tickclock_conv_init(&c, 1, 1) == TICKCLOCK_OK);                 // 1 Hz
  CHECK(tickclock_conv_init(&c, 999999, 1000000) == TICKCLOCK_EINVAL);  // just under 1 Hz
  CHECK(tickclock_conv_init(&c, 1000001, 1000000) == TICKCLOCK_OK);     // just over 1 Hz
  CHECK(tickclock_conv_init(&c, T, 1) == TICKCLOCK_OK);                 // 1 THz
  CHECK(tickclock_conv_init(&c, T + 1, 1) == TICKCLOCK_EINVAL);         // 1 THz + 1 Hz
  CHECK(tickclock_conv_init(&c, T * 3 + 1, 3) == TICKCLOCK_EINVAL);     // 1 THz + 1/3 Hz
  CHECK(tickclock_conv_init(&c, T * 3 - 1, 3) == TICKCLOCK_OK);         // 1 THz - 1/3 Hz
  // the denominator after reduction: 1e9 * den must fit in 64 bits
  const uint64_t dmax = 18446744073ull;
  CHECK(tickclock_conv_init(&c, dmax * 1000 + 1, dmax) == TICKCLOCK_OK);
  CHECK(tickclock_conv_init(&c, (dmax + 1) * 1000 + 1, dmax + 1) == TICKCLOCK_EINVAL);
  // a large denominator that reduces below the limit is accepted
  CHECK(tickclock_conv_init(&c, (dmax + 1) * 2000, (dmax + 1) * 2) == TICKCLOCK_OK);
  CHECK(c.hz_num == 1000);
  CHECK(c.hz_den == 1);
}

TEST_CASE("conv_init leaves its output untouched on every error") {
  const uint64_t bad[][2] = {{0, 1},
                             {1, 0},
                             {0, 0},
                             {1, 2},
                             {999999, 1000000},
                             {1000000000001ull, 1},
                             {UINT64_MAX, 1},
                             {UINT64_MAX, 1ull << 40},
                             {18446744074001ull, 18446744074ull}};
  for (const auto &b : bad) {
    CAPTURE(b[0]);
    CAPTURE(b[1]);
    tickclock_conv c, before;
    std::memset(&c, 0x5a, sizeof c);
    before = c;
    CHECK(tickclock_conv_init(&c, b[0], b[1]) == TICKCLOCK_EINVAL);
    CHECK(std::memcmp(&c, &before, sizeof c) == 0);
  }
  // and a valid conversion is not disturbed by a failed re-initialisation
  tickclock_conv c;
  REQUIRE(tickclock_conv_init(&c, 24000000ull, 1) == TICKCLOCK_OK);
  tickclock_conv good = c;
  CHECK(tickclock_conv_init(&c, 0, 1) == TICKCLOCK_EINVAL);
  CHECK(std::memcmp(&c, &good, sizeof c) == 0);
  CHECK(tickclock_conv_ticks_to_ns(&c, 24000000ull) == 1000000000ull);
}

TEST_CASE("the portable 128-bit reference is exact") {
  std::mt19937_64 rng(12345);
  // on every target: q*d + r == n and r < d, by the struct's own multiply
  for (int i = 0; i < 50000; i++) {
    uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    uint64_t d = rng() >> (rng() % 64);
    if (d == 0) d = 1;
    U128 n = mul(a, b);
    uint64_t r;
    U128 q = divmod(n, d, &r);
    REQUIRE(r < d);
    // q*d = q.hi*d*2^64 + q.lo*d; q.hi*d < 2^64 because n < 2^128
    U128 qd = mul(q.lo, d);
    qd.hi += q.hi * d;
    REQUIRE(qd + u128(r) == n);
  }
  CHECK(mul(UINT64_MAX, UINT64_MAX) == (U128{UINT64_MAX - 1, 1}));
  CHECK(mul(UINT64_MAX, UINT64_MAX) / UINT64_MAX == kU64Max);
  CHECK(mul(1ull << 63, 2) == (U128{1, 0}));
#if defined(__SIZEOF_INT128__)
  // and against the compiler's __int128 where it exists
  __extension__ typedef unsigned __int128 native128;
  for (int i = 0; i < 50000; i++) {
    uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    uint64_t d = rng() >> (rng() % 64);
    if (d == 0) d = 1;
    native128 n = (native128)a * b, q = n / d;
    U128 m = mul(a, b);
    REQUIRE(m.hi == (uint64_t)(n >> 64));
    REQUIRE(m.lo == (uint64_t)n);
    U128 p = m / d;
    REQUIRE(p.hi == (uint64_t)(q >> 64));
    REQUIRE(p.lo == (uint64_t)q);
    REQUIRE(m % d == (uint64_t)(n % d));
  }
#else
  MESSAGE("no __int128 on this target: checked by q*d + r == n only");
#endif
}
