/* tickclock — the frequency claims: every source's frequency, or the
 * reason it gives none, listed from the gathered facts (calibration, the
 * perf page's rule here, the x86 decoder's claims as it computed them,
 * the architecture's statement). Pure: the decider reads the list. */
#include "evidence.h"
#include "text.h"

#include <string.h>

/* The perf page rule: ns = cyc * mult >> shift, so Hz = 1e9 * 2^shift /
 * mult, when the kernel publishes a TSC conversion; else why not. */
static void tkc_perf_claim(const tickclock_evidence *ev, tickclock_freq *c) {
  const tickclock_perf_page *p = &ev->perf;
  char *b = c->why;
  size_t n = sizeof c->why;
  memset(c, 0, sizeof *c);
  c->name = "perf_page";
  c->method = TICKCLOCK_FREQ_PERF_PAGE;
  if (p->ok && p->cap_user_time && p->time_mult != 0 && p->time_shift <= 32) {
    c->ok = 1;
    c->source = TKC_SRC_PERF_PAGE;
    c->hz_num = UINT64_C(1000000000) << p->time_shift;
    c->hz_den = p->time_mult;
    c->uncertainty_ppm = 1e6 / (double)p->time_mult;
    return;
  }
  if (!p->attempted && ev->clocksource_known && strcmp(ev->clocksource, "tsc") != 0)
    tkc_fmt(b, n,
            "perf page not read: clocksource '%s'; the page has a TSC conversion "
            "(cap_user_time) only when the kernel's clocks run on a stable native TSC",
            ev->clocksource);
  else if (!p->attempted)
    tkc_strlcpy(b, "perf_event mmap page not read (not Linux x86, or built without it)", n);
  else if (!p->ok)
    tkc_fmt(b, n, "perf_event_open/mmap of a self-monitoring event failed (errno %d)", p->err);
  else if (!p->cap_user_time)
    tkc_strlcpy(b,
                "perf mmap page has cap_user_time = 0: the kernel does not publish a "
                "TSC-to-ns conversion (its clock is not a stable native TSC)",
                n);
  else
    tkc_fmt(b, n, "perf mmap page has unusable time_mult %u / time_shift %u",
            (unsigned)p->time_mult, (unsigned)p->time_shift);
}

/* c into the list: reduced; a claimed frequency of 0 (or over 0) is no
 * claim and is left out. */
static void tkc_claim_add(tickclock_evidence *ev, const tickclock_freq *c) {
  tickclock_freq *to;
  if (c->ok && (c->hz_num == 0 || c->hz_den == 0)) return;
  to = &ev->claims[ev->n_claims++];
  *to = *c;
  if (to->ok) tkc_reduce(&to->hz_num, &to->hz_den);
}

/* The calibration's claim: the measured frequency with its bound, or why
 * there is none yet. */
static void tkc_cal_claim(const tickclock_evidence *ev, tickclock_freq *c) {
  memset(c, 0, sizeof *c);
  c->name = "calibration";
  c->method = TICKCLOCK_FREQ_CALIBRATED;
  if (ev->cal.ok) {
    c->ok = 1;
    c->source = TKC_SRC_CALIBRATION;
    c->hz_num = ev->cal.hz_num;
    c->hz_den = ev->cal.hz_den;
    c->uncertainty_ppm = ev->cal.uncertainty_ppm;
    return;
  }
  tkc_strlcpy(c->why,
              ev->cal.ns           ? "calibration failed"
              : ev->cal_deferrable ? "not calibrated yet: a published frequency is "
                                     "used first, the first refinement measures it"
                                   : "not calibrated: the counter was not going to "
                                     "be used",
              sizeof c->why);
}

void tkc_list_claims(tickclock_evidence *ev) {
  tickclock_freq c;
  unsigned i;
  ev->n_claims = 0;
  tkc_cal_claim(ev, &c);
  tkc_claim_add(ev, &c);
  if (ev->arch_counter != TICKCLOCK_SOURCE_TSC) {
    /* the architecture's own statement (firmware can program CNTFRQ
     * wrongly; under QEMU the POWER timebase and RISC-V time run at the
     * host's TSC rate: the decision checks it against calibration) */
    if (ev->arch_nominal.ok) tkc_claim_add(ev, &ev->arch_nominal);
    return;
  }
  tkc_perf_claim(ev, &c);
  tkc_claim_add(ev, &c);
  for (i = 0; i < TKC_X86_CLAIMS; i++) tkc_claim_add(ev, &ev->x86.claims[i]);
  tkc_pv_claim(&ev->pv, ev->clocksource, &c);
  tkc_claim_add(ev, &c);
}
