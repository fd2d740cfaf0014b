/* tickclock — the decider: evidence in, decision out. Pure: no OS calls,
 * no CPUID, no clock reads; tested on recorded evidence (tests/fixtures).
 *
 * Policy (x86 TSC), each refusal recorded as the candidate's reason:
 *  1. RDTSC must be executable: CPUID present, CPUID.01H:EDX[4] set, and
 *     not disabled for the process with prctl(PR_SET_TSC, PR_TSC_SIGSEGV).
 *     A forced TSC is honoured only past this point (never trap).
 *  2. Invariant TSC (CPUID.80000007H:EDX[8], leaf gated on the maximum
 *     extended leaf): otherwise the TSC may stop in deep C-states or change
 *     rate with P-states.
 *  3. On Linux, current_clocksource must be "tsc": the kernel runs its own
 *     TSC checks (tsc_sync, the clocksource watchdog) and falls back to
 *     hpet/acpi_pm/kvm-clock when they fail; we do not trust what it has
 *     refused.
 *  4. A read must not cost more than clock_gettime: a hypervisor that traps
 *     RDTSC makes it slower than the vDSO.
 *  5. The frequency must be known: for now, calibration against
 *     CLOCK_MONOTONIC_RAW (tightest (counter, clock, counter) bracket).
 * Otherwise the OS clock (CLOCK_MONOTONIC), whose ticks are nanoseconds.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const tickclock__source_names[TICKCLOCK_SOURCE_COUNT_] = {
    "auto", "system", "tsc", "cntvct", "timebase", "tod", "rdtime", "qpc"};

static const char *const tickclock__method_names[TICKCLOCK_FREQ_METHOD_COUNT_] = {
    "none",         "identity", "calibrated", "cpuid_15h", "cpuid_16h",
    "hypervisor",   "perf_page", "arch_register", "os", "config"};

const char *tickclock_source_name(int source) {
  if (source < 0 || source >= TICKCLOCK_SOURCE_COUNT_) return "unknown";
  return tickclock__source_names[source];
}

const char *tickclock_freq_method_name(int method) {
  if (method < 0 || method >= TICKCLOCK_FREQ_METHOD_COUNT_) return "unknown";
  return tickclock__method_names[method];
}

int tickclock_source_from_name(const char *name) {
  int i;
  if (name == NULL) return -1;
  for (i = 0; i < TICKCLOCK_SOURCE_COUNT_; i++)
    if (strcmp(name, tickclock__source_names[i]) == 0) return i;
  return -1;
}

/* snprintf that truncates silently: reasons are best-effort text. */
void tickclock__fmt(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, n, fmt, ap);
  va_end(ap);
}

void tickclock__strlcpy(char *dst, const char *src, size_t n) {
  size_t len;
  if (n == 0) return;
  len = strlen(src);
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* Can the arch counter be read without trapping? */
int tickclock__counter_executable(const tickclock_evidence *ev, char *why, size_t n) {
  if (ev->arch_counter == 0) {
    tickclock__strlcpy(why, "no hardware counter read is built for this CPU architecture", n);
    return 0;
  }
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC) {
    if (!ev->x86.have_cpuid) {
      tickclock__strlcpy(why, "no CPUID instruction: cannot tell whether RDTSC exists", n);
      return 0;
    }
    if (!ev->x86.tsc) {
      tickclock__strlcpy(why, "CPUID.01H:EDX[4] (TSC) is clear: RDTSC may not exist", n);
      return 0;
    }
    if (ev->tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV) {
      tickclock__strlcpy(why,
                         "RDTSC is disabled for this process (prctl PR_SET_TSC = "
                         "PR_TSC_SIGSEGV): it would trap",
                         n);
      return 0;
    }
  }
  return 1;
}

/* Is the executable counter trustworthy for automatic use? */
static int tickclock__counter_trusted(const tickclock_evidence *ev, char *why, size_t n) {
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC) {
    if (!ev->x86.invariant_known) {
      tickclock__fmt(why, n,
               "CPUID leaf 0x80000007 is beyond the maximum extended leaf 0x%08x: "
               "invariant TSC unknown",
               (unsigned)ev->x86.max_ext_leaf);
      return 0;
    }
    if (!ev->x86.invariant_tsc) {
      tickclock__strlcpy(why,
                         "CPUID.80000007H:EDX[8] (invariant TSC) is clear: the TSC may stop "
                         "or change rate",
                         n);
      return 0;
    }
  }
  if (ev->os_linux) {
    if (!ev->clocksource_known) {
      tickclock__strlcpy(why,
                         "cannot read /sys/devices/system/clocksource/clocksource0/"
                         "current_clocksource: the kernel's verdict on the counter is unknown",
                         n);
      return 0;
    }
    if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && strcmp(ev->clocksource, "tsc") != 0) {
      tickclock__fmt(why, n,
               "the kernel's clocksource is '%s', not 'tsc': the kernel does not use the "
               "TSC here",
               ev->clocksource);
      return 0;
    }
  }
  if (ev->counter_read_ns > 0 && ev->os_read_ns > 0 && ev->counter_read_ns > ev->os_read_ns) {
    tickclock__fmt(why, n,
             "a counter read costs %.1f ns, more than clock_gettime's %.1f ns: trapped or "
             "emulated",
             ev->counter_read_ns, ev->os_read_ns);
    return 0;
  }
  return 1;
}

/* The OS fallback: CLOCK_MONOTONIC (ticks are ns, conversion is the
 * identity) or, on Windows, QPC at QueryPerformanceFrequency. */
static int tickclock__os_source(const tickclock_evidence *ev) {
  return ev->os_source ? ev->os_source : TICKCLOCK_SOURCE_SYSTEM;
}

static void tickclock__fill_system(const tickclock_evidence *ev, tickclock_info *out) {
  int os = tickclock__os_source(ev);
  uint64_t hz = (os == TICKCLOCK_SOURCE_SYSTEM || ev->os_hz == 0) ? UINT64_C(1000000000) : ev->os_hz;
  out->source = os;
  out->hz_num = hz;
  out->hz_den = 1;
  out->hz = (double)hz;
  out->freq_method = os == TICKCLOCK_SOURCE_SYSTEM ? TICKCLOCK_FREQ_IDENTITY : TICKCLOCK_FREQ_OS;
  out->uncertainty_ppm = 0;
  out->resolution_ns = ev->os_resolution_ns > 0 ? ev->os_resolution_ns : 1e9 / (double)hz;
  tickclock_conv_init(&out->conv, out->hz_num, out->hz_den);
}

int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out) {
  int requested = TICKCLOCK_SOURCE_AUTO;
  int forced = 0;
  int executable = 0, trusted = 0, use_counter = 0;
  char exec_why[TICKCLOCK_REASON_LEN] = "";
  char trust_why[TICKCLOCK_REASON_LEN] = "";
  tickclock_candidate *sys, *cnt = NULL;
  const char *cname = tickclock_source_name(ev->arch_counter);

  memset(out, 0, sizeof *out);

  /* 1. what was asked for: the config wins over the environment */
  if (ev->cfg_source != TICKCLOCK_SOURCE_AUTO) {
    requested = ev->cfg_source;
    forced = 1;
  } else if (ev->have_env) {
    int s = tickclock_source_from_name(ev->env_value);
    if (s < 0) {
      tickclock__fmt(out->env_error, sizeof out->env_error,
               "TICKCLOCK_SOURCE='%s' is not one of auto, system, tsc, cntvct, timebase, tod, "
               "rdtime, qpc; keeping the automatic choice",
               ev->env_value);
    } else if (s != TICKCLOCK_SOURCE_AUTO) {
      requested = s;
      forced = 2;
    }
  }

  /* 2. the candidates */
  sys = &out->candidates[out->n_candidates++];
  sys->source = tickclock__os_source(ev);
  sys->name = tickclock_source_name(sys->source);
  sys->usable = 1;
  sys->read_ns = ev->os_read_ns;
  tickclock__strlcpy(sys->reason,
                     sys->source == TICKCLOCK_SOURCE_QPC
                         ? "QueryPerformanceCounter: always available, exact conversion at QPF"
                         : "clock_gettime(CLOCK_MONOTONIC): always available, ticks are ns",
                     sizeof sys->reason);
  if (ev->arch_counter) {
    cnt = &out->candidates[out->n_candidates++];
    cnt->source = ev->arch_counter;
    cnt->name = cname;
    cnt->read_ns = ev->counter_read_ns;
    executable = tickclock__counter_executable(ev, exec_why, sizeof exec_why);
    if (executable) trusted = tickclock__counter_trusted(ev, trust_why, sizeof trust_why);
  } else {
    tickclock__counter_executable(ev, exec_why, sizeof exec_why);
  }

  /* 3. choose */
  if (forced && requested == tickclock__os_source(ev)) requested = TICKCLOCK_SOURCE_SYSTEM;
  if (forced && requested != TICKCLOCK_SOURCE_SYSTEM) {
    if (cnt && requested == ev->arch_counter && executable) {
      use_counter = 1;
    } else {
      const char *because = (cnt && requested == ev->arch_counter)
                                ? exec_why
                                : "it does not exist on this CPU architecture";
      out->request_refused = 1;
      if (forced == 2)
        tickclock__fmt(out->env_error, sizeof out->env_error,
                 "TICKCLOCK_SOURCE=%s is unusable (%s); keeping the automatic choice",
                 tickclock_source_name(requested), because);
      forced = 0;
      requested = TICKCLOCK_SOURCE_AUTO;
    }
  }
  if (!forced) use_counter = cnt && executable && trusted;

  if (use_counter) {
    if (!ev->cal.ok) {
      if (ev->cal.ticks == 0 && ev->cal.ns == 0) return 1; /* not attempted yet */
      use_counter = 0;
      tickclock__strlcpy(trust_why,
                         "calibration against CLOCK_MONOTONIC_RAW failed (the counter did not "
                         "advance with the clock)",
                         sizeof trust_why);
      trusted = 0;
      if (forced) {
        out->request_refused = 1;
        if (forced == 2)
          tickclock__fmt(out->env_error, sizeof out->env_error,
                   "TICKCLOCK_SOURCE=%s is unusable (%s); keeping the automatic choice",
                   cname, trust_why);
        forced = 0;
      }
    } else if (tickclock_conv_init(&out->conv, ev->cal.hz_num, ev->cal.hz_den) != TICKCLOCK_OK) {
      use_counter = 0;
      trusted = 0;
      tickclock__fmt(trust_why, sizeof trust_why,
               "calibrated frequency %.0f Hz is outside the supported 1 Hz..1 THz", ev->cal.hz);
      if (forced) {
        out->request_refused = 1;
        forced = 0;
      }
    }
  }

  /* 4. record */
  out->forced = forced;
  if (use_counter) {
    out->source = ev->arch_counter;
    out->hz_num = ev->cal.hz_num;
    out->hz_den = ev->cal.hz_den;
    out->hz = (double)out->hz_num / (double)out->hz_den;
    out->freq_method = TICKCLOCK_FREQ_CALIBRATED;
    out->uncertainty_ppm = ev->cal.uncertainty_ppm;
    out->resolution_ns = 1e9 / out->hz;
    cnt->chosen = 1;
    cnt->usable = 1;
    if (forced && !trusted)
      tickclock__fmt(cnt->reason, sizeof cnt->reason, "forced by %s although %s",
               forced == 1 ? "tickclock_config" : "TICKCLOCK_SOURCE", trust_why);
    else
      tickclock__fmt(cnt->reason, sizeof cnt->reason,
               "%s%s, %.1f ns per read, %.6f MHz calibrated (+-%.2f ppm)",
               forced ? "forced; " : "",
               ev->arch_counter != TICKCLOCK_SOURCE_TSC ? "counter trusted"
               : ev->os_linux                          ? "invariant TSC, clocksource tsc"
                                                       : "invariant TSC",
               ev->counter_read_ns, out->hz / 1e6, out->uncertainty_ppm);
    tickclock__strlcpy(sys->reason, "not needed: the hardware counter is trusted and cheaper",
                       sizeof sys->reason);
    tickclock__fmt(out->why, sizeof out->why, "%s: %s", cname, cnt->reason);
  } else {
    tickclock__fill_system(ev, out);
    sys->chosen = 1;
    if (cnt) {
      cnt->usable = executable && trusted;
      if (cnt->usable)
        tickclock__fmt(cnt->reason, sizeof cnt->reason, "usable, but %s was forced by %s",
                       sys->name, forced == 1 ? "tickclock_config" : "TICKCLOCK_SOURCE");
      else
        tickclock__strlcpy(cnt->reason, executable ? trust_why : exec_why, sizeof cnt->reason);
    }
    if (forced)
      tickclock__fmt(out->why, sizeof out->why, "%s: forced by %s", sys->name,
               forced == 1 ? "tickclock_config" : "TICKCLOCK_SOURCE");
    else if (cnt)
      tickclock__fmt(out->why, sizeof out->why, "%s: %s refused: %s", sys->name, cname,
                     cnt->reason);
    else
      tickclock__fmt(out->why, sizeof out->why, "%s: %s", sys->name,
                     exec_why[0] ? exec_why : "no counter");
  }
  out->source_name = tickclock_source_name(out->source);
  out->freq_method_name = tickclock_freq_method_name(out->freq_method);
  return 0;
}
