/* tickclock internals — x86 CPUID: the leaf source, the decoded facts,
 * the hypervisor signature table and the frequency rules (cpuid_x86.c,
 * crystal_x86.c). Pure except tickclock_cpuid_native. */
#ifndef TICKCLOCK_CPUID_X86_H
#define TICKCLOCK_CPUID_X86_H

#include "sys.h"
#include "tickclock.h"
#include "freq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPUID ------------------------------------------------------------- */
typedef struct tickclock_cpuid_regs {
  uint32_t eax, ebx, ecx, edx;
} tickclock_cpuid_regs;

/* A leaf source: the real CPU, or a recorded fixture. Returns 0 and zeroed
 * registers for a leaf it does not have. */
typedef int (*tickclock_cpuid_fn)(void *ctx, uint32_t leaf, uint32_t subleaf,
                                  tickclock_cpuid_regs *out);

/* Executes CPUID on this CPU (0 if the CPU has no CPUID instruction). */
TKC_INTERNAL int tickclock_cpuid_native(void *ctx, uint32_t leaf, uint32_t subleaf,
                                        tickclock_cpuid_regs *out);

/* Hypervisor kinds, from the signature at the hypervisor base leaf. */
#define TICKCLOCK_HV_NONE 0
#define TICKCLOCK_HV_KVM 1    /* "KVMKVMKVM\0\0\0" */
#define TICKCLOCK_HV_XEN 2    /* "XenVMMXenVMM" */
#define TICKCLOCK_HV_HYPERV 3 /* "Microsoft Hv" */
#define TICKCLOCK_HV_VMWARE 4 /* "VMwareVMware" */
#define TICKCLOCK_HV_VBOX 5   /* "VBoxVBoxVBox" */
#define TICKCLOCK_HV_OTHER 6  /* any other signature (bhyve, TCG, ACRN, ...) */

/* Xen's leaf base+3 subleaf 0 EAX flags. */
#define TICKCLOCK_XEN_TSC_VTSC 0x1u     /* bit 0: RDTSC is emulated (every read traps) */
#define TICKCLOCK_XEN_TSC_RELIABLE 0x2u /* bit 1: the host TSC is reliable (stable) */
#define TICKCLOCK_XEN_TSC_RDTSCP 0x4u   /* bit 2: RDTSCP is available */

#define TKC_X86_CLAIMS 3 /* leaf 0x15, the hypervisor's leaf, leaf 0x16 */

/* What the decider needs from CPUID, decoded with every leaf gated on the
 * maximum of its range (real CPUs and QEMU return another leaf's data past
 * the maximum). A *_valid flag says the leaf was inside its range. */
typedef struct tickclock_x86_facts {
  int have_cpuid;
  char vendor[13];
  uint32_t max_leaf;                /* leaf 0 EAX */
  uint32_t max_ext_leaf;            /* leaf 0x80000000 EAX, 0 if absent */
  uint32_t family, model, stepping; /* display values */
  int tsc;                          /* CPUID.1:EDX[4] */
  int hypervisor;                   /* CPUID.1:ECX[31] */
  int rdtscp;                       /* CPUID.80000001H:EDX[27] */
  int invariant_tsc;                /* CPUID.80000007H:EDX[8] */
  int invariant_known;              /* leaf 0x80000007 exists */
  int tsc_adjust;                   /* CPUID.(7,0):EBX[1] (IA32_TSC_ADJUST MSR) */
  int leaf7_valid;
  char brand[49]; /* 0x80000002..4, leading blanks removed; "" if absent */
  /* leaf 0x15: TSC/crystal ratio = numerator/denominator, crystal Hz */
  int leaf15_valid;
  uint32_t leaf15_den, leaf15_num, leaf15_crystal_hz;
  /* leaf 0x16: base / max / bus MHz */
  int leaf16_valid;
  uint32_t base_mhz, max_mhz, bus_mhz;
  /* hypervisor range: only when CPUID.1:ECX[31] is set and the base leaf
   * answers with a maximum inside 0x4000xxxx */
  int hv_valid;
  uint32_t hv_base, hv_max_leaf;    /* the first base (0x40000000) */
  char hv_signature[13];            /* printable; non-printable bytes become '.' */
  int hv_kind;                      /* TICKCLOCK_HV_* */
  uint32_t kvm_base;                /* 0 if no KVM signature found in the scan */
  uint32_t kvm_features, kvm_hints; /* kvm_base+1 EAX, EDX */
  int kvm_features_valid;
  uint32_t xen_base, xen_max_leaf; /* 0 if no Xen signature found */
  int xen_leaf3_valid;             /* xen_base+3 subleaf 0 inside the Xen range */
  uint32_t xen_tsc_flags;          /* EAX: TICKCLOCK_XEN_TSC_* */
  uint32_t xen_tsc_mode; /* EBX: 0 default, 1 always emulate, 2 never emulate, 3 pvrdtscp */
  uint32_t xen_tsc_khz;  /* ECX: guest TSC kHz */
  int hyperv_valid;      /* 0x40000003 inside a Hyper-V range */
  uint32_t hyperv_features, hyperv_misc; /* 0x40000003 EAX, EDX */
  int hyperv_freq_msrs;     /* EAX[11] AccessFrequencyMsrs and EDX[8] frequency MSRs available */
  int hyperv_tsc_invariant; /* EAX[15] AccessTscInvariantControls */
  int timing_leaf_valid;    /* base+0x10 inside the range, signature VMware or KVM */
  uint32_t timing_tsc_khz, timing_bus_khz; /* base+0x10 EAX, EBX */
  /* The frequency claims these leaves make, computed when decoding
   * (tickclock_x86_claims): leaf 0x15's, the hypervisor's, leaf 0x16's,
   * in that order; a rule that gives none has ok = 0 and its reason. */
  tickclock_freq claims[TKC_X86_CLAIMS];
} tickclock_x86_facts;

/* Decodes every leaf fn answers into out, then its claims. */
TKC_INTERNAL void tickclock_x86_decode(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out);
/* The same without the brand string (three CPUID exits under a
 * hypervisor that no decision needs), and the brand string alone, after
 * the rest. */
TKC_INTERNAL void tkc_x86_decode_timing(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out);
TKC_INTERNAL void tkc_x86_decode_brand(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out);
/* f's claims from its facts (what decoding ends with; again after a test
 * edits the facts). */
TKC_INTERNAL void tickclock_x86_claims(tickclock_x86_facts *f);

/* A nominal crystal the CPU does not state (leaf 0x15 ECX = 0), by Intel
 * family 6 model, with the evidence for it (crystal_x86.c). */
typedef struct tickclock_x86_crystal {
  uint32_t model;
  uint32_t hz;
  const char *parts;
  const char *evidence;
} tickclock_x86_crystal;

/* tickclock's rule for leaf 0x15 (GenuineIntel only): crystal from ECX
 * ("cpuid_15h_crystal"); else the crystal table's entry for the model, where
 * it fits leaf 0x16's base (or there is none) ("cpuid_15h_known_crystal",
 * from_table set); else crystal = 0x16 base x
 * den / num, i.e. the base frequency exactly ("cpuid_15h_from_16h"). */
TKC_INTERNAL int tickclock_x86_freq_leaf15(const tickclock_x86_facts *f, tickclock_freq *out);
/* The crystal table (n entries) and its entry for f's model, or NULL. */
TKC_INTERNAL const tickclock_x86_crystal *tickclock_x86_crystal_table(unsigned *n);
TKC_INTERNAL const tickclock_x86_crystal *tickclock_x86_crystal_lookup(
    const tickclock_x86_facts *f);
/* Does the entry's crystal x leaf 0x15's ratio fall within
 * TICKCLOCK_CRYSTAL_BASE_TOLERANCE of leaf 0x16's base MHz? 1 yes, 0 no
 * (the entry is not applied), -1 no base to compare with. 1 %: the base is
 * a rounded nominal figure, up to about 1 % off the TSC (0.8 % on a
 * Skylake-Y: 24 MHz x 126/2 = 1512 MHz, base 1500), while a wrong crystal
 * is 4 % or more off. */
#define TICKCLOCK_CRYSTAL_BASE_TOLERANCE 0.01
TKC_INTERNAL int tickclock_x86_crystal_fits_base(const tickclock_x86_facts *f,
                                                 const tickclock_x86_crystal *c);
/* Why f's model is left out of the table on purpose (mixed evidence), or
 * NULL when it is simply not known. */
TKC_INTERNAL const char *tickclock_x86_crystal_excluded(const tickclock_x86_facts *f);
/* Leaf 0x16 base MHz ("cpuid_16h"): nominal, GenuineIntel only. */
TKC_INTERNAL int tickclock_x86_freq_leaf16(const tickclock_x86_facts *f, tickclock_freq *out);
/* Hypervisor timing leaves: VMware/KVM base+0x10 EAX ("hypervisor_40000010"),
 * Xen base+3 subleaf 0 ECX ("xen_leaf3"). */
TKC_INTERNAL int tickclock_x86_freq_hypervisor(const tickclock_x86_facts *f, tickclock_freq *out);
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_CPUID_X86_H */
