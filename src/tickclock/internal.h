/* tickclock — internals shared by the implementation files and the tests.
 *
 * The initialiser is split in two halves, as in google/cpu_features:
 *  - gathering evidence (impure, thin): CPUID leaves, Linux facts, measured
 *    read costs, the environment, calibration — evidence.c, calibrate.c;
 *  - deciding (pure, tested on recorded evidence): decide.c.
 * Nothing in decide.c touches the OS.
 */
#ifndef TICKCLOCK_INTERNAL_H
#define TICKCLOCK_INTERNAL_H

#include "sys.h"
#include "tickclock.h"

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
TICKCLOCK__INTERNAL int tickclock_cpuid_native(void *ctx, uint32_t leaf, uint32_t subleaf,
                           tickclock_cpuid_regs *out);

/* Hypervisor kinds, from the signature at the hypervisor base leaf. */
#define TICKCLOCK_HV_NONE 0
#define TICKCLOCK_HV_KVM 1        /* "KVMKVMKVM\0\0\0" */
#define TICKCLOCK_HV_XEN 2        /* "XenVMMXenVMM" */
#define TICKCLOCK_HV_HYPERV 3     /* "Microsoft Hv" */
#define TICKCLOCK_HV_VMWARE 4     /* "VMwareVMware" */
#define TICKCLOCK_HV_VBOX 5       /* "VBoxVBoxVBox" */
#define TICKCLOCK_HV_OTHER 6      /* any other signature (bhyve, TCG, ACRN, ...) */

/* What the decider needs from CPUID, decoded with every leaf gated on the
 * maximum of its range (real CPUs and QEMU return another leaf's data past
 * the maximum). A *_valid flag says the leaf was inside its range. */
typedef struct tickclock_x86_facts {
  int have_cpuid;
  char vendor[13];
  uint32_t max_leaf;       /* leaf 0 EAX */
  uint32_t max_ext_leaf;   /* leaf 0x80000000 EAX, 0 if absent */
  uint32_t family, model, stepping; /* display values */
  int tsc;                 /* CPUID.1:EDX[4] */
  int hypervisor;          /* CPUID.1:ECX[31] */
  int rdtscp;              /* CPUID.80000001H:EDX[27] */
  int invariant_tsc;       /* CPUID.80000007H:EDX[8] */
  int invariant_known;     /* leaf 0x80000007 exists */
  int tsc_adjust;          /* CPUID.(7,0):EBX[1] (IA32_TSC_ADJUST MSR) */
  int leaf7_valid;
  char brand[49];          /* 0x80000002..4, leading blanks removed; "" if absent */
  /* leaf 0x15: TSC/crystal ratio = numerator/denominator, crystal Hz */
  int leaf15_valid;
  uint32_t leaf15_den, leaf15_num, leaf15_crystal_hz;
  /* leaf 0x16: base / max / bus MHz */
  int leaf16_valid;
  uint32_t base_mhz, max_mhz, bus_mhz;
  /* hypervisor range: only when CPUID.1:ECX[31] is set and the base leaf
   * answers with a maximum inside 0x4000xxxx */
  int hv_valid;
  uint32_t hv_base, hv_max_leaf; /* the first base (0x40000000) */
  char hv_signature[13];   /* printable; non-printable bytes become '.' */
  int hv_kind;             /* TICKCLOCK_HV_* */
  uint32_t kvm_base;       /* 0 if no KVM signature found in the scan */
  uint32_t kvm_features, kvm_hints; /* kvm_base+1 EAX, EDX */
  int kvm_features_valid;
  uint32_t xen_base, xen_max_leaf; /* 0 if no Xen signature found */
  int xen_leaf3_valid;     /* xen_base+3 subleaf 0 inside the Xen range */
  uint32_t xen_tsc_flags;  /* EAX: bit0 vtsc (RDTSC emulated), bit1 host TSC reliable, bit2 rdtscp */
  uint32_t xen_tsc_mode;   /* EBX: 0 default, 1 always emulate, 2 never emulate, 3 pvrdtscp */
  uint32_t xen_tsc_khz;    /* ECX: guest TSC kHz */
  int hyperv_valid;        /* 0x40000003 inside a Hyper-V range */
  uint32_t hyperv_features, hyperv_misc; /* 0x40000003 EAX, EDX */
  int hyperv_freq_msrs;    /* EAX[11] AccessFrequencyMsrs and EDX[8] frequency MSRs available */
  int hyperv_tsc_invariant; /* EAX[15] AccessTscInvariantControls */
  int timing_leaf_valid;   /* base+0x10 inside the range, signature VMware or KVM */
  uint32_t timing_tsc_khz, timing_bus_khz; /* base+0x10 EAX, EBX */
} tickclock_x86_facts;

TICKCLOCK__INTERNAL void tickclock_x86_decode(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out);

/* ---- frequency rules (pure, 64-bit rational arithmetic) --------------- */
typedef struct tickclock_freq {
  int ok;
  uint64_t hz_num, hz_den;  /* reduced */
  int method;               /* tickclock_freq_method */
  const char *name;         /* "cpuid_15h_crystal", ... (tsc_hz.method) */
  double uncertainty_ppm;   /* quantisation of the reported value; 0 if exact */
  int from_table;           /* the crystal is tickclock's table's, not stated by the
                               CPU: a claim to check against calibration, never a
                               frequency to publish on its own */
} tickclock_freq;

/* A nominal crystal the CPU does not state (leaf 0x15 ECX = 0), by Intel
 * family 6 model, with the evidence for it (cpuid_x86.c). */
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
TICKCLOCK__INTERNAL int tickclock_x86_freq_leaf15(const tickclock_x86_facts *f, tickclock_freq *out);
/* Linux's present rule, in its integer kHz arithmetic: ECX; Denverton
 * 25 MHz; else the crystal derived from leaf 0x16 (what the kernel's
 * "Detected ... MHz" comes from before its refined calibration). Same
 * names as above; reported next to ours by `tickclock-probe cpuid`. */
TICKCLOCK__INTERNAL int tickclock_x86_freq_leaf15_linux(const tickclock_x86_facts *f, tickclock_freq *out);
/* The crystal table (n entries) and its entry for f's model, or NULL. */
TICKCLOCK__INTERNAL const tickclock_x86_crystal *tickclock_x86_crystal_table(unsigned *n);
TICKCLOCK__INTERNAL const tickclock_x86_crystal *tickclock_x86_crystal_lookup(const tickclock_x86_facts *f);
/* Does the entry's crystal x leaf 0x15's ratio fall within
 * TICKCLOCK_CRYSTAL_BASE_TOLERANCE of leaf 0x16's base MHz? 1 yes, 0 no
 * (the entry is not applied), -1 no base to compare with. 1 %: the base is
 * a rounded nominal figure, up to about 1 % off the TSC (0.8 % on a
 * Skylake-Y: 24 MHz x 126/2 = 1512 MHz, base 1500), while a wrong crystal
 * is 4 % or more off. */
#define TICKCLOCK_CRYSTAL_BASE_TOLERANCE 0.01
TICKCLOCK__INTERNAL int tickclock_x86_crystal_fits_base(const tickclock_x86_facts *f,
                                                        const tickclock_x86_crystal *c);
/* Why f's model is left out of the table on purpose (mixed evidence), or
 * NULL when it is simply not known. */
TICKCLOCK__INTERNAL const char *tickclock_x86_crystal_excluded(const tickclock_x86_facts *f);
/* Leaf 0x16 base MHz ("cpuid_16h"): nominal, GenuineIntel only. */
TICKCLOCK__INTERNAL int tickclock_x86_freq_leaf16(const tickclock_x86_facts *f, tickclock_freq *out);
/* Hypervisor timing leaves: VMware/KVM base+0x10 EAX ("hypervisor_40000010"),
 * Xen base+3 subleaf 0 ECX ("xen_leaf3"). */
TICKCLOCK__INTERNAL int tickclock_x86_freq_hypervisor(const tickclock_x86_facts *f, tickclock_freq *out);
/* The CPUID-only answer (what `tickclock-probe cpuid` reports as tsc_hz):
 * under a hypervisor its timing leaf first; then 0x15, then 0x16. */
TICKCLOCK__INTERNAL int tickclock_x86_freq_cpuid(const tickclock_x86_facts *f, tickclock_freq *out);
/* num/den reduced by their gcd; den 0 leaves them untouched. */
TICKCLOCK__INTERNAL void tickclock__reduce(uint64_t *num, uint64_t *den);
/* Signed disagreement of a against b in ppm: (a/b - 1) * 1e6. */
TICKCLOCK__INTERNAL double tickclock__ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den);

/* ---- CPUID fixtures (pure parser; the format is in DESIGN.md) ----------- */
#define TICKCLOCK_FIXTURE_MAX_LEAVES 512
#define TICKCLOCK_FIXTURE_MAX_META 48
typedef struct tickclock_fixture_leaf {
  uint32_t leaf, subleaf;
  tickclock_cpuid_regs r;
} tickclock_fixture_leaf;
typedef struct tickclock_fixture_meta {
  char key[48];
  char value[208];
  unsigned line;
} tickclock_fixture_meta;
typedef struct tickclock_fixture {
  unsigned n_leaves;
  tickclock_fixture_leaf leaves[TICKCLOCK_FIXTURE_MAX_LEAVES];
  unsigned n_meta;
  tickclock_fixture_meta meta[TICKCLOCK_FIXTURE_MAX_META];
} tickclock_fixture;

/* Test and tool entry points: in the single header only with
 * TICKCLOCK_TEST_API (the vendored implementation leaves them out). */
#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API)
/* Parses len bytes of buf. Returns 0 on success; on error returns the
 * 1-based line number and writes "NAME:LINE: what" into err. */
TICKCLOCK__INTERNAL unsigned tickclock_fixture_parse(const char *buf, size_t len, const char *name,
                                 tickclock_fixture *out, char *err, size_t errlen);
/* A tickclock_cpuid_fn over a parsed fixture (ctx = the fixture). */
TICKCLOCK__INTERNAL int tickclock_fixture_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf,
                            tickclock_cpuid_regs *out);
/* The value of "# key: value", or NULL. */
TICKCLOCK__INTERNAL const char *tickclock_fixture_meta_get(const tickclock_fixture *fx, const char *key);
#endif

/* ---- evidence ------------------------------------------------------------ */
#define TICKCLOCK_PRCTL_UNKNOWN 0
#define TICKCLOCK_PRCTL_ENABLED 1
#define TICKCLOCK_PRCTL_SIGSEGV 2

typedef struct tickclock_calibration {
  int ok;
  uint64_t ticks, ns;      /* counter ticks over ns of CLOCK_MONOTONIC_RAW */
  uint64_t hz_num, hz_den; /* ticks*1e9/ns reduced */
  double hz;
  double uncertainty_ppm;  /* from the bracket widths and clock granularity */
  uint64_t bracket_start, bracket_end; /* tightest (counter, clock, counter) widths, ticks */
  uint64_t start_mid, start_ns;  /* the start bracket (counter midpoint, raw ns): a later
                                    refinement measures from it on a longer baseline */
} tickclock_calibration;

/* The calibration's own bound an automatic choice accepts for the counter;
 * a quick calibration above it is lengthened (x4, up to
 * TICKCLOCK_CAL_QUICK_MAX_MS) before it is given up. */
#define TICKCLOCK_CAL_TARGET_PPM 50.0
#define TICKCLOCK_CAL_QUICK_MS 1     /* the first calibration, milliseconds */
#define TICKCLOCK_CAL_QUICK_MAX_MS 64

/* The perf_event mmap page of a self-monitoring event: the kernel's own
 * TSC -> ns conversion (ns = (tsc * time_mult) >> time_shift), valid only
 * when cap_user_time is set (the kernel's clocksource is the TSC). */
typedef struct tickclock_perf_page {
  int attempted;           /* perf_event_open was tried */
  int ok;                  /* the page was mapped and read consistently */
  int err;                 /* errno of the failing call, 0 if none */
  uint32_t version;        /* the page's version field (as the kernel left it) */
  int cap_user_time, cap_user_time_zero;
  uint32_t time_mult;
  uint32_t time_shift;
} tickclock_perf_page;

/* Agreement bound: a frequency source is refused when it disagrees with
 * calibration by more than TICKCLOCK_AGREE_PPM plus the calibration's own
 * uncertainty and the source's quantisation. */
#define TICKCLOCK_AGREE_PPM 25.0
/* An automatic choice refuses the counter when the calibration's own bound
 * exceeds this (see decide.c, policy 5): the quick calibration is
 * lengthened until it is under it (calibrate.c), and a frequency worse than
 * it is never published for the counter. */
#define TICKCLOCK_CAL_MAX_UNCERTAINTY_PPM TICKCLOCK_CAL_TARGET_PPM

typedef struct tickclock_evidence {
  int arch_counter;            /* the ISA's counter source, 0 if none */
  tickclock_x86_facts x86;     /* x86 only */
  int os_source;               /* the fallback: SYSTEM (POSIX) or QPC (Windows) */
  uint64_t os_hz;              /* its frequency: 1e9 for SYSTEM, QPF for QPC */
  int os_linux;                /* the Linux checks below apply */
  int tsc_prctl;               /* TICKCLOCK_PRCTL_* */
  int clocksource_known;
  char clocksource[32];        /* current_clocksource, e.g. "tsc" */
  int available_known;
  char available_clocksource[128]; /* available_clocksource, e.g. "tsc hpet acpi_pm" */
  tickclock_perf_page perf;    /* x86 Linux only */
  tickclock_freq arch_nominal; /* non-x86 counters: the stated frequency
                                  (CNTFRQ_EL0, the TOD architecture, the
                                  device tree, /proc/cpuinfo timebase) */
  double counter_read_ns;      /* measured, 0 if not measured */
  double os_read_ns;           /* measured, 0 if not measured */
  double os_resolution_ns;     /* clock_getres(CLOCK_MONOTONIC) */
  tickclock_calibration cal;   /* of the arch counter; ok=0 if not done */
  int cfg_source;              /* tickclock_config.source */
  int have_env;                /* TICKCLOCK_SOURCE was set (and honoured) */
  char env_value[40];          /* its value, truncated */
  /* What stands in for the kernel's TSC sync verdict where there is none
   * (off Linux): filled where the gatherer can, else left 0 (unknown). */
  int cpu_packages;            /* physical packages (sockets) counted; 0 unknown */
  int warp_checked;            /* a cross-CPU warp check ran on every CPU pair */
  int warp_ok;                 /* ... and no read stepped back across CPUs */
  double warp_max_ns;          /* its largest backward step, ns */
} tickclock_evidence;

/* Evidence replayed from a fixture: the decoded leaves, and from its
 * metadata "# clocksource:", "# available_clocksource:", "# calibration_hz:"
 * (a decimal, or NUM/DEN), "# read_ns.tsc:", "# read_ns.system:",
 * "# perf.time_mult:", "# perf.time_shift:" (cap_user_time set when both
 * are given), "# cpu_packages:", "# warp_check: pass|fail",
 * "# warp_max_ns:". Without a clocksource the Linux checks are off. */
#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only, as above */
TICKCLOCK__INTERNAL void tickclock_fixture_evidence(const tickclock_fixture *fx, tickclock_evidence *ev);
#endif

/* Pure: evidence -> decision (a filled tickclock_info, conversion included).
 * Returns 1 if the decision needs a calibration of the arch counter that
 * the evidence does not yet hold (the caller calibrates and decides again),
 * 0 when final. */
TICKCLOCK__INTERNAL int tickclock_decide(const tickclock_evidence *ev, tickclock_info *out);

/* Can the arch counter be read without trapping? (pure; reason in why) */
TICKCLOCK__INTERNAL int tickclock__counter_executable(const tickclock_evidence *ev, char *why, size_t n);

/* ---- the platform: everything the gatherer asks the outside world ------
 * Tests install a fake (tickclock__set_platform) to replay per-CPU offsets,
 * jumps, wrap, clocksource flips, denied syscalls, trapped reads; a NULL
 * member (or no platform at all) means the native one. Only initialisation,
 * calibration and tickclock_revalidate() go through it: the inline read
 * path never does, except in a test-only build of the core compiled with
 * -DTICKCLOCK_TEST_FAKE_COUNTER, where tickclock__arch_read() calls
 * counter(). */
typedef struct tickclock_platform {
  void *ctx;
  tickclock_cpuid_fn cpuid;  /* CPUID (ctx passed) */
  /* The first line of a /sys or /proc file, trailing newline/blanks
   * removed, into buf; returns 1 if a non-empty line was read, 0 if the
   * file is missing or unreadable. */
  int (*read_line)(void *ctx, const char *path, char *buf, size_t n);
  /* prctl(PR_GET_TSC): TICKCLOCK_PRCTL_* */
  int (*prctl_get_tsc)(void *ctx);
  /* Fills the perf_event mmap page evidence (attempted/ok/err/...). */
  void (*perf_page)(void *ctx, tickclock_perf_page *pp);
  uint64_t (*counter)(void *ctx);          /* the arch counter */
  uint64_t (*counter_ordered)(void *ctx);  /* ... not before earlier loads */
  uint64_t (*raw_ns)(void *ctx);           /* CLOCK_MONOTONIC_RAW (vDSO) */
  uint64_t (*os_ns)(void *ctx);            /* the OS clock's ticks (CLOCK_MONOTONIC, vDSO) */
  /* The same two clocks through the system call: what every read uses once
   * RDTSC is known to be disabled (the vDSO may execute RDTSC itself). */
  uint64_t (*raw_ns_sys)(void *ctx);
  uint64_t (*os_ns_sys)(void *ctx);
  void (*sleep_ns)(void *ctx, uint64_t ns);
  const char *(*getenv)(void *ctx, const char *name); /* already secure */
} tickclock_platform;

/* NULL restores the native platform. Not thread-safe: call before any
 * thread uses the library (tests only). Starts a fresh world: forgets the
 * published state (the next initialisation is a first one) and clears the
 * system-call flag (tickclock__os_syscall_on). */
#if !defined(TICKCLOCK__SINGLE_HEADER) || defined(TICKCLOCK_TEST_API) /* test-only */
TICKCLOCK__INTERNAL void tickclock__set_platform(const tickclock_platform *p);
#endif
TICKCLOCK__INTERNAL void tickclock__reset_world(void); /* init.c; what set_platform forgets */
TICKCLOCK__INTERNAL int tickclock__p_read_line(const char *path, char *buf, size_t n);
TICKCLOCK__INTERNAL int tickclock__p_prctl_get_tsc(void);
TICKCLOCK__INTERNAL void tickclock__p_perf_page(tickclock_perf_page *pp);
TICKCLOCK__INTERNAL void tickclock__p_cpuid_decode(tickclock_x86_facts *out);
TICKCLOCK__INTERNAL uint64_t tickclock__p_counter(void);
TICKCLOCK__INTERNAL uint64_t tickclock__p_counter_ordered(void);
TICKCLOCK__INTERNAL uint64_t tickclock__p_raw_ns(void);
TICKCLOCK__INTERNAL uint64_t tickclock__p_os_ns(void);
TICKCLOCK__INTERNAL void tickclock__p_sleep_ns(uint64_t ns);
TICKCLOCK__INTERNAL const char *tickclock__p_getenv(const char *name);
/* Native pieces (evidence.c) the platform falls back to. */
TICKCLOCK__INTERNAL int tickclock__native_read_line(const char *path, char *buf, size_t n);
TICKCLOCK__INTERNAL int tickclock__native_prctl_get_tsc(void);
TICKCLOCK__INTERNAL void tickclock__native_perf_page(tickclock_perf_page *pp);

/* Revalidation (init.c): counter time and CLOCK_MONOTONIC_RAW must agree,
 * over the step since the previous conclusive sample and over the total
 * since initialisation, within DRIFT_PPM plus the frequency's own
 * uncertainty of the elapsed time, plus DRIFT_ABS_NS and the two samples'
 * bracket half-widths. A sample whose tightest bracket is wider than
 * MAX_BRACKET_NS (preempted every time) is inconclusive: retried at the
 * next check, never counted as a failure. */
#define TICKCLOCK_REVALIDATE_DRIFT_PPM 50.0
#define TICKCLOCK_REVALIDATE_DRIFT_ABS_NS 100000.0
#define TICKCLOCK_REVALIDATE_MAX_BRACKET_NS 20000.0

/* The kernel's clocksource verdict (Linux), read at initialisation, by
 * re-validation and by the probe. */
#define TICKCLOCK__SYSFS_CURRENT_CLOCKSOURCE \
  "/sys/devices/system/clocksource/clocksource0/current_clocksource"
#define TICKCLOCK__SYSFS_AVAILABLE_CLOCKSOURCE \
  "/sys/devices/system/clocksource/clocksource0/available_clocksource"

/* Sticky (os_clock.c): set once RDTSC was seen disabled (PR_GET_TSC =
 * PR_TSC_SIGSEGV). From then on every OS clock read in the library is a
 * system call. */
TICKCLOCK__INTERNAL void tickclock__os_use_syscall(int on); /* 0: tests only */
TICKCLOCK__INTERNAL int tickclock__os_syscall_on(void);
/* The kernel's current clocksource into buf (a file kept open after the
 * first read, so a periodic check allocates nothing); 1 if read. */
TICKCLOCK__INTERNAL int tickclock__p_clocksource(char *buf, size_t n);

/* Impure gathering. */
TICKCLOCK__INTERNAL void tickclock__gather(const tickclock_config *cfg, tickclock_evidence *ev);
/* Calibrates over ms milliseconds; ms == 0: the quick calibration
 * (TICKCLOCK_CAL_QUICK_MS, lengthened x4 while its bound exceeds
 * TICKCLOCK_CAL_TARGET_PPM, up to TICKCLOCK_CAL_QUICK_MAX_MS). */
TICKCLOCK__INTERNAL int tickclock__calibrate(uint64_t (*read_ordered)(void), uint32_t ms,
                         tickclock_calibration *out);
/* A refinement of first: its start bracket, an end bracket taken now. */
TICKCLOCK__INTERNAL int tickclock__calibrate_from(uint64_t (*read_ordered)(void),
                                                  const tickclock_calibration *first,
                                                  tickclock_calibration *out);
/* One calibration end: the tightest of 16 (counter, raw clock, counter)
 * brackets. mid is the counter at the clock's instant to within width/2;
 * width is UINT64_MAX when every try stepped backwards. */
typedef struct tickclock__bracket {
  uint64_t mid, ns, width;
} tickclock__bracket;
TICKCLOCK__INTERNAL tickclock__bracket tickclock__tightest_bracket(uint64_t (*read_ordered)(void));
TICKCLOCK__INTERNAL uint64_t tickclock__os_now(void);      /* CLOCK_MONOTONIC (Windows: QPC) in ns */
/* The fallback source's raw ticks (async-signal-safe); every native clock
 * read here is a system call once tickclock__os_syscall_on(). */
TICKCLOCK__INTERNAL uint64_t tickclock__os_read(void);
TICKCLOCK__INTERNAL uint64_t tickclock__qpc_hz(void);      /* QueryPerformanceFrequency; 0 off Windows */
TICKCLOCK__INTERNAL void tickclock__sleep_ns(uint64_t ns);
TICKCLOCK__INTERNAL uint64_t tickclock__os_now_raw(void);  /* CLOCK_MONOTONIC_RAW, ns */
TICKCLOCK__INTERNAL double tickclock__os_resolution_ns(void); /* clock_getres(CLOCK_MONOTONIC) */
TICKCLOCK__INTERNAL double tickclock__measure_read_ns(uint64_t (*rd)(void)); /* min over batches */
TICKCLOCK__INTERNAL const char *tickclock__secure_getenv(const char *name);
TICKCLOCK__INTERNAL void tickclock__ratio_hz(uint64_t ticks, uint64_t ns, uint64_t *num, uint64_t *den);

/* Bounded string copy/format helpers (always NUL-terminate). */
TICKCLOCK__INTERNAL void tickclock__strlcpy(char *dst, const char *src, size_t n);
/* src with backslash, control and non-ASCII bytes escaped (\\ \n \r \t \xHH):
 * user-supplied text printed as one inert line. */
TICKCLOCK__INTERNAL void tickclock__escape(char *dst, size_t n, const char *src);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
TICKCLOCK__INTERNAL void tickclock__fmt(char *dst, size_t n, const char *fmt, ...);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_INTERNAL_H */
