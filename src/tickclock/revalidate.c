/* tickclock — re-validation and refinement of the published counter
 * state (lock held throughout).
 *
 * Faults after initialisation:
 *  - prctl(PR_SET_TSC, PR_TSC_SIGSEGV) after the TSC was chosen: the next
 *    tickclock_now() in that thread executes RDTSC and the kernel delivers
 *    SIGSEGV (the hot path is one load, a compare and RDTSC; asking the
 *    kernel first would cost a system call per read). Call
 *    tickclock_revalidate() in that thread right after changing the
 *    setting: it sees PR_GET_TSC = PR_TSC_SIGSEGV and switches every thread
 *    to the OS clock through the system call, without reading the counter
 *    (the continuity bound comes from the last conclusive sample and the
 *    frequency's uncertainty). The setting is per thread.
 *  - the kernel switches its clocksource (watchdog: tsc -> hpet), the
 *    counter jumps (suspend, migration, a CPU with another TSC offset), or
 *    its rate drifts from CLOCK_MONOTONIC_RAW: tickclock_revalidate()
 *    (explicit, or periodic with tickclock_revalidate_every()) switches to
 *    the OS clock. Nothing is checked on the read path.
 *
 * Refinement: a calibrated frequency is measured again from the same start
 * bracket on a baseline four times longer each time, until it spans 1 s;
 * each better figure is published as a state continuous with the last.
 */
#include "state.h"
#include "text.h"

#include <string.h>

#if defined(TICKCLOCK__ARCH_COUNTER)
/* The state being built by a switch or a refinement (too big for small
 * stacks; lock held). */
static tickclock_info tickclock__next;
#endif

#if defined(TICKCLOCK__ARCH_COUNTER)
/* Replaces the counter state old by the OS clock, in the same unit. */
static void tickclock__switch_to_os(const tickclock_info *old, const char *why, int trust) {
  tickclock_info *fresh = &tickclock__next;
  unsigned i;
#if defined(_WIN32)
  int os = TICKCLOCK_SOURCE_QPC;
  uint64_t os_hz = tickclock__qpc_hz();
#else
  int os = TICKCLOCK_SOURCE_SYSTEM;
  uint64_t os_hz = UINT64_C(1000000000);
#endif
  memcpy(fresh, old, sizeof *fresh);
  fresh->source = os;
  fresh->source_name = tickclock_source_name(os);
  if (tickclock_conv_init(&fresh->conv, os_hz ? os_hz : 1, 1) != TICKCLOCK_OK)
    tickclock_conv_init(&fresh->conv, UINT64_C(1000000000), 1);
  fresh->hz_num = fresh->conv.hz_num;
  fresh->hz_den = fresh->conv.hz_den;
  fresh->hz = (double)fresh->hz_num / (double)fresh->hz_den;
  fresh->uncertainty_ppm = 0;
  fresh->resolution_ns = 1e9 / fresh->hz;
  fresh->freq_method = os == TICKCLOCK_SOURCE_SYSTEM ? TICKCLOCK_FREQ_IDENTITY : TICKCLOCK_FREQ_OS;
  fresh->freq_method_name = tickclock_freq_method_name(fresh->freq_method);
  fresh->freq_detail = os == TICKCLOCK_SOURCE_SYSTEM ? "identity" : "query_performance_frequency";
  for (i = 0; i < fresh->n_candidates && i < TICKCLOCK_MAX_CANDIDATES; i++) {
    tickclock_candidate *c = &fresh->candidates[i];
    c->chosen = c->source == os;
    if (c->source == old->source) {
      c->usable = 0;
      tickclock__fmt(c->reason, sizeof c->reason, "re-validation: %s", why);
    }
  }
  tickclock__fmt(fresh->why, sizeof fresh->why, "re-validation switched from %s: %s",
                 tickclock_source_name(old->source), why);
  fresh->revalidated = 1;
  (void)tickclock__publish(fresh, old, trust, 1, NULL); /* the spare: cannot fail */
}

/* |a - b| > bound, for two ns spans. */
static int tickclock__disagree(double a, double b, double bound) {
  return a - b > bound || b - a > bound;
}

/* Counter time against CLOCK_MONOTONIC_RAW from the sample ref to b (whose
 * bracket is w ns wide): they must agree within (DRIFT_PPM + the
 * frequency's uncertainty) of the raw time, plus DRIFT_ABS_NS and the two
 * brackets' half-widths. 1 when they do not; the figures in dc, dr, bound. */
static int tickclock__drifted(const tickclock_info *s, tickclock__bracket b, double w,
                              tickclock__bracket ref, double *dc, double *dr, double *bound) {
  double wr = (double)tickclock_conv_ticks_to_ns(&s->src_conv, ref.width);
  double rate = (TICKCLOCK_REVALIDATE_DRIFT_PPM + s->uncertainty_ppm) * 1e-6;
  *dc = (double)tickclock_conv_delta_to_ns(&s->src_conv, (int64_t)(b.mid - ref.mid));
  *dr = (double)(int64_t)(b.ns - ref.ns);
  *bound = *dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (w + wr) / 2;
  return tickclock__disagree(*dc, *dr, *bound);
}

/* The checks; lock held, state published. Formats only when switching. */
/* Before any counter read of a check or a refinement: RDTSC disabled for
 * this thread means switching without reading it. 1 if it switched. */
static int tickclock__rdtsc_disabled_locked(const tickclock_info *s) {
#if defined(TICKCLOCK__X86)
  if (tickclock__p_prctl_get_tsc() == TICKCLOCK_PRCTL_SIGSEGV) {
    tickclock__os_use_syscall(1);
    tickclock__switch_to_os(s, "RDTSC was disabled for this thread (prctl PR_SET_TSC = "
                               "PR_TSC_SIGSEGV)", TICKCLOCK__NO_READ);
    return 1;
  }
#else
  (void)s;
#endif
  return 0;
}

static int tickclock__revalidate_locked(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  char why[TICKCLOCK_REASON_LEN];
  char cs[32];
  tickclock__bracket b;
  double w, dc, dr, bound;
  int step;
  if (s == NULL || !tickclock__reads_counter(s) || !tickclock__bk.chk_on) return 0;
  if (tickclock__rdtsc_disabled_locked(s)) return TICKCLOCK_SWITCHED;
  if (tickclock__bk.cs_known) {
    int known = tickclock__p_clocksource(cs, sizeof cs);
    if (known && strcmp(cs, tickclock__bk.cs) != 0) {
      tickclock__fmt(why, sizeof why, "the kernel's clocksource changed from '%s' to '%s'",
                     tickclock__bk.cs, cs);
      tickclock__switch_to_os(s, why, TICKCLOCK__DISTRUST);
      return TICKCLOCK_SWITCHED;
    }
  }
  b = tickclock__tightest_bracket(tickclock__read_counter_ordered);
  w = b.width == UINT64_MAX ? 1e300 : (double)tickclock_conv_ticks_to_ns(&s->src_conv, b.width);
  if (w > TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) { /* inconclusive: the next period */
    if (b.width != UINT64_MAX)
      tickclock__bk.max_seen =
          tickclock__max_u64(tickclock__bk.max_seen, tickclock__map(s, b.mid + b.width / 2));
    tickclock__arm_deadline(s, tickclock__bk.max_seen);
    return 0;
  }
  /* the step since the previous conclusive sample, then the total since
   * publication (a slow drift passes every step) */
  for (step = 1; step >= 0; step--) {
    if (!tickclock__drifted(s, b, w, step ? tickclock__bk.chk_prev : tickclock__bk.chk_anchor, &dc,
                            &dr, &bound))
      continue;
    tickclock__fmt(why, sizeof why,
                   step ? "counter stepped %.0f ns against CLOCK_MONOTONIC_RAW's %.0f ns since "
                          "the previous check (bound %.0f ns)"
                        : "counter time drifted from CLOCK_MONOTONIC_RAW: %.0f ns vs %.0f ns "
                          "since initialisation (bound %.0f ns)",
                   dc, dr, bound);
    tickclock__switch_to_os(s, why, TICKCLOCK__DISTRUST);
    return TICKCLOCK_SWITCHED;
  }
  tickclock__bk.chk_prev = b;
  tickclock__bk.max_seen =
      tickclock__max_u64(tickclock__bk.max_seen, tickclock__map(s, b.mid + b.width / 2));
  tickclock__arm_deadline(s, tickclock__bk.max_seen);
  return 0;
}
#endif

int tickclock_revalidate(void) {
  int r = 0;
  if (tickclock__first_state() == NULL) return TICKCLOCK_EBUSY;
  if (!tickclock__lock()) return TICKCLOCK_EBUSY;
#if defined(TICKCLOCK__ARCH_COUNTER)
  r = tickclock__revalidate_locked();
#endif
  tickclock__unlock();
  return r;
}

void tickclock_revalidate_every(uint32_t ms) {
  if (tickclock__first_state() == NULL || !tickclock__lock()) return;
  tickclock__bk.reval_ms = ms;
  tickclock__arm_deadline(TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state), tickclock__bk.max_seen);
  tickclock__unlock();
}

#if defined(TICKCLOCK__ARCH_COUNTER)
/* One refinement step: the first calibration's start bracket against a new
 * end bracket. A better figure that agrees with the current one is
 * published (continuous with it: same unit, base at the moment of
 * publication); a preempted end bracket is retried a millisecond later; a
 * figure that disagrees stops refinement (re-validation judges the
 * counter). */
static void tickclock__refine_locked(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  tickclock_info *fresh = &tickclock__next;
  tickclock_calibration c;
  double off;
  unsigned i;
  if (!tickclock__calibrate_from(tickclock__read_counter_ordered, &tickclock__bk.cal_first, &c) ||
      (double)tickclock_conv_ticks_to_ns(&s->src_conv, c.bracket_end) >
          TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) {
    tickclock__bk.refine_at = tickclock__after(s, tickclock__bk.refine_at, UINT64_C(1000000));
    return;
  }
  /* due by a tick from the future (a caller converting an arbitrary value):
   * the clock has not got there yet */
  if (c.start_ns + c.ns < tickclock__bk.refine_at_ns) return;
  off = tickclock__ppm(c.hz_num, c.hz_den, s->hz_num, s->hz_den);
  if (off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM ||
      -off > s->uncertainty_ppm + c.uncertainty_ppm + TICKCLOCK_AGREE_PPM) {
    tickclock__bk.refine_on = 0;
    return;
  }
  tickclock__bk.refine_at_ns = tickclock__bk.cal_first.start_ns + 4 * c.ns;
  if (c.ns >= TICKCLOCK__REFINE_UNTIL_NS) tickclock__bk.refine_on = 0;
  if (c.uncertainty_ppm >= s->uncertainty_ppm) { /* no better: measure further on */
    tickclock__bk.refine_at = tickclock__after(
        s, tickclock__map(s, c.start_mid + c.ticks),
        tickclock__bk.refine_at_ns - (c.start_ns + c.ns));
    return;
  }
  memcpy(fresh, s, sizeof *fresh);
  if (tickclock_conv_init(&fresh->conv, c.hz_num, c.hz_den) != TICKCLOCK_OK) {
    tickclock__bk.refine_on = 0;
    return;
  }
  fresh->hz_num = c.hz_num;
  fresh->hz_den = c.hz_den;
  fresh->hz = c.hz;
  fresh->uncertainty_ppm = c.uncertainty_ppm;
  fresh->resolution_ns = 1e9 / c.hz;
  fresh->baseline_ns = c.ns;
  for (i = 0; i < fresh->n_freqs && i < TICKCLOCK_MAX_FREQS; i++)
    if (fresh->freqs[i].method == TICKCLOCK_FREQ_CALIBRATED) {
      fresh->freqs[i].hz_num = c.hz_num;
      fresh->freqs[i].hz_den = c.hz_den;
      fresh->freqs[i].hz = c.hz;
      fresh->freqs[i].uncertainty_ppm = c.uncertainty_ppm;
    }
  (void)tickclock__publish(fresh, s, TICKCLOCK__TRUST, 0, NULL);
}

/* What is due at unit tick ticks: a periodic check, a refinement. */
static void tickclock__due_locked(uint64_t ticks) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (s == NULL || !tickclock__reads_counter(s) || !tickclock__bk.chk_on) return;
  if (ticks >= tickclock__bk.reval_at) {
    if (tickclock__revalidate_locked() == TICKCLOCK_SWITCHED) return;
  } else if (tickclock__rdtsc_disabled_locked(s)) {
    return;
  }
  if (tickclock__bk.refine_on && ticks >= tickclock__bk.refine_at) tickclock__refine_locked();
  tickclock__store_deadline();
}
#endif

/* From tickclock_to_ns/tickclock_delta_ns once their argument passed the
 * deadline: one thread does what is due, the others (and a re-entering
 * signal handler) carry on. */
void tickclock__revalidate_due(uint64_t ticks) {
  if (!tickclock__trylock()) return;
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (tickclock__bk.chk_on && ticks >= TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_reval_deadline))
    tickclock__due_locked(ticks);
#else
  (void)ticks;
#endif
  tickclock__unlock();
}

