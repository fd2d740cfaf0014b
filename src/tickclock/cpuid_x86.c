/* tickclock — x86 CPUID: the native leaf source, the pure decoder and the
 * pure frequency rules.
 *
 * The native source executes the instruction through cpuid_shim.h (three
 * paths, each forceable). Everything else here is a pure function of the
 * leaves a tickclock_cpuid_fn returns, so it runs the same on this CPU and
 * on a recorded fixture.
 *
 * Gating: a leaf past the maximum of its range is never asked for — real
 * CPUs answer such a leaf with the data of the highest basic leaf, QEMU
 * with another leaf's. Ranges: basic (leaf 0 EAX), extended (0x80000000
 * EAX, accepted only inside 0x80000000..0x8000ffff), hypervisor (only when
 * CPUID.1:ECX[31] is set; each base 0x40000000 + k*0x100 has its own
 * maximum in its EAX).
 */
#include "cpuid_x86.h"
#include "cpuid_shim.h"
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tickclock_cpuid_native(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  (void)ctx;
  memset(out, 0, sizeof *out);
#if defined(TKC_X86)
  if (!tkc_have_cpuid_insn()) return 0;
  {
    uint32_t r[4];
    tkc_cpuid_insn(leaf, subleaf, r);
    out->eax = r[0];
    out->ebx = r[1];
    out->ecx = r[2];
    out->edx = r[3];
  }
  return 1;
#else
  (void)leaf;
  (void)subleaf;
  return 0;
#endif
}

/* ---- decoding: a pure function of the leaves ---------------------------- */

static int tkc_x86_leaf(tickclock_cpuid_fn fn, void *ctx, uint32_t leaf, uint32_t sub, uint32_t max,
                        tickclock_cpuid_regs *r) {
  memset(r, 0, sizeof *r);
  if (leaf > max) return 0; /* past the range's maximum: absent, whatever it returns */
  return fn(ctx, leaf, sub, r);
}

/* The 4 bytes of a register as x86 stores them (little-endian, least
 * significant byte first), whatever the byte order of the CPU decoding it:
 * fixtures are replayed on big-endian s390x too, where memcpy of the
 * uint32_t would reverse every 4-character group ("uneGIeniletn"). */
static void tkc_x86_bytes(char *out, uint32_t v) {
  out[0] = (char)(v & 0xffu);
  out[1] = (char)((v >> 8) & 0xffu);
  out[2] = (char)((v >> 16) & 0xffu);
  out[3] = (char)((v >> 24) & 0xffu);
}

/* 12 signature bytes from three registers, in the given order. */
static void tkc_x86_sig(char out[13], uint32_t a, uint32_t b, uint32_t c) {
  tkc_x86_bytes(out + 0, a);
  tkc_x86_bytes(out + 4, b);
  tkc_x86_bytes(out + 8, c);
  out[12] = '\0';
}

static void tkc_x86_printable(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) *s = '.';
}

/* The hypervisors known by their signature at a base leaf (EBX, ECX, EDX):
 * the one table of signatures. */
static const struct {
  char sig[13];
  int kind;
} tkc_x86_hypervisors[] = {
    {"KVMKVMKVM\0\0\0", TICKCLOCK_HV_KVM}, {"XenVMMXenVMM", TICKCLOCK_HV_XEN},
    {"Microsoft Hv", TICKCLOCK_HV_HYPERV}, {"VMwareVMware", TICKCLOCK_HV_VMWARE},
    {"VBoxVBoxVBox", TICKCLOCK_HV_VBOX},
};

/* TICKCLOCK_HV_* for 12 signature bytes; TICKCLOCK_HV_OTHER if unknown. */
static int tkc_x86_hv_kind(const char *sig) {
  unsigned i;
  for (i = 0; i < sizeof tkc_x86_hypervisors / sizeof tkc_x86_hypervisors[0]; i++)
    if (memcmp(sig, tkc_x86_hypervisors[i].sig, 12) == 0) return tkc_x86_hypervisors[i].kind;
  return TICKCLOCK_HV_OTHER;
}

/* The maximum leaf of the hypervisor range at base, or 0 if the base leaf
 * does not look like one (EAX must be a leaf of this base's block). Old
 * KVM answered EAX = 0, meaning base + 1. */
static uint32_t tkc_x86_hv_max(uint32_t base, const tickclock_cpuid_regs *r, const char *sig) {
  if (r->eax >= base && r->eax <= base + 0xffu) return r->eax;
  if (r->eax == 0 && tkc_x86_hv_kind(sig) == TICKCLOCK_HV_KVM) return base + 1;
  return 0;
}

static void tkc_x86_decode_hv(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  tickclock_cpuid_regs r, primary;
  char sig[13];
  uint32_t base, max;
  /* the primary range at 0x40000000 */
  if (!fn(ctx, 0x40000000u, 0, &r)) return;
  primary = r;
  tkc_x86_sig(sig, r.ebx, r.ecx, r.edx);
  max = tkc_x86_hv_max(0x40000000u, &r, sig);
  if (max == 0) return;
  out->hv_valid = 1;
  out->hv_base = 0x40000000u;
  out->hv_max_leaf = max;
  memcpy(out->hv_signature, sig, 13);
  tkc_x86_printable(out->hv_signature);
  out->hv_kind = tkc_x86_hv_kind(sig);

  /* Hyper-V: 0x40000003 feature leaf */
  if (out->hv_kind == TICKCLOCK_HV_HYPERV && tkc_x86_leaf(fn, ctx, 0x40000003u, 0, max, &r)) {
    out->hyperv_valid = 1;
    out->hyperv_features = r.eax;
    out->hyperv_misc = r.edx;
    out->hyperv_freq_msrs = ((r.eax >> 11) & 1) && ((r.edx >> 8) & 1);
    out->hyperv_tsc_invariant = (r.eax >> 15) & 1;
  }
  /* VMware's timing leaf, also offered by KVM/QEMU (and Firecracker hosts
   * that expose it): base+0x10 EAX = TSC kHz, EBX = bus (APIC) kHz */
  if ((out->hv_kind == TICKCLOCK_HV_VMWARE || out->hv_kind == TICKCLOCK_HV_KVM) &&
      tkc_x86_leaf(fn, ctx, 0x40000010u, 0, max, &r)) {
    out->timing_leaf_valid = 1;
    out->timing_tsc_khz = r.eax;
    out->timing_bus_khz = r.ebx;
  }

  /* KVM and Xen may sit at any base 0x40000000 + k*0x100 when they also
   * offer Hyper-V enlightenments (Xen's Viridian, KVM's hv-* features put
   * "Microsoft Hv" at 0x40000000 and themselves at 0x40000100): then scan
   * 0x40000000..0x40010000 in steps of 0x100 like Linux's
   * hypervisor_cpuid_base. Otherwise the primary signature is the
   * hypervisor and only 0x40000000 is looked at: under a hypervisor every
   * CPUID is a VM exit (8 us each on the development host), and the full
   * scan would cost 2 ms at every initialisation. */
  for (base = 0x40000000u; base < 0x40010000u; base += 0x100u) {
    uint32_t m;
    int kind;
    if (base == 0x40000000u)
      r = primary;
    else if (out->hv_kind != TICKCLOCK_HV_HYPERV)
      break;
    else if (!fn(ctx, base, 0, &r))
      continue;
    tkc_x86_sig(sig, r.ebx, r.ecx, r.edx);
    m = tkc_x86_hv_max(base, &r, sig);
    if (m == 0) continue;
    kind = tkc_x86_hv_kind(sig);
    if (out->xen_base == 0 && kind == TICKCLOCK_HV_XEN && m >= base + 2) {
      out->xen_base = base;
      out->xen_max_leaf = m;
    } else if (out->kvm_base == 0 && kind == TICKCLOCK_HV_KVM) {
      out->kvm_base = base;
      if (tkc_x86_leaf(fn, ctx, base + 1, 0, m, &r)) {
        out->kvm_features_valid = 1;
        out->kvm_features = r.eax;
        out->kvm_hints = r.edx;
      }
    }
  }
  /* Xen base+3 subleaf 0: EAX flags, EBX tsc_mode, ECX guest TSC kHz */
  if (out->xen_base && tkc_x86_leaf(fn, ctx, out->xen_base + 3, 0, out->xen_max_leaf, &r)) {
    out->xen_leaf3_valid = 1;
    out->xen_tsc_flags = r.eax;
    out->xen_tsc_mode = r.ebx;
    out->xen_tsc_khz = r.ecx;
  }
}

static void tkc_x86_decode_leaves(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  tickclock_cpuid_regs r;
  uint32_t base_family, ext_family, base_model, ext_model;
  if (!fn(ctx, 0, 0, &r)) return;
  out->have_cpuid = 1;
  out->max_leaf = r.eax;
  tkc_x86_sig(out->vendor, r.ebx, r.edx, r.ecx); /* "Genu" "ineI" "ntel" */
  tkc_x86_printable(out->vendor);
  if (tkc_x86_leaf(fn, ctx, 1, 0, out->max_leaf, &r)) {
    base_family = (r.eax >> 8) & 0xf;
    ext_family = (r.eax >> 20) & 0xff;
    base_model = (r.eax >> 4) & 0xf;
    ext_model = (r.eax >> 16) & 0xf;
    out->stepping = r.eax & 0xf;
    out->family = base_family == 0xf ? base_family + ext_family : base_family;
    out->model =
        (base_family == 0x6 || base_family == 0xf) ? (ext_model << 4) | base_model : base_model;
    out->tsc = (r.edx >> 4) & 1;
    out->hypervisor = (int)((r.ecx >> 31) & 1);
  }
  if (tkc_x86_leaf(fn, ctx, 7, 0, out->max_leaf, &r)) {
    out->leaf7_valid = 1;
    out->tsc_adjust = (r.ebx >> 1) & 1;
  }
  if (tkc_x86_leaf(fn, ctx, 0x15, 0, out->max_leaf, &r)) {
    out->leaf15_valid = 1;
    out->leaf15_den = r.eax;
    out->leaf15_num = r.ebx;
    out->leaf15_crystal_hz = r.ecx;
  }
  if (tkc_x86_leaf(fn, ctx, 0x16, 0, out->max_leaf, &r)) {
    out->leaf16_valid = 1;
    out->base_mhz = r.eax & 0xffff;
    out->max_mhz = r.ebx & 0xffff;
    out->bus_mhz = r.ecx & 0xffff;
  }
  if (fn(ctx, 0x80000000u, 0, &r) && r.eax >= 0x80000000u && r.eax <= 0x8000ffffu)
    out->max_ext_leaf = r.eax;
  if (out->max_ext_leaf) {
    if (tkc_x86_leaf(fn, ctx, 0x80000001u, 0, out->max_ext_leaf, &r))
      out->rdtscp = (r.edx >> 27) & 1;
    if (tkc_x86_leaf(fn, ctx, 0x80000007u, 0, out->max_ext_leaf, &r)) {
      out->invariant_known = 1;
      out->invariant_tsc = (r.edx >> 8) & 1;
    }
  }
  if (out->hypervisor) tkc_x86_decode_hv(fn, ctx, out);
}

/* CPUID.80000002H..80000004H: the brand string, leading and trailing
 * blanks removed (facts decoded before: max_ext_leaf). */
void tkc_x86_decode_brand(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  tickclock_cpuid_regs r;
  char raw[49];
  uint32_t l;
  size_t i = 0, start = 0;
  out->brand[0] = '\0';
  if (out->max_ext_leaf < 0x80000004u) return;
  for (l = 0; l < 3; l++) {
    memset(&r, 0, sizeof r);
    tkc_x86_leaf(fn, ctx, 0x80000002u + l, 0, out->max_ext_leaf, &r);
    tkc_x86_bytes(raw + 16 * l + 0, r.eax);
    tkc_x86_bytes(raw + 16 * l + 4, r.ebx);
    tkc_x86_bytes(raw + 16 * l + 8, r.ecx);
    tkc_x86_bytes(raw + 16 * l + 12, r.edx);
  }
  raw[48] = '\0';
  while (raw[start] == ' ') start++;
  for (i = 0; raw[start + i] != '\0'; i++) out->brand[i] = raw[start + i];
  out->brand[i] = '\0';
  while (i > 0 && out->brand[i - 1] == ' ') out->brand[--i] = '\0';
  tkc_x86_printable(out->brand);
}

void tkc_x86_decode_timing(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  memset(out, 0, sizeof *out);
  tkc_x86_decode_leaves(fn, ctx, out);
  tickclock_x86_claims(out);
}

void tickclock_x86_decode(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  tkc_x86_decode_timing(fn, ctx, out);
  tkc_x86_decode_brand(fn, ctx, out);
}

/* ---- frequency rules ------------------------------------------------------ */

static int tkc_x86_is_intel(const tickclock_x86_facts *f) {
  return strcmp(f->vendor, "GenuineIntel") == 0;
}

/* No frequency: the reason in out->why; returns 0. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int
tkc_x86_none(tickclock_freq *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tkc_vfmt(out->why, sizeof out->why, fmt, ap);
  va_end(ap);
  return 0;
}

/* An Intel rule's first gates: the vendor, then the leaf inside the basic
 * range (valid). 1 when both pass; else 0 and the reason in out->why. */
static int tkc_x86_intel_leaf(const tickclock_x86_facts *f, const char *rule, unsigned leaf,
                              int valid, tickclock_freq *out) {
  if (!tkc_x86_is_intel(f)) return tkc_x86_none(out, "%s Intel's (vendor '%s')", rule, f->vendor);
  if (!valid)
    return tkc_x86_none(out, "leaf 0x%x is beyond the maximum basic leaf 0x%x", leaf,
                        (unsigned)f->max_leaf);
  return 1;
}

static int tkc_x86_set(tickclock_freq *out, uint64_t num, uint64_t den, int method,
                       const char *name, double unc) {
  if (num == 0 || den == 0) return 0;
  tkc_reduce(&num, &den);
  out->ok = 1;
  out->hz_num = num;
  out->hz_den = den;
  out->method = method;
  out->name = name;
  out->uncertainty_ppm = unc;
  return 1;
}

/* A rule's frequency, claimed by source. */
static int tkc_x86_claim(tickclock_freq *out, int source, int ok) {
  if (ok) out->source = source;
  return ok;
}

int tickclock_x86_freq_leaf15(const tickclock_x86_facts *f, tickclock_freq *out) {
  const tickclock_x86_crystal *crystal;
  memset(out, 0, sizeof *out);
  if (!tkc_x86_intel_leaf(f, "the leaf 0x15 rule is", 0x15, f->leaf15_valid, out)) return 0;
  if (f->leaf15_den == 0 || f->leaf15_num == 0)
    return tkc_x86_none(out, "leaf 0x15 reports no TSC/crystal ratio");
  /* TSC = crystal * num / den; crystal and num below 2^32: exact in 64 bits */
  if (f->leaf15_crystal_hz != 0)
    return tkc_x86_claim(
        out, TKC_SRC_LEAF15_CRYSTAL,
        tkc_x86_set(out, (uint64_t)f->leaf15_crystal_hz * f->leaf15_num, f->leaf15_den,
                    TICKCLOCK_FREQ_CPUID_15H, "cpuid_15h_crystal", 0));
  crystal = tickclock_x86_crystal_lookup(f);
  /* An entry is a claim about a model number; a part under that number on
   * another platform (Kaby Lake-X shares 0x9E with Kaby Lake-S and is 4.6 %
   * off 24 MHz x ratio) shows it in its own base frequency. */
  if (crystal != NULL && tickclock_x86_crystal_fits_base(f, crystal) != 0) {
    /* a table's claim, not the CPU's: usable only once calibration agrees */
    if (!tkc_x86_set(out, (uint64_t)crystal->hz * f->leaf15_num, f->leaf15_den,
                     TICKCLOCK_FREQ_CPUID_15H, "cpuid_15h_known_crystal", 0))
      return 0;
    out->from_table = 1;
    return tkc_x86_claim(out, TKC_SRC_LEAF15_TABLE, 1);
  }
  /* crystal = base * den / num, so TSC = crystal * num / den = base: the
   * ratio cancels exactly (Linux truncates the crystal to kHz first; we
   * keep the rational). Quantised like the base MHz. */
  if (f->leaf16_valid && f->base_mhz != 0)
    return tkc_x86_claim(
        out, TKC_SRC_LEAF15_FROM_16H,
        tkc_x86_set(out, (uint64_t)f->base_mhz * UINT64_C(1000000), 1, TICKCLOCK_FREQ_CPUID_15H,
                    "cpuid_15h_from_16h", 0.5 / (double)f->base_mhz * 1e6));
  if (tickclock_x86_crystal_excluded(f) != NULL)
    return tkc_x86_none(out,
                        "leaf 0x15 gives a ratio but no crystal, the model is left "
                        "out of the crystal table (its parts differ) and leaf 0x16 "
                        "gives no base");
  return tkc_x86_none(out,
                      "leaf 0x15 gives a ratio but no crystal, the model has no "
                      "known crystal and leaf 0x16 gives no base frequency");
}

int tickclock_x86_freq_leaf16(const tickclock_x86_facts *f, tickclock_freq *out) {
  memset(out, 0, sizeof *out);
  if (!tkc_x86_intel_leaf(f, "leaf 0x16 is", 0x16, f->leaf16_valid, out)) return 0;
  if (f->base_mhz == 0) return tkc_x86_none(out, "leaf 0x16 reports a base frequency of 0");
  return tkc_x86_claim(
      out, TKC_SRC_LEAF16,
      tkc_x86_set(out, (uint64_t)f->base_mhz * UINT64_C(1000000), 1, TICKCLOCK_FREQ_CPUID_16H,
                  "cpuid_16h", 0.5 / (double)f->base_mhz * 1e6));
}

int tickclock_x86_freq_hypervisor(const tickclock_x86_facts *f, tickclock_freq *out) {
  memset(out, 0, sizeof *out);
  if (f->timing_leaf_valid && f->timing_tsc_khz != 0)
    return tkc_x86_claim(
        out, TKC_SRC_HV_TIMING,
        tkc_x86_set(out, (uint64_t)f->timing_tsc_khz * 1000u, 1, TICKCLOCK_FREQ_HYPERVISOR,
                    "hypervisor_40000010", 0.5 / (double)f->timing_tsc_khz * 1e6));
  if (f->xen_leaf3_valid && f->xen_tsc_khz != 0)
    return tkc_x86_claim(
        out, TKC_SRC_XEN_LEAF3,
        tkc_x86_set(out, (uint64_t)f->xen_tsc_khz * 1000u, 1, TICKCLOCK_FREQ_HYPERVISOR,
                    "xen_leaf3", 0.5 / (double)f->xen_tsc_khz * 1e6));
  if (!f->hypervisor) return tkc_x86_none(out, "no hypervisor (CPUID.1:ECX[31] clear)");
  if (!f->hv_valid)
    return tkc_x86_none(out, "hypervisor bit set but no hypervisor range at 0x40000000");
  return tkc_x86_none(out,
                      "hypervisor '%s' (max leaf 0x%08x) publishes no TSC frequency leaf "
                      "(VMware/KVM 0x40000010, Xen base+3)",
                      f->hv_signature, (unsigned)f->hv_max_leaf);
}

/* One rule's claim into c; a rule without a frequency leaves its reason
 * under the name and method of the leaf it read. */
static void tkc_x86_rule_claim(tickclock_freq *c, int ok, const char *absent_name,
                               int absent_method) {
  if (ok) return;
  c->ok = 0;
  c->source = TKC_SRC_NONE;
  c->name = absent_name;
  c->method = absent_method;
}

void tickclock_x86_claims(tickclock_x86_facts *f) {
  tickclock_freq *c = f->claims;
  tkc_x86_rule_claim(&c[0], tickclock_x86_freq_leaf15(f, &c[0]), "cpuid_15h",
                     TICKCLOCK_FREQ_CPUID_15H);
  tkc_x86_rule_claim(&c[1], tickclock_x86_freq_hypervisor(f, &c[1]), "hypervisor",
                     TICKCLOCK_FREQ_HYPERVISOR);
  tkc_x86_rule_claim(&c[2], tickclock_x86_freq_leaf16(f, &c[2]), "cpuid_16h",
                     TICKCLOCK_FREQ_CPUID_16H);
}
