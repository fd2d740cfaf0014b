/* tickclock — durations with an error bound, and sampled timing: part of
 * tickclock.h, which includes it inside its extern "C" block, after the
 * types and the control functions (never on its own). In the single
 * header it stands where tickclock.h includes it. */
#ifndef TICKCLOCK_DURATION_H
#define TICKCLOCK_DURATION_H

/* ---- durations with a bound --------------------------------------------
 * tickclock_duration_get(start, end, &d): d.ns = to_ns(end) - to_ns(start)
 * (each part of the interval converted with the state its ticks were
 * taken under, so the value never changes once both ticks are in the
 * past of the current state), and d.bound_ns >= |d.ns - the time that
 * passed between the two readings as CLOCK_MONOTONIC_RAW counts it|,
 * the sum of:
 *  - each state's stated rate uncertainty (uncertainty_ppm) over the part
 *    of the interval it converts, plus 2 ns of rounding per part,
 *  - the quantum at both ends: the resolution_ns of the state each tick
 *    was taken under and one unit tick, plus 1 ns,
 *  - each publication the interval spans (TICKCLOCK_DURATION_SPANS_PUBLICATION):
 *    a same-counter republication (refinement, re-calibration) is exactly
 *    continuous at its base (1 ns of rounding); a switch of source carries
 *    its measured step (the time between reading the new source and the
 *    old one, usually under a microsecond); a switch away from a counter
 *    that was distrusted or could not be read
 *    (TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH) carries the extrapolation's
 *    allowance, about DRIFT_ABS_NS + (DRIFT_PPM + uncertainty) of the time
 *    since the last conclusive check (100 us + 51 ppm of up to a second),
 *  - a detected suspend (TICKCLOCK_DURATION_SPANS_SUSPEND): the time
 *    suspended, since a counter may have counted it or not (a suspend is
 *    detected by the rate check, or, while a checked counter is read, by
 *    comparing the time suspended now with the last check's; a window
 *    that only overlaps the interval counts too; the oldest windows, once
 *    eight later ones are kept, count as one whose time is all of theirs),
 *  - a break (TICKCLOCK_DURATION_SPANS_BREAK): a window in which a rate
 *    check found the counter further from CLOCK_MONOTONIC_RAW than its
 *    stated rate allows (a step, a rate change below the switch's
 *    threshold), with the discrepancy it measured; the windows are kept
 *    like the suspends'.
 * What the rate check has not looked at yet is not in the bound: an
 * interval asked before the check that follows it assumes the stated
 * rate held since the last check, and what stays within
 * TICKCLOCK_REVALIDATE_RESOLUTION_NS per check period is never seen (see
 * the README's table of what the bound includes).
 * Under the OS clock the duration is what CLOCK_MONOTONIC counts: NTP may
 * slew it against CLOCK_MONOTONIC_RAW (by at most 500 ppm; on a host
 * without NTP by nothing), which the bound does not include. A result that
 * does not fit (to_ns saturated, or |end - start| past INT64_MAX ns) has
 * TICKCLOCK_DURATION_SATURATED, ns at INT64_MIN/INT64_MAX and bound_ns
 * UINT64_MAX. What is due for the later tick runs first, as in
 * tickclock_delta_ns. Async-signal-safe like tickclock_delta_ns (no
 * allocation, no I/O, no lock wait: clock reads and a walk of at most the
 * states the interval spans, O(log n) to reach them); it costs about
 * 80 ns on this project's hosts, most of it the three clock reads that
 * give the time suspended now (tests/bench: BM_interval/duration_get). Returns
 * TICKCLOCK_OK, or TICKCLOCK_EINVAL when out is NULL. */
/* refinement, re-calibration, re-initialisation, switch: */
#define TICKCLOCK_DURATION_SPANS_PUBLICATION 1u
#define TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH 2u /* a step bounded, not measured */
#define TICKCLOCK_DURATION_SPANS_SUSPEND 4u        /* a detected suspend */
#define TICKCLOCK_DURATION_SATURATED 8u            /* the value did not fit */
#define TICKCLOCK_DURATION_SPANS_BREAK 16u         /* a step or rate change a check found */
typedef struct tickclock_duration {
  int64_t ns;        /* end - start, ns (negative when end precedes start) */
  uint64_t bound_ns; /* |ns - true| <= bound_ns */
  unsigned flags;    /* TICKCLOCK_DURATION_* */
  unsigned spanned;  /* publications the interval spans */
} tickclock_duration;
TICKCLOCK_API int tickclock_duration_get(uint64_t start, uint64_t end, tickclock_duration *out);

/* ---- sampled timing -------------------------------------------------------
 * Times a random subset of executions and estimates their total:
 *
 * ```c
 * static tickclock_sampler smp;                  // one per thread, or per node
 * tickclock_sampler_init(&smp, 1.0 / 64, 42);    // p = 1/64; any seed
 * for (int k = 0; k < 10000; k++) {
 *   if (tickclock_sampler_should_time(&smp)) {   // one decrement, one branch
 *     uint64_t t0 = tickclock_now_ordered();     // not before the gap's draw
 *     work();
 *     tickclock_duration d;
 *     tickclock_duration_get(t0, tickclock_now(), &d);
 *     tickclock_sampler_add(&smp, (double)d.ns, (double)d.bound_ns);
 *   } else {
 *     work();
 *   }
 * }
 * tickclock_estimate est;
 * tickclock_sampler_estimate(&smp, &est);        // total with a 95 % interval
 * ```
 * The start is read with tickclock_now_ordered(): an unordered read may
 * execute before the draw of the next gap (a logarithm and a division)
 * has finished and add part of it to the timed executions only.
 *
 * Each execution is timed with probability p, independently of the others
 * (Bernoulli sampling): the gaps between timed executions are drawn from
 * the geometric distribution with a xorshift64* generator seeded through
 * splitmix64, so no fixed stride can alias with a periodic workload. The
 * estimate is Horvitz-Thompson's, total = sum / p (unbiased), with
 * variance (1 - p) / p^2 * sum of squares (unbiased for the variance of a
 * Bernoulli(p)-sampled total); the 95 % interval is total -/+ (1.96 * its
 * standard deviation + bound_sum / p), the second term the durations'
 * error bounds scaled like the total. It is a normal approximation: with
 * few timed executions (under about 30) or a tail without a variance it
 * covers less than 95 %. No timed execution yet: total 0, interval
 * [0, +inf).
 * The state is caller-owned and not shared: keep one per thread (two
 * threads updating one struct race, and two structs on one cache line
 * slow each other down); every function here is async-signal-safe on a
 * state the interrupted code is not updating (no allocation, no I/O, no
 * lock, no libm). Deciding "not timed" costs one decrement and one
 * predicted branch: under 0.1 ns over the same loop without it on this
 * project's hosts (tests/bench: BM_sampler/not_sampled). */
typedef struct tickclock_sampler {
  uint64_t left;                           /* internal: executions until the next timed one */
  uint64_t gap;                            /* internal: the current gap's length */
  uint64_t rng;                            /* internal: xorshift64* state, never 0 */
  uint64_t done;                           /* internal: executions in the completed gaps */
  double p;                                /* the probability of timing an execution */
  double inv_log_q;                        /* internal: 1 / ln(1 - p); 0 when p == 1 */
  uint64_t sampled;                        /* durations added */
  double sum_ns, sum_sq_ns2, bound_sum_ns; /* of the added durations */
} tickclock_sampler;
typedef struct tickclock_estimate {
  uint64_t count;      /* executions decided */
  uint64_t sampled;    /* durations added */
  double total_ns;     /* Horvitz-Thompson: sum / p */
  double stddev_ns;    /* sqrt((1 - p) / p^2 * sum of squares) */
  double bound_ns;     /* bound_sum / p */
  double lo_ns, hi_ns; /* 95 %: total -/+ (1.96 * stddev + bound) */
} tickclock_estimate;
/* 0 < p <= 1; any seed (0 too). TICKCLOCK_EINVAL (state untouched) for a
 * NULL state or p outside (0, 1]. */
TICKCLOCK_API int tickclock_sampler_init(tickclock_sampler *s, double p, uint64_t seed);
/* tickclock_sampler_should_time(s): inline, at the bottom of this file. */
/* One timed execution's duration and its error bound (ns). */
TICKCLOCK_API void tickclock_sampler_add(tickclock_sampler *s, double ns, double bound_ns);
/* Executions decided so far (timed or not). */
TICKCLOCK_API uint64_t tickclock_sampler_count(const tickclock_sampler *s);
TICKCLOCK_API void tickclock_sampler_estimate(const tickclock_sampler *s, tickclock_estimate *e);

#endif /* TICKCLOCK_DURATION_H */
