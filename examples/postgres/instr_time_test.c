/* The patched PostgreSQL instr_time.h (examples/postgres/tickclock-pg15.patch)
 * compiled outside PostgreSQL against the current single header, every
 * macro exercised. pg_c_h.h stands in for the few things PostgreSQL's c.h
 * gives the header (uint64, int64, bool). */
#include "pg_c_h.h"
#include "portability/instr_time.h"

#include <stdio.h>
#include <stdlib.h>
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

	printf("instr_time on tickclock (%s): %s\n", tickclock_info_get()->source_name,
		   failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
