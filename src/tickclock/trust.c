/* tickclock — the trust policy for the hardware counter: can it be read
 * without trapping (steps 1), and may an automatic choice use it (steps
 * 2-4 of the policy in README.md). Pure: evidence in, verdict and reason
 * out. */
#include "decide.h"
#include "text.h"

#include <string.h>

/* Can the arch counter be read without trapping? */
int tkc_counter_executable(const tickclock_evidence *ev, char *why, size_t n) {
  if (ev->arch_counter == 0) {
    tkc_strlcpy(why, "no hardware counter read is built for this CPU architecture", n);
    return 0;
  }
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC) {
    if (!ev->x86.have_cpuid) {
      tkc_strlcpy(why, "no CPUID instruction: cannot tell whether RDTSC exists", n);
      return 0;
    }
    if (!ev->x86.tsc) {
      tkc_strlcpy(why, "CPUID.01H:EDX[4] (TSC) is clear: RDTSC may not exist", n);
      return 0;
    }
    if (ev->tsc_prctl == TICKCLOCK_PRCTL_SIGSEGV) {
      tkc_strlcpy(why,
                  "RDTSC is disabled for this process (prctl PR_SET_TSC = "
                  "PR_TSC_SIGSEGV): it would trap",
                  n);
      return 0;
    }
  }
  if (ev->counter_at_known && UINT64_MAX - ev->counter_at < TKC_WRAP_MARGIN) {
    tkc_fmt(why, n,
            "the counter reads 0x%016llx, within 2^58 ticks of 2^64: it could wrap within this "
            "process's life, and a tick after the wrap would not compare with one before it",
            (unsigned long long)ev->counter_at);
    return 0;
  }
  return 1;
}

int tkc_is_paravirt_clock(const char *cs) {
  return strcmp(cs, "kvm-clock") == 0 || strcmp(cs, "hyperv_clocksource_tsc_page") == 0 ||
         strcmp(cs, "hyperv_clocksource_msr") == 0 || strcmp(cs, "xen") == 0;
}

/* When the kernel's clock itself runs on the TSC (clocksource tsc, or
 * kvm-clock/Hyper-V's page, which scale it), clock_gettime in the vDSO
 * executes RDTSC too: a trapping RDTSC slows both, so the read-cost
 * comparison can hardly refuse anything. (What calibration cannot see is
 * said on the calibration's own entry.) */
int tkc_vdso_reads_counter(const tickclock_evidence *ev) {
  return ev->arch_counter == TICKCLOCK_SOURCE_TSC && ev->os_linux &&
         (strcmp(ev->clocksource, "tsc") == 0 || tkc_is_paravirt_clock(ev->clocksource));
}

const tickclock_freq *tkc_pv_claim_of(const tickclock_evidence *ev) {
  unsigned i;
  for (i = 0; i < ev->n_claims; i++)
    if (ev->claims[i].method == TICKCLOCK_FREQ_PVCLOCK) return &ev->claims[i];
  return NULL;
}

/* Which of the clock page's checks failed, for a refusal's reason. */
static const char *tkc_pv_why(const tickclock_evidence *ev) {
  const tickclock_freq *pv = tkc_pv_claim_of(ev);
  return pv != NULL && !pv->ok ? pv->why : "no clock page claim";
}

/* Is word a blank-separated entry of list? */
int tkc_has_word(const char *list, const char *word) {
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
static int tkc_off_linux_sync(const tickclock_evidence *ev, char *why, size_t n) {
  const tickclock_x86_facts *x = &ev->x86;
  if (ev->warp_checked && !ev->warp_ok) {
    tkc_fmt(why, n,
            "no kernel sync verdict, and a cross-CPU warp check saw the TSC step back "
            "(%.1f ns): per-CPU offsets",
            ev->warp_max_ns);
    return 0;
  }
  if (ev->cpu_packages > 1 && !x->tsc_adjust) {
    tkc_fmt(why, n,
            "no kernel sync verdict, %d packages and no TSC_ADJUST (CPUID.(7,0):EBX[1]): "
            "per-socket offsets cannot be ruled out",
            ev->cpu_packages);
    return 0;
  }
  if (ev->cpu_packages > 1 && !ev->warp_checked) {
    tkc_fmt(why, n,
            "no kernel sync verdict and %d packages: the invariant bit alone does not "
            "rule out per-socket offsets, and no warp check ran",
            ev->cpu_packages);
    return 0;
  }
  return 1;
}

/* Is the executable counter trustworthy for automatic use? */
int tkc_counter_trusted(const tickclock_evidence *ev, char *why, size_t n) {
  int verdict = TKC_TRUST_YES;
  if (ev->arch_counter == TICKCLOCK_SOURCE_TSC) {
    const tickclock_x86_facts *x = &ev->x86;
    /* Only Xen's "host TSC reliable" (without vtsc) is a promise. Hyper-V's
     * 0x40000003 EAX[15] is not: it grants the guest access to the
     * invariant-TSC control MSR, which the guest kernel must write before
     * the TSC is invariant; CPUID.80000007H:EDX[8] as the guest sees it
     * is the answer (Windows and Linux guests on Hyper-V with bit 15 set
     * and the MSR not written see it clear, and their TSC can change rate
     * across a live migration). */
    int hv_promise = x->xen_leaf3_valid && (x->xen_tsc_flags & TICKCLOCK_XEN_TSC_RELIABLE) &&
                     !(x->xen_tsc_flags & TICKCLOCK_XEN_TSC_VTSC);
    if (x->xen_leaf3_valid && (x->xen_tsc_flags & TICKCLOCK_XEN_TSC_VTSC)) {
      tkc_fmt(why, n,
              "Xen emulates RDTSC for this guest (leaf 0x%08x EAX[0] vtsc, tsc_mode %u): "
              "every read traps to the hypervisor",
              (unsigned)(x->xen_base + 3), (unsigned)x->xen_tsc_mode);
      return TKC_TRUST_NO;
    }
    if (!x->invariant_tsc && !hv_promise) {
      if (!x->invariant_known)
        tkc_fmt(why, n,
                "CPUID leaf 0x80000007 is beyond the maximum extended leaf 0x%08x and no "
                "hypervisor promises a stable TSC: invariant TSC unknown",
                (unsigned)x->max_ext_leaf);
      else if (x->hyperv_valid && x->hyperv_tsc_invariant)
        tkc_strlcpy(why,
                    "Hyper-V grants the invariant-TSC control (0x40000003 EAX[15]) but "
                    "the guest's CPUID.80000007H:EDX[8] is clear: not enabled, no promise",
                    n);
      else
        tkc_strlcpy(why,
                    "CPUID.80000007H:EDX[8] (invariant TSC) is clear and no hypervisor "
                    "promises a stable TSC: the TSC may stop or change rate",
                    n);
      return TKC_TRUST_NO;
    }
    if (!ev->os_linux && !tkc_off_linux_sync(ev, why, n)) return TKC_TRUST_NO;
  }
  if (ev->os_linux) {
    if (!ev->clocksource_known) {
      tkc_strlcpy(why,
                  "cannot read " TKC_SYSFS_CURRENT_CLOCKSOURCE
                  ": the kernel's verdict on the counter is unknown",
                  n);
      return TKC_TRUST_NO;
    }
    if (ev->arch_counter == TICKCLOCK_SOURCE_TSC && strcmp(ev->clocksource, "tsc") != 0) {
      int listed = ev->available_known && tkc_has_word(ev->available_clocksource, "tsc");
      const tickclock_freq *pv = tkc_pv_claim_of(ev);
      if (pv != NULL && pv->ok) {
        /* the kernel's own clock is this TSC scaled by a page the host
         * promises is one for every vCPU: trusted at the page's rate,
         * once calibration agrees with it */
        verdict = TKC_TRUST_IF_PV_AGREES;
      } else if (!tkc_is_paravirt_clock(ev->clocksource)) {
        tkc_fmt(why, n,
                "the kernel's clocksource is '%s', not 'tsc': the kernel rejected the "
                "TSC (watchdog or sync check)",
                ev->clocksource);
        return TKC_TRUST_NO;
      } else if (!listed) {
        tkc_fmt(why, n,
                "%s; and the kernel uses the paravirtual clock '%s' and does not offer 'tsc' "
                "(available: '%s'): it marked the TSC unstable or never registered it",
                tkc_pv_why(ev), ev->clocksource,
                ev->available_known ? ev->available_clocksource : "unknown");
        return TKC_TRUST_NO;
      } else {
        unsigned i;
        int hv = 0;
        for (i = 0; i < ev->n_claims; i++)
          if (ev->claims[i].ok && ev->claims[i].method == TICKCLOCK_FREQ_HYPERVISOR) hv = 1;
        if (!hv) {
          tkc_fmt(why, n,
                  "%s; and the kernel prefers the paravirtual clock '%s' and the "
                  "hypervisor publishes no TSC frequency leaf to cross-check the TSC against",
                  tkc_pv_why(ev), ev->clocksource);
          return TKC_TRUST_NO;
        }
        verdict = TKC_TRUST_IF_HV_AGREES;
      }
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
      tkc_fmt(why, n,
              "KVM guest, the kernel did not pick the TSC, and KVM's feature leaf "
              "0x%08x is absent: TSC stability across vCPUs unknown",
              (unsigned)(ev->x86.kvm_base + 1));
    else
      tkc_fmt(why, n,
              "KVM guest, the kernel did not pick the TSC, and KVM does not set "
              "CLOCKSOURCE_STABLE_BIT (0x%08x EAX[24]): host TSC not stable across vCPUs",
              (unsigned)(ev->x86.kvm_base + 1));
    return TKC_TRUST_NO;
  }
  if (ev->counter_read_ns > 0 && ev->os_read_ns > 0 && ev->counter_read_ns > ev->os_read_ns) {
    tkc_fmt(why, n,
            "a counter read costs %.1f ns, more than clock_gettime's %.1f ns: trapped or "
            "emulated",
            ev->counter_read_ns, ev->os_read_ns);
    return TKC_TRUST_NO;
  }
  return verdict;
}
