/* tickclock — calibrating a counter against CLOCK_MONOTONIC_RAW.
 *
 * A sample is a bracket (c0, ns, c1): two ordered counter reads around one
 * clock read. The counter value at the clock's instant lies in [c0, c1];
 * we keep the tightest of several brackets (an interrupt or a vCPU
 * preemption inside a bracket only widens it) and use its midpoint, so the
 * tick error at each end is at most half its width. Over an interval of
 * D ticks and N ns the frequency's error bound is therefore
 *   ((w_start + w_end) / 2 + 2) / D  +  2 ns / N      (clock granularity)
 * plus one tick at each end for the counter's quantum, which is what
 * uncertainty_ppm reports.
 */
#include "calibrate.h"
#include "freq.h"
#include "platform.h"

#define TKC_CAL_TRIES 16

int tkc_suspend_between(uint64_t s0, uint64_t s1) {
  if (s0 == UINT64_MAX || s1 == UINT64_MAX) return 0;
  return (s1 > s0 ? s1 - s0 : s0 - s1) > TKC_SUSPEND_MIN_NS;
}

tkc_bracket tkc_tightest_bracket(uint64_t (*rd)(void)) {
  tkc_bracket best;
  int i;
  uint64_t s0 = tkc_p_suspended_ns();
  best.width = UINT64_MAX;
  best.mid = best.ns = 0;
  for (i = 0; i < TKC_CAL_TRIES; i++) {
    uint64_t c0 = rd();
    uint64_t ns = tkc_p_raw_ns();
    uint64_t c1 = rd();
    if (c1 < c0 || ns == 0) continue; /* went backwards, or no clock: not a bracket */
    if (c1 - c0 < best.width) {
      best.width = c1 - c0;
      best.mid = c0 + (c1 - c0) / 2;
      best.ns = ns;
    }
  }
  best.susp = tkc_p_suspended_ns();
  if (tkc_suspend_between(s0, best.susp)) best.width = UINT64_MAX; /* suspended meanwhile */
  return best;
}

/* Waits until the raw clock reaches target: sleeps most of it, spins the
 * last 300 us. */
static void tkc_wait_until(uint64_t target) {
  uint64_t now = tkc_p_raw_ns();
  if (now == 0) return; /* the clock cannot be read: nothing to wait on */
  if (target > now + UINT64_C(300000)) tkc_p_sleep_ns(target - now - UINT64_C(300000));
  while ((now = tkc_p_raw_ns()) < target && now != 0) {
  }
}

/* Fills out from the brackets a (start) and b (end); 1 if they make a
 * calibration. */
void tkc_cal_start(tickclock_calibration *c, tkc_bracket b) {
  c->start_mid = b.mid;
  c->start_ns = b.ns;
  c->bracket_start = b.width;
  c->start_susp = b.susp;
}

static int tkc_cal_from(tkc_bracket a, tkc_bracket b, tickclock_calibration *out) {
  out->ok = 0;
  tkc_cal_start(out, a);
  out->bracket_end = b.width;
  out->no_clock = 0;
  out->ticks = b.mid - a.mid;
  out->ns = b.ns - a.ns;
  /* CLOCK_MONOTONIC_RAW stopped for the suspend, the counter may not have */
  out->suspended = tkc_suspend_between(a.susp, b.susp);
  if (out->suspended) {
    out->ns = out->ns ? out->ns : 1;
    return 0;
  }
  if (a.width == UINT64_MAX || b.width == UINT64_MAX || b.mid <= a.mid || b.ns <= a.ns) {
    /* mark "attempted" even when it failed */
    if (out->ticks == 0 && out->ns == 0) out->ns = 1;
    return 0;
  }
  tkc_ratio_hz(out->ticks, out->ns, &out->hz_num, &out->hz_den);
  out->hz = (double)out->hz_num / (double)out->hz_den;
  /* each end: half its bracket, plus the counter's own quantum (a read is
   * the count of whole ticks: 16 ns at 62.5 MHz, not negligible over 1 ms) */
  out->uncertainty_ppm = ((((double)a.width + (double)b.width) / 2.0 + 2.0) / (double)out->ticks +
                          2.0 / (double)out->ns) *
                         1e6;
  out->ok = 1;
  return 1;
}

int tkc_calibrate(uint64_t (*rd)(void), uint32_t ms, tickclock_calibration *out) {
  tkc_bracket a, b;
  uint32_t span;
  int quick = ms == 0, attempt;
  if (quick) ms = TICKCLOCK_CAL_QUICK_MS;
  if (ms > 1000) ms = 1000;
  /* a suspend between the brackets (or inside one) is no measurement:
   * start again from a fresh bracket, a few times at most */
  for (attempt = 0; attempt < 4; attempt++) {
    a = tkc_tightest_bracket(rd);
    if (a.width == UINT64_MAX && a.ns == 0) { /* no clock to calibrate against */
      (void)tkc_cal_from(a, a, out);
      out->no_clock = 1;
      return 0;
    }
    if (a.width == UINT64_MAX && attempt < 3)
      continue; /* a suspend or every try backwards: again */
    for (span = ms;; span *= 4) {
      tkc_wait_until(a.ns + (uint64_t)span * UINT64_C(1000000));
      b = tkc_tightest_bracket(rd);
      if (!tkc_cal_from(a, b, out)) break;
      /* a preempted bracket at either end widens the bound: measure the end
       * again further away (the start bracket stays) */
      if (!quick || out->uncertainty_ppm <= TICKCLOCK_CAL_TARGET_PPM ||
          span * 4 > TICKCLOCK_CAL_QUICK_MAX_MS)
        return 1;
    }
    if (!out->suspended) return 0;
  }
  return 0;
}

/* A refinement: the same start bracket, a new end bracket now. */
int tkc_calibrate_from(uint64_t (*rd)(void), const tickclock_calibration *first,
                       tickclock_calibration *out) {
  tkc_bracket a, b;
  a.mid = first->start_mid;
  a.ns = first->start_ns;
  a.width = first->bracket_start;
  a.susp = first->start_susp;
  b = tkc_tightest_bracket(rd);
  return tkc_cal_from(a, b, out);
}
