/* spike_floor: how much of a scan-shaped loop's time is spikes (timer
 * interrupts, a host's steal) that only timing sees, and how wide they
 * make a 1-in-1/p sample's interval.
 *
 *   bazel run -c opt //tests/bench:spike_floor -- [ITERATIONS [P]]
 *
 * Every iteration is timed, one RDTSCP at each start, so the spans tile
 * the run (the TSC's rate from CLOCK_MONOTONIC_RAW over it): about 20
 * multiply-adds, and every 226th iteration an 8 KB pread from a 64 MB
 * file written and read once before (a page of a sequential scan from the
 * OS cache, 226 rows a page). A spike
 * is an iteration's excess over its kind's median (plain or page) above a
 * threshold. For each threshold it prints their count, their sum, and
 * sqrt(sum of squares * (1/p - 1)): the standard deviation that a sample
 * timing each iteration with probability p carries for them (default p =
 * 0.001, PostgreSQL's explain_timing_sample_rate in pg-vendor). It also
 * applies the same thresholds to the windows between page reads (read to
 * read), to show whether timing only there would isolate the spikes.
 * Spikes are counted apart for plain iterations (no system call: what
 * lands there is an interrupt or the host's steal) and page ones (a slow
 * pread too). Linux x86-64 only (RDTSCP is checked in CPUID first); the
 * run stops if the thread changes CPU (TSC_AUX), so pin it with taskset.
 * Memory: 16 bytes an iteration. */
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

static int bad_arg(const char *what, const char *got) {
  fprintf(stderr, "spike_floor: %s, got '%s'\n", what, got);
  return 2;
}

int main(int argc, char **argv) {
  char *end = NULL;
  long n = 10000000;
  double p = 0.001;
  unsigned a, b, c, d, aux0, aux1;
  if (argc > 3) return bad_arg("expected at most ITERATIONS and P", argv[3]);
  if (argc > 1) {
    n = strtol(argv[1], &end, 10);
    if (*end != '\0' || n < 10 * kRowsPerPage || n > 50000000)
      return bad_arg("ITERATIONS: expected an integer 2260..50000000", argv[1]);
  }
  if (argc > 2) {
    p = strtod(argv[2], &end);
    if (*end != '\0' || !(p >= 1e-9 && p < 1.0))
      return bad_arg("P: expected a probability 1e-9 <= P < 1", argv[2]);
  }
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(d & (1u << 27))) {
    fprintf(stderr, "spike_floor: no RDTSCP on this CPU\n");
    return 2;
  }
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/spike_floor.XXXXXX",
           dir != NULL && dir[0] != '\0' ? dir : "/tmp");
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
  /* written back and read once, so the timed reads come from the cache
   * and no write-back falls into the loop */
  fdatasync(fd);
  for (long off = 0; off < kFileBytes; off += kPage)
    if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
      fprintf(stderr, "spike_floor: short read of the scratch file at %ld\n", off);
      return 2;
    }
  /* s[i] is iteration i's start and s[n] the end of the last, one RDTSCP
   * each: the iterations' spans tile the run, so a spike anywhere in it
   * lands in one of them (the loop's own store and branch included) */
  long npages = n / kRowsPerPage + 1;
  uint64_t *s = malloc((n + 1) * sizeof *s), *plain = malloc(n * sizeof *plain);
  uint64_t *page = malloc(npages * sizeof *page), *win = malloc(npages * sizeof *win);
  if (!s || !plain || !page || !win) {
    fprintf(stderr, "spike_floor: out of memory for %ld iterations\n", n);
    return 2;
  }
  memset(s, 0, (n + 1) * sizeof *s); /* touched before timing: no page faults in the loop */
  volatile uint64_t acc = 0;
  long off = 0;
  double r0 = mono_raw_ns();
  uint64_t c0 = __rdtscp(&aux0);
  for (long i = 0; i < n; i++) {
    s[i] = __rdtscp(&aux1);
    if (i % kRowsPerPage == 0) {
      if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
        fprintf(stderr, "spike_floor: short read of the scratch file at %ld\n", off);
        return 2;
      }
      off = off + 2 * kPage <= kFileBytes ? off + kPage : 0;
    }
    for (int k = 0; k < 20; k++) acc += (uint64_t)k * (uint64_t)i;
  }
  s[n] = __rdtscp(&aux1);
  double r1 = mono_raw_ns();
  uint64_t c1 = s[n];
  if (aux0 != aux1) {
    fprintf(stderr,
            "spike_floor: the thread moved to another CPU during the run (TSC_AUX %u -> %u); run "
            "it pinned "
            "(taskset -c 0)\n",
            aux0, aux1);
    return 2;
  }
  double ns_per_tick = (r1 - r0) / (double)(c1 - c0);
  long np = 0, nc = 0, nw = 0;
  for (long i = 0; i < n; i++) {
    if ((int64_t)(s[i + 1] - s[i]) < 0) {
      fprintf(stderr, "spike_floor: the TSC went back at iteration %ld\n", i);
      return 2;
    }
    if (i % kRowsPerPage == 0) {
      page[np++] = s[i + 1] - s[i];
      if (i > 0) win[nw++] = s[i] - s[i - kRowsPerPage];
    } else {
      plain[nc++] = s[i + 1] - s[i];
    }
  }
  qsort(page, np, sizeof *page, cmp_u64);
  qsort(plain, nc, sizeof *plain, cmp_u64);
  qsort(win, nw, sizeof *win, cmp_u64);
  uint64_t mp = page[np / 2], mc = plain[nc / 2], mw = win[nw / 2];
  double total = r1 - r0;
  printf(
      "%ld iterations in %.1f ms (TSC %.3f MHz, iterations cover %.1f %% of it); median iteration "
      "%.1f ns, with "
      "a page %.1f ns; median window between pages %.2f us\n",
      n, total / 1e6, 1e3 / ns_per_tick, 100.0 * (double)(s[n] - s[0]) / (double)(c1 - c0),
      mc * ns_per_tick, mp * ns_per_tick, mw * ns_per_tick / 1e3);
  static const double kThresholdNs[] = {1000, 2000, 4000, 8000};
  for (unsigned k = 0; k < sizeof kThresholdNs / sizeof kThresholdNs[0]; k++) {
    long sp[2] = {0, 0}, wspikes = 0;
    double sum[2] = {0, 0}, sum2 = 0, wsum = 0;
    for (long i = 0; i < n; i++) {
      int is_page = i % kRowsPerPage == 0;
      double ex = ((double)(s[i + 1] - s[i]) - (double)(is_page ? mp : mc)) * ns_per_tick;
      if (ex > kThresholdNs[k]) {
        sp[is_page]++;
        sum[is_page] += ex;
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
    double all = sum[0] + sum[1], sd = sqrt(sum2 * (1.0 / p - 1.0));
    printf(
        "excess > %.0f ns: %ld spikes (%ld plain, %ld with a page), sum %.2f ms (%.2f %% of the "
        "run; plain %.2f "
        "ms); sd of a p = %g sample's estimate of them %.2f ms (%.2f %%); windows above it: %ld, "
        "sum %.2f ms "
        "(%.1fx)\n",
        kThresholdNs[k], sp[0] + sp[1], sp[0], sp[1], all / 1e6, 100 * all / total, sum[0] / 1e6, p,
        sd / 1e6, 100 * sd / total, wspikes, wsum / 1e6, all > 0 ? wsum / all : 0.0);
  }
  close(fd);
  return (int)(acc & 0);
}
