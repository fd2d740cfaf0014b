/* tickclock — the decider: evidence in, decision out. Pure: no OS calls,
 * no CPUID, no clock reads; tested on recorded evidence (tests/fixtures).
 *
 * Policy (x86 TSC), each refusal recorded as the candidate's reason:
 *  1. Executable: CPUID present, CPUID.01H:EDX[4] set, not disabled with
 *     prctl(PR_SET_TSC, PR_TSC_SIGSEGV). A forced TSC
 *     (TICKCLOCK_SOURCE=tsc / tickclock_config) is honoured past this point
 *     only: never execute what may trap.
 *  2. Not emulated: Xen leaf base+3 EAX[0] (vtsc) means every RDTSC traps.
 *     Stable rate: invariant TSC (CPUID.80000007H:EDX[8] as this guest sees
 *     it, gated on the maximum extended leaf), or Xen's promise of a stable
 *     TSC: leaf base+3 EAX[1] (host TSC reliable) without vtsc. Hyper-V's
 *     0x40000003 EAX[15] is no promise: it only lets the guest kernel turn
 *     invariance on (then EDX[8] shows it).
 *     Off Linux (no kernel sync verdict): a failed warp check refuses; more
 *     than one package needs TSC_ADJUST and a passed warp check.
 *  3. The Linux kernel's verdict (current_clocksource, available_clocksource):
 *     - "tsc": the kernel's own checks (tsc_sync, the clocksource watchdog)
 *       passed: trusted.
 *     - a paravirtual clock ("kvm-clock", "hyperv_clocksource_tsc_page",
 *       "hyperv_clocksource_msr", "xen"): the kernel prefers the
 *       hypervisor's clock, which corrects for TSC scaling and migration.
 *       Accepted only when "tsc" is also listed in available_clocksource
 *       (the kernel registered it: it was not marked unstable) AND the
 *       hypervisor publishes the TSC frequency (VMware/KVM leaf base+0x10,
 *       Xen leaf base+3) AND that frequency agrees with our calibration
 *       within the bound below (and, for KVM, see 3a). When "tsc" is not listed at all (marked
 *       unstable: boot parameter, failed sync, watchdog) it is refused.
 *     - anything else (hpet, acpi_pm, jiffies, ...): the kernel rejected
 *       the TSC: refused.
 *     - no readable clocksource on Linux: refused (verdict unknown).
 *  3a. KVM guests whose kernel did not pick the TSC (kvm-clock, or no
 *     kernel verdict): KVM_FEATURE_CLOCKSOURCE_STABLE_BIT (KVM base+1 EAX[24])
 *     is required.
 *  4. Read cost: a counter read must not cost more than clock_gettime (a
 *     hypervisor that traps RDTSC makes it slower than the vDSO). Weak
 *     where the kernel's clock runs on the TSC: the vDSO then executes
 *     RDTSC itself and a trap slows both; the chosen TSC's reason says so.
 *  5. Calibration: it must succeed, and (automatic choice only) its
 *     tightest (counter, clock, counter) brackets must bound the frequency
 *     within TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM: wider means the two reads
 *     of every bracket disagree (per-CPU TSC offsets, a warp) or the
 *     thread was preempted throughout.
 * Otherwise the OS clock (CLOCK_MONOTONIC), whose ticks are nanoseconds.
 * A forced TSC skips 2-4 (their failure is kept as the caveat in the
 * candidate's reason) but not calibration and the frequency cross-check.
 *
 * Frequency: whenever the counter is used it is calibrated against
 * CLOCK_MONOTONIC_RAW (calibrate.c: tightest bracket, bound
 * cal.uncertainty_ppm), and every other source found is compared with it:
 *    perf_page            kernel's own time_mult/time_shift (cap_user_time)
 *    cpuid_15h_*          leaf 0x15: ECX, else the crystal table, else 0x16 (cpuid_x86.c)
 *    hypervisor_40000010  VMware/KVM timing leaf, kHz
 *    xen_leaf3            Xen guest TSC kHz
 *    cpuid_16h            leaf 0x16 base MHz (nominal)
 * A source is refused when |ppm vs calibration| exceeds
 *    TICKCLOCK_AGREE_PPM (25) + cal.uncertainty_ppm + its own quantisation.
 * 25 ppm: far above what an honest source should show (a kHz leaf is
 * quantised to < 1 ppm; on the development host the kernel's tsc_khz and
 * a 1 s reference agree with a 20 ms calibration within 0.1 ppm, the
 * calibration bound there being ~2 ppm), far below the errors
 * this is meant to catch (a nominal base MHz: 0.1-0.5 %; a wrong crystal;
 * a VMM passing the host's leaf 0x15 through a TSC-scaled guest).
 * A crystal from tickclock's table (cpuid_15h_known_crystal: the CPU
 * states a ratio, not the crystal) is a claim like any other source: used
 * only when calibration agrees; the crystals in use differ by 4 % or more
 * (19.2, 24, 25, 38.4 MHz), so a wrong entry cannot pass.
 * Among the sources that agree, the first in this order is used:
 *    perf_page > cpuid_15h crystal/known crystal on bare metal >
 *    hypervisor leaf > cpuid_15h crystal/known crystal in a VM >
 *    calibration > cpuid_15h_from_16h > cpuid_16h.
 * Rationale: the kernel's conversion and a crystal the CPU states are
 * exact; a hypervisor leaf is exact to 1 kHz; a VM's leaf 0x15 is whatever
 * the VMM chose to show, so it ranks below the hypervisor's own leaf; a
 * base MHz is a nominal figure (Skylake's 4000 MHz base vs its 4008 MHz
 * TSC), so measurement beats it. Every pairwise disagreement is recorded
 * (tickclock_info.freq_disagreement_ppm), and every source kind appears in
 * tickclock_info.freqs, the ones that gave nothing with the reason.
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

/* Copies src as printable ASCII: backslash, control bytes and bytes
 * >= 0x7f become \\, \n, \r, \t or \xHH, so text that came from the user
 * (an environment variable, a file name) prints as one line and cannot
 * drive the terminal. Truncates between escapes, never inside one. */
void tickclock__escape(char *dst, size_t n, const char *src) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (n == 0) return;
  for (; *src; src++) {
    unsigned char c = (unsigned char)*src;
    char e[4];
    size_t k = 0, j;
    if (c == '\\') { e[k++] = '\\'; e[k++] = '\\'; }
    else if (c == '\n') { e[k++] = '\\'; e[k++] = 'n'; }
    else if (c == '\r') { e[k++] = '\\'; e[k++] = 'r'; }
    else if (c == '\t') { e[k++] = '\\'; e[k++] = 't'; }
    else if (c < 0x20 || c >= 0x7f) {
      e[k++] = '\\'; e[k++] = 'x'; e[k++] = hex[c >> 4]; e[k++] = hex[c & 15];
    } else {
      e[k++] = (char)c;
    }
    if (o + k >= n) break;
    for (j = 0; j < k; j++) dst[o++] = e[j];
  }
  dst[o] = '\0';
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

static int tickclock__is_paravirt_clock(const char *cs) {
  return strcmp(cs, "kvm-clock") == 0 || strcmp(cs, "hyperv_clocksource_tsc_page") == 0 ||
         strcmp(cs, "hyperv_clocksource_msr") == 0 || strcmp(cs, "xen") == 0;
}

/* Is word a blank-separated entry of list? */
static int tickclock__has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  const char *p = list;
  while (*p) {
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, word, n) == 0 && (p[n] == '\0' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n'))
      return 1;
    while (*p && *p != ' ' && *p != '\t') p++;
  }
  return 0;
}

/* Trust verdicts */
#define TICKCLOCK__TRUST_NO 0
#define TICKCLOCK__TRUST_YES 1
#define TICKCLOCK__TRUST_IF_HV_AGREES 2 /* paravirt clock: needs the hypervisor leaf to agree */

/* Off Linux there is no kernel verdict on TSC synchronisation (Linux's
 * tsc_sync checks every CPU at bring-up and uses IA32_TSC_ADJUST to undo
 * firmware writes; its watchdog catches the rest). The invariant bit says
 * the rate is constant, not that the CPUs agree: multi-socket boards come
 * out of reset with per-socket offsets, and firmware that writes the TSC
 * leaves per-CPU ones. So: a warp check that saw a read step back across
 * CPUs refuses; more than one package needs TSC_ADJUST (an OS can detect
 * and undo offsets only with it) and a passed warp check over every CPU
 * pair. One package, or a count the gatherer could not learn, keeps the
 * invariant bit as the basis (the reason says which). */
static int tickclock__off_linux_sync(const tickclock_evidence *ev, char *why, size_t n) {
  const tickclock_x86_facts *x = &ev->x86;
  if (ev->warp_checked && !ev->warp_ok) {
    tickclock__fmt(why, n,
                   "no kernel sync verdict, and a cross-CPU warp check saw the TSC step back "
                   "(%.1f ns): per-CPU offsets",
                   ev->warp_max_ns);
    return 0;
  }
  if (ev->cpu_packages > 1 && !x->tsc_adjust) {
    tickclock__fmt(why, n,
                   "no kernel sync verdict, %d packages and no TSC_ADJUST (CPUID.(7,0):EBX[1]): "
                   "per-socket offsets cannot be ruled out",
                   ev->cpu_packages);
    return 0;
  }
  if (ev->cpu_packages > 1 && !ev->warp_checked) {
    tickclock__fmt(why, n,
                   "no kernel sync verdict and %d packages: the invariant bit alone does not "
                   "rule out per-socket offsets, and no warp check ran",
                   ev->cpu_packages);
    return 0;
  }
  return 1;
}

/* Is the executable counter trustworthy for automatic use? */
static int tickclock__counter_trusted(const tickclock_evidence *ev, char *why, size_t n) {
  int verdict = TICKCLOCK__TRUST_YES;
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC) {
    const tickclock_x86_facts *x = &ev->x86;
    /* Only Xen's "host TSC reliable" (without vtsc) is a promise. Hyper-V's
     * 0x40000003 EAX[15] is not: it grants the guest access to the
     * invariant-TSC control MSR, which the guest kernel must write before
     * the TSC is invariant; CPUID.80000007H:EDX[8] as the guest sees it
     * is the answer (Windows and Linux guests on Hyper-V with bit 15 set
     * and the MSR not written see it clear, and their TSC can change rate
     * across a live migration). */
    int hv_promise = x->xen_leaf3_valid && (x->xen_tsc_flags & 2u) && !(x->xen_tsc_flags & 1u);
    if (x->xen_leaf3_valid && (x->xen_tsc_flags & 1u)) {
      tickclock__fmt(why, n,
                     "Xen emulates RDTSC for this guest (leaf 0x%08x EAX[0] vtsc, tsc_mode %u): "
                     "every read traps to the hypervisor",
                     (unsigned)(x->xen_base + 3), (unsigned)x->xen_tsc_mode);
      return TICKCLOCK__TRUST_NO;
    }
    if (!x->invariant_tsc && !hv_promise) {
      if (!x->invariant_known)
        tickclock__fmt(why, n,
                       "CPUID leaf 0x80000007 is beyond the maximum extended leaf 0x%08x and no "
                       "hypervisor promises a stable TSC: invariant TSC unknown",
                       (unsigned)x->max_ext_leaf);
      else if (x->hyperv_valid && x->hyperv_tsc_invariant)
        tickclock__strlcpy(why,
                           "Hyper-V grants the invariant-TSC control (0x40000003 EAX[15]) but "
                           "the guest's CPUID.80000007H:EDX[8] is clear: not enabled, no promise",
                           n);
      else
        tickclock__strlcpy(why,
                           "CPUID.80000007H:EDX[8] (invariant TSC) is clear and no hypervisor "
                           "promises a stable TSC: the TSC may stop or change rate",
                           n);
      return TICKCLOCK__TRUST_NO;
    }
    if (!ev->os_linux && !tickclock__off_linux_sync(ev, why, n)) return TICKCLOCK__TRUST_NO;
  }
  if (ev->os_linux) {
    if (!ev->clocksource_known) {
      tickclock__strlcpy(why,
                         "cannot read " TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE
                         ": the kernel's verdict on the counter is unknown",
                         n);
      return TICKCLOCK__TRUST_NO;
    }
    if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && strcmp(ev->clocksource, "tsc") != 0) {
      int listed = ev->available_known && tickclock__has_word(ev->available_clocksource, "tsc");
      if (!tickclock__is_paravirt_clock(ev->clocksource)) {
        tickclock__fmt(why, n,
                       "the kernel's clocksource is '%s', not 'tsc': the kernel rejected the "
                       "TSC (watchdog or sync check)",
                       ev->clocksource);
        return TICKCLOCK__TRUST_NO;
      }
      if (!listed) {
        tickclock__fmt(why, n,
                       "the kernel uses the paravirtual clock '%s' and does not offer 'tsc' "
                       "(available: '%s'): it marked the TSC unstable or never registered it",
                       ev->clocksource,
                       ev->available_known ? ev->available_clocksource : "unknown");
        return TICKCLOCK__TRUST_NO;
      }
      {
        tickclock_freq hv;
        if (!tickclock_x86_freq_hypervisor(&ev->x86, &hv)) {
          tickclock__fmt(why, n,
                         "the kernel prefers the paravirtual clock '%s' and the hypervisor "
                         "publishes no TSC frequency leaf to cross-check the TSC against",
                         ev->clocksource);
          return TICKCLOCK__TRUST_NO;
        }
      }
      verdict = TICKCLOCK__TRUST_IF_HV_AGREES;
    }
  }
  /* A KVM guest whose kernel did not pick the TSC (kvm-clock on Linux, or
   * no kernel verdict at all): KVM says the host's TSC is stable across
   * vCPUs (its master clock) with KVM_FEATURE_CLOCKSOURCE_STABLE_BIT. On
   * hosts without it (an unstable host TSC, old KVM) kvm-clock corrects
   * per-vCPU TSC differences the guest's raw RDTSC would see. */
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->x86.kvm_base != 0 &&
      !(ev->os_linux && strcmp(ev->clocksource, "tsc") == 0) &&
      !(ev->x86.kvm_features_valid && ((ev->x86.kvm_features >> 24) & 1u))) {
    if (!ev->x86.kvm_features_valid)
      tickclock__fmt(why, n,
                     "KVM guest, the kernel did not pick the TSC, and KVM's feature leaf "
                     "0x%08x is absent: TSC stability across vCPUs unknown",
                     (unsigned)(ev->x86.kvm_base + 1));
    else
      tickclock__fmt(why, n,
                     "KVM guest, the kernel did not pick the TSC, and KVM does not set "
                     "CLOCKSOURCE_STABLE_BIT (0x%08x EAX[24]): host TSC not stable across vCPUs",
                     (unsigned)(ev->x86.kvm_base + 1));
    return TICKCLOCK__TRUST_NO;
  }
  if (ev->counter_read_ns > 0 && ev->os_read_ns > 0 && ev->counter_read_ns > ev->os_read_ns) {
    tickclock__fmt(why, n,
                   "a counter read costs %.1f ns, more than clock_gettime's %.1f ns: trapped or "
                   "emulated",
                   ev->counter_read_ns, ev->os_read_ns);
    return TICKCLOCK__TRUST_NO;
  }
  return verdict;
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
  out->freq_detail = os == TICKCLOCK_SOURCE_SYSTEM ? "identity" : "query_performance_frequency";
  out->uncertainty_ppm = 0;
  out->resolution_ns = ev->os_resolution_ns > 0 ? ev->os_resolution_ns : 1e9 / (double)hz;
  tickclock_conv_init(&out->conv, out->hz_num, out->hz_den);
}

/* Preference rank (lower is preferred); see the policy at the top. */
static int tickclock__freq_rank(const tickclock_freq_candidate *c, int in_vm) {
  const char *n = c->name;
  if (strcmp(n, "perf_page") == 0) return 0;
  /* a non-x86 counter's stated frequency (arch register, device tree) */
  if (c->method == TICKCLOCK_FREQ_ARCH_REGISTER || c->method == TICKCLOCK_FREQ_OS) return 1;
  if (strcmp(n, "cpuid_15h_crystal") == 0 || strcmp(n, "cpuid_15h_known_crystal") == 0)
    return in_vm ? 3 : 1;
  if (strcmp(n, "hypervisor_40000010") == 0 || strcmp(n, "xen_leaf3") == 0) return 2;
  if (strcmp(n, "calibration") == 0) return 4;
  if (strcmp(n, "cpuid_15h_from_16h") == 0) return 5;
  return 6; /* cpuid_16h */
}

static tickclock_freq_candidate *tickclock__add_freq(tickclock_info *out, const char *name,
                                                     int method, uint64_t num, uint64_t den,
                                                     double unc) {
  tickclock_freq_candidate *c;
  if (out->n_freqs >= TICKCLOCK_MAX_FREQS || num == 0 || den == 0) return NULL;
  c = &out->freqs[out->n_freqs++];
  tickclock__reduce(&num, &den);
  c->name = name;
  c->method = method;
  c->available = 1;
  c->hz_num = num;
  c->hz_den = den;
  c->hz = (double)num / (double)den;
  c->uncertainty_ppm = unc;
  return c;
}

/* A source that gave no frequency, and why (so the reasons cover every
 * source, not just the ones found). */
static void tickclock__absent_freq(tickclock_info *out, const char *name, int method,
                                   const char *why) {
  tickclock_freq_candidate *c;
  if (out->n_freqs >= TICKCLOCK_MAX_FREQS) return;
  c = &out->freqs[out->n_freqs++];
  c->name = name;
  c->method = method;
  tickclock__fmt(c->reason, sizeof c->reason, "unavailable: %s", why);
}

static const char *tickclock__why_no_leaf15(const tickclock_x86_facts *x, char *b, size_t n) {
  if (strcmp(x->vendor, "GenuineIntel") != 0)
    tickclock__fmt(b, n, "the leaf 0x15 rule is Intel's (vendor '%s')", x->vendor);
  else if (!x->leaf15_valid)
    tickclock__fmt(b, n, "leaf 0x15 is beyond the maximum basic leaf 0x%x", (unsigned)x->max_leaf);
  else if (x->leaf15_den == 0 || x->leaf15_num == 0)
    tickclock__strlcpy(b, "leaf 0x15 reports no TSC/crystal ratio", n);
  else if (tickclock_x86_crystal_excluded(x) != NULL)
    tickclock__strlcpy(b, "leaf 0x15 gives a ratio but no crystal, the model is left out of the "
                          "crystal table (its parts differ) and leaf 0x16 gives no base", n);
  else
    tickclock__strlcpy(b, "leaf 0x15 gives a ratio but no crystal, the model has no known "
                          "crystal and leaf 0x16 gives no base frequency", n);
  return b;
}

static const char *tickclock__why_no_leaf16(const tickclock_x86_facts *x, char *b, size_t n) {
  if (strcmp(x->vendor, "GenuineIntel") != 0)
    tickclock__fmt(b, n, "leaf 0x16 is Intel's (vendor '%s')", x->vendor);
  else if (!x->leaf16_valid)
    tickclock__fmt(b, n, "leaf 0x16 is beyond the maximum basic leaf 0x%x", (unsigned)x->max_leaf);
  else
    tickclock__strlcpy(b, "leaf 0x16 reports a base frequency of 0", n);
  return b;
}

static const char *tickclock__why_no_hv(const tickclock_x86_facts *x, char *b, size_t n) {
  if (!x->hypervisor)
    tickclock__strlcpy(b, "no hypervisor (CPUID.1:ECX[31] clear)", n);
  else if (!x->hv_valid)
    tickclock__strlcpy(b, "hypervisor bit set but no hypervisor range at 0x40000000", n);
  else
    tickclock__fmt(b, n,
                   "hypervisor '%s' (max leaf 0x%08x) publishes no TSC frequency leaf "
                   "(VMware/KVM 0x40000010, Xen base+3)",
                   x->hv_signature, (unsigned)x->hv_max_leaf);
  return b;
}

static const char *tickclock__why_no_perf(const tickclock_evidence *ev, char *b, size_t n) {
  const tickclock_perf_page *p = &ev->perf;
  if (!p->attempted && ev->clocksource_known && strcmp(ev->clocksource, "tsc") != 0)
    tickclock__fmt(b, n,
                   "perf page not read: clocksource '%s'; the page has a TSC conversion "
                   "(cap_user_time) only when the kernel's clocks run on a stable native TSC",
                   ev->clocksource);
  else if (!p->attempted)
    tickclock__strlcpy(b, "perf_event mmap page not read (not Linux x86, or built without it)", n);
  else if (!p->ok)
    tickclock__fmt(b, n, "perf_event_open/mmap of a self-monitoring event failed (errno %d)",
                   p->err);
  else if (!p->cap_user_time)
    tickclock__strlcpy(b, "perf mmap page has cap_user_time = 0: the kernel does not publish a "
                          "TSC-to-ns conversion (its clock is not a stable native TSC)", n);
  else
    tickclock__fmt(b, n, "perf mmap page has unusable time_mult %u / time_shift %u",
                   (unsigned)p->time_mult, (unsigned)p->time_shift);
  return b;
}

/* Every frequency source for the arch counter: the ones found, and the
 * ones that were not, with the reason. */
static void tickclock__collect_freqs(const tickclock_evidence *ev, tickclock_info *out) {
  tickclock_freq f;
  char b[TICKCLOCK_REASON_LEN];
  if (ev->cal.ok)
    tickclock__add_freq(out, "calibration", TICKCLOCK_FREQ_CALIBRATED, ev->cal.hz_num,
                        ev->cal.hz_den, ev->cal.uncertainty_ppm);
  else
    tickclock__absent_freq(out, "calibration", TICKCLOCK_FREQ_CALIBRATED,
                           ev->cal.ns ? "calibration failed"
                                      : "not calibrated: the counter was not going to be used");
  if (ev->arch_counter != TICKCLOCK_SOURCE_TSC) {
    /* the architecture's own statement, preferred when it agrees with
     * calibration (firmware can program CNTFRQ wrongly; under QEMU the
     * POWER timebase and RISC-V time run at the host's TSC rate) */
    if (ev->arch_nominal.ok)
      tickclock__add_freq(out, ev->arch_nominal.name, ev->arch_nominal.method,
                          ev->arch_nominal.hz_num, ev->arch_nominal.hz_den,
                          ev->arch_nominal.uncertainty_ppm);
    return;
  }
  /* perf page: ns = cyc * mult >> shift, so Hz = 1e9 * 2^shift / mult */
  if (ev->perf.ok && ev->perf.cap_user_time && ev->perf.time_mult != 0 &&
      ev->perf.time_shift <= 32)
    tickclock__add_freq(out, "perf_page", TICKCLOCK_FREQ_PERF_PAGE,
                        UINT64_C(1000000000) << ev->perf.time_shift, ev->perf.time_mult,
                        1e6 / (double)ev->perf.time_mult);
  else
    tickclock__absent_freq(out, "perf_page", TICKCLOCK_FREQ_PERF_PAGE,
                           tickclock__why_no_perf(ev, b, sizeof b));
  if (tickclock_x86_freq_leaf15(&ev->x86, &f))
    tickclock__add_freq(out, f.name, f.method, f.hz_num, f.hz_den, f.uncertainty_ppm);
  else
    tickclock__absent_freq(out, "cpuid_15h", TICKCLOCK_FREQ_CPUID_15H,
                           tickclock__why_no_leaf15(&ev->x86, b, sizeof b));
  if (tickclock_x86_freq_hypervisor(&ev->x86, &f))
    tickclock__add_freq(out, f.name, f.method, f.hz_num, f.hz_den, f.uncertainty_ppm);
  else
    tickclock__absent_freq(out, "hypervisor", TICKCLOCK_FREQ_HYPERVISOR,
                           tickclock__why_no_hv(&ev->x86, b, sizeof b));
  if (tickclock_x86_freq_leaf16(&ev->x86, &f))
    tickclock__add_freq(out, f.name, f.method, f.hz_num, f.hz_den, f.uncertainty_ppm);
  else
    tickclock__absent_freq(out, "cpuid_16h", TICKCLOCK_FREQ_CPUID_16H,
                           tickclock__why_no_leaf16(&ev->x86, b, sizeof b));
}

/* Cross-check every source against calibration; pairwise matrix. */
static void tickclock__check_freqs(const tickclock_evidence *ev, tickclock_info *out) {
  unsigned i, j;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    if (!c->available) continue;
    if (strcmp(c->name, "calibration") == 0) {
      /* With clocksource tsc, CLOCK_MONOTONIC_RAW is the same TSC read on
       * the same CPU: an offset between CPUs moves both ends alike, so
       * neither calibration nor the drift check against that clock can
       * see it; a cross-CPU warp check can. */
      int raw_is_tsc = ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->os_linux &&
                       strcmp(ev->clocksource, "tsc") == 0;
      c->usable = 1;
      tickclock__fmt(c->reason, sizeof c->reason,
                     "measured against CLOCK_MONOTONIC_RAW over %.1f ms, +-%.2f ppm%s",
                     (double)ev->cal.ns / 1e6, ev->cal.uncertainty_ppm,
                     raw_is_tsc ? "; that clock is this TSC: blind to per-CPU offsets "
                                  "(validate: warp check)"
                                : "");
      continue;
    }
    if (!ev->cal.ok) {
      c->usable = 0;
      tickclock__strlcpy(c->reason, "not cross-checked: no calibration", sizeof c->reason);
      continue;
    }
    c->checked = 1;
    c->ppm_vs_calibration = tickclock__ppm(c->hz_num, c->hz_den, ev->cal.hz_num, ev->cal.hz_den);
    c->bound_ppm = TICKCLOCK_AGREE_PPM + ev->cal.uncertainty_ppm + c->uncertainty_ppm;
    if (c->ppm_vs_calibration > c->bound_ppm || c->ppm_vs_calibration < -c->bound_ppm) {
      c->usable = 0;
      tickclock__fmt(c->reason, sizeof c->reason,
                     "refused: %.3f MHz disagrees with calibration by %+.1f ppm (bound %.1f ppm)",
                     c->hz / 1e6, c->ppm_vs_calibration, c->bound_ppm);
    } else {
      c->usable = 1;
      tickclock__fmt(c->reason, sizeof c->reason,
                     "%sagrees with calibration: %+.2f ppm (bound %.1f ppm)",
                     strcmp(c->name, "cpuid_15h_known_crystal") == 0 ? "table crystal " : "",
                     c->ppm_vs_calibration, c->bound_ppm);
    }
  }
  out->max_disagreement_ppm = 0;
  for (i = 0; i < out->n_freqs; i++)
    for (j = 0; j < out->n_freqs; j++) {
      double d = i == j || !out->freqs[i].available || !out->freqs[j].available
                     ? 0
                     : tickclock__ppm(out->freqs[i].hz_num, out->freqs[i].hz_den,
                                         out->freqs[j].hz_num, out->freqs[j].hz_den);
      double a = d < 0 ? -d : d;
      out->freq_disagreement_ppm[i][j] = d;
      if (a > out->max_disagreement_ppm) out->max_disagreement_ppm = a;
    }
}

/* The preferred usable source, or NULL. */
static tickclock_freq_candidate *tickclock__pick_freq(const tickclock_evidence *ev,
                                                      tickclock_info *out) {
  tickclock_freq_candidate *best = NULL;
  unsigned i;
  int in_vm = ev->x86.hypervisor;
  for (i = 0; i < out->n_freqs; i++) {
    tickclock_freq_candidate *c = &out->freqs[i];
    if (!c->usable) continue;
    if (best == NULL || tickclock__freq_rank(c, in_vm) < tickclock__freq_rank(best, in_vm))
      best = c;
  }
  if (best) {
    for (i = 0; i < out->n_freqs; i++) {
      tickclock_freq_candidate *c = &out->freqs[i];
      if (c != best && c->usable && tickclock__freq_rank(c, in_vm) > tickclock__freq_rank(best, in_vm)) {
        char tmp[TICKCLOCK_REASON_LEN];
        tickclock__fmt(tmp, sizeof tmp, "%s; not used: %s ranks higher", c->reason, best->name);
        tickclock__strlcpy(c->reason, tmp, sizeof c->reason);
      }
    }
  }
  return best;
}

static void tickclock__env_refused(tickclock_info *out, int forced, const char *name,
                                   const char *because) {
  out->request_refused = 1;
  if (forced == 2)
    tickclock__fmt(out->env_error, sizeof out->env_error,
                   "TICKCLOCK_SOURCE=%s is unusable (%s); keeping the automatic choice", name,
                   because);
}

int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out) {
  int requested = TICKCLOCK_SOURCE_AUTO;
  int forced = 0;
  int executable = 0, trusted = TICKCLOCK__TRUST_NO, use_counter = 0;
  char exec_why[TICKCLOCK_REASON_LEN] = "";
  char trust_why[TICKCLOCK_REASON_LEN] = "";
  tickclock_candidate *sys, *cnt = NULL;
  tickclock_freq_candidate *fc = NULL;
  const char *cname = tickclock_source_name(ev->arch_counter);

  memset(out, 0, sizeof *out);

  /* 1. what was asked for: the config wins over the environment */
  if (ev->cfg_source != TICKCLOCK_SOURCE_AUTO) {
    requested = ev->cfg_source;
    forced = 1;
  } else if (ev->have_env && ev->env_value[0] != '\0') { /* empty = unset */
    int s = tickclock_source_from_name(ev->env_value);
    if (s < 0) {
      char shown[4 * sizeof ev->env_value];
      tickclock__escape(shown, sizeof shown, ev->env_value);
      tickclock__fmt(out->env_error, sizeof out->env_error,
               "TICKCLOCK_SOURCE='%s' is not one of auto, system, tsc, cntvct, timebase, tod, "
               "rdtime, qpc; keeping the automatic choice",
               shown);
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
      tickclock__env_refused(out, forced, tickclock_source_name(requested), because);
      forced = 0;
      requested = TICKCLOCK_SOURCE_AUTO;
    }
  }
  if (!forced) use_counter = cnt && executable && trusted != TICKCLOCK__TRUST_NO;

  /* 4. frequency: calibrate, collect every source, cross-check, pick */
  if (use_counter && !ev->cal.ok && ev->cal.ticks == 0 && ev->cal.ns == 0)
    return 1; /* not attempted yet: the caller calibrates and asks again */
  if (cnt) {
    tickclock__collect_freqs(ev, out);
    tickclock__check_freqs(ev, out);
  }
  if (use_counter) {
    const char *fail = NULL;
    char buf[TICKCLOCK_REASON_LEN];
    if (!ev->cal.ok) {
      fail = "calibration against CLOCK_MONOTONIC_RAW failed (the counter did not advance "
             "with the clock)";
    } else if (!forced && ev->cal.uncertainty_ppm > TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM) {
      tickclock__fmt(buf, sizeof buf,
                     "calibration brackets too wide (%.0f ppm > %.0f): counter reads on different "
                     "CPUs disagree (TSC warp) or every sample was preempted",
                     ev->cal.uncertainty_ppm, TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM);
      fail = buf;
    } else if (trusted == TICKCLOCK__TRUST_IF_HV_AGREES) {
      unsigned i;
      int agreed = 0;
      for (i = 0; i < out->n_freqs; i++)
        if (out->freqs[i].method == TICKCLOCK_FREQ_HYPERVISOR && out->freqs[i].usable) agreed = 1;
      if (!agreed) {
        tickclock__fmt(trust_why, sizeof trust_why,
                       "the kernel prefers the paravirtual clock '%s' and the hypervisor's TSC "
                       "frequency disagrees with calibration",
                       ev->clocksource);
        trusted = TICKCLOCK__TRUST_NO;
        if (!forced) fail = trust_why; /* a forced TSC stays, with this as its caveat */
      }
    }
    if (fail == NULL) {
      fc = tickclock__pick_freq(ev, out);
      if (fc == NULL) fail = "no frequency source agrees with calibration";
      else if (tickclock_conv_init(&out->conv, fc->hz_num, fc->hz_den) != TICKCLOCK_OK) {
        tickclock__fmt(buf, sizeof buf, "frequency %.0f Hz is outside the supported 1 Hz..1 THz",
                       fc->hz);
        fail = buf;
        fc = NULL;
      }
    }
    if (fail != NULL) {
      use_counter = 0;
      trusted = TICKCLOCK__TRUST_NO;
      if (fail != trust_why) tickclock__strlcpy(trust_why, fail, sizeof trust_why);
      if (forced) {
        tickclock__env_refused(out, forced, cname, trust_why);
        forced = 0;
      }
    }
  }

  /* 5. record */
  out->forced = forced;
  if (use_counter && fc != NULL) {
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
    if (forced && trusted == TICKCLOCK__TRUST_NO)
      tickclock__fmt(cnt->reason, sizeof cnt->reason, "forced by %s although %s",
               forced == 1 ? "tickclock_config" : "TICKCLOCK_SOURCE", trust_why);
    else {
      const char *basis = ev->arch_counter != TICKCLOCK_SOURCE_TSC ? "counter trusted"
                          : trusted == TICKCLOCK__TRUST_IF_HV_AGREES
                              ? "kernel offers tsc, hypervisor frequency agrees"
                          : ev->os_linux ? "invariant TSC, clocksource tsc"
                          : ev->warp_checked ? "invariant TSC, no kernel verdict, warp check passed"
                          : ev->cpu_packages == 1 ? "invariant TSC, one package, no kernel verdict"
                                                  : "invariant TSC, no kernel verdict, packages "
                                                    "unknown";
      char cost[48];
      /* When the kernel's clock itself runs on the TSC (clocksource tsc,
       * or kvm-clock/Hyper-V's page, which scale it), clock_gettime in the
       * vDSO executes RDTSC too: a trapping RDTSC slows both, so the
       * read-cost comparison can hardly refuse anything. (What calibration
       * cannot see is said on the calibration's own entry.) */
      int vdso_tsc = ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->os_linux &&
                     (strcmp(ev->clocksource, "tsc") == 0 ||
                      tickclock__is_paravirt_clock(ev->clocksource));
      if (ev->counter_read_ns <= 0)
        tickclock__strlcpy(cost, "read cost not measured", sizeof cost);
      else
        tickclock__fmt(cost, sizeof cost, "%.1f ns per read", ev->counter_read_ns);
      tickclock__fmt(cnt->reason, sizeof cnt->reason, "%s%s, %s%s, %.6f MHz from %s",
                     forced ? "forced; " : "", basis, cost,
                     vdso_tsc ? " (the vDSO reads the TSC too: cannot show a trap)" : "",
                     out->hz / 1e6, fc->name);
    }
    tickclock__strlcpy(sys->reason, "not needed: the hardware counter is trusted and cheaper",
                       sizeof sys->reason);
    tickclock__fmt(out->why, sizeof out->why, "%s: %s", cname, cnt->reason);
  } else {
    tickclock__fill_system(ev, out);
    sys->chosen = 1;
    if (cnt) {
      cnt->usable = executable && trusted == TICKCLOCK__TRUST_YES;
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
