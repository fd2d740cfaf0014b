/* tickclock internals — the decider: evidence in, decision out. Pure
 * (decide.c, with trust.c and freq_select.c). */
#ifndef TICKCLOCK_DECIDE_H
#define TICKCLOCK_DECIDE_H

#include "sys.h"
#include "tickclock.h"
#include "evidence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the decider's limits ---- */
/* Agreement bound: a frequency source is refused when it disagrees with
 * calibration by more than TICKCLOCK_AGREE_PPM plus the calibration's own
 * uncertainty and the source's quantisation. */
#define TICKCLOCK_AGREE_PPM 25.0
/* An automatic choice refuses the counter when the calibration's own bound
 * exceeds this (policy step 5 in README.md): the quick calibration is
 * lengthened until it is under it (calibrate.c), and a frequency worse than
 * it is never published for the counter. */
#define TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM TICKCLOCK_CAL_TARGET_PPM

/* Pure: evidence -> decision (a filled tickclock_info, conversion included).
 * Returns 1 if the decision needs a calibration of the arch counter that
 * the evidence does not yet hold (the caller calibrates and decides again),
 * 0 when final. */
TKC_INTERNAL int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out);

/* One decision in progress: the stages' working state, which
 * tkc_decide_start leaves for tkc_decide_resume. */
typedef struct tkc_choice {
  int requested;    /* TICKCLOCK_SOURCE_*: what was asked for */
  int forced;       /* TICKCLOCK_FORCED_*: who asked */
  int executable;   /* the counter can be read without trapping */
  int trusted;      /* TKC_TRUST_* */
  int vdso_counter; /* the kernel's clock_gettime reads this counter too */
  int use_counter;
  char exec_why[TICKCLOCK_REASON_LEN];
  char trust_why[TICKCLOCK_REASON_LEN];
  tickclock_candidate *sys, *cnt;
  tickclock_freq_candidate *fc;
  int freq_src[TICKCLOCK_MAX_FREQS]; /* each out->freqs entry's TKC_SRC_* */
  const char *cname;
} tkc_choice;

/* The same decision made once around a calibration (initialisation):
 * tkc_decide_start is tickclock_decide, keeping its working state in d;
 * when it returns 1 the caller calibrates into ev->cal, lists the claims
 * again (tkc_list_claims) and calls tkc_decide_resume, which runs only the
 * frequency and record stages (request, candidates and choose read nothing
 * a calibration changes). out and d must stay where they are between. */
TKC_INTERNAL int tkc_decide_start(const tickclock_evidence *ev, tickclock_info *out, tkc_choice *d);
TKC_INTERNAL void tkc_decide_resume(const tickclock_evidence *ev, tickclock_info *out,
                                    tkc_choice *d);

/* The OS clock os (TICKCLOCK_SOURCE_SYSTEM: ticks are ns; _QPC: ticks at
 * hz) as out's source and frequency: the one builder of the fallback's
 * state (the decision's, and re-validation's switch to it). resolution_ns
 * 0: one tick. */
TKC_INTERNAL void tkc_fill_os(tickclock_info *out, int os, uint64_t hz, double resolution_ns);

/* ---- the trust policy (trust.c) ---- */
/* A counter reading fewer than TKC_WRAP_MARGIN ticks below 2^64 is
 * refused: a hypervisor's offset can start a guest's TSC anywhere, and a
 * counter that wraps past 2^64 steps the conversion back by 2^64 ticks
 * (7.4e9 s at 2.5 GHz) and makes a tick after the wrap incomparable with
 * one before it. 2^58 ticks are 1.8 years at 5 GHz, 3.7 at 2.5 GHz: more
 * than a process lives. (The s390x TOD clock, which counts from 1900 and
 * wraps in September 2042, comes within it in 2040.) */
#define TKC_WRAP_MARGIN (UINT64_C(1) << 58)
/* Can the arch counter be read without trapping, and used without
 * wrapping? (pure; reason in why) */
TKC_INTERNAL int tkc_counter_executable(const tickclock_evidence *ev, char *why, size_t n);
/* Trust verdicts for automatic use of an executable counter. */
#define TKC_TRUST_NO 0
#define TKC_TRUST_YES 1
#define TKC_TRUST_IF_HV_AGREES 2 /* paravirt clock: needs the hypervisor leaf to agree */
#define TKC_TRUST_IF_PV_AGREES 3 /* paravirt clock: its page's rate must agree */
/* Policy steps 2-4 for the executable counter: a TKC_TRUST_*
 * verdict, the reason in why when it is not TRUST_YES. */
TKC_INTERNAL int tkc_counter_trusted(const tickclock_evidence *ev, char *why, size_t n);
/* The clock page's claim in ev's list, or NULL (not x86). */
TKC_INTERNAL const tickclock_freq *tkc_pv_claim_of(const tickclock_evidence *ev);
/* Is word a blank-separated entry of list (a kernel clocksource list)? */
TKC_INTERNAL int tkc_has_word(const char *list, const char *word);
/* Is cs a paravirtual clocksource (kvm-clock, Hyper-V's, Xen's)? */
TKC_INTERNAL int tkc_is_paravirt_clock(const char *cs);
/* Does the kernel's clock_gettime execute the counter's read too (the
 * TSC under clocksource tsc or a paravirtual clock that scales it)? Then
 * a trapping read slows both and the read-cost check can hardly refuse. */
TKC_INTERNAL int tkc_vdso_reads_counter(const tickclock_evidence *ev);

/* ---- frequency-source selection (freq_select.c) ---- */
/* Calibration and every claim in the evidence into out->freqs, each
 * entry's TKC_SRC_* into src[] (TKC_SRC_NONE for a source that gave no
 * frequency, with the reason). */
TKC_INTERNAL void tkc_collect_freqs(const tickclock_evidence *ev, tickclock_info *out, int *src);
/* Cross-checks every source against calibration; the pairwise matrix.
 * provisional (no calibration yet, it may be deferred): the published
 * sources are usable unchecked, the others not. */
TKC_INTERNAL void tkc_check_freqs(const tickclock_evidence *ev, tickclock_info *out, const int *src,
                                  int provisional);
/* A source stated by whoever runs the counter (perf page, leaf 0x15 with
 * its crystal on bare metal, a hypervisor leaf, the architecture's
 * register): one that may be used before calibration. */
TKC_INTERNAL int tkc_freq_published(int source, int in_vm);
/* The preferred usable source by rank, or NULL. */
TKC_INTERNAL tickclock_freq_candidate *tkc_pick_freq(const tickclock_evidence *ev,
                                                     tickclock_info *out, const int *src);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_DECIDE_H */
