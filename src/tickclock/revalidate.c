/* tickclock — re-validation of the published counter state (lock held
 * throughout): the checks, and the switch away from a counter that fails
 * them. What falls due, and when, is due.c's; the checks' records and the
 * deadline are bookkeeping.c's.
 *
 * Faults after initialisation:
 *  - prctl(PR_SET_TSC, PR_TSC_SIGSEGV) after first use: the next
 *    tickclock_now() in that thread executes RDTSC (or the vDSO does) and
 *    the kernel delivers SIGSEGV (the hot path is one load, a compare and
 *    RDTSC; asking the kernel first would cost a system call per read).
 *    Call tickclock_revalidate() in that thread right after changing the
 *    setting: it sees PR_GET_TSC = PR_TSC_SIGSEGV and moves every thread
 *    to the OS clock through the system call, without reading the counter
 *    (the continuity bound comes from the last conclusive sample and the
 *    frequency's uncertainty). The setting is per thread.
 *  - the kernel switches its clocksource (watchdog: tsc -> hpet), the
 *    counter jumps (migration, a CPU with another TSC offset), or its rate
 *    drifts from CLOCK_MONOTONIC_RAW: the rate check (every
 *    TICKCLOCK_CHECK_DEFAULT_MS by default, in the conversions) or
 *    tickclock_revalidate() switches to the OS clock.
 *  - a suspend: CLOCK_MONOTONIC_RAW stops, the counter may not. A sample
 *    whose two ends see a different suspended time (CLOCK_BOOTTIME -
 *    CLOCK_MONOTONIC) is judged against both the awake and the total
 *    time; a refinement sample across one is discarded and the refinement
 *    starts again from a fresh bracket.
 */
#include "state.h"
#include "decide.h"
#include "text.h"

#include <string.h>

#if defined(TKC_ARCH_COUNTER) || (defined(TKC_X86) && defined(__linux__))
/* The state being built by a switch, a refinement or a move to the system
 * call (too big for small stacks; lock held). */
static tickclock_info tkc_next;
#endif

#if defined(TKC_ARCH_COUNTER)
/* Replaces the counter state old by the OS clock, in the same unit, in the
 * spare slot (always there while a counter state is published). */
static void tkc_switch_to_os(const tickclock_info *old, const char *why, int trust) {
  tickclock_info *fresh = &tkc_next;
  unsigned i;
  uint64_t os_hz;
  int os = tkc_os_fallback(&os_hz);
  memcpy(fresh, old, sizeof *fresh);
  tkc_fill_os(fresh, os, os_hz, 0);
  for (i = 0; i < fresh->n_candidates && i < TICKCLOCK_MAX_CANDIDATES; i++) {
    tickclock_candidate *c = &fresh->candidates[i];
    c->chosen = c->source == os;
    if (c->source == old->source) {
      c->usable = 0;
      tkc_fmt(c->reason, sizeof c->reason, "re-validation: %s", why);
    }
  }
  tkc_fmt(fresh->why, sizeof fresh->why, "re-validation switched from %s: %s",
          tickclock_source_name(old->source), why);
  fresh->revalidated = 1;
  (void)tkc_publish(fresh, old, trust, 1, 0, NULL); /* the spare: cannot fail */
}

/* |a - b| > bound, for two ns spans. */
static int tkc_disagree(double a, double b, double bound) { return a - b > bound || b - a > bound; }

/* Counter time at the rate cv against CLOCK_MONOTONIC_RAW from the sample
 * ref to b (w: b's bracket width in ns), into *dc and *dr; returns the two
 * brackets' half-widths, what a comparison of the two cannot resolve. */
static double tkc_span(const tickclock_conv *cv, tkc_bracket ref, tkc_bracket b, double w,
                       double *dc, double *dr) {
  *dc = (double)tickclock_conv_delta_to_ns(cv, (int64_t)(b.mid - ref.mid));
  *dr = (double)(int64_t)(b.ns - ref.ns);
  return (w + (double)tickclock_conv_ticks_to_ns(cv, ref.width)) / 2;
}

/* A break window from the start of the sample ref to the unit tick hi,
 * excess ns off. */
static void tkc_break_from(const tickclock_info *s, tkc_bracket ref, uint64_t hi, double excess) {
  tkc_note_break(tkc_map(s, ref.mid - ref.width / 2), hi, (uint64_t)excess + 1);
}

/* Counter time (at the rate cv, the decision's) against
 * CLOCK_MONOTONIC_RAW from the sample ref to b (whose bracket is w ns
 * wide): they must agree within (DRIFT_PPM + u, that rate's uncertainty)
 * of the raw time, plus DRIFT_ABS_NS and the two
 * brackets' half-widths. Across a suspend (the two samples saw different
 * suspended times) the counter may have counted the suspended time or
 * not, and the kernel's account of it may be off by the persistent
 * clock's seconds (TKC_SUSPEND_ACCOUNT_NS): any advance from the awake
 * time to the awake and suspended time plus that passes (a step back, or
 * far beyond, does not). 1 when they do not agree; the figures in dc, dr
 * (raw, plus the suspended time when it was counted), bound. */
static int tkc_drifted(const tickclock_conv *cv, double u, tkc_bracket b, double w, tkc_bracket ref,
                       double *dc, double *dr, double *bound) {
  double rate = (TICKCLOCK_REVALIDATE_DRIFT_PPM + u) * 1e-6;
  double half = tkc_span(cv, ref, b, w, dc, dr);
  *bound = *dr * rate + TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + half;
  if (!tkc_disagree(*dc, *dr, *bound)) return 0;
  if (tkc_suspend_between(ref.susp, b.susp) && b.susp > ref.susp) {
    double slept = (double)(b.susp - ref.susp);
    if (*dc >= *dr - *bound && *dc <= *dr + slept + TKC_SUSPEND_ACCOUNT_NS + *bound + slept * rate)
      return 0;
    *dr += slept; /* what the report compares with: the longer of the two */
  }
  return 1;
}

/* Before any counter read of a check or a refinement: RDTSC disabled for
 * this thread means switching without reading it. 1 if it switched. */
int tkc_rdtsc_disabled_locked(const tickclock_info *s) {
#if defined(TKC_X86)
  if (tkc_p_prctl_get_tsc() == TICKCLOCK_PRCTL_SIGSEGV) {
    tkc_os_use_syscall(1);
    tkc_switch_to_os(s,
                     "RDTSC was disabled for this thread (prctl PR_SET_TSC = "
                     "PR_TSC_SIGSEGV)",
                     TKC_OLD_UNREADABLE);
    return 1;
  }
#else
  (void)s;
#endif
  return 0;
}

/* The kernel's clocksource is still the one it was: the same name, or
 * the early-boot TSC clocksource ("tsc-early", registered before the
 * kernel's own calibration) replaced by "tsc" once that finished: both read
 * the same counter, so the rename is no change of clock. */
static int tkc_same_clocksource(const char *now, const char *then) {
  return strcmp(now, then) == 0 || (strcmp(then, "tsc-early") == 0 && strcmp(now, "tsc") == 0);
}

/* The paravirtual clock page's time at tsc under page p (pvclock's own
 * formula), as signed ns relative to its system_time. */
static double tkc_pv_ns(const tickclock_pvclock_page *p, uint64_t tsc) {
  double d = (double)(int64_t)(tsc - p->tsc_timestamp);
  double scale = (double)p->mul / 4294967296.0;
  int sh = p->shift;
  while (sh > 0) d *= 2, sh--;
  while (sh < 0) d /= 2, sh++;
  return d * scale;
}

/* The clock page of the state s was trusted by: read again and compared
 * with the last reading. A version bump with the same content is normal
 * running (the host refreshes the page); a content change is the host
 * rewriting the clock (a restore, a migration, its master clock stepped):
 *  - the page failing a check now (the stable bit cleared, say): the OS
 *    clock, for good (a later decision reads the same page);
 *  - the same rate and a continuation within the drift allowance (the
 *    host's master clock refreshed): kept, the new content recorded;
 *  - otherwise a new counter state at the new page's rate, its readings
 *    mapped into the unit from an extrapolation of the last conclusive
 *    sample: the step is bounded by it, and an interval spanning it says
 *    so (TICKCLOCK_DURATION_SPANS_BOUNDED_SWITCH).
 * A torn or missing reading is inconclusive: the next check reads again.
 * 1 when it published. */
int tkc_pv_check_locked(const tickclock_info *s) {
  tkc_check_book *bk = tkc_checks();
  tickclock_pvclock_page now;
  tickclock_freq c;
  char why[TICKCLOCK_REASON_LEN];
  double was_mhz, step_ns;
  int back;
  tickclock_evidence *ev;
  if (bk->pv.kind == TKC_PV_NONE) return 0;
  tkc_p_pvclock(bk->pv.kind, &now);
  if (now.kind == TKC_PV_NONE) return 0;
  if (tkc_pv_same(&now, &bk->pv)) {
    bk->pv.version = now.version;
    return 0;
  }
  tkc_pv_claim(&now, bk->cs, &c);
  if (!c.ok) {
    bk->pv = now;
    tkc_fmt(why, sizeof why, "the clock page changed: %s", c.why);
    tkc_switch_to_os(s, why, TKC_OLD_FAILED);
    return 1;
  }
  step_ns = now.kind == TKC_PV_KVM ? (double)(int64_t)(now.system_time - bk->pv.system_time) -
                                         tkc_pv_ns(&bk->pv, now.tsc_timestamp)
                                   : (double)(now.offset - bk->pv.offset) * 100.0;
  if (now.kind == TKC_PV_KVM && now.mul == bk->pv.mul && now.shift == bk->pv.shift &&
      now.tsc_timestamp >= bk->pv.tsc_timestamp &&
      !tkc_disagree(
          step_ns, 0,
          TICKCLOCK_REVALIDATE_DRIFT_ABS_NS + (double)(now.system_time - bk->pv.system_time) *
                                                  TICKCLOCK_REVALIDATE_DRIFT_PPM * 1e-6)) {
    bk->pv = now; /* the host refreshed its master clock: the same clock */
    return 0;
  }
  was_mhz = s->hz / 1e6;
  back = now.kind == TKC_PV_KVM && now.tsc_timestamp < bk->pv.tsc_timestamp;
  bk->pv = now;
  ev = tkc_refine_evidence();
  if (ev->pv.kind != now.kind) { /* not decided from the page's evidence */
    tkc_fmt(why, sizeof why, "the clock page was rewritten (TSC %s, %.6f -> %.6f MHz)",
            back ? "went back" : "moved", was_mhz, (double)c.hz_num / (double)c.hz_den / 1e6);
    tkc_switch_to_os(s, why, TKC_OLD_FAILED);
    return 1;
  }
  /* the decision's evidence with the new page, not calibrated: the new
   * rate stands at once and the cross-check calibrates it again */
  ev->pv = now;
  memset(&ev->cal, 0, sizeof ev->cal);
  tkc_list_claims(ev);
  memcpy(&tkc_next, s, sizeof tkc_next);
  tkc_next.hz_num = c.hz_num;
  tkc_next.hz_den = c.hz_den;
  tkc_next.hz = (double)c.hz_num / (double)c.hz_den;
  tkc_next.freq_method = TICKCLOCK_FREQ_PVCLOCK;
  tkc_next.freq_method_name = tickclock_freq_method_name(TICKCLOCK_FREQ_PVCLOCK);
  tkc_next.freq_detail = c.name;
  tkc_next.uncertainty_ppm = c.uncertainty_ppm;
  tkc_next.freq_pending_check = 1;
  tkc_next.resolution_ns = 1e9 / tkc_next.hz;
  tickclock_conv_init(&tkc_next.conv, c.hz_num, c.hz_den);
  tkc_next.revalidated = 1;
  tkc_fmt(tkc_next.why, sizeof tkc_next.why,
          "re-validation: the clock page was rewritten (TSC %s, its time stepped %.0f ns, "
          "%.6f -> %.6f MHz): continued at the page's rate, the step bounded",
          back ? "went back" : "moved", step_ns, was_mhz, tkc_next.hz / 1e6);
  /* the spare is kept for leaving the counter; a ready slot, or none */
  if (tkc_publish_planned(&tkc_next, s, ev, 0, 0, TKC_OLD_FAILED, 0, 0) == TICKCLOCK_OK) return 1;
  tkc_switch_to_os(s, "the clock page was rewritten and no slot was ready for its new state",
                   TKC_OLD_FAILED);
  return 1;
}

/* The stated rate held to the samples (the loose checks passed): counter
 * time (at the held rate: the state's, or the refinement's measurement
 * since) against CLOCK_MONOTONIC_RAW from ref to b within that rate's
 * uncertainty of the raw time plus the brackets' half-widths (w: b's width
 * in ns) and 2 ns of rounding. A wide pair (a clock read that costs more
 * than RESOLUTION_NS, a preempted bracket) is still compared: its
 * half-widths are in the tolerance, so it only sees less, and a host
 * whose every bracket is wide would otherwise never be held to its rate.
 * 0 when they agree or a suspend lies between; else the discrepancy in
 * *excess (ns, with the half-widths) and *ppm (of the raw time). */
static int tkc_off_rate(tkc_bracket b, double w, tkc_bracket ref, double *excess, double *ppm) {
  const tkc_check_book *bk = tkc_checks();
  double half, dc, dr, d;
  if (ref.width == UINT64_MAX || tkc_suspend_between(ref.susp, b.susp) || b.ns <= ref.ns) return 0;
  half = tkc_span(&bk->held_conv, ref, b, w, &dc, &dr);
  d = dc - dr < 0 ? dr - dc : dc - dr;
  if (d <= dr * bk->held_ppm * 1e-6 + half + 2) return 0;
  *excess = d + half;
  *ppm = (d + half) / dr * 1e6;
  return 1;
}

/* From the last tight sample ref to b (w: b's bracket width in ns) a
 * suspend lies between: the counter counted the suspended time or not, and
 * the rate check cannot tell which, so a rate change since ref (the last
 * point its rate was held to within RESOLUTION_NS) passes it (the
 * switch's allowance is the kernel's account of the suspended time,
 * seconds). Whatever the counter did there is at most what separates its
 * time (at the held rate) from the nearer of the two readings, awake or
 * awake and suspended; beyond the held rate's tolerance, that is a window
 * the durations that meet it carry. Not a break: an account off by its
 * own error is normal, and is not the counter's fault. */
static void tkc_note_hidden(const tickclock_info *s, tkc_bracket ref, tkc_bracket b, double w) {
  const tkc_check_book *bk = tkc_checks();
  double half, dc, dr, slept, d, ds;
  if (ref.width == UINT64_MAX || b.ns <= ref.ns || ref.susp == UINT64_MAX || b.susp == UINT64_MAX ||
      b.susp < ref.susp)
    return;
  half = tkc_span(&bk->held_conv, ref, b, w, &dc, &dr);
  slept = (double)(b.susp - ref.susp);
  d = dc - dr < 0 ? dr - dc : dc - dr;
  ds = dc - dr - slept < 0 ? dr + slept - dc : dc - dr - slept;
  if (ds < d) d = ds;
  if (d <= dr * bk->held_ppm * 1e-6 + half + 2) return;
  tkc_break_from(s, ref, tkc_map(s, b.mid + b.width / 2), d + half);
}

/* The stated rate against the samples since the last tight one and since
 * publication: a discrepancy leaves its window (the durations that meet
 * it carry it) and asks for the state to be restated with an uncertainty
 * that covers it. TKC_BREAK then, else 0. Moves the tight reference on. */
static int tkc_held_to_rate(const tickclock_info *s, tkc_bracket b, double w) {
  tkc_check_book *bk = tkc_checks();
  double ex = 0, ppm = 0, ex_t = 0, ppm_t = 0, ex_p = 0, ppm_p = 0;
  int step = tkc_off_rate(b, w, bk->chk_tight, &ex, &ppm);
  int total = tkc_off_rate(b, w, bk->chk_anchor, &ex_t, &ppm_t);
  /* the previous sample too, when it was not tight enough to be the
   * reference: where every bracket is wide the tight one stays at
   * publication, and a step would hide in the stated rate's share of all
   * the time since */
  tkc_bracket prev = bk->chk_prev;
  int last = prev.mid != bk->chk_tight.mid && tkc_off_rate(b, w, prev, &ex_p, &ppm_p);
  uint64_t hi = tkc_map(s, b.mid + b.width / 2);
  tkc_bracket ref = bk->chk_tight;
  if (b.width != UINT64_MAX && (double)tickclock_conv_ticks_to_ns(&s->src_conv, b.width) <=
                                   TICKCLOCK_REVALIDATE_RESOLUTION_NS)
    bk->chk_tight = b;
  if (!step && !total && !last) return 0;
  if (step) tkc_break_from(s, ref, hi, ex);
  if (total) tkc_break_from(s, bk->chk_anchor, hi, ex_t);
  if (last) {
    tkc_break_from(s, prev, hi, ex_p);
    if (ex_p > ex) ex = ex_p;
    if (ppm_p > ppm) ppm = ppm_p;
  }
  if (++bk->breaks > TICKCLOCK_REVALIDATE_MAX_BREAKS) {
    char why[TICKCLOCK_REASON_LEN];
    tkc_fmt(why, sizeof why,
            "the counter left its stated rate %u times since the last initialisation (the "
            "last: %.0f ns off CLOCK_MONOTONIC_RAW)",
            bk->breaks, ex > ex_t ? ex : ex_t);
    tkc_switch_to_os(s, why, TKC_OLD_FAILED);
    return TICKCLOCK_SWITCHED;
  }
  bk->break_ppm = ppm > ppm_t ? ppm : ppm_t;
  tkc_fmt(bk->break_why, sizeof bk->break_why,
          "counter %.0f ns off CLOCK_MONOTONIC_RAW beyond its stated rate (%.3f ppm)",
          ex > ex_t ? ex : ex_t, bk->break_ppm);
  return TKC_BREAK;
}

/* The checks (the caller saw RDTSC enabled for this thread: see
 * tkc_rdtsc_disabled_locked); with_io: also the kernel's clocksource,
 * which needs a file read (tickclock_revalidate() only). Formats only when
 * switching. */
int tkc_revalidate_locked(int with_io) {
  tkc_check_book *bk = tkc_checks();
  const tickclock_info *s = tkc_published();
  char why[TICKCLOCK_REASON_LEN];
  char cs[32];
  tkc_bracket b;
  double w, dc, dr, bound;
  int step;
  if (s == NULL || !tkc_reads_counter(s) || !bk->chk_on) return 0;
  if (tkc_pv_check_locked(s)) {
    s = tkc_published();
    if (!tkc_reads_counter(s)) return TICKCLOCK_SWITCHED;
  }
  if (with_io && bk->cs_known) {
    int known = tkc_p_clocksource(cs, sizeof cs);
    if (known && !tkc_same_clocksource(cs, bk->cs)) {
      tkc_fmt(why, sizeof why, "the kernel's clocksource changed from '%s' to '%s'", bk->cs, cs);
      tkc_switch_to_os(s, why, TKC_OLD_FAILED);
      return TICKCLOCK_SWITCHED;
    }
  }
  b = tkc_tightest_bracket(tkc_read_counter_ordered);
  w = b.width == UINT64_MAX ? 1e300 : (double)tickclock_conv_ticks_to_ns(&s->src_conv, b.width);
  if (w > TICKCLOCK_REVALIDATE_MAX_BRACKET_NS) { /* inconclusive: the next period */
    if (b.width != UINT64_MAX)
      bk->max_seen = tkc_max_u64(bk->max_seen, tkc_map(s, b.mid + b.width / 2));
    tkc_arm_deadline(s, bk->max_seen);
    return 0;
  }
  /* the step since the previous conclusive sample, then the total since
   * publication (a slow drift passes every step) */
  for (step = 1; step >= 0; step--) {
    tkc_bracket ref = step ? bk->chk_prev : bk->chk_loose;
    if (!tkc_drifted(&bk->loose_conv, bk->loose_ppm, b, w, ref, &dc, &dr, &bound)) continue;
    /* what the counter did in the window looked at stays with the
     * durations that meet it */
    tkc_break_from(s, ref, tkc_map(s, b.mid + b.width / 2), (dc > dr ? dc - dr : dr - dc) + w);
    tkc_fmt(why, sizeof why,
            step ? "counter stepped %.0f ns against CLOCK_MONOTONIC_RAW's %.0f ns since "
                   "the previous check (bound %.0f ns)"
                 : "counter time drifted from CLOCK_MONOTONIC_RAW: %.0f ns vs %.0f ns "
                   "since initialisation (bound %.0f ns)",
            dc, dr, bound);
    tkc_switch_to_os(s, why, TKC_OLD_FAILED);
    return TICKCLOCK_SWITCHED;
  }
  /* across a suspend the counter's advance is known only to the kernel's
   * account of it: what it did before the suspend stays a window, and the
   * total since publication starts again here */
  if (tkc_suspend_between(bk->chk_prev.susp, b.susp)) {
    tkc_note_hidden(s, bk->chk_tight, b, w);
    bk->chk_anchor = bk->chk_tight = bk->chk_loose = b;
  }
  step = tkc_held_to_rate(s, b, w);
  if (step == TICKCLOCK_SWITCHED) return step;
  bk->chk_prev = b;
  tkc_note_sample(tkc_map(s, b.mid - b.width / 2), tkc_map(s, b.mid + b.width / 2), b.susp);
  bk->max_seen = tkc_max_u64(bk->max_seen, tkc_map(s, b.mid + b.width / 2));
  tkc_arm_deadline(s, bk->max_seen);
  return step;
}

/* A counter state published without a sample to check against (no
 * bracket could be taken then: the raw clock unreadable, a suspend in
 * each try) takes one now; a published frequency's cross-check measures
 * from it. Nothing is checked until one is had. */
void tkc_anchor_again(const tickclock_info *s) {
  tkc_check_book *bk = tkc_checks();
  tkc_bracket b = tkc_tightest_bracket(tkc_read_counter_ordered);
  if (b.width == UINT64_MAX) return;
  bk->chk_anchor = bk->chk_prev = b;
  bk->chk_on = 1;
  tkc_note_sample(tkc_map(s, b.mid - b.width / 2), tkc_map(s, b.mid + b.width / 2), b.susp);
  bk->max_seen = tkc_max_u64(bk->max_seen, tkc_map(s, b.mid + b.width / 2));
  if (s->freq_pending_check) tkc_refine_from_anchor(s, b);
  tkc_arm_deadline(s, bk->max_seen);
}

/* A counter state still without a sample to check against, at its check
 * period (now_unit: a reading): one more try. The raw clock unreadable
 * for TKC_UNANCHORED_PERIODS periods from the first try (a sandbox that
 * denies it for good) leaves the counter, whose rate nothing has checked
 * and nothing could, for the OS clock. Returns 1 once a sample is had,
 * TICKCLOCK_SWITCHED, or 0 (tried again a period later). */
int tkc_unanchored_locked(const tickclock_info *s, uint64_t now_unit) {
  uint64_t *since = tkc_unanchored_since();
  tkc_anchor_again(s);
  if (tkc_checks()->chk_on) return 1;
  if (*since == UINT64_MAX) *since = now_unit;
  if (now_unit >=
      tkc_after(s, *since,
                (uint64_t)TKC_UNANCHORED_PERIODS * tkc_checks()->reval_ms * UINT64_C(1000000))) {
    char why[200];
    /* the raw clock readable, the tries failed otherwise: each bracket
     * spanned a suspend or saw the counter go back */
    if (tkc_p_raw_ns() == 0)
      tkc_fmt(why, sizeof why,
              "its rate (%s) was never checked: CLOCK_MONOTONIC_RAW could not be read for %u "
              "check periods",
              s->freq_detail, (unsigned)TKC_UNANCHORED_PERIODS);
    else
      tkc_fmt(why, sizeof why,
              "its rate (%s) was never checked: for %u check periods every bracket against "
              "CLOCK_MONOTONIC_RAW spanned a suspend or saw the counter go back",
              s->freq_detail, (unsigned)TKC_UNANCHORED_PERIODS);
    tkc_switch_to_os(s, why, TKC_OLD_FAILED);
    return TICKCLOCK_SWITCHED;
  }
  tkc_arm_deadline(s, now_unit);
  return 0;
}
#endif

/* The OS clock in use and RDTSC disabled for this thread: its vDSO may
 * execute RDTSC too, so readings move to the system call (a new state
 * that says so). */
void tkc_os_path_check_locked(const tickclock_info *s) {
#if defined(TKC_X86) && defined(__linux__)
  if (s == NULL || tkc_reads_counter(s) || tkc_os_syscall_on()) return;
  if (tkc_p_prctl_get_tsc() != TICKCLOCK_PRCTL_SIGSEGV) return;
  tkc_os_use_syscall(1); /* every read from now on, whatever is published */
  memcpy(&tkc_next, s, sizeof tkc_next);
  (void)tkc_publish(&tkc_next, s, TKC_OLD_HEALTHY, 0, 1, NULL); /* its read_path says so */
#else
  (void)s;
#endif
}
