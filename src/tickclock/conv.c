/* tickclock — building the fixed-point conversion (not on the hot path).
 *
 * ns per tick  = 1e9 * den / num = ns_int + ns_frac / 2^64
 * ticks per ns = num / (1e9 * den) = tk_int + tk_frac / 2^64
 * Fractions are rounded UP. With s the exact scale and F' >= F the stored
 * fraction (F' - F < 1), the hot path returns
 *   t*ns_int + floor(t*F'/2^64) = floor(t*s + t*(F'-F)/2^64)
 * and 0 <= t*(F'-F)/2^64 < 1, so the result is floor(t*s) or one more, and
 * exactly t*s whenever that is an integer (1 s of a 24 MHz crystal is
 * exactly 1e9 ns). Rounding down would instead turn every exact result
 * into one less.
 */
#include "freq.h"

/* floor((hi*2^64 + lo) / d) for hi < d; remainder in *rem. Restoring
 * division, one quotient bit per step: init-time only, and portable to
 * targets without a 128-bit divide. */
static uint64_t tkc_div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem) {
  uint64_t q = 0;
  int i;
  for (i = 0; i < 64; i++) {
    uint64_t carry = hi >> 63;
    hi = (hi << 1) | (lo >> 63);
    lo <<= 1;
    q <<= 1;
    if (carry || hi >= d) {
      hi -= d; /* wraps correctly when carry is set */
      q |= 1;
    }
  }
  *rem = hi;
  return q;
}

static uint64_t tkc_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* n / d as integer part and rounded-up 64-bit fraction; n = n_hi:n_lo.
 * Returns 0 if the integer part does not fit in 64 bits. */
static int tkc_fixed(uint64_t n_hi, uint64_t n_lo, uint64_t d, uint64_t *ip, uint64_t *fp) {
  uint64_t rem, frac_rem;
  if (n_hi >= d) return 0;
  *ip = tkc_div128(n_hi, n_lo, d, &rem);
  *fp = tkc_div128(rem, 0, d, &frac_rem);
  if (frac_rem != 0) *fp += 1; /* cannot wrap: rem < d implies fp < 2^64 - 1 */
  return 1;
}

int tickclock_conv_init(tickclock_conv *c, uint64_t hz_num, uint64_t hz_den) {
  const uint64_t giga = UINT64_C(1000000000);
  uint64_t g, num, den, ns_hi, ns_lo, d1e9_lo, d1e9_hi;
  tickclock_conv out;
  if (c == NULL || hz_num == 0 || hz_den == 0) return TICKCLOCK_EINVAL;
  g = tkc_gcd(hz_num, hz_den);
  num = hz_num / g;
  den = hz_den / g;
  /* 1 Hz <= f <= 1 THz */
  if (num < den) return TICKCLOCK_EINVAL;
  if (num / den > UINT64_C(1000000000000) ||
      (num / den == UINT64_C(1000000000000) && num % den != 0))
    return TICKCLOCK_EINVAL;
  /* ticks per ns divides by 1e9*den, which must fit in 64 bits */
  d1e9_hi = tkc_mul64(den, giga, &d1e9_lo);
  if (d1e9_hi != 0) return TICKCLOCK_EINVAL;
  out.hz_num = num;
  out.hz_den = den;
  ns_hi = d1e9_hi;
  ns_lo = d1e9_lo;
  if (!tkc_fixed(ns_hi, ns_lo, num, &out.ns_int, &out.ns_frac)) return TICKCLOCK_EINVAL;
  if (!tkc_fixed(0, num, d1e9_lo, &out.tk_int, &out.tk_frac)) return TICKCLOCK_EINVAL;
  *c = out;
  return TICKCLOCK_OK;
}

/* ticks*1e9/ns as a reduced rational (for calibration results; the
 * contract is at its declaration in freq.h). With g = gcd(ticks, ns) and
 * g2 = gcd(1e9, ns/g), (ticks/g * 1e9/g2) / (ns/g/g2) is already reduced:
 * returned when it fits. Otherwise the value is X = n/b with n below 2^94,
 * and num = round(n * 2^k / b) over den = 2^k for the largest k <= 34
 * (2^34 * 1e9 < 2^64) that keeps num below 2^63: an error of at most half
 * a unit of num, which is at least min(X * 2^34, 2^62). */
void tkc_ratio_hz(uint64_t ticks, uint64_t ns, uint64_t *num, uint64_t *den) {
  const uint64_t giga = UINT64_C(1000000000);
  const uint64_t max_den = UINT64_MAX / giga;
  uint64_t g, a, b, g2, hi, lo, q, rem;
  int k;
  if (ns == 0) {
    *num = 0;
    *den = 1;
    return;
  }
  g = tkc_gcd(ticks, ns); /* ns != 0, so g != 0 */
  a = ticks / g;
  b = ns / g;
  g2 = tkc_gcd(giga, b);
  b /= g2;
  hi = tkc_mul64(a, giga / g2, &lo); /* n = hi:lo < 2^94 */
  if (hi == 0 && b <= max_den) {
    *num = lo;
    *den = b;
    return;
  }
  for (k = 34; k >= 0; k--) {
    /* m = n * 2^k < 2^128; the quotient m / b is below 2^63 iff m >> 63 < b */
    uint64_t m_hi = k ? (hi << k) | (lo >> (64 - k)) : hi;
    uint64_t m_lo = lo << k;
    if ((m_hi >> 63) == 0 && ((m_hi << 1) | (m_lo >> 63)) < b) {
      q = tkc_div128(m_hi, m_lo, b, &rem);
      if (rem >= b - rem) q++; /* to nearest; q < 2^63, no wrap */
      *num = q;
      *den = UINT64_C(1) << k;
      tkc_reduce(num, den);
      return;
    }
  }
  *num = UINT64_MAX; /* X >= 2^63 Hz: saturate, far outside 1 Hz..1 THz */
  *den = 1;
}

void tkc_reduce(uint64_t *num, uint64_t *den) {
  uint64_t g;
  if (*den == 0) return;
  g = tkc_gcd(*num, *den);
  if (g > 1) {
    *num /= g;
    *den /= g;
  }
}

/* (a/b - 1) * 1e6 = (a_num*b_den - b_num*a_den) / (b_num*a_den) * 1e6,
 * the products exact in 128 bits, the quotient in double. */
double tkc_ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den) {
  uint64_t x_lo, y_lo, x_hi, y_hi, d_hi, d_lo;
  double diff, base;
  int neg;
  if (a_den == 0 || b_den == 0 || b_num == 0) return 0;
  x_hi = tkc_mul64(a_num, b_den, &x_lo);
  y_hi = tkc_mul64(b_num, a_den, &y_lo);
  neg = x_hi < y_hi || (x_hi == y_hi && x_lo < y_lo);
  if (neg) { /* d = y - x */
    d_lo = y_lo - x_lo;
    d_hi = y_hi - x_hi - (y_lo < x_lo);
  } else {
    d_lo = x_lo - y_lo;
    d_hi = x_hi - y_hi - (x_lo < y_lo);
  }
  diff = (double)d_hi * 18446744073709551616.0 + (double)d_lo;
  base = (double)y_hi * 18446744073709551616.0 + (double)y_lo;
  return (neg ? -diff : diff) / base * 1e6;
}
