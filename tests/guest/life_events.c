/* tkc-events: tickclock across a life event of the machine it runs on.
 *
 *   tkc-events MODE [BEFORE_S [AFTER_S]]
 *
 * Reads tickclock_to_ns(tickclock_now()) and CLOCK_MONOTONIC_RAW in a loop
 * for BEFORE_S seconds, prints "TKC-EVENT MODE" (the host acts on that
 * line), lives through the event, then samples AFTER_S seconds more; every
 * 20 ms it calls tickclock_revalidate(). MODE:
 *   pause        nothing here: the host stops and continues the VM
 *   migrate      nothing here: the host saves the VM and restores it in a
 *                second QEMU
 *   s3           writes "mem" to /sys/power/state (returns on resume; the
 *                host wakes the VM)
 *   clocksource  switches the kernel's clocksource to hpet (or another one
 *                it offers) and back, while sampling
 *   pr_set_tsc   prctl(PR_SET_TSC, PR_TSC_SIGSEGV), tickclock_revalidate(),
 *                then reads on (x86; a SIGSEGV kills the run)
 * Every sample is one tickclock reading bracketed by two of
 * CLOCK_MONOTONIC_RAW (through the system call: after PR_SET_TSC the vDSO
 * may trap); an error is what remains beyond the brackets' half-widths.
 * Last line: "TKC-RESULT {json}": backward steps of to_ns(now()); the
 * worst error of one sample interval; the error over the interval from just
 * before the event to the end (across it) and over the whole run; the
 * largest gap between two samples; the rate over the last 200 ms against
 * CLOCK_MONOTONIC_RAW; the source before and after; how many
 * tickclock_revalidate() calls switched. Exit 0 iff no backward step (and
 * the event happened). Only the public API of tickclock.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "tickclock.h"
#include "../../src/tools/json_text.h"

/* CLOCK_MONOTONIC_RAW through the system call: after PR_SET_TSC the vDSO's
 * clock_gettime may execute RDTSC itself (clocksource tsc) and trap. */
static uint64_t raw_ns(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One reading of tickclock bracketed by two of CLOCK_MONOTONIC_RAW: the
 * reference time is the bracket's middle, known to +-w/2. */
typedef struct {
  uint64_t t, mid, w;
} Samp;

static Samp bracket(int tries) {
  Samp best = {0, 0, UINT64_MAX};
  int i;
  for (i = 0; i < tries; i++) {
    uint64_t r1 = raw_ns(), t = tickclock_to_ns(tickclock_now()), r2 = raw_ns();
    if (r2 - r1 < best.w) {
      best.t = t;
      best.mid = r1 + (r2 - r1) / 2;
      best.w = r2 - r1;
    }
  }
  return best;
}

/* |tickclock interval - CLOCK_MONOTONIC_RAW interval| beyond what the
 * brackets leave open (>= 0) */
static double interval_error(Samp a, Samp b) {
  double e = (double)(int64_t)(b.t - a.t) - (double)(int64_t)(b.mid - a.mid);
  if (e < 0) e = -e;
  e -= (double)(a.w + b.w) / 2;
  return e > 0 ? e : 0;
}

typedef struct {
  uint64_t samples, backward, reval_calls, switched;
  Samp first, prev;
  double worst_interval_ns; /* max interval_error of consecutive samples */
  uint64_t worst_gap_ns;    /* max gap between consecutive samples */
  uint64_t next_reval;
} Run;

static void sample_for(Run *run, double seconds) {
  uint64_t end = raw_ns() + (uint64_t)(seconds * 1e9);
  for (;;) {
    Samp s = bracket(1);
    if (run->samples == 0) {
      run->first = run->prev = s;
      run->next_reval = s.mid;
    } else {
      double e = interval_error(run->prev, s);
      if (s.t < run->prev.t) run->backward++;
      if (e > run->worst_interval_ns) run->worst_interval_ns = e;
      if (s.mid - run->prev.mid > run->worst_gap_ns) run->worst_gap_ns = s.mid - run->prev.mid;
      run->prev = s;
    }
    run->samples++;
    if (s.mid >= run->next_reval) {
      if (tickclock_revalidate() == TICKCLOCK_SWITCHED) run->switched++;
      run->reval_calls++;
      run->next_reval = s.mid + 20000000u;
    }
    if (s.mid >= end) break;
  }
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY);
  ssize_t n;
  if (fd < 0) return -errno;
  n = write(fd, text, strlen(text));
  if (n < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  close(fd);
  return 0;
}

static void read_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  buf[0] = 0;
  if (!f) return;
  if (fgets(buf, (int)len, f)) buf[strcspn(buf, "\n")] = 0;
  fclose(f);
}

/* src as the inside of a JSON string value (the tools library's escaper),
 * truncated between escapes */
static void json_safe(char *dst, size_t n, const char *src) {
  size_t o = 0;
  for (; *src; src++) {
    char e[6];
    unsigned k = tkt_json_char((unsigned char)*src, e);
    if (o + k >= n) break;
    memcpy(dst + o, e, k);
    o += k;
  }
  dst[o] = 0;
}

#define CS_DIR "/sys/devices/system/clocksource/clocksource0/"

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "pause";
  double before = argc > 2 ? atof(argv[2]) : 0.5;
  double after = argc > 3 ? atof(argv[3]) : 1.5;
  Run run;
  char src_before[32], src_at_event[32], src_after[32], detail[256] = "", why[256];
  char cs_before[64] = "", cs_during[64] = "", cs_after[64] = "";
  int event_ok = 1, event_rc = 0;
  uint64_t ev_r0, ev_r1;
  Samp at_event, w0, w1;
  double rate_ppm, event_error;

  memset(&run, 0, sizeof run);
  snprintf(src_before, sizeof src_before, "%s", tickclock_info_get()->source_name);
  sample_for(&run, before);
  at_event = bracket(5);
  snprintf(src_at_event, sizeof src_at_event, "%s", tickclock_info_get()->source_name);
  printf("TKC-EVENT %s\n", mode);
  fflush(stdout);
  ev_r0 = raw_ns();
  if (strcmp(mode, "s3") == 0) {
    char states[128];
    read_line("/sys/power/state", states, sizeof states);
    event_rc = write_file("/sys/power/state", "mem");
    event_ok = event_rc == 0;
    snprintf(detail, sizeof detail, "/sys/power/state offers '%s'; write mem: %s", states,
             event_rc ? strerror(-event_rc) : "returned (resumed)");
  } else if (strcmp(mode, "clocksource") == 0) {
    char avail[256], first[64] = "", other[64] = "";
    read_line(CS_DIR "current_clocksource", cs_before, sizeof cs_before);
    read_line(CS_DIR "available_clocksource", avail, sizeof avail);
    /* the other clocksource: hpet if offered, else any other one */
    if (strstr(avail, "hpet"))
      snprintf(other, sizeof other, "hpet");
    else {
      char *tok = strtok(avail, " ");
      for (; tok; tok = strtok(NULL, " "))
        if (strcmp(tok, cs_before) != 0) {
          snprintf(other, sizeof other, "%s", tok);
          break;
        }
    }
    snprintf(first, sizeof first, "%s", cs_before);
    if (!other[0]) {
      event_ok = 0;
      snprintf(detail, sizeof detail, "only one clocksource (%s): nothing to switch to", cs_before);
    } else {
      sample_for(&run, 0.3);
      event_rc = write_file(CS_DIR "current_clocksource", other);
      read_line(CS_DIR "current_clocksource", cs_during, sizeof cs_during);
      sample_for(&run, 0.5);
      if (event_rc == 0) event_rc = write_file(CS_DIR "current_clocksource", first);
      read_line(CS_DIR "current_clocksource", cs_after, sizeof cs_after);
      event_ok = event_rc == 0 && strcmp(cs_during, other) == 0;
      snprintf(detail, sizeof detail, "clocksource %s -> %s -> %s%s%s", cs_before, cs_during,
               cs_after, event_rc ? ": " : "", event_rc ? strerror(-event_rc) : "");
    }
  } else if (strcmp(mode, "pr_set_tsc") == 0) {
#if defined(PR_SET_TSC) && (defined(__x86_64__) || defined(__i386__))
    event_rc = prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
    event_ok = event_rc == 0;
    /* where a SIGSEGV comes from, should one come: these go out first */
    fprintf(stderr, "tkc-events: prctl(PR_SET_TSC, PR_TSC_SIGSEGV) = %d\n", event_rc);
    {
      int rv = tickclock_revalidate();
      fprintf(stderr,
              "tkc-events: tickclock_revalidate() = %d, source %s (%s); next: tickclock_now()\n",
              rv, tickclock_info_get()->source_name, tickclock_info_get()->why);
      snprintf(detail, sizeof detail,
               "prctl(PR_SET_TSC, PR_TSC_SIGSEGV) = %d; tickclock_revalidate() = %d", event_rc, rv);
      if (rv == TICKCLOCK_SWITCHED) run.switched++;
    }
#else
    event_ok = 0;
    snprintf(detail, sizeof detail, "PR_SET_TSC is x86 only");
#endif
  }
  ev_r1 = raw_ns();
  sample_for(&run, after > 0.2 ? after - 0.2 : 0);
  /* the rate after the event: one 200 ms interval against CLOCK_MONOTONIC_RAW */
  w0 = bracket(5);
  sample_for(&run, 0.2);
  w1 = bracket(5);
  rate_ppm = ((double)(int64_t)(w1.t - w0.t) / (double)(w1.mid - w0.mid) - 1.0) * 1e6;
  /* the interval from just before the event to the end, across it */
  event_error = interval_error(at_event, w1);
  snprintf(src_after, sizeof src_after, "%s", tickclock_info_get()->source_name);
  json_safe(why, sizeof why, tickclock_info_get()->why);
  printf(
      "TKC-RESULT {\"mode\":\"%s\",\"event_ok\":%s,\"detail\":\"%s\",\"source_before\":\"%s\","
      "\"source_at_event\":\"%s\",\"source_after\":\"%s\",\"why_after\":\"%s\",\"samples\":%" PRIu64
      ",\"backward_steps\":%" PRIu64
      ",\"worst_interval_error_ns\":%.0f,\"event_interval_error_ns\":%.0f,\"run_error_ns\":%.0f,"
      "\"largest_gap_ns\":%" PRIu64 ",\"event_raw_ns\":%" PRIu64
      ",\"rate_error_ppm\":%.3f,\"revalidate_calls\":%" PRIu64 ",\"switched\":%" PRIu64 "}\n",
      mode, event_ok ? "true" : "false", detail, src_before, src_at_event, src_after, why,
      run.samples, run.backward, run.worst_interval_ns, event_error, interval_error(run.first, w1),
      run.worst_gap_ns, ev_r1 - ev_r0, rate_ppm, run.reval_calls, run.switched);
  fflush(stdout);
  return run.backward == 0 && event_ok ? 0 : 1;
}
