/* The patched PostgreSQL instr_time.h (examples/postgres/tickclock-pg15.patch)
 * compiled outside PostgreSQL against the current single header, every
 * macro exercised. pg_c_h.h stands in for the few things PostgreSQL's c.h
 * gives the header (uint64, int64, bool). */
#include "pg_c_h.h"
#include "portability/instr_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, ...)                                   \
	do {                                                   \
		if (!(cond)) {                                     \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                           \
			printf("\n");                                  \
			failures++;                                    \
		}                                                  \
	} while (0)

static int64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A relative difference within 1e-12 (the same arithmetic in another
 * order). */
static int near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* Sampled timing's arithmetic (instr_time.h's instr_sample_* and
 * instr_format_error, what explain_timing_sample_rate prints). */
static void sampled_timing(void)
{
	char		buf[32];
	tickclock_sampler smp, zeroed;
	instr_sample_sum s, half, sum;
	tickclock_estimate e;
	double		p = 0.25, b_ns = 3.0, truth = 0.0, want_half, want_err;
	uint64		timed = 0;
	int			i, n = 10000;

	/* The text after a time: nothing when exact, three decimals, inf. */
	instr_format_error(buf, sizeof(buf), 0.0);
	CHECK(strcmp(buf, "") == 0, "exact time: '%s'", buf);
	instr_format_error(buf, sizeof(buf), -1.0);
	CHECK(strcmp(buf, "") == 0, "negative error: '%s'", buf);
	instr_format_error(buf, sizeof(buf), NAN);
	CHECK(strcmp(buf, "") == 0, "NaN error: '%s'", buf);
	instr_format_error(buf, sizeof(buf), 0.91249);
	CHECK(strcmp(buf, "+/-0.912") == 0, "0.91249 ms: '%s'", buf);
	instr_format_error(buf, sizeof(buf), 1234.5675);
	CHECK(strcmp(buf, "+/-1234.568") == 0 || strcmp(buf, "+/-1234.567") == 0, "1234.5675 ms: '%s'", buf);
	instr_format_error(buf, sizeof(buf), 0.0004);
	CHECK(strcmp(buf, "+/-0.000") == 0, "0.0004 ms: '%s'", buf);
	instr_format_error(buf, sizeof(buf), HUGE_VAL);
	CHECK(strcmp(buf, "+/-inf") == 0, "unbounded: '%s'", buf);
	CHECK(instr_format_error(buf, 4, 12.5) == (int) strlen("+/-12.500") && strlen(buf) == 3,
		  "truncated to the buffer: '%s'", buf);

	/* The exact part: some 32 timed calls' worth of calls at the rate. */
	CHECK(instr_sample_exact_calls(0.01) == 3201, "rate 0.01: %llu exact calls",
		  (unsigned long long) instr_sample_exact_calls(0.01));
	CHECK(instr_sample_exact_calls(1.0) == 33, "rate 1: %llu", (unsigned long long) instr_sample_exact_calls(1.0));
	CHECK(instr_sample_exact_calls(0.001) == 32001, "rate 0.001: %llu",
		  (unsigned long long) instr_sample_exact_calls(0.001));
	CHECK(instr_sample_exact_calls(1e-6) == 32000001, "rate 1e-6: %llu",
		  (unsigned long long) instr_sample_exact_calls(1e-6));

	/* A state never initialised (a worker's slot) and one with no call
	 * decided: nothing sampled, the time exact. */
	memset(&zeroed, 0, sizeof(zeroed));
	instr_sample_sum_of(&zeroed, NULL, &s);
	CHECK(s.total == 0 && s.half2 == 0 && s.bound == 0 && s.ncalls == 0 && s.ntimed == 0 && s.nfew == 0,
		  "zeroed sampler");
	CHECK(instr_sample_error(&s) == 0.0, "zeroed sampler's error %g", instr_sample_error(&s));
	CHECK(tickclock_sampler_init(&smp, p, 42) == TICKCLOCK_OK, "sampler init");
	instr_sample_sum_of(&smp, NULL, &s);
	CHECK(s.ncalls == 0 && instr_sample_error(&s) == 0.0, "no call decided: %g calls", s.ncalls);

	/* n calls of 100 to 160 ns (systematic bound b_ns), a quarter timed:
	 * the estimate is the sampler's (calls times the timed mean), in
	 * seconds; its bound the bounds' mean times the calls; its error the
	 * wider side of the sampler's skew-corrected interval. */
	for (i = 0; i < n; i++)
	{
		double		d_ns = 100.0 + 10.0 * (i % 7);

		truth += d_ns;
		if (tickclock_sampler_should_time(&smp))
		{
			tickclock_sampler_add(&smp, d_ns, b_ns);
			timed++;
		}
		if (i == n / 2 - 1)
			instr_sample_sum_of(&smp, NULL, &half);
	}
	instr_sample_sum_of(&smp, NULL, &s);
	tickclock_sampler_estimate(&smp, &e);
	CHECK(s.ncalls == n && s.ntimed == (double) timed, "%g calls, %g timed (%llu)", s.ncalls, s.ntimed,
		  (unsigned long long) timed);
	CHECK(timed > n * p * 0.9 && timed < n * p * 1.1, "%llu of %d calls timed at rate %g",
		  (unsigned long long) timed, n, p);
	CHECK(near(s.total, e.total_ns / 1e9), "estimate %.9g s, want %.9g s", s.total, e.total_ns / 1e9);
	CHECK(near(s.bound, n * b_ns / 1e9), "bound %.9g s, want %.9g", s.bound, n * b_ns / 1e9);
	want_err = fmax(e.hi_ns - e.total_ns, e.total_ns - e.lo_ns) / 1e9;
	CHECK(fabs(instr_sample_error(&s) - want_err) <= 1e-12 * want_err, "error %.9g s, want %.9g",
		  instr_sample_error(&s), want_err);
	want_half = want_err - n * b_ns / 1e9;
	CHECK(fabs(sqrt(s.half2) - want_half) <= 1e-9 * want_err && want_half > 0, "random half-width %.9g s, want %.9g",
		  sqrt(s.half2), want_half);
	CHECK(s.nfew == 0 && !(e.flags & TICKCLOCK_ESTIMATE_TOO_FEW), "%g samples flagged too few", s.nfew);
	/* the interval holds the true total for this seed */
	CHECK(fabs(s.total - truth / 1e9) <= instr_sample_error(&s), "estimate %.9g s +/- %.9g, true %.9g s",
		  s.total, instr_sample_error(&s), truth / 1e9);

	/* Parallel workers: sums of independent samples add, their random
	 * half-widths in quadrature (the error of a sum is not the sum of the
	 * errors), their systematic bounds as they are. */
	sum = half;
	instr_sample_sum_add(&sum, &s);
	CHECK(near(sum.total, half.total + s.total) && near(sum.half2, half.half2 + s.half2) &&
		  near(sum.bound, half.bound + s.bound) && sum.ncalls == half.ncalls + s.ncalls &&
		  sum.ntimed == half.ntimed + s.ntimed && sum.nfew == 0, "sum of two");
	CHECK(near(instr_sample_error(&sum), sqrt(half.half2 + s.half2) + half.bound + s.bound),
		  "error of the sum %.9g s", instr_sample_error(&sum));
	CHECK(instr_sample_error(&sum) < instr_sample_error(&half) + instr_sample_error(&s),
		  "the error of the sum is less than the sum of the errors");

	/* One heavy call among light ones, timed: too few for that skewness. */
	CHECK(tickclock_sampler_init(&smp, 0.5, 3) == TICKCLOCK_OK, "sampler init at 0.5");
	for (i = 0, timed = 0; i < 200; i++)
		if (tickclock_sampler_should_time(&smp))
			tickclock_sampler_add(&smp, timed++ == 0 ? 1e6 : 100.0, 0.0);
	instr_sample_sum_of(&smp, NULL, &s);
	sum = half;
	instr_sample_sum_add(&sum, &s);
	CHECK(s.nfew == 1 && sum.nfew == 1, "a skewed sample flagged: %g, in a sum %g", s.nfew, sum.nfew);

	/* Calls left to sampling and none timed: nothing is known of them. */
	CHECK(tickclock_sampler_init(&smp, 1e-6, 7) == TICKCLOCK_OK, "sampler init at 1e-6");
	for (i = 0; i < 10 && !tickclock_sampler_should_time(&smp); i++)
		;
	instr_sample_sum_of(&smp, NULL, &s);
	if (s.ntimed == 0)
		CHECK(isinf(instr_sample_error(&s)) && s.ncalls == 10, "untimed calls: error %g, %g calls",
			  instr_sample_error(&s), s.ncalls);
	else
		CHECK(0, "seed 7 at rate 1e-6 timed one of the first %d calls: choose another seed", i + 1);
}

/* splitmix64's finaliser: a well-mixed 64-bit hash */
static uint64 mix64(uint64 x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* One node of n calls like a scan of a cached table: one call in 226
 * moves to a new page and costs ~45 times the others (block_ns against
 * 40-62 ns), the page period starting at phase; its first
 * instr_sample_exact_calls(rate) calls exact (the first a loop's first),
 * the rest sampled at rate as the patch does: the extra cost b measured
 * on the exact part, a timed block call added less b, the block calls
 * counted.  later_factor scales the block calls after the exact part;
 * heavy_tail makes one block call in eight, at random, take 40 us
 * throughout.
 * Returns whether the interval held the sampled part's true time; *flagged,
 * *half_share (the half-width over the node's true time, exact part
 * included, as EXPLAIN prints it) and *rel_err (the sampled part's
 * relative error) on the side. */
static int block_node(double rate, uint64 seed, int phase, double later_factor, int model,
					  int heavy_tail, int *flagged, double *half_share, double *rel_err)
{
	const int	n = 100000;
	int			i, exact = (int) instr_sample_exact_calls(rate);
	tickclock_sampler smp;
	instr_sample_pages pg;
	instr_sample_sum s;
	double		truth = 0.0, exact_ns = 0.0;

	memset(&pg, 0, sizeof(pg));
	tickclock_sampler_init(&smp, rate, seed);
	for (i = 0; i < n; i++)
	{
		int			page = (i + phase) % 226 == 0;
		double		ns = page ? 2000.0 + 5.0 * (i % 101) : 40.0 + (double) ((i * 7919) % 23);

		/* heavy_tail: one block call in eight (by a hash of i and the
		 * seed: at random, not evenly spaced) takes 40 us */
		if (page && heavy_tail && mix64(seed * 0x100000001B3ULL + (uint64) i) >> 61 == 0)
			ns = 40000.0;

		if (i < exact)
		{
			exact_ns += ns;
			if (i > 0)
				instr_sample_count_exact(&pg, ns, page);
			continue;
		}
		if (page)
			ns *= later_factor;
		truth += ns;
		pg.calls += page;
		if (tickclock_sampler_should_time(&smp))
		{
			tickclock_sampler_add(&smp, ns - (page && model ? instr_sample_page_extra(&pg) : 0.0), 0.0);
			pg.timed += page;
		}
	}
	instr_sample_sum_of(&smp, model ? &pg : NULL, &s);
	*flagged = s.nfew > 0;
	*half_share = instr_sample_error(&s) / ((exact_ns + truth) / 1e9);
	*rel_err = s.total / (truth / 1e9) - 1.0;
	return fabs(s.total - truth / 1e9) <= instr_sample_error(&s);
}

static int cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Block calls: the difference estimator's coverage, and its counts.  A
 * timed block call's spread around b widens the interval (and the skew
 * test may flag it): the half-width is within 10 % of the node's total in
 * some 80 % of these trials, its median about 2 %. */
static void block_calls(void)
{
	instr_sample_pages pg;
	tickclock_sampler smp;
	instr_sample_sum s;
	const int	trials = 1000;
	int			t, i, held = 0, held_plain = 0, held_or_flagged_plain = 0, flagged_n = 0, narrow = 0;
	double		err_sum = 0.0, err_sum2 = 0.0, mean, sd, shares[1000];

	/* b from the exact part's counts: none below 10 of either kind. */
	memset(&pg, 0, sizeof(pg));
	for (i = 0; i < 9; i++)
	{
		instr_sample_count_exact(&pg, 1000.0, true);
		instr_sample_count_exact(&pg, 100.0, false);
	}
	CHECK(!instr_sample_page_model(&pg) && instr_sample_page_extra(&pg) == 0.0,
		  "9 of each: b %g", instr_sample_page_extra(&pg));
	instr_sample_count_exact(&pg, 1100.0, true);
	CHECK(!instr_sample_page_model(&pg), "10 block calls, 9 others: no b");
	instr_sample_count_exact(&pg, 200.0, false);
	CHECK(instr_sample_page_model(&pg) && near(instr_sample_page_extra(&pg), 1010.0 - 110.0),
		  "10 of each: b %g, want 900", instr_sample_page_extra(&pg));
	CHECK(pg.exact_n == 10 && near(pg.exact_ns, 10100.0) && pg.exact_other_n == 10 &&
		  near(pg.exact_other_ns, 1100.0) && pg.calls == 0 && pg.timed == 0, "exact counts");

	/* The estimate adds b for every block call counted, timed or not; the
	 * flag for few timed block calls only where there is no b. */
	tickclock_sampler_init(&smp, 0.5, 11);
	for (i = 0; i < 1000; i++)
		if (tickclock_sampler_should_time(&smp))
			tickclock_sampler_add(&smp, 100.0, 0.0);
	pg.calls = 40;
	pg.timed = 3;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(near(s.total, (1000 * 100.0 + 40 * 900.0) / 1e9) && s.nfew == 0,
		  "b times 40 block calls: %.9g s, flagged %g", s.total, s.nfew);
	pg.exact_n = 9;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(near(s.total, 1000 * 100.0 / 1e9) && s.nfew == 1,
		  "no b, 3 of 40 block calls timed: %.9g s, flagged %g", s.total, s.nfew);
	pg.timed = 10;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(s.nfew == 0, "no b, 10 of 40 block calls timed: flagged %g", s.nfew);
	pg.calls = 10;
	pg.timed = 9;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(s.nfew == 1, "no b, 9 of exactly 10 block calls timed: flagged %g", s.nfew);
	pg.calls = 9;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(s.nfew == 0, "no b, 9 block calls: not flagged (%g)", s.nfew);

	/* The block calls' spread from the exact part, while fewer than 10 of
	 * them were timed: 1.96^2 (calls s2 + calls^2 s2 / exact_n), in s^2,
	 * added to the sampler's half-width in quadrature.  Exact block calls
	 * 1000, 1100, ... 1900 ns: mean 1450, s2 = 825000 / 9 ns^2. */
	memset(&pg, 0, sizeof(pg));
	for (i = 0; i < 10; i++)
	{
		instr_sample_count_exact(&pg, 1000.0 + 100.0 * i, true);
		instr_sample_count_exact(&pg, 100.0, false);
	}
	CHECK(near(pg.exact_ns2, 21850000.0), "exact block calls' squares %g", pg.exact_ns2);
	pg.calls = 40;
	pg.timed = 3;
	{
		double		s2 = 825000.0 / 9,
					want = 1.96 * 1.96 * (40 * s2 + 40 * 40 * s2 / 10) / 1e18;
		instr_sample_sum plain;

		CHECK(near(instr_sample_page_half2(&pg), want), "block half2 %g, want %g", instr_sample_page_half2(&pg),
			  want);
		instr_sample_sum_of(&smp, NULL, &plain);
		instr_sample_sum_of(&smp, &pg, &s);
		CHECK(near(s.half2, plain.half2 + want), "half2 %g, want the sampler's %g + %g", s.half2, plain.half2,
			  want);
	}
	pg.timed = 10;
	CHECK(instr_sample_page_half2(&pg) == 0.0, "10 block calls timed: their spread is the sample's");
	pg.timed = 3;
	pg.exact_other_n = 9;
	CHECK(instr_sample_page_half2(&pg) == 0.0, "no b: no spread added");

	/* Calls decided, none timed, with block calls: unbounded, unflagged. */
	tickclock_sampler_init(&smp, 1e-9, 5);
	for (i = 0; i < 100 && !tickclock_sampler_should_time(&smp); i++)
		;
	memset(&pg, 0, sizeof(pg));
	pg.calls = 20;
	instr_sample_sum_of(&smp, &pg, &s);
	CHECK(i == 100 && s.ntimed == 0 && isinf(instr_sample_error(&s)) && s.nfew == 0,
		  "none timed: error %g, flagged %g", instr_sample_error(&s), s.nfew);

	/* Coverage at rate 0.001 over 68 000 sampled calls (~68 timed, ~300
	 * block calls, ~0.3 of them timed): the plain estimate misses whenever
	 * no block call was timed; the difference estimator holds at 95 %,
	 * within +/-10 %. */
	for (t = 0; t < trials; t++)
	{
		int			f, fp;
		double		share, rel, share_p, rel_p;

		held += block_node(0.001, 1000 + t, t % 226, 1.0, 1, 0, &f, &share, &rel);
		flagged_n += f;
		narrow += share <= 0.10;
		shares[t] = share;
		i = block_node(0.001, 1000 + t, t % 226, 1.0, 0, 0, &fp, &share_p, &rel_p);
		held_plain += i;
		held_or_flagged_plain += i || fp;
	}
	qsort(shares, trials, sizeof(shares[0]), cmp_double);
	printf("block calls, %d trials: held %d (plain %d, plain held or flagged %d), flagged %d, "
		   "half-width <= 10 %% of the node's total %d, median %.1f %%\n", trials, held, held_plain,
		   held_or_flagged_plain, flagged_n, narrow, 100 * shares[trials / 2]);
	CHECK(held >= trials * 93 / 100, "the difference estimator held %d of %d", held, trials);
	CHECK(shares[trials / 2] <= 0.10, "median half-width %.3f of the node's total", shares[trials / 2]);
	CHECK(held_plain < trials * 80 / 100, "the plain estimate held %d of %d: the workload no test", held_plain,
		  trials);

	/* Block calls whose cost has a heavy tail (one in eight at 40 us, the
	 * others ~2 us), the same before and after the exact part: a sample
	 * with none or one of them timed cannot show their spread, the exact
	 * part's is added (instr_sample_page_half2). */
	for (t = 0, held = 0, flagged_n = 0; t < trials; t++)
	{
		int			f;
		double		share, rel;

		held += block_node(0.001, 9000 + t, t % 226, 1.0, 1, 1, &f, &share, &rel);
		flagged_n += f;
		shares[t] = share;
	}
	qsort(shares, trials, sizeof(shares[0]), cmp_double);
	printf("block calls with a heavy tail, %d trials: held %d, flagged %d, median half-width %.1f %%\n",
		   trials, held, flagged_n, 100 * shares[trials / 2]);
	CHECK(held >= trials * 93 / 100, "heavy-tailed block calls: held %d of %d", held, trials);

	/* Block calls after the exact part costing twice what they did in it:
	 * b is off, and the estimate still has no bias (b was fixed before the
	 * sample), though its interval may be narrow. */
	for (t = 0; t < trials; t++)
	{
		int			f;
		double		share, rel;

		block_node(0.001, 5000 + t, t % 226, 2.0, 1, 0, &f, &share, &rel);
		err_sum += rel;
		err_sum2 += rel * rel;
	}
	mean = err_sum / trials;
	sd = sqrt(err_sum2 / trials - mean * mean);
	printf("block calls twice as dear later: mean error %+.3f %% (sd %.3f %%)\n", 100 * mean, 100 * sd);
	CHECK(fabs(mean) <= 4.0 * sd / sqrt((double) trials), "mean relative error %+.4f, sd %.4f over %d trials",
		  mean, sd, trials);
}

int main(void)
{
	instr_time zero, start, end, interval, sum, lazy;
	int64 c0, c1, ns, clock_ns;
	int changed;
	int i;

	INSTR_TIME_SET_ZERO(zero);
	CHECK(INSTR_TIME_IS_ZERO(zero), "SET_ZERO then IS_ZERO");
	CHECK(INSTR_TIME_GET_NANOSEC(zero) == 0, "zero interval is %lld ns", (long long) INSTR_TIME_GET_NANOSEC(zero));

	/* An interval bracketed by CLOCK_MONOTONIC: 20 ms of busy waiting. */
	c0 = mono_ns();
	INSTR_TIME_SET_CURRENT(start);
	while (mono_ns() - c0 < 20000000)
		;
	INSTR_TIME_SET_CURRENT(end);
	c1 = mono_ns();
	CHECK(!INSTR_TIME_IS_ZERO(start), "a reading is not zero");
	interval = end;
	INSTR_TIME_SUBTRACT(interval, start);
	ns = INSTR_TIME_GET_NANOSEC(interval);
	clock_ns = c1 - c0;
	/* inside the bracket, allowing 0.1 % for the frequency */
	CHECK(ns >= 19980000 && ns <= clock_ns + clock_ns / 1000 + 1000,
		  "interval %lld ns, CLOCK_MONOTONIC bracket %lld ns", (long long) ns, (long long) clock_ns);
	CHECK(INSTR_TIME_GET_MICROSEC(interval) == (uint64) (ns / 1000), "GET_MICROSEC");
	CHECK(INSTR_TIME_GET_MILLISEC(interval) > 19.9 && INSTR_TIME_GET_MILLISEC(interval) < clock_ns / 1e6 * 1.001 + 0.001,
		  "GET_MILLISEC %f", INSTR_TIME_GET_MILLISEC(interval));
	CHECK(INSTR_TIME_GET_DOUBLE(interval) > 0.0199 && INSTR_TIME_GET_DOUBLE(interval) < 1.0,
		  "GET_DOUBLE %f", INSTR_TIME_GET_DOUBLE(interval));

	/* Sums stay in ticks: ADD and ACCUM_DIFF agree, and equal 3 intervals. */
	INSTR_TIME_SET_ZERO(sum);
	for (i = 0; i < 3; i++)
		INSTR_TIME_ACCUM_DIFF(sum, end, start);
	CHECK(sum.ticks == 3 * interval.ticks, "ACCUM_DIFF three times");
	INSTR_TIME_ADD(sum, interval);
	CHECK(sum.ticks == 4 * interval.ticks, "ADD");
	CHECK(llabs(INSTR_TIME_GET_NANOSEC(sum) - 4 * ns) <= 4, "4 intervals %lld ns, 4 x %lld ns",
		  (long long) INSTR_TIME_GET_NANOSEC(sum), (long long) ns);

	/* A negative interval converts to a negative number of nanoseconds:
	 * the same magnitude under one state (its conversion may first publish
	 * a refinement that fell due, so the positive one is converted again
	 * after it). */
	interval = start;
	INSTR_TIME_SUBTRACT(interval, end);
	{
		int64		neg = INSTR_TIME_GET_NANOSEC(interval);
		instr_time	pos = end;

		INSTR_TIME_SUBTRACT(pos, start);
		CHECK(neg == -INSTR_TIME_GET_NANOSEC(pos), "negative interval %lld ns, positive %lld ns",
			  (long long) neg, (long long) INSTR_TIME_GET_NANOSEC(pos));
		CHECK(llabs(neg + ns) <= 1 + ns / 20000, "negative interval %lld ns within 50 ppm of %lld ns",
			  (long long) neg, (long long) ns);
	}

	/* SET_CURRENT_LAZY sets only a zero value, and says whether it did. */
	INSTR_TIME_SET_ZERO(lazy);
	changed = INSTR_TIME_SET_CURRENT_LAZY(lazy);
	CHECK(changed && !INSTR_TIME_IS_ZERO(lazy), "LAZY on zero");
	start = lazy;
	changed = INSTR_TIME_SET_CURRENT_LAZY(lazy);
	CHECK(!changed && lazy.ticks == start.ticks, "LAZY on a set value");

	/* Readings never go backwards (one tick unit per process). */
	for (i = 0; i < 100000; i++)
	{
		INSTR_TIME_SET_CURRENT(end);
		interval = end;
		INSTR_TIME_SUBTRACT(interval, start);
		if (INSTR_TIME_GET_NANOSEC(interval) < 0)
		{
			CHECK(0, "reading %d went back %lld ns", i, (long long) -INSTR_TIME_GET_NANOSEC(interval));
			break;
		}
		start = end;
	}

	sampled_timing();
	block_calls();

	printf("instr_time on tickclock (%s): %s\n", tickclock_info_get()->source_name,
		   failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
