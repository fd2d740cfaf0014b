/* spike_floor: how much of a scan-shaped loop's time is spikes (timer
 * interrupts, a host's steal) that only timing sees, and how wide they
 * make a 1-in-1/p sample's interval.
 *
 *   bazel build -c opt //tests/bench:spike_floor
 *   taskset -c 0 bazel-bin/tests/bench/spike_floor [ITERATIONS [P]]
 *
 * Every iteration is timed, one stamp at each start, so the spans tile
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
 * pread too).
 *
 * The loop touches little memory: each span goes into a histogram of
 * its kind, one bucket a tick (a few cache lines are hot), and only a
 * span past a recording threshold (its kind's median in the run before plus 0.5 us)
 * into a list. A first version kept every stamp (80 MB for 10 M
 * iterations): on a guest whose hypervisor shadows its page tables
 * (the PVM guests) writing each new 4 KB of that array cost ~11 us, one
 * "spike" per 512 iterations of the tool's own making (98 % of what it
 * counted there). The excesses are over the run's own medians; a run
 * whose median of some kind came out more than 0.5 us under the one that
 * placed its threshold could have left a spike of over 1 us unlisted, so
 * it is run again with its own medians (at most three times, then the
 * figures are printed with a warning). A first, shorter run (a tenth)
 * places the first thresholds.
 *
 * Linux x86-64 only. Each stamp is RDTSCP where CPUID lists it, else
 * LFENCE then RDTSC (a hypervisor may hide RDTSCP, as the PVM guests do;
 * on AMD, LFENCE orders RDTSC where the kernel made it dispatch-
 * serialising, as Linux does). The thread must be pinned to one CPU
 * (taskset -c 0): it refuses to start otherwise, since a span across a
 * move between CPUs would be a move's cost, or a difference of two
 * unsynchronised counters. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

enum { kRowsPerPage = 226, kPage = 8192, kFileBytes = 64 << 20 };
enum { kPlain = 0, kWithPage = 1, kWindow = 2, kKinds = 3 };
/* one bucket a tick: 125 us at 2.1 GHz, 52 us at 5 GHz (longer spans
 * are counted in the last one, and listed) */
enum { kBuckets = 1 << 18, kMaxSpikes = 1 << 21 };

/* One stamp. The fence's reason: without RDTSCP's ordering, RDTSC could
 * read the counter before the previous iteration's work has finished, and
 * a spike at the boundary would land in the wrong span. */
static inline uint64_t stamp(int rdtscp, unsigned *aux) {
  if (rdtscp) return __rdtscp(aux);
  _mm_lfence();
  return __rdtsc();
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

typedef struct {
  uint32_t hist[kKinds][kBuckets]; /* spans, by their ticks */
  uint64_t n[kKinds];
  uint64_t record_at[kKinds]; /* a span of more ticks than this is listed */
  uint64_t spike_span[kMaxSpikes];
  uint8_t spike_kind[kMaxSpikes];
  long nspikes, lost;
} spans;

static spans g;

static inline void put(int kind, uint64_t span) {
  g.hist[kind][span < kBuckets ? span : kBuckets - 1]++;
  g.n[kind]++;
  if (span > g.record_at[kind]) {
    if (g.nspikes < kMaxSpikes) {
      g.spike_span[g.nspikes] = span;
      g.spike_kind[g.nspikes++] = (uint8_t)kind;
    } else {
      g.lost++;
    }
  }
}

/* The median span of a kind, in ticks. */
static double median_ticks(int kind) {
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; b++) {
    seen += g.hist[kind][b];
    if (2 * seen >= g.n[kind] && seen > 0) return (double)b;
  }
  return (double)kBuckets;
}

/* The scan: n iterations, every span into g. Returns 0, or 2 when a read
 * failed or the thread moved. */
static int scan(long n, int fd, int rdtscp) {
  static char buf[kPage];
  volatile uint64_t acc = 0;
  unsigned aux0 = 0, aux1 = 0;
  long off = 0;
  int cpu0 = sched_getcpu();
  uint64_t prev = stamp(rdtscp, &aux0), last_page = prev;
  int prev_page = 0;
  for (long i = 0; i < n; i++) {
    uint64_t t = stamp(rdtscp, &aux1);
    if (i > 0) put(prev_page ? kWithPage : kPlain, t - prev);
    prev = t;
    prev_page = i % kRowsPerPage == 0;
    if (prev_page) {
      if (i > 0) put(kWindow, t - last_page);
      last_page = t;
      if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
        fprintf(stderr, "spike_floor: short read of the scratch file at %ld\n", off);
        return 2;
      }
      off = off + 2 * kPage <= kFileBytes ? off + kPage : 0;
    }
    for (int k = 0; k < 20; k++) acc += (uint64_t)k * (uint64_t)i;
  }
  put(prev_page ? kWithPage : kPlain, stamp(rdtscp, &aux1) - prev);
  int cpu1 = sched_getcpu();
  if (aux0 != aux1 || cpu0 != cpu1) {
    fprintf(stderr,
            "spike_floor: the thread moved to another CPU during the run (%s %d -> %d); run it "
            "pinned (taskset -c 0)\n",
            rdtscp ? "TSC_AUX" : "sched_getcpu", rdtscp ? (int)aux0 : cpu0,
            rdtscp ? (int)aux1 : cpu1);
    return 2;
  }
  return (int)(acc & 0);
}

int main(int argc, char **argv) {
  char *end = NULL;
  long n = 10000000;
  double p = 0.001;
  unsigned a, b, c, d;
  if (argc > 3) return bad_arg("expected at most ITERATIONS and P", argv[3]);
  if (argc > 1) {
    n = strtol(argv[1], &end, 10);
    if (argv[1][0] < '0' || argv[1][0] > '9' || *end != '\0' || n < 10 * kRowsPerPage ||
        n > 50000000)
      return bad_arg("ITERATIONS: expected an integer 2260..50000000", argv[1]);
  }
  if (argc > 2) {
    p = strtod(argv[2], &end);
    if ((argv[2][0] != '.' && (argv[2][0] < '0' || argv[2][0] > '9')) || *end != '\0' ||
        !(p >= 1e-9 && p < 1.0))
      return bad_arg("P: expected a probability 1e-9 <= P < 1", argv[2]);
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) != 1) {
    fprintf(stderr,
            "spike_floor: run it pinned to one CPU (taskset -c 0): a span across a move between "
            "CPUs is not a spike\n");
    return 2;
  }
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(d & (1u << 4))) {
    fprintf(stderr, "spike_floor: no TSC on this CPU\n");
    return 2;
  }
  int rdtscp = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (d & (1u << 27)) != 0;
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
  if (fdatasync(fd) != 0) {
    perror("spike_floor: fdatasync");
    return 2;
  }
  for (long off = 0; off < kFileBytes; off += kPage)
    if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
      fprintf(stderr, "spike_floor: short read of the scratch file at %ld\n", off);
      return 2;
    }
  /* The TSC's rate, roughly, for the recording thresholds (20 ms); the
   * rate the figures use is measured from here to the end of the last
   * run. */
  const double rate_r0 = mono_raw_ns();
  const uint64_t rate_t0 = __rdtsc();
  while (mono_raw_ns() < rate_r0 + 2e7) {
  }
  double ticks_per_ns = (double)(__rdtsc() - rate_t0) / (mono_raw_ns() - rate_r0);
  /* Every page of g written before timing: no first-touch fault in the
   * loop. The first pass (a tenth of the run, at least 10 pages) places
   * the recording thresholds. */
  memset(&g, 0, sizeof g);
  for (int k = 0; k < kKinds; k++) g.record_at[k] = UINT64_MAX;
  long pass = n / 10 > 10 * kRowsPerPage ? n / 10 : 10 * kRowsPerPage;
  if (scan(pass, fd, rdtscp) != 0) return 2;
  double med[kKinds], r0 = 0, r1 = 0;
  int runs = 0, complete = 0;
  double unseen_ns = 0; /* an unlisted span's excess may have been up to this */
  while (runs < 3 && !complete) {
    uint64_t record_at[kKinds];
    for (int k = 0; k < kKinds; k++)
      record_at[k] = (uint64_t)(median_ticks(k) + 500.0 * ticks_per_ns);
    memset(&g, 0, sizeof g);
    memcpy(g.record_at, record_at, sizeof record_at);
    r0 = mono_raw_ns();
    if (scan(n, fd, rdtscp) != 0) return 2;
    r1 = mono_raw_ns();
    runs++;
    /* every span with an excess over 1 us is listed when no threshold lay
     * above its kind's median + 1 us (0.99 us: the rate here is the rough
     * one) */
    complete = 1;
    unseen_ns = 0;
    for (int k = 0; k < kKinds; k++) {
      med[k] = median_ticks(k);
      double above_ns = ((double)record_at[k] - med[k]) / ticks_per_ns;
      if (above_ns > unseen_ns) unseen_ns = above_ns;
      if (above_ns > 990.0) complete = 0;
    }
  }
  double ns_per_tick = (mono_raw_ns() - rate_r0) / (double)(__rdtsc() - rate_t0);
  double total = r1 - r0;
  printf(
      "%ld iterations in %.1f ms (TSC %.3f MHz, stamps %s; run %d, at most 3); median iteration "
      "%.1f ns, with a page %.1f ns; median window between pages %.2f us; %ld spans listed (over "
      "their kind's median + 0.5 us in the run before)%s\n",
      n, total / 1e6, 1e3 / ns_per_tick, rdtscp ? "RDTSCP" : "LFENCE+RDTSC", runs,
      med[kPlain] * ns_per_tick, med[kWithPage] * ns_per_tick, med[kWindow] * ns_per_tick / 1e3,
      g.nspikes, g.lost > 0 ? "; LIST FULL, the sums below are low" : "");
  if (!complete)
    printf(
        "MEDIANS MOVED by over 0.5 us in each of 3 runs: spikes with an excess of 1 to %.2f us "
        "may be missing below\n",
        unseen_ns / 1e3);
  static const double kThresholdNs[] = {1000, 2000, 4000, 8000};
  for (unsigned k = 0; k < sizeof kThresholdNs / sizeof kThresholdNs[0]; k++) {
    long sp[2] = {0, 0}, wspikes = 0;
    double sum[2] = {0, 0}, sum2 = 0, wsum = 0;
    for (long i = 0; i < g.nspikes; i++) {
      int kind = g.spike_kind[i];
      double ex = ((double)g.spike_span[i] - med[kind]) * ns_per_tick;
      if (ex <= kThresholdNs[k]) continue;
      if (kind == kWindow) {
        wspikes++;
        wsum += ex;
      } else {
        sp[kind]++;
        sum[kind] += ex;
        sum2 += ex * ex;
      }
    }
    double all = sum[0] + sum[1], sd = sqrt(sum2 * (1.0 / p - 1.0));
    printf(
        "excess > %.0f ns: %ld spikes (%ld plain, %ld with a page), sum %.2f ms (%.2f %% of the "
        "run; plain %.2f ms); sd of a p = %g sample's estimate of them %.2f ms (%.2f %%); windows "
        "above it: %ld, sum %.2f ms (%.1fx)\n",
        kThresholdNs[k], sp[0] + sp[1], sp[0], sp[1], all / 1e6, 100 * all / total, sum[0] / 1e6, p,
        sd / 1e6, 100 * sd / total, wspikes, wsum / 1e6, all > 0 ? wsum / all : 0.0);
  }
  close(fd);
  return 0;
}
