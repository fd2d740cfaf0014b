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

int tickclock_duration_get(uint64_t start, uint64_t end, tickclock_duration *out) {
  const tickclock_info *s, *x, *first = NULL, *last = NULL;
  uint64_t lo = start < end ? start : end, hi = start < end ? end : start;
  uint64_t lim = UINT64_MAX, ns_lo, ns_hi, mag, bound = 0, slept;
  unsigned flags = 0, spanned = 0;
  if (out == NULL) return TICKCLOCK_EINVAL;
  /* what is due for the later tick first, as tickclock_delta_ns does */
  tkc_due_first(hi);
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
  /* suspends: seen by the samples, or between the publications at both ends */
  if (tkc_suspends_in(lo, hi, tkc_reads_counter(s), &slept)) {
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

/* Executions until (and with) the next timed one: geometric on 1, 2, ...
 * with P(gap > k) = (1 - p)^k, by inversion of a uniform in (0, 1]. */
static uint64_t tkc_gap(tickclock_sampler *s) {
  double u, g;
  if (s->inv_log_q == 0) return 1;
  u = ((double)(tkc_xorshift(&s->rng) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  g = tkc_ln(u) * s->inv_log_q;
  if (g >= 1.8e19) return UINT64_MAX;
  return (uint64_t)g + 1;
}

int tickclock_sampler_init(tickclock_sampler *s, double p, uint64_t seed) {
  uint64_t x = seed;
  if (s == NULL || !(p > 0) || !(p <= 1)) return TICKCLOCK_EINVAL;
  memset(s, 0, sizeof *s);
  s->p = p;
  s->inv_log_q = p >= 1 ? 0 : 1.0 / tkc_ln(1.0 - p);
  do s->rng = tkc_splitmix(&x);
  while (s->rng == 0);
  s->gap = s->left = tkc_gap(s);
  return TICKCLOCK_OK;
}

int tkc_sampler_hit(tickclock_sampler *s) {
  s->done += s->gap;
  s->gap = s->left = tkc_gap(s);
  return 1;
}

void tickclock_sampler_add(tickclock_sampler *s, double ns, double bound_ns) {
  s->sampled++;
  s->sum_ns += ns;
  s->sum_sq_ns2 += ns * ns;
  s->bound_sum_ns += bound_ns;
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

void tickclock_sampler_estimate(const tickclock_sampler *s, tickclock_estimate *e) {
  double p = s->p;
  e->count = tickclock_sampler_count(s);
  e->sampled = s->sampled;
  e->total_ns = s->sum_ns / p;
  e->stddev_ns = tkc_sqrt((1.0 - p) / (p * p) * s->sum_sq_ns2);
  e->bound_ns = s->bound_sum_ns / p;
  e->lo_ns = e->total_ns - (1.96 * e->stddev_ns + e->bound_ns);
  e->hi_ns = e->total_ns + (1.96 * e->stddev_ns + e->bound_ns);
  if (s->sampled == 0) {
    e->lo_ns = 0;
    e->hi_ns = HUGE_VAL; /* nothing is known yet */
  }
}
