// tkc_ratio_hz (freq.h): a calibration (ticks over ns) as a reduced rational
// frequency that tickclock_conv_init accepts, within TKC_RATIO_HZ_MAX_REL_ERR
// of the exact ticks*1e9/ns, and exactly equal to it whenever the exact
// reduced fraction fits (numerator below 2^64, denominator*1e9 below 2^64).
// Checked with an exact 128-bit cross-multiplication (portable: no
// unsigned __int128 in the test) and again in long double. Built twice: with
// the library as built, and with the core compiled into the test under
// TICKCLOCK_NO_INT128 (the path i686, armv7 and MSVC x86 take).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "doctest/doctest.h"
#include "freq.h"
#include "tickclock.h"

namespace {

const uint64_t kGiga = 1000000000ull;
const uint64_t kMaxDen = UINT64_MAX / kGiga;  // conv_init: den * 1e9 must fit

struct U128 {
  uint64_t hi, lo;
};
bool operator<(U128 a, U128 b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }
U128 sub(U128 a, U128 b) {
  U128 r{a.hi - b.hi, a.lo - b.lo};
  if (a.lo < b.lo) r.hi--;
  return r;
}
U128 mul(uint64_t a, uint64_t b) {
  const uint64_t m = 0xffffffffull;
  uint64_t a0 = a & m, a1 = a >> 32, b0 = b & m, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & m) + (p10 & m);
  return U128{p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (p00 & m)};
}
// a * b for a product known to fit in 128 bits (checked).
U128 mul(U128 a, uint64_t b) {
  U128 lo = mul(a.lo, b);
  U128 hi = mul(a.hi, b);
  REQUIRE(hi.hi == 0);
  U128 r{lo.hi + hi.lo, lo.lo};
  REQUIRE(r.hi >= lo.hi);
  return r;
}
long double to_ld(U128 v) {
  return (long double)v.hi * 18446744073709551616.0L + (long double)v.lo;
}

uint64_t gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

double g_worst = 0;  // worst relative error seen (both suites' cases)

// One calibration: the library's answer is accepted by conv_init, reduced,
// within the stated bound of ticks*1e9/ns, and exact when the exact reduced
// fraction fits.
void check(uint64_t ticks, uint64_t ns) {
  CAPTURE(ticks);
  CAPTURE(ns);
  uint64_t num = 0, den = 0;
  tkc_ratio_hz(ticks, ns, &num, &den);
  CAPTURE(num);
  CAPTURE(den);
  tickclock_conv c;
  REQUIRE(tickclock_conv_init(&c, num, den) == TICKCLOCK_OK);
  REQUIRE(den != 0);
  CHECK(gcd(num, den) == 1);

  // Exact error: num/den - T/ns with T = ticks*1e9, as
  // (num*ns - T*den) / (T*den), the difference exact in 128 bits.
  U128 lhs = mul(num, ns);
  U128 rhs = mul(mul(ticks, kGiga), den);
  U128 diff = rhs < lhs ? sub(lhs, rhs) : sub(rhs, lhs);
  long double rel = to_ld(diff) / to_ld(rhs);
  if ((double)rel > g_worst) g_worst = (double)rel;
  CHECK(rel <= (long double)TKC_RATIO_HZ_MAX_REL_ERR);

  // The same in long double, independently of the cross-multiplication.
  long double exact = (long double)ticks * 1e9L / (long double)ns;
  long double got = (long double)num / (long double)den;
  CHECK(std::fabs((double)(got / exact - 1.0L)) <= TKC_RATIO_HZ_MAX_REL_ERR + 1e-15);

  // The exact reduced fraction, computed here: returned as is when it fits.
  uint64_t g = gcd(ticks, ns);
  uint64_t a = ticks / g, b = ns / g;
  uint64_t g2 = gcd(kGiga, b);
  U128 en = mul(a, kGiga / g2);
  uint64_t ed = b / g2;
  if (en.hi == 0 && ed <= kMaxDen) {
    CHECK(num == en.lo);
    CHECK(den == ed);
  }
}

// ticks = floor(hz_num * ns / (1e9 * hz_den)) + jitter, hz = hz_num/hz_den.
uint64_t ticks_for(uint64_t hz_num, uint64_t hz_den, uint64_t ns) {
  // hz_num * ns / (hz_den * 1e9): both sides below 2^128 / 2^64 here, so
  // long double rounding is avoided with a 128-by-64 long division done bitwise.
  U128 n = mul(hz_num, ns);
  uint64_t d = hz_den * kGiga;
  uint64_t q = 0, r = 0;
  for (int i = 127; i >= 0; i--) {
    uint64_t bit = i >= 64 ? (n.hi >> (i - 64)) & 1 : (n.lo >> i) & 1;
    uint64_t top = r >> 63;
    r = (r << 1) | bit;
    uint64_t qb = 0;
    if (top || r >= d) {
      r -= d;
      qb = 1;
    }
    if (i < 64) q |= qb << i;
  }
  return q;
}

struct Hz {
  const char *name;
  uint64_t num, den;
};
const Hz kHz[] = {
    {"1 kHz", 1000, 1},
    {"32.768 kHz", 32768, 1},
    {"19.2 MHz", 19200000, 1},
    {"24 MHz", 24000000, 1},
    {"24000001 Hz", 24000001, 1},
    {"25 MHz", 25000000, 1},
    {"62.5 MHz", 62500000, 1},
    {"1 GHz", 1000000000, 1},
    {"2596120772 Hz", 2596120772ull, 1},
    {"3 GHz", 3000000000ull, 1},
    {"2.1 GHz + 1/3 Hz", 6300000001ull, 3},
    {"100 GHz", 100000000000ull, 1},
};
const uint64_t kMs = 1000000ull, kS = 1000 * kMs;
const uint64_t kBaselines[] = {1000, kMs,     4 * kMs,  16 * kMs,  64 * kMs,   256 * kMs,
                               kS,   10 * kS, 600 * kS, 3600 * kS, 86400 * kS, 7 * 86400 * kS};
const int64_t kJitter[] = {0, 1, -1, 3, -3, 7};

}  // namespace

TEST_CASE("tkc_ratio_hz: frequencies x baselines, with and without jitter") {
  double worst = 0;
  for (const Hz &f : kHz) {
    g_worst = 0;
    for (uint64_t ns : kBaselines) {
      uint64_t t0 = ticks_for(f.num, f.den, ns);
      for (int64_t j : kJitter) {
        if (j < 0 && t0 <= (uint64_t)-j) continue;
        uint64_t ticks = t0 + (uint64_t)j;
        if (ticks == 0) continue;
        CAPTURE(f.name);
        check(ticks, ns);
        // the same interval seen through a jittered clock
        if (ns > 7) check(ticks, ns + (uint64_t)j);
      }
    }
    MESSAGE(std::string(f.name) << ": worst relative error " << g_worst);
    if (g_worst > worst) worst = g_worst;
  }
  g_worst = worst;
  MESSAGE("worst relative error over the table: " << g_worst);
}

TEST_CASE("tkc_ratio_hz: the reported failure, 24 MHz over 600 s") {
  uint64_t num = 0, den = 0;
  // exactly 960000019800000000/40000000823 Hz: den * 1e9 does not fit
  tkc_ratio_hz(14400000297ull, 600000012345ull, &num, &den);
  tickclock_conv c;
  CHECK(tickclock_conv_init(&c, num, den) == TICKCLOCK_OK);
  CHECK(den <= kMaxDen);
  check(14400000297ull, 600000012345ull);
}

TEST_CASE("tkc_ratio_hz: exact fractions come back exact") {
  uint64_t num = 0, den = 0;
  tkc_ratio_hz(24000000, kS, &num, &den);
  CHECK(num == 24000000);
  CHECK(den == 1);
  tkc_ratio_hz(62500000ull * 600, 600 * kS, &num, &den);
  CHECK(num == 62500000);
  CHECK(den == 1);
  tkc_ratio_hz(19200001, kS, &num, &den);
  CHECK(num == 19200001);
  CHECK(den == 1);
  tkc_ratio_hz(24000001, 3 * kS, &num, &den);  // 24000001/3 Hz, exact
  CHECK(num == 24000001);
  CHECK(den == 3);
  tkc_ratio_hz(0, kS, &num, &den);
  CHECK(num == 0);
  CHECK(den == 1);
}

TEST_CASE("tkc_ratio_hz: extremes of the range (ticks and ns up to 2^63)") {
  const uint64_t big = 1ull << 63;
  // 1 kHz over 2^63 ns (292 years) and 100 GHz over 2^63 ticks (3 years)
  check(ticks_for(1000, 1, big - 1), big - 1);
  check(big - 1, big / 1000 * 10 - 12345);  // ~100 GHz
  check(big - 3, big - 5);                  // ~1 GHz
  check(3, 1000003);                        // ~3 kHz, short baseline
  check(1000, 1000);                        // 1 GHz over 1 us
  check(100000, 1000);                      // 100 GHz over 1 us
  check(1ull << 62, (1ull << 62) + 1);      // just below 1 GHz
  check(UINT64_MAX / 100, UINT64_MAX / 100 - 1);
}

TEST_CASE("tkc_ratio_hz: random frequencies and baselines") {
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> lf(std::log(1e3), std::log(1e11));
  for (int i = 0; i < 20000; i++) {
    double hz = std::exp(lf(rng));
    // a baseline from 1 us up to where ticks or ns reach 2^62
    double max_ns = std::fmin(4.6e18, 4.6e18 / hz * 1e9);
    std::uniform_real_distribution<double> ln(std::log(1e3), std::log(max_ns));
    uint64_t ns = (uint64_t)std::exp(ln(rng));
    uint64_t ticks = (uint64_t)((long double)ns * (long double)hz / 1e9L) + (rng() % 8);
    if (ticks == 0) ticks = 1;
    if (ns == 0) ns = 1;
    // below 1 kHz (a short baseline with a tick of jitter) conv_init refuses by contract
    if ((long double)ticks * 1e9L / (long double)ns < 1000.0L) continue;
    check(ticks, ns);
  }
  MESSAGE("worst relative error so far: " << g_worst);
}
