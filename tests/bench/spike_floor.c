/* spike_floor: how much of a scan-shaped loop's time is spikes (timer
 * interrupts, a host's steal) that only timing sees, and how wide they
 * make a 1-in-1/p sample's interval.
 *
 *   bazel run -c opt //tests/bench:spike_floor -- [ITERATIONS [P]]
 *
 * Every iteration is timed (RDTSCP on both sides; the TSC's rate from
 * CLOCK_MONOTONIC_RAW over the run): about 20 multiply-adds, and every
 * 226th iteration an 8 KB pread from a 64 MB file read once before (a
 * page of a sequential scan from the OS cache, 226 rows a page). A spike
 * is an iteration's excess over its kind's median (plain or page) above a
 * threshold. For each threshold it prints their count, their sum, and
 * sqrt(sum of squares * (1/p - 1)): the standard deviation that a sample
 * timing each iteration with probability p carries for them (default p =
 * 0.001, PostgreSQL's explain_timing_sample_rate in pg-vendor). It also
 * applies the same thresholds to the windows between page reads (read to
 * read), to show whether timing only there would isolate the spikes.
 * Linux x86-64 only (RDTSCP is checked in CPUID first). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

enum { kRowsPerPage = 226, kPage = 8192, kFileBytes = 64 << 20 };

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double mono_raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t median_of(const uint64_t *v, long n, uint64_t *scratch) {
  memcpy(scratch, v, n * sizeof *v);
  qsort(scratch, n, sizeof *scratch, cmp_u64);
  return scratch[n / 2];
}

int main(int argc, char **argv) {
  char *end = NULL;
  long n = argc > 1 ? strtol(argv[1], &end, 10) : 10000000;
  double p = argc > 2 ? strtod(argv[2], NULL) : 0.001;
  unsigned a, b, c, d, aux;
  if (argc > 1 && (*end != '\0' || n < 10 * kRowsPerPage || n > 200000000)) {
    fprintf(stderr, "spike_floor: ITERATIONS: expected an integer 2260..200000000, got '%s'\n",
            argv[1]);
    return 2;
  }
  if (!(p > 0.0 && p < 1.0)) {
    fprintf(stderr, "spike_floor: P: expected a probability between 0 and 1, got '%s'\n", argv[2]);
    return 2;
  }
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(d & (1u << 27))) {
    fprintf(stderr, "spike_floor: no RDTSCP on this CPU\n");
    return 2;
  }
  char path[] = "/tmp/spike_floor.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("spike_floor: mkstemp");
    return 2;
  }
  unlink(path);
  static char buf[kPage];
  for (long off = 0; off < kFileBytes; off += kPage) {
    memset(buf, (int)(off / kPage), sizeof buf);
    if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
      perror("spike_floor: pwrite");
      return 2;
    }
  }
  uint64_t *t = malloc(n * sizeof *t), *scratch = malloc(n * sizeof *t);
  long npages = n / kRowsPerPage + 1, nw = 0;
  uint64_t *page = malloc(npages * sizeof *page), *plain = malloc(n * sizeof *plain);
  uint64_t *win = malloc(npages * sizeof *win);
  if (!t || !scratch || !page || !plain || !win) {
    fprintf(stderr, "spike_floor: out of memory for %ld iterations\n", n);
    return 2;
  }
  volatile uint64_t acc = 0;
  uint64_t last = 0;
  long off = 0;
  double r0 = mono_raw_ns();
  uint64_t c0 = __rdtscp(&aux);
  for (long i = 0; i < n; i++) {
    uint64_t s = __rdtscp(&aux);
    if (i % kRowsPerPage == 0) {
      if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) return 2;
      off = off + 2 * kPage <= kFileBytes ? off + kPage : 0;
      if (last != 0) win[nw++] = s - last;
      last = s;
    }
    for (int k = 0; k < 20; k++) acc += (uint64_t)k * (uint64_t)i;
    t[i] = __rdtscp(&aux) - s;
  }
  uint64_t c1 = __rdtscp(&aux);
  double r1 = mono_raw_ns();
  double ns_per_tick = (r1 - r0) / (double)(c1 - c0);
  long np = 0, nc = 0;
  for (long i = 0; i < n; i++) {
    if (i % kRowsPerPage == 0)
      page[np++] = t[i];
    else
      plain[nc++] = t[i];
  }
  uint64_t mp = median_of(page, np, scratch), mc = median_of(plain, nc, scratch);
  uint64_t mw = median_of(win, nw, scratch);
  double total = (r1 - r0);
  printf(
      "%ld iterations in %.1f ms (TSC %.3f MHz); median iteration %.1f ns, with a page %.1f ns; "
      "median window between pages %.2f us\n",
      n, total / 1e6, 1e3 / ns_per_tick, mc * ns_per_tick, mp * ns_per_tick,
      mw * ns_per_tick / 1e3);
  static const double kThresholdNs[] = {1000, 2000, 4000, 8000};
  for (unsigned k = 0; k < sizeof kThresholdNs / sizeof kThresholdNs[0]; k++) {
    long spikes = 0, wspikes = 0;
    double sum = 0, sum2 = 0, wsum = 0;
    for (long i = 0; i < n; i++) {
      double ex = ((double)t[i] - (double)(i % kRowsPerPage == 0 ? mp : mc)) * ns_per_tick;
      if (ex > kThresholdNs[k]) {
        spikes++;
        sum += ex;
        sum2 += ex * ex;
      }
    }
    for (long j = 0; j < nw; j++) {
      double ex = ((double)win[j] - (double)mw) * ns_per_tick;
      if (ex > kThresholdNs[k]) {
        wspikes++;
        wsum += ex;
      }
    }
    double sd = sqrt(sum2 * (1.0 / p - 1.0));
    printf(
        "excess > %.0f ns: %ld spikes, sum %.2f ms (%.2f %% of the run); sd of a p = %g sample's "
        "estimate "
        "of them %.2f ms (%.2f %%); windows above it: %ld, sum %.2f ms\n",
        kThresholdNs[k], spikes, sum / 1e6, 100 * sum / total, p, sd / 1e6, 100 * sd / total,
        wspikes, wsum / 1e6);
  }
  close(fd);
  return (int)(acc & 0);
}
