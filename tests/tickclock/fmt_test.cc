// The library's own formatter (tkc_fmt: printf's subset, async-signal-safe)
// against the C library's snprintf for every conversion the core uses:
// integers, strings and hexadecimal exactly; fixed and exponent forms
// within one unit of their last digit (the two may round a tie apart);
// truncation as snprintf truncates.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <random>
#include <string>

#include "doctest/doctest.h"
#include "internal.h"

namespace {
template <class... A>
std::string ours(const char *fmt, A... a) {
  char b[256];
  tkc_fmt(b, sizeof b, fmt, a...);
  return b;
}
template <class... A>
std::string libc(const char *fmt, A... a) {
  char b[256];
  snprintf(b, sizeof b, fmt, a...);
  return b;
}
}  // namespace

TEST_CASE("integers, strings, hexadecimal: exactly as snprintf") {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 20000; k++) {
    int i = (int)(rng() >> 32);
    unsigned u = (unsigned)rng();
    long l = (long)rng();
    unsigned long long ull = rng() >> (rng() % 64);
    size_t z = (size_t)(rng() >> 8);
    CHECK(ours("%d", i) == libc("%d", i));
    CHECK(ours("%u", u) == libc("%u", u));
    CHECK(ours("%x %08x %X", u, u & 0xffu, u) == libc("%x %08x %X", u, u & 0xffu, u));
    CHECK(ours("%ld %llu %zu", l, ull, z) == libc("%ld %llu %zu", l, ull, z));
    CHECK(ours("[%5d|%-5d|%05d]", i % 1000, i % 1000, i % 1000) ==
          libc("[%5d|%-5d|%05d]", i % 1000, i % 1000, i % 1000));
  }
  CHECK(ours("%d %d", INT32_MIN, INT32_MAX) == libc("%d %d", INT32_MIN, INT32_MAX));
  CHECK(ours("%s|%-6s|%6s|%.3s|%c|%%", "tsc", "ab", "ab", "abcdef", 'x') ==
        libc("%s|%-6s|%6s|%.3s|%c|%%", "tsc", "ab", "ab", "abcdef", 'x'));
  CHECK(ours("0x%08x EAX[%u]", 0x40000010u, 24u) == "0x40000010 EAX[24]");
}

TEST_CASE("fixed and exponent forms within one unit of the last digit") {
  std::mt19937_64 rng(11);
  const char *fixed[] = {"%.0f", "%.1f", "%.2f", "%.3f", "%.6f", "%+.1f", "%+.2f"};
  const int prec[] = {0, 1, 2, 3, 6, 1, 2};
  long compared = 0;
  for (int k = 0; k < 20000; k++) {
    double mag = std::pow(10.0, (double)(rng() % 16) - 4);  // 1e-4 .. 1e11
    double v = ((double)(rng() >> 11) / 9007199254740992.0) * mag * ((rng() & 1) ? -1 : 1);
    for (int f = 0; f < 7; f++) {
      std::string a = ours(fixed[f], v), b = libc(fixed[f], v);
      INFO(fixed[f] << " of " << v << ": ours " << a << ", libc " << b);
      double ulp = std::pow(10.0, -prec[f]);
      // one unit of the last digit, plus what a double can resolve there
      CHECK(std::fabs(strtod(a.c_str(), nullptr) - strtod(b.c_str(), nullptr)) <=
            ulp * 1.0001 + std::fabs(v) * 1e-15);
      CHECK(a.size() + 1 >= b.size());
      CHECK(a.size() <= b.size() + 1);
      compared++;
    }
    std::string a = ours("%e", v), b = libc("%e", v);
    INFO("%e of " << v << ": ours " << a << ", libc " << b);
    CHECK(std::fabs(strtod(a.c_str(), nullptr) / strtod(b.c_str(), nullptr) - 1) < 2e-6);
  }
  MESSAGE(compared << " fixed-form conversions compared");
  CHECK(ours("%.3f ppm", 0.0) == "0.000 ppm");
  CHECK(ours("%.0f Hz", 2596120772.0) == "2596120772 Hz");
  CHECK(ours("%.6f MHz", 2596.120772) == libc("%.6f MHz", 2596.120772));
  CHECK(ours("%+.1f ppm", -12.25001) == "-12.3 ppm");
  CHECK(ours("%f %f", 1.0 / 0.0, -1.0 / 0.0) == "inf -inf");
  CHECK(ours("%f", std::nan("")) == "nan");
}

TEST_CASE("truncation: NUL-terminated, the prefix snprintf keeps") {
  const char *fmt = "%s: %d ns (bound %.1f ppm)";
  std::string full = libc(fmt, "counter stepped", 123456, 75.5);
  for (size_t n = 1; n <= full.size() + 2; n++) {
    char a[128], b[128];
    memset(a, 'Z', sizeof a);
    tkc_fmt(a, n, fmt, "counter stepped", 123456, 75.5);
    snprintf(b, n, fmt, "counter stepped", 123456, 75.5);
    CHECK(std::string(a) == std::string(b));
    CHECK(a[n] == 'Z');  // nothing past the buffer
  }
  char one = 'Z';
  tkc_fmt(&one, 0, "%s", "x");  // n == 0: nothing written
  CHECK(one == 'Z');
}
