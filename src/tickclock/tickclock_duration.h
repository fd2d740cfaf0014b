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
 *    detected by the rate check, or, while a checked counter is read and
 *    the interval is 0.5 ms or longer, by comparing the time suspended now
 *    with the last check's; a window
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
 * TICKCLOCK_REVALIDATE_RESOLUTION_NS per check period (the brackets'
 * half-widths on a host whose every bracket is wider) is never seen (see
 * the README's table of what the bound includes). A handler that
 * interrupted the writer of the suspend or break windows reads them as
 * unknown: bound_ns UINT64_MAX.
 * Under the OS clock the duration is what CLOCK_MONOTONIC counts: NTP may
 * slew it against CLOCK_MONOTONIC_RAW (by at most 500 ppm; on a host
 * without NTP by nothing), which the bound does not include. A result that
 * does not fit (to_ns saturated, or |end - start| past INT64_MAX ns) has
 * TICKCLOCK_DURATION_SATURATED, ns at INT64_MIN/INT64_MAX and bound_ns
 * UINT64_MAX. What is due for the later tick runs first, as in
 * tickclock_delta_ns; and one in 64 durations whose later tick lies among
 * the far ticks seen ahead (50 years or more ahead of the counter when one
 * was converted: tickclock.h) goes out of line and reads the counter,
 * which runs the check a counter that itself jumped there is due (its
 * readings' conversions never do); a duration of a far tick costs that
 * visit (0.7-0.9 us) once in 64, 10-14 ns on average (AMD EPYC 0x19/0x1
 * under Firecracker/KVM: one read and the duration to a tick 100 years
 * ahead 128-133 ns against 118-119 ns). Async-signal-safe like tickclock_delta_ns (no
 * allocation, no I/O, no lock wait: clock reads and a walk of at most the
 * states the interval spans, O(log n) to reach them). The time suspended
 * now (three clock reads) is read only for an interval of 0.5 ms or more
 * on a counter: a suspend the counter counted makes the interval at least
 * as long as itself (and only one over 1 ms is taken for a suspend), one
 * it did not count is not counted by CLOCK_MONOTONIC_RAW either. Measured
 * (tests/bench: BM_interval/duration_get*, medians; Intel family 6 model
 * 0xA7 under Firecracker/KVM, TSC, 2 vCPUs shared): two tickclock_now()
 * and the duration of a short interval 34-38 ns (two reads and delta_ns:
 * 19 ns), the same with a second thread doing it at once 34 ns each; one
 * read and the duration of an interval over 0.5 ms 88-97 ns (before: every
 * interval, 97-99 ns). Returns TICKCLOCK_OK, or TICKCLOCK_EINVAL when out
 * is NULL. */
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
 * double cost = tickclock_sampler_overhead_ns(); // what timing adds to a call
 * for (int k = 0; k < 10000; k++) {
 *   if (tickclock_sampler_should_time(&smp)) {   // one decrement, one branch
 *     uint64_t t0 = tickclock_now_ordered();     // not before the work before it
 *     work();
 *     tickclock_duration d;
 *     tickclock_duration_get(t0, tickclock_now(), &d);
 *     tickclock_sampler_add_duration(&smp, &d, cost);
 *   } else {
 *     work();
 *   }
 * }
 * tickclock_estimate est;
 * tickclock_sampler_estimate(&smp, &est);        // total with a 95 % interval
 * if (est.flags & TICKCLOCK_ESTIMATE_TOO_FEW) {
 *   // too few timed executions for how skewed they are: the interval
 *   // may hold the total less often than 95 %
 * }
 * ```
 * A timed execution starts right after its decision: the gap that follows
 * it was drawn ahead (a logarithm and a division), by the last
 * tickclock_sampler_add* after the previous timed execution's end, and the
 * one after it is drawn by this execution's. (A timed execution not added
 * leaves that draw to the next timed decision.) The start is read with
 * tickclock_now_ordered(): an unordered read may execute before the work
 * before it has finished and add part of that to the timed executions only.
 *
 * Each execution is timed with probability p, independently of the others
 * (Bernoulli sampling): the gaps between timed executions are drawn from
 * the geometric distribution with a xorshift64* generator seeded through
 * splitmix64, so no fixed stride can alias with a periodic workload.
 * Given how many were timed (n of the N decided), the timed ones are a
 * simple random sample of the N, so the estimate is total = N * mean of
 * the timed durations (unbiased given n, and exact for a constant
 * workload), with variance N^2 (1 - n/N) s^2 / n (s^2 the sample
 * variance). The 95 % interval corrects for the sample's skewness g
 * (Hall's cubic transformation of the studentised mean: it reaches
 * further above a right-skewed sample's mean than below), then adds the
 * timed durations' systematic bounds scaled to N (bound_ns), and never
 * goes below 0. Errors that are independent from one execution to the
 * next with mean zero (quantisation, rounding, read jitter) are already in
 * the timed durations' spread and are not added again.
 *
 * Which workloads it covers (tests/tickclock/sampler_test: 2 000 seeded
 * trials per workload, 50 000 executions, p = 1/32, about 1 560 timed):
 *  - it holds the total at 95 % (measured 94.2-100 %, each within two
 *    standard errors of the trials) when n >= 28 + 25 G^2, G the
 *    skewness of the executions' durations (Cochran's rule in Sugden,
 *    Smith and Jones' form): constant, exponential (G = 2), lognormal
 *    with sigma = 1 (G = 6.2), bimodal, periodic with period 1/p,
 *    durations with systematic errors within their bounds;
 *  - when the timed sample's own skewness g says n < 28 + 25 g^2 (and
 *    always under 28 timed executions, unless all were timed) the
 *    estimate sets TICKCLOCK_ESTIMATE_TOO_FEW: held or flagged in 99.9 %
 *    of lognormal sigma = 2.5 (G = 11 800; held alone 88 %) and 95.5 % of
 *    Pareto alpha = 2.5 (no finite G), and whenever a rare spike was
 *    timed;
 *  - a heavy part made of m executions that no timed execution met cannot
 *    be seen or flagged: it happens with probability (1 - p)^m. One 1 s
 *    stall among 100 ns executions (m = 1) is missed in 1 - p of the
 *    trials (97 % at p = 1/32; the other 3 % are flagged); one execution
 *    in 1 000 taking 1 ms (m = 50 of 50 000) in (1 - p)^50 = 20 % of them.
 *    Only m >= 3/p keeps that under 5 %.
 * No timed execution yet: total 0, interval [0, +inf), TOO_FEW (none
 * decided either: exactly 0, interval [0, 0]).
 * The state is caller-owned and not shared: keep one per thread (two
 * threads updating one struct race, and two structs on one cache line
 * slow each other down); every function here but
 * tickclock_sampler_overhead_ns is async-signal-safe on a state the
 * interrupted code is not updating (no allocation, no I/O, no lock, no
 * libm). Deciding "not timed" costs one decrement and one predicted
 * branch: under 0.1 ns over the same loop without it on this project's
 * hosts (tests/bench: BM_sampler/not_sampled). */
typedef struct tickclock_sampler {
  uint64_t left;                  /* internal: executions until the next timed one */
  uint64_t gap;                   /* internal: the current gap's length */
  uint64_t rng;                   /* internal: xorshift64* state, never 0 */
  uint64_t done;                  /* internal: executions in the completed gaps */
  double p;                       /* the probability of timing an execution */
  double inv_log_q;               /* internal: 1 / ln(1 - p); 0 when p == 1 */
  uint64_t sampled;               /* durations added */
  double mean_ns, m2_ns2, m3_ns3; /* their mean, central 2nd and 3rd moment sums */
  double bound_sum_ns;            /* their systematic bounds' sum */
  uint64_t ahead;                 /* internal: the gap after this one; 0: not drawn yet */
} tickclock_sampler;
#define TICKCLOCK_ESTIMATE_TOO_FEW 1u /* n < 28 + 25 g^2: coverage not assured */
typedef struct tickclock_estimate {
  uint64_t count;      /* executions decided (N) */
  uint64_t sampled;    /* durations added (n) */
  double total_ns;     /* N * their mean */
  double stddev_ns;    /* its standard deviation: N s sqrt((1 - n/N) / n) */
  double bound_ns;     /* N * the mean systematic bound */
  double skewness;     /* g, the timed durations' sample skewness */
  double lo_ns, hi_ns; /* 95 %, skew-corrected, bound_ns added, lo >= 0 */
  unsigned flags;      /* TICKCLOCK_ESTIMATE_* */
} tickclock_estimate;
/* 0 < p <= 1; any seed (0 too). TICKCLOCK_EINVAL (state untouched) for a
 * NULL state or p outside (0, 1]. */
TICKCLOCK_API int tickclock_sampler_init(tickclock_sampler *s, double p, uint64_t seed);
/* tickclock_sampler_should_time(s), tickclock_sampler_next_timed(s):
 * inline, at the bottom of this file. */
/* One timed execution's duration and the bound on the part of its error
 * that may repeat in the same direction from one execution to the next (a
 * rate error, a step): N times their mean is added to the interval. Pass
 * the whole error bound when unsure. */
TICKCLOCK_API void tickclock_sampler_add(tickclock_sampler *s, double ns, double bound_ns);
/* One timed execution from tickclock_duration_get: d->ns less overhead_ns
 * (what timing itself adds to it: tickclock_sampler_overhead_ns(), or a
 * caller's own measurement), so that the estimate is of the executions
 * untimed. The systematic bound is the rate's share of d->bound_ns (at
 * most 2 * TICKCLOCK_REVALIDATE_DRIFT_PPM of |d->ns|) when d->flags is 0,
 * all of it when the interval spans a publication or a suspend. */
TICKCLOCK_API void tickclock_sampler_add_duration(tickclock_sampler *s, const tickclock_duration *d,
                                                  double overhead_ns);
/* The mean duration tickclock_delta_ns gives an empty section timed as
 * above (start with tickclock_now_ordered(), end with tickclock_now()):
 * 256 pairs, the middle half averaged. Reads the clock (a few
 * microseconds; not async-signal-safe); 0 if the clock cannot be read. */
TICKCLOCK_API double tickclock_sampler_overhead_ns(void);
/* Executions decided so far (timed or not). */
TICKCLOCK_API uint64_t tickclock_sampler_count(const tickclock_sampler *s);
TICKCLOCK_API void tickclock_sampler_estimate(const tickclock_sampler *s, tickclock_estimate *e);
/* Post-stratification: where each execution falls in one of a few kinds
 * that the caller can tell for every execution, timed or not, cheaply
 * (say, whether it read a page), keep one sampler that decides
 * (tickclock_sampler_should_time) and one per kind that is only given the
 * durations of that kind's timed executions (tickclock_sampler_add*;
 * give the deciding one each timed duration too, or its timed decisions
 * draw their gaps; its own estimate is then the unstratified one),
 * count each kind's executions, and estimate each kind with this: count
 * executions of which the durations added to s are a random sample. The
 * kinds' totals add up, and so do their variances (stddev_ns squared).
 * Where rare, slow executions carry much of the time, the interval is
 * then as wide as their spread among themselves, no longer as wide as the
 * chance of how many of them were timed (tests/tickclock/sampler_test:
 * one execution in 227 taking 177 times the others). A kind with
 * executions and none timed gives total 0 and hi_ns infinite, TOO_FEW; a
 * kind with no execution (count 0, nothing added) is exactly 0: interval
 * [0, 0], no flag, so the kinds that did not occur add nothing to the sum
 * of intervals. count below the durations added is taken as their number. */
TICKCLOCK_API void tickclock_sampler_estimate_for(const tickclock_sampler *s, uint64_t count,
                                                  tickclock_estimate *e);
/* A kind too rare to be timed often enough for a sampler of its own (at
 * p = 1/1000, one execution in 227: some 0.3 timed in 68 000) can still
 * be counted, and its extra cost b measured outside the sample (on
 * executions timed in full before sampling starts: b is then fixed before
 * the sample is drawn). Add each timed execution of that kind less b
 * (tickclock_sampler_add_duration's overhead_ns plus b) and add b times
 * the kind's count to the estimate and to both ends of its interval: the
 * difference estimator. It has no bias whatever b is, and its interval
 * is the timed executions' spread around b: it holds at 95 % when the kind
 * costs about b more later as it did before and its own spread is small
 * beside the interval (tests/tickclock/sampler_test: 95 % where the plain
 * estimate holds 24 %). A sample that timed few of the kind cannot show
 * their spread: add it from the executions measured outside the sample
 * (m of them, variance s2: count * s2 + count^2 * s2 / m, 1.96^2 times, in
 * quadrature), as the PostgreSQL patch does. lo_ns is never below 0, so
 * where the residuals' total may be negative, take the upper reach for
 * both sides. When the kind costs more later and none of it was timed,
 * nothing in the sample shows it and the interval misses (the same test,
 * twice the cost later: held 24 %). Where the dear part of such an
 * execution can be told while it runs (a page read starts it), time that
 * part in every execution of the kind, add it exactly, and give the
 * sampler the rest of each timed one, less the cheap part's own b: what
 * is sampled is then the cheap part, and the interval holds whatever the
 * dear part costs later, which never enters the sample (sampler_test:
 * 94 %; mean half-width 1.5 % against 11.5 %, the same in the trials that
 * timed none of the kind). What it cannot hold is what lands at random in
 * the cheap part and is rarely in the sample: on a nested guest a
 * PostgreSQL scan's sampled part had ~1 000 calls over 2 us (600-700 of
 * 5-20 us, timer interrupts; the longer ones host steal), 2-18 % of its
 * time, and a sample of 1 in 1 000 calls holds about one. */

#endif /* TICKCLOCK_DURATION_H */
