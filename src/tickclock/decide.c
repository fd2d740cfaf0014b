/* tickclock — the decider: evidence in, decision out. Pure: no OS calls,
 * no CPUID, no clock reads; tested on recorded evidence (tests/fixtures).
 * The policy it implements is written out in README.md (this folder): its
 * steps 1-4 are trust.c's rules, step 5 and the frequency table are the
 * frequency stage here with freq_select.c. tickclock_decide runs its own
 * stages in order, one function each (named, not numbered, so that they
 * are not mistaken for the policy's steps): request, candidates, choose,
 * frequency (published first, else calibrated; its failures), record. */
#include "decide.h"
#include "text.h"

#include <string.h>

/* The OS fallback: CLOCK_MONOTONIC (ticks are ns, conversion is the
 * identity) or, on Windows, QPC at QueryPerformanceFrequency. */
static int tkc_os_source(const tickclock_evidence *ev) {
  return ev->os_source ? ev->os_source : TICKCLOCK_SOURCE_SYSTEM;
}

void tkc_fill_os(tickclock_info *out, int os, uint64_t hz, double resolution_ns) {
  if (os == TICKCLOCK_SOURCE_SYSTEM || hz == 0) hz = UINT64_C(1000000000);
  out->source = os;
  out->source_name = tickclock_source_name(os);
  out->hz_num = hz;
  out->hz_den = 1;
  out->hz = (double)hz;
  out->freq_method = os == TICKCLOCK_SOURCE_SYSTEM ? TICKCLOCK_FREQ_IDENTITY : TICKCLOCK_FREQ_OS;
  out->freq_method_name = tickclock_freq_method_name(out->freq_method);
  out->freq_detail = os == TICKCLOCK_SOURCE_SYSTEM ? "identity" : "query_performance_frequency";
  out->uncertainty_ppm = 0;
  out->freq_pending_check = 0;
  out->resolution_ns = resolution_ns > 0 ? resolution_ns : 1e9 / (double)hz;
  tickclock_conv_init(&out->conv, out->hz_num, out->hz_den);
}

static const char *tkc_forced_by(int forced) {
  return forced == TICKCLOCK_FORCED_BY_CONFIG ? "tickclock_config" : "TICKCLOCK_SOURCE";
}

static void tkc_env_refused(tickclock_info *out, int forced, const char *name,
                            const char *because) {
  out->request_refused = 1;
  if (forced == TICKCLOCK_FORCED_BY_ENV)
    tkc_fmt(out->env_error, sizeof out->env_error,
            "TICKCLOCK_SOURCE=%s is unusable (%s); keeping the automatic choice", name, because);
}

/* request: what was asked for; the config wins over the environment */
static void tkc_step_request(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  d->cname = tickclock_source_name(ev->arch_counter);
  if (ev->cfg_source != TICKCLOCK_SOURCE_AUTO) {
    d->requested = ev->cfg_source;
    d->forced = TICKCLOCK_FORCED_BY_CONFIG;
  } else if (ev->have_env && ev->env_value[0] != '\0') { /* empty = unset */
    int s = tickclock_source_from_name(ev->env_value);
    if (s < 0) {
      char shown[4 * sizeof ev->env_value];
      char names[96];
      tkc_escape(shown, sizeof shown, ev->env_value);
      tkc_source_name_list(names, sizeof names);
      tkc_fmt(out->env_error, sizeof out->env_error,
              "TICKCLOCK_SOURCE='%s' is not one of %s; keeping the automatic choice", shown, names);
    } else if (s != TICKCLOCK_SOURCE_AUTO) {
      d->requested = s;
      d->forced = TICKCLOCK_FORCED_BY_ENV;
    }
  }
}

/* candidates: the OS clock always, the counter where there is one (with
 * policy steps 1-4: can it be read, may it be trusted) */
static void tkc_step_candidates(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  tickclock_candidate *sys = &out->candidates[out->n_candidates++];
  d->sys = sys;
  sys->source = tkc_os_source(ev);
  sys->name = tickclock_source_name(sys->source);
  sys->usable = 1;
  sys->read_ns = ev->os_read_ns;
  if (sys->source == TICKCLOCK_SOURCE_QPC)
    tkc_strlcpy(sys->reason, "QueryPerformanceCounter: always available, exact conversion at QPF",
                sizeof sys->reason);
  else if (ev->os_read_how != NULL)
    tkc_fmt(sys->reason, sizeof sys->reason,
            "clock_gettime(CLOCK_MONOTONIC): always available, ticks are ns; read through %s",
            ev->os_read_how);
  else
    tkc_strlcpy(sys->reason, "clock_gettime(CLOCK_MONOTONIC): always available, ticks are ns",
                sizeof sys->reason);
  if (ev->arch_counter) {
    d->cnt = &out->candidates[out->n_candidates++];
    d->cnt->source = ev->arch_counter;
    d->cnt->name = d->cname;
    d->cnt->read_ns = ev->counter_read_ns;
    d->executable = tkc_counter_executable(ev, d->exec_why, sizeof d->exec_why);
    if (d->executable) d->trusted = tkc_counter_trusted(ev, d->trust_why, sizeof d->trust_why);
    d->vdso_counter = tkc_vdso_reads_counter(ev);
  } else {
    tkc_counter_executable(ev, d->exec_why, sizeof d->exec_why);
  }
}

/* choose: a forced counter only when executable; else the policy */
static void tkc_step_choose(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  if (d->forced && d->requested == tkc_os_source(ev)) d->requested = TICKCLOCK_SOURCE_SYSTEM;
  if (d->forced && d->requested != TICKCLOCK_SOURCE_SYSTEM) {
    if (d->cnt && d->requested == ev->arch_counter && d->executable) {
      d->use_counter = 1;
    } else {
      const char *because = (d->cnt && d->requested == ev->arch_counter)
                                ? d->exec_why
                                : "it does not exist on this CPU architecture";
      tkc_env_refused(out, d->forced, tickclock_source_name(d->requested), because);
      d->forced = TICKCLOCK_FORCED_NO;
      d->requested = TICKCLOCK_SOURCE_AUTO;
    }
  }
  if (!d->forced) d->use_counter = d->cnt && d->executable && d->trusted != TKC_TRUST_NO;
}

/* A usable frequency of that method is among the claims (it agreed with
 * calibration). */
static int tkc_method_agrees(const tickclock_info *out, int method) {
  unsigned i;
  for (i = 0; i < out->n_freqs; i++)
    if (out->freqs[i].method == method && out->freqs[i].usable) return 1;
  return 0;
}

/* frequency, its failures (policy step 5): why the chosen counter cannot
 * be used after all, or NULL. */
static const char *tkc_frequency_failure(const tickclock_evidence *ev, tickclock_info *out,
                                         tkc_choice *d, char *buf, size_t n) {
  if (!ev->cal.ok && ev->cal.no_clock)
    return "calibration impossible: CLOCK_MONOTONIC_RAW could not be read (clock_gettime "
           "failed: a sandbox or seccomp filter denies it?)";
  if (!ev->cal.ok)
    return "calibration against CLOCK_MONOTONIC_RAW failed (the counter did not advance "
           "with the clock)";
  if (!d->forced && ev->cal.uncertainty_ppm > TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM) {
    tkc_fmt(buf, n,
            "calibration brackets too wide (%.0f ppm > %.0f): counter reads on different "
            "CPUs disagree (TSC warp) or every sample was preempted",
            ev->cal.uncertainty_ppm, TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM);
    return buf;
  }
  /* a trust rule that rests on a published rate (the hypervisor's leaf,
   * the paravirtual clock page): that rate must agree with calibration */
  if ((d->trusted == TKC_TRUST_IF_HV_AGREES &&
       !tkc_method_agrees(out, TICKCLOCK_FREQ_HYPERVISOR)) ||
      (d->trusted == TKC_TRUST_IF_PV_AGREES && !tkc_method_agrees(out, TICKCLOCK_FREQ_PVCLOCK))) {
    tkc_fmt(d->trust_why, sizeof d->trust_why,
            d->trusted == TKC_TRUST_IF_HV_AGREES
                ? "the kernel prefers the paravirtual clock '%s' and the hypervisor's TSC "
                  "frequency disagrees with calibration"
                : "the kernel's clock is the paravirtual '%s' and its clock page's TSC rate "
                  "disagrees with calibration",
            ev->clocksource);
    d->trusted = TKC_TRUST_NO;
    if (!d->forced) return d->trust_why; /* a forced TSC stays, with this as its caveat */
  }
  d->fc = tkc_pick_freq(ev, out, d->freq_src);
  if (d->fc == NULL) return "no frequency source agrees with calibration";
  if (tickclock_conv_init(&out->conv, d->fc->hz_num, d->fc->hz_den) != TICKCLOCK_OK) {
    tkc_fmt(buf, n, "frequency %.0f Hz is outside the supported 1 Hz..1 THz", d->fc->hz);
    d->fc = NULL;
    return buf;
  }
  return NULL;
}

/* A calibration not even attempted yet. */
static int tkc_cal_pending(const tickclock_evidence *ev) {
  return !ev->cal.ok && ev->cal.ticks == 0 && ev->cal.ns == 0;
}

/* frequency, published: a first state from a published frequency, before
 * any calibration: only for an automatic choice of a counter the trust
 * rules accept (under a paravirtual clock, only the hypervisor's own
 * frequency, whose agreement the first refinement then checks), and only
 * when the caller did not ask for a calibration of its own. 1 when the
 * caller must calibrate first. */
static int tkc_step_published(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  if (!ev->cal_deferrable || d->forced ||
      (d->trusted != TKC_TRUST_YES && d->trusted != TKC_TRUST_IF_HV_AGREES &&
       d->trusted != TKC_TRUST_IF_PV_AGREES))
    return 1;
  tkc_collect_freqs(ev, out, d->freq_src);
  tkc_check_freqs(ev, out, d->freq_src, 1);
  d->fc = tkc_pick_freq(ev, out, d->freq_src);
  if (d->fc == NULL ||
      (d->trusted == TKC_TRUST_IF_HV_AGREES && d->fc->method != TICKCLOCK_FREQ_HYPERVISOR) ||
      (d->trusted == TKC_TRUST_IF_PV_AGREES && d->fc->method != TICKCLOCK_FREQ_PVCLOCK) ||
      tickclock_conv_init(&out->conv, d->fc->hz_num, d->fc->hz_den) != TICKCLOCK_OK)
    return 1;
  out->freq_pending_check = 1;
  return 0;
}

/* frequency: calibrate, collect every claim, cross-check, pick.
 * Returns 1 when the caller must calibrate first. */
static int tkc_step_frequency(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  const char *fail;
  char buf[TICKCLOCK_REASON_LEN];
  if (d->use_counter && tkc_cal_pending(ev))
    return tkc_step_published(ev, out, d); /* else the caller calibrates and asks again */
  if (d->cnt) {
    tkc_collect_freqs(ev, out, d->freq_src);
    tkc_check_freqs(ev, out, d->freq_src, 0);
  }
  if (!d->use_counter) return 0;
  fail = tkc_frequency_failure(ev, out, d, buf, sizeof buf);
  if (fail != NULL) {
    d->use_counter = 0;
    d->trusted = TKC_TRUST_NO;
    if (fail != d->trust_why) tkc_strlcpy(d->trust_why, fail, sizeof d->trust_why);
    if (d->forced) {
      tkc_env_refused(out, d->forced, d->cname, d->trust_why);
      d->forced = TICKCLOCK_FORCED_NO;
    }
  }
  return 0;
}

/* record: the counter as the choice */
static void tkc_record_counter(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  tickclock_freq_candidate *fc = d->fc;
  tickclock_candidate *cnt = d->cnt;
  out->source = ev->arch_counter;
  out->hz_num = fc->hz_num;
  out->hz_den = fc->hz_den;
  out->hz = (double)out->hz_num / (double)out->hz_den;
  out->freq_method = fc->method;
  out->freq_detail = fc->name;
  out->uncertainty_ppm = fc->uncertainty_ppm;
  out->resolution_ns = 1e9 / out->hz;
  fc->chosen = 1;
  cnt->chosen = 1;
  cnt->usable = 1;
  if (d->forced && d->trusted == TKC_TRUST_NO)
    tkc_fmt(cnt->reason, sizeof cnt->reason, "forced by %s although %s", tkc_forced_by(d->forced),
            d->trust_why);
  else {
    const char *basis =
        ev->arch_counter != TICKCLOCK_SOURCE_TSC ? "counter trusted"
        : d->trusted == TKC_TRUST_IF_HV_AGREES && out->freq_pending_check
            ? "kernel offers tsc, hypervisor frequency"
        : d->trusted == TKC_TRUST_IF_HV_AGREES ? "kernel offers tsc, hypervisor frequency agrees"
        : d->trusted == TKC_TRUST_IF_PV_AGREES && out->freq_pending_check
            ? "paravirtual clock page stable, its rate"
        : d->trusted == TKC_TRUST_IF_PV_AGREES ? "paravirtual clock page stable, its rate agrees"
        : ev->os_linux                         ? "invariant TSC, clocksource tsc"
        : ev->warp_checked      ? "invariant TSC, no kernel verdict, warp check passed"
        : ev->cpu_packages == 1 ? "invariant TSC, one package, no kernel verdict"
                                : "invariant TSC, no kernel verdict, packages "
                                  "unknown";
    char cost[48];
    if (ev->counter_read_ns <= 0)
      tkc_strlcpy(cost, "read cost not measured", sizeof cost);
    else
      tkc_fmt(cost, sizeof cost, "%.1f ns per read", ev->counter_read_ns);
    tkc_fmt(cnt->reason, sizeof cnt->reason, "%s%s, %s%s, %.6f MHz from %s%s",
            d->forced ? "forced; " : "", basis, cost,
            d->vdso_counter ? " (the vDSO reads the TSC too: cannot show a trap)" : "",
            out->hz / 1e6, fc->name,
            out->freq_pending_check ? " (published; not calibrated yet)" : "");
  }
  if (d->forced && d->trusted != TKC_TRUST_YES)
    tkc_fmt(d->sys->reason, sizeof d->sys->reason, "not used: %s was forced by %s", d->cname,
            tkc_forced_by(d->forced));
  else
    tkc_strlcpy(d->sys->reason, "not needed: the hardware counter is trusted and cheaper",
                sizeof d->sys->reason);
  tkc_strlcpy(out->why, cnt->reason, sizeof out->why);
}

/* The OS clock chosen: the calibration's entry no longer says a published
 * frequency is used first (nothing is, the counter is not read). */
static void tkc_cal_not_deferred(tickclock_info *out) {
  unsigned i;
  for (i = 0; i < out->n_freqs && i < TICKCLOCK_MAX_FREQS; i++)
    if (out->freqs[i].method == TICKCLOCK_FREQ_CALIBRATED && !out->freqs[i].available &&
        strstr(out->freqs[i].reason, "not calibrated yet") != NULL)
      tkc_strlcpy(out->freqs[i].reason,
                  "unavailable: not calibrated: the counter was not chosen, so it was not "
                  "measured",
                  sizeof out->freqs[i].reason);
}

/* record: the OS clock as the choice */
static void tkc_record_system(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  tickclock_candidate *cnt = d->cnt, *sys = d->sys;
  tkc_fill_os(out, tkc_os_source(ev), ev->os_hz, ev->os_resolution_ns);
  sys->chosen = 1;
  tkc_cal_not_deferred(out);
  if (cnt) {
    cnt->usable = d->executable && d->trusted == TKC_TRUST_YES;
    if (cnt->usable)
      tkc_fmt(cnt->reason, sizeof cnt->reason, "usable, but %s was forced by %s", sys->name,
              tkc_forced_by(d->forced));
    else
      tkc_strlcpy(cnt->reason, d->executable ? d->trust_why : d->exec_why, sizeof cnt->reason);
  }
  if (d->forced)
    tkc_fmt(out->why, sizeof out->why, "forced by %s", tkc_forced_by(d->forced));
  else if (cnt)
    tkc_fmt(out->why, sizeof out->why, "%s refused: %s", d->cname, cnt->reason);
  else
    tkc_strlcpy(out->why, d->exec_why[0] ? d->exec_why : "no counter", sizeof out->why);
}

/* record: the choice, and the names that go with it */
static void tkc_step_record(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  out->forced = d->forced;
  if (d->use_counter && d->fc != NULL)
    tkc_record_counter(ev, out, d);
  else
    tkc_record_system(ev, out, d);
  out->source_name = tickclock_source_name(out->source);
  out->freq_method_name = tickclock_freq_method_name(out->freq_method);
}

int tkc_decide_start(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  memset(d, 0, sizeof *d);
  d->requested = TICKCLOCK_SOURCE_AUTO;
  d->forced = TICKCLOCK_FORCED_NO;
  d->trusted = TKC_TRUST_NO;
  memset(out, 0, sizeof *out);

  tkc_step_request(ev, out, d);
  tkc_step_candidates(ev, out, d);
  tkc_step_choose(ev, out, d);
  if (tkc_step_frequency(ev, out, d)) return 1;
  tkc_step_record(ev, out, d);
  return 0;
}

void tkc_decide_resume(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d) {
  /* what the published attempt left: its frequency table and conversion
   * (the stages before it read nothing a calibration changes) */
  memset(out->freqs, 0, sizeof out->freqs);
  out->n_freqs = 0;
  memset(&out->conv, 0, sizeof out->conv);
  memset(d->freq_src, 0, sizeof d->freq_src);
  d->fc = NULL;
  (void)tkc_step_frequency(ev, out, d); /* calibration attempted: final */
  tkc_step_record(ev, out, d);
}

int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out) {
  tkc_choice d;
  return tkc_decide_start(ev, out, &d);
}
