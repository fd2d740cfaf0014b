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
	instr_sample_sum_of(&zeroed, &s);
	CHECK(s.total == 0 && s.half2 == 0 && s.bound == 0 && s.ncalls == 0 && s.ntimed == 0 && s.nfew == 0,
		  "zeroed sampler");
	CHECK(instr_sample_error(&s) == 0.0, "zeroed sampler's error %g", instr_sample_error(&s));
	CHECK(tickclock_sampler_init(&smp, p, 42) == TICKCLOCK_OK, "sampler init");
	instr_sample_sum_of(&smp, &s);
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
			instr_sample_sum_of(&smp, &half);
	}
	instr_sample_sum_of(&smp, &s);
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
	instr_sample_sum_of(&smp, &s);
	sum = half;
	instr_sample_sum_add(&sum, &s);
	CHECK(s.nfew == 1 && sum.nfew == 1, "a skewed sample flagged: %g, in a sum %g", s.nfew, sum.nfew);

	/* Calls left to sampling and none timed: nothing is known of them. */
	CHECK(tickclock_sampler_init(&smp, 1e-6, 7) == TICKCLOCK_OK, "sampler init at 1e-6");
	for (i = 0; i < 10 && !tickclock_sampler_should_time(&smp); i++)
		;
	instr_sample_sum_of(&smp, &s);
	if (s.ntimed == 0)
		CHECK(isinf(instr_sample_error(&s)) && s.ncalls == 10, "untimed calls: error %g, %g calls",
			  instr_sample_error(&s), s.ncalls);
	else
		CHECK(0, "seed 7 at rate 1e-6 timed one of the first %d calls: choose another seed", i + 1);
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

	printf("instr_time on tickclock (%s): %s\n", tickclock_info_get()->source_name,
		   failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
