/* tickclock — durations with an error bound, and sampled timing.
 *
 * tickclock_duration_get walks the states an interval spans, from the one
 * its later tick converts with back to the one its earlier tick does
 * (through prev, jumping with skip over runs of states none of which
 * converts a tick of the interval), and adds up what each contributes to
 * the error: its rate's stated uncertainty over its part, the step its
 * publication may have made (tkc_cont_bound_ns), the quantum at both
 * ends. Suspends come from the windows the samples of the counter leave
 * (bookkeeping.c), read without a lock.
 *
 * The sampler: Bernoulli(p) sampling of executions through geometric
 * gaps (xorshift64*, seeded with splitmix64; the logarithm is the
 * library's own, so nothing here needs libm), and the Horvitz-Thompson
 * estimate of the total with its variance.
 */
#include "state.h"
#include "calibrate.h"

#include <math.h> /* HUGE_VAL only: nothing here calls libm */
#include <string.h>

static uint64_t tkc_sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* x ns rounded up, saturating. */
static uint64_t tkc_ceil_ns(double x) {
  if (!(x > 0)) return 0;
  if (x >= 1.8e19) return UINT64_MAX;
  return (uint64_t)x + 1;
}

/* An interval of unit ns [ns_lo, ns_hi] long enough to hold a suspend
 * (or of unknown length). */
static int tkc_could_span_suspend(uint64_t ns_lo, uint64_t ns_hi) {
  return ns_hi == UINT64_MAX || ns_hi < ns_lo || ns_hi - ns_lo >= TKC_SUSPEND_MIN_NS / 2;
}

#if defined(TKC_ARCH_COUNTER)
/* One in TKC_FAR_EVERY durations whose later tick lies among the far
 * ticks seen ahead (past the end of tickclock_inline.h's window: 50 years
 * or more ahead of the counter when a far tick was converted) goes out of
 * line, where the counter is read: a duration of a far tick while the
 * counter keeps its own time finds nothing due, a duration of a reading
 * after the counter itself jumped that far finds the check due and runs
 * it. The inline conversions cannot tell the two apart (a far tick and a
 * recent reading take the same single compare, which keeps the far tick
 * as cheap as the reading) and leave both alone, so no conversion of such
 * a reading ever ran the check. The count is racy on purpose (a lost
 * increment only delays the visit) and touched by far ticks only; the
 * window's end is read as the inline test reads it, deadline plus span,
 * either of which may be a store older than the other (at worst one visit
 * for nothing, or one counted as none). */
#define TKC_FAR_EVERY 64u
static TKC_SHARED unsigned tkc_far_hits = 0;
static void tkc_due_far(uint64_t hi) {
  uint64_t d = TKC_LOAD_RELAXED(&tkc_g_reval_deadline), end = d + TKC_LOAD_RELAXED(&tkc_g_due_span);
  unsigned n;
  if (TKC_LIKELY(end <= d || end == UINT64_MAX || hi < end)) return; /* no far tick seen */
  n = TKC_LOAD_RELAXED(&tkc_far_hits) + 1u;
  TKC_STORE_RELEASE(&tkc_far_hits, n);
  if (n % TKC_FAR_EVERY == 0) tkc_revalidate_due(hi);
}
#endif

int tickclock_duration_get(uint64_t start, uint64_t end, tickclock_duration *out) {
  const tickclock_info *s, *x, *first = NULL, *last = NULL;
  uint64_t lo = start < end ? start : end, hi = start < end ? end : start;
  uint64_t lim = UINT64_MAX, ns_lo, ns_hi, mag, bound = 0, slept;
  unsigned flags = 0, spanned = 0;
  if (out == NULL) return TICKCLOCK_EINVAL;
  /* what is due for the later tick first, as tickclock_delta_ns does */
  tkc_due_first(hi);
#if defined(TKC_ARCH_COUNTER)
  tkc_due_far(hi);
#endif
  s = tkc_state();
  ns_lo = tkc_ns_in(s, lo);
  ns_hi = tkc_ns_in(s, hi);
  /* The states that convert ticks of [lo, hi]: the newest whose base lies
   * at or below a tick converts it, so, newest first, a state converts
   * [max(base, lo), min(lim, hi)] where lim is the lowest base among the
   * newer ones that convert a part. */
  for (x = s; x != NULL;) {
    uint64_t b = x->base_ticks;
    if (b <= hi && b < lim) {
      uint64_t a = b > lo ? b : lo, z = lim < hi ? lim : hi;
      uint64_t part = x->scaled ? tickclock_conv_ticks_to_ns(&x->conv, z - a) : z - a;
      if (last == NULL) last = x;
      bound = tkc_sat_add(bound, tkc_ceil_ns((double)part * x->uncertainty_ppm * 1e-6) + 2);
      if (b <= lo) {
        first = x;
        break;
      }
      spanned++;
      flags |= TICKCLOCK_DURATION_SPANS_PUBLICATION;
      if (x->tkc_bounded_switch) flags |= TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH;
      bound = tkc_sat_add(bound, tkc_sat_add(x->tkc_cont_bound_ns, 1));
      lim = b;
    }
    first = x;
    /* a run of states none of which converts a part: all of its bases lie
     * above hi or at or above lim */
    x = (x->skip != NULL && (x->skip_min_base > hi || x->skip_min_base >= lim)) ? x->skip : x->prev;
  }
  if (last == NULL) last = s;
  if (first == NULL) first = s;
  /* the quantum at both ends: a tick of each state, a unit tick, rounding */
  bound = tkc_sat_add(bound, tkc_ceil_ns(first->resolution_ns) + tkc_ceil_ns(last->resolution_ns));
  if (s->scaled) bound = tkc_sat_add(bound, 2 * (s->conv.ns_int + 1));
  bound = tkc_sat_add(bound, 1);
  /* suspends: seen by the samples, or between the publications at both
   * ends; the time suspended now (three clock reads, most of the cost) is
   * read only for an interval that can hold a suspend the samples have
   * not seen yet: one the counter counted makes the interval at least as
   * long as itself, and a suspend is one only when over
   * TKC_SUSPEND_MIN_NS (tkc_suspend_between); one the counter did not
   * count is not counted by CLOCK_MONOTONIC_RAW either, so the bound
   * holds without it (and entering and leaving one keeps the machine
   * awake for far longer than TKC_SUSPEND_MIN_NS / 2) */
  if (tkc_suspends_in(lo, hi, tkc_reads_counter(s) && tkc_could_span_suspend(ns_lo, ns_hi),
                      &slept)) {
    flags |= TICKCLOCK_DURATION_SPANS_SUSPEND;
    bound = tkc_sat_add(bound, slept);
  } else if (first->tkc_susp_ns != UINT64_MAX && last->tkc_susp_ns != UINT64_MAX &&
             tkc_suspend_between(first->tkc_susp_ns, last->tkc_susp_ns) &&
             last->tkc_susp_ns > first->tkc_susp_ns) {
    flags |= TICKCLOCK_DURATION_SPANS_SUSPEND;
    bound = tkc_sat_add(bound, last->tkc_susp_ns - first->tkc_susp_ns);
  }
  /* what a rate check found the counter did below the switch's threshold
   * (a step, a rate change) inside a window the interval meets */
  if (tkc_breaks_in(lo, hi, &slept)) {
    flags |= TICKCLOCK_DURATION_SPANS_BREAK;
    bound = tkc_sat_add(bound, slept);
  }
  out->spanned = spanned;
  if (ns_hi == UINT64_MAX || ns_lo == UINT64_MAX || ns_hi < ns_lo ||
      ns_hi - ns_lo > (uint64_t)INT64_MAX) {
    out->ns = start <= end ? INT64_MAX : INT64_MIN;
    out->bound_ns = UINT64_MAX;
    out->flags = flags | TICKCLOCK_DURATION_SATURATED;
    return TICKCLOCK_OK;
  }
  mag = ns_hi - ns_lo;
  out->ns = start <= end ? (int64_t)mag : -(int64_t)mag;
  out->bound_ns = bound;
  out->flags = flags;
  return TICKCLOCK_OK;
}

/* ---- the sampler -------------------------------------------------------- */
static uint64_t tkc_splitmix(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static uint64_t tkc_xorshift(uint64_t *st) {
  uint64_t x = *st;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *st = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* ln x for a normal x > 0, to about 1e-15 relative: x = m 2^e with m in
 * [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m - 1) / (m + 1)) by its series. */
static double tkc_ln(double x) {
  uint64_t bits;
  int e;
  double m, t, t2, r;
  memcpy(&bits, &x, sizeof bits);
  e = (int)((bits >> 52) & 0x7ffu) - 1023;
  bits = (bits & UINT64_C(0x000FFFFFFFFFFFFF)) | UINT64_C(0x3FF0000000000000);
  memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  t = (m - 1.0) / (m + 1.0);
  t2 = t * t;
  r = 1.0 / 19;
  r = 1.0 / 17 + t2 * r;
  r = 1.0 / 15 + t2 * r;
  r = 1.0 / 13 + t2 * r;
  r = 1.0 / 11 + t2 * r;
  r = 1.0 / 9 + t2 * r;
  r = 1.0 / 7 + t2 * r;
  r = 1.0 / 5 + t2 * r;
  r = 1.0 / 3 + t2 * r;
  r = 1.0 + t2 * r;
  return (double)e * 0.69314718055994530942 + 2.0 * t * r;
}

/* ln(1 + x) for -1 < x <= 1, accurate for tiny x: 1 + x rounds away
 * what x holds below 2^-53 of it, and ln(u) * x / (u - 1) puts it back
 * (u - 1 is exact); x itself when 1 + x rounds to 1. */
static double tkc_ln1p(double x) {
  double u = 1.0 + x;
  if (u == 1.0) return x;
  return tkc_ln(u) * (x / (u - 1.0));
}

/* Executions until (and with) the next timed one: geometric on 1, 2, ...
 * with P(gap > k) = (1 - p)^k, by inversion of a uniform in (0, 1]. A
 * draw past 2^64 (or not a number: a tiny p's infinite scale times
 * ln 1 = 0) is the longest gap. */
static uint64_t tkc_gap(tickclock_sampler *s) {
  double u, g;
  if (s->inv_log_q == 0) return 1;
  u = ((double)(tkc_xorshift(&s->rng) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  g = tkc_ln(u) * s->inv_log_q;
  if (!(g < 1.8e19)) return UINT64_MAX;
  return (uint64_t)g + 1;
}

int tickclock_sampler_init(tickclock_sampler *s, double p, uint64_t seed) {
  uint64_t x = seed;
  if (s == NULL || !(p > 0) || !(p <= 1)) return TICKCLOCK_EINVAL;
  memset(s, 0, sizeof *s);
  s->p = p;
  s->inv_log_q = p >= 1 ? 0 : 1.0 / tkc_ln1p(-p);
  do s->rng = tkc_splitmix(&x);
  while (s->rng == 0);
  s->gap = s->left = tkc_gap(s);
  s->ahead = tkc_gap(s);
  return TICKCLOCK_OK;
}

void tkc_sampler_draw_ahead(tickclock_sampler *s) { s->ahead = tkc_gap(s); }

/* The mean and the central moment sums, updated one value at a time
 * (Welford's, with Terriberry's third moment): no cancellation between
 * large sums of powers when the durations barely differ. */
void tickclock_sampler_add(tickclock_sampler *s, double ns, double bound_ns) {
  double n1 = (double)s->sampled, n = n1 + 1, d = ns - s->mean_ns, dn = d / n, t = d * dn * n1;
  s->sampled++;
  s->mean_ns += dn;
  s->m3_ns3 += t * dn * (n - 2) - 3 * dn * s->m2_ns2;
  s->m2_ns2 += t;
  s->bound_sum_ns += bound_ns;
  /* after the timed execution's end: the gap after the next one */
  if (s->ahead == 0) tkc_sampler_draw_ahead(s);
}

void tickclock_sampler_add_duration(tickclock_sampler *s, const tickclock_duration *d,
                                    double overhead_ns) {
  double ns = (double)d->ns, b = (double)d->bound_ns;
  double rate = (ns < 0 ? -ns : ns) * (2 * TICKCLOCK_REVALIDATE_DRIFT_PPM * 1e-6);
  if (d->flags == 0 && rate < b) b = rate;
  tickclock_sampler_add(s, ns - overhead_ns, b);
}

double tickclock_sampler_overhead_ns(void) {
  enum { PAIRS = 256 };
  double v[PAIRS], sum = 0;
  int i, j;
  for (i = 0; i < PAIRS; i++) {
    uint64_t t0 = tickclock_now_ordered();
    double x = (double)tickclock_delta_ns(t0, tickclock_now());
    for (j = i; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1]; /* insertion sort */
    v[j] = x;
  }
  for (i = PAIRS / 4; i < PAIRS - PAIRS / 4; i++) sum += v[i];
  sum /= PAIRS / 2;
  return sum > 0 ? sum : 0;
}

uint64_t tickclock_sampler_count(const tickclock_sampler *s) {
  return s->done + (s->gap - s->left);
}

/* sqrt by Newton's method from the exponent's halving (no libm). */
static double tkc_sqrt(double v) {
  uint64_t bits;
  double r;
  int i;
  if (!(v > 0)) return 0;
  memcpy(&bits, &v, sizeof bits);
  bits = (bits >> 1) + (UINT64_C(1023) << 51); /* about sqrt(v) */
  memcpy(&r, &bits, sizeof r);
  for (i = 0; i < 6; i++) r = 0.5 * (r + v / r);
  return r;
}

/* The real cube root, by Newton's method from the exponent's third. */
static double tkc_cbrt(double v) {
  uint64_t bits;
  double a = v < 0 ? -v : v, r;
  int i;
  if (!(a > 0) || a > 1e300) return v;
  memcpy(&bits, &a, sizeof bits);
  bits = bits / 3 + UINT64_C(0x2A9F7893782DA1CE); /* about cbrt(a) */
  memcpy(&r, &bits, sizeof r);
  for (i = 0; i < 8; i++) r = r - (r - a / (r * r)) / 3;
  return v < 0 ? -r : r;
}

/* Hall's transformation g(t) = t + b t^2 + b^2 t^3 / 3 + c, b = G / (3
 * sqrt n), c = G / (6 sqrt n), inverted at x: ((1 + 3 b (x - c))^(1/3) -
 * 1) / b; x - c when the skewness is 0. */
static double tkc_hall_inv(double x, double b, double c) {
  if (b == 0) return x - c;
  return (tkc_cbrt(1 + 3 * b * (x - c)) - 1) / b;
}

void tickclock_sampler_estimate(const tickclock_sampler *s, tickclock_estimate *e) {
  tickclock_sampler_estimate_for(s, tickclock_sampler_count(s), e);
}

/* The estimate for count executions, of which the durations added to s
 * are a simple random sample (the sampler's own count, or a stratum's). */
void tickclock_sampler_estimate_for(const tickclock_sampler *s, uint64_t count,
                                    tickclock_estimate *e) {
  double N = (double)count, n = (double)s->sampled, var = 0, g = 0;
  double se = 0, rn, b, c, lo, hi;
  e->count = count;
  e->sampled = s->sampled;
  e->flags = 0;
  if (s->sampled == 0) {
    e->total_ns = e->stddev_ns = e->bound_ns = e->skewness = e->lo_ns = e->hi_ns = 0;
    if (count == 0) return; /* no execution: exactly 0 (a kind that did not occur) */
    e->hi_ns = HUGE_VAL;    /* executions, none timed: nothing is known */
    e->flags = TICKCLOCK_ESTIMATE_TOO_FEW;
    return;
  }
  if (N < n) N = n; /* durations added without a decision */
  if (s->sampled > 1) var = s->m2_ns2 / (n - 1);
  if (s->m2_ns2 > 0) g = tkc_sqrt(n) * s->m3_ns3 / (s->m2_ns2 * tkc_sqrt(s->m2_ns2));
  if (var > 0 && N > n) se = tkc_sqrt(var * (1 - n / N) / n); /* of the mean */
  e->total_ns = N * s->mean_ns;
  e->stddev_ns = N * se;
  e->bound_ns = N * (s->bound_sum_ns / n);
  e->skewness = g;
  rn = tkc_sqrt(n);
  b = g / (3 * rn);
  c = g / (6 * rn);
  lo = s->mean_ns - se * tkc_hall_inv(1.96, b, c);
  hi = s->mean_ns - se * tkc_hall_inv(-1.96, b, c);
  e->lo_ns = N * lo - e->bound_ns;
  e->hi_ns = N * hi + e->bound_ns;
  if (!(e->lo_ns > 0)) e->lo_ns = 0;
  if (n < N && n < 28 + 25 * g * g) e->flags |= TICKCLOCK_ESTIMATE_TOO_FEW; /* n == N: all timed */
}
