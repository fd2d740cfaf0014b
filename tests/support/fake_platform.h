// A deterministic fake platform for the core (tickclock_platform): the
// target ISA's counter with its stated frequency (fake::isa below), a
// synthetic x86 CPU (CPUID) where the ISA is x86, fake sysfs, /proc/cpuinfo
// and device tree, fake prctl and perf page, and — in the test-only build
// with -DTICKCLOCK_TEST_FAKE_COUNTER — a fake counter and fake clocks
// driven by one simulated time line. Each counter read costs read_cost_ns
// of simulated time, each clock read os_cost_ns, sleeps advance it:
// everything is reproducible to the tick.
#ifndef TICKCLOCK_TESTS_FAKE_PLATFORM_H
#define TICKCLOCK_TESTS_FAKE_PLATFORM_H

#include <stdint.h>
#include <string.h>

#include <string>

#include "internal.h"
#include "tests/support/skip.h"

namespace fake {
// The ISA under test as the library sees it: its counter, the kernel's
// clocksource that runs on that counter and another one the kernel could
// switch to, and how the ISA states the counter's rate (evidence.c): the
// method and name the library gives that statement, and how the fake
// answers it (FakeWorld::stated_hz). x86's statements are CPUID leaves
// and the perf page (faked field by field below), so it has none here.
struct Isa {
  const char *arch;
  int counter;              // TICKCLOCK_SOURCE_*; 0: no counter read is built
  const char *clocksource;  // the kernel's clocksource on that counter
  const char *other_clocksource;
  int stated_method;        // TICKCLOCK_FREQ_ARCH_REGISTER / _OS; 0: none
  const char *stated_name;  // the frequency candidate's name
  bool stated_published;    // used before any calibration (freq_select.c)
  bool always_stated;       // architectural: the fake cannot leave it unstated
  uint64_t num, den;        // the fake counter's default rate, ticks per ns
};
#if defined(TKC_X86)
constexpr Isa isa = {"x86", TICKCLOCK_SOURCE_TSC, "tsc", "hpet", 0, "", false, false, 5, 2};
#elif defined(__aarch64__)
// CNTFRQ_EL0, the register firmware programs (0: left unprogrammed)
constexpr Isa isa = {"aarch64",
                     TICKCLOCK_SOURCE_CNTVCT,
                     "arch_sys_counter",
                     "jiffies",
                     TICKCLOCK_FREQ_ARCH_REGISTER,
                     "cntfrq_el0",
                     true,
                     false,
                     5,
                     2};
#elif defined(__powerpc64__)
// "timebase" in /proc/cpuinfo: the kernel's word, calibrated first
constexpr Isa isa = {"ppc64le",
                     TICKCLOCK_SOURCE_TIMEBASE,
                     "timebase",
                     "jiffies",
                     TICKCLOCK_FREQ_OS,
                     "cpuinfo_timebase",
                     false,
                     false,
                     5,
                     2};
#elif defined(__s390x__)
// The TOD clock's 4096 MHz is architectural: always stated, so the fake
// TOD runs at 4.096 ticks per ns unless a test breaks it on purpose.
constexpr Isa isa = {"s390x",
                     TICKCLOCK_SOURCE_TOD,
                     "tod",
                     "jiffies",
                     TICKCLOCK_FREQ_ARCH_REGISTER,
                     "tod_architecture",
                     true,
                     true,
                     512,
                     125};
#elif defined(__riscv)
// the device tree's /cpus/timebase-frequency: the kernel's word, calibrated first
constexpr Isa isa = {"riscv64",
                     TICKCLOCK_SOURCE_RDTIME,
                     "riscv_clocksource",
                     "jiffies",
                     TICKCLOCK_FREQ_OS,
                     "device_tree_timebase",
                     false,
                     false,
                     5,
                     2};
#else
constexpr Isa isa = {"os_only", 0, "", "", 0, "", false, false, 5, 2};
#endif

// Why a case cannot run on this ISA, or nullptr when it can. x86_only: the
// case is about an x86 fact (CPUID leaves, PR_SET_TSC, the perf page's TSC
// conversion); calibrated_first: it needs a counter whose rate nobody
// states, so that calibration gives the first state.
inline const char *no_counter_why() {
  return isa.counter == 0 ? "no hardware counter read is built for this ISA (arch/os_only.h): "
                            "the OS clock is the only source, there is no counter to fake"
                          : nullptr;
}
inline const char *x86_only_why() {
  if (isa.counter == TICKCLOCK_SOURCE_TSC) return nullptr;
  return "an x86 fact (CPUID leaves, RDTSC disabled by PR_SET_TSC, the perf page's TSC "
         "conversion): this ISA has none";
}
inline const char *calibrated_first_why() {
  if (const char *w = no_counter_why()) return w;
  return isa.always_stated ? "this ISA states its counter's rate architecturally (s390x TOD: "
                             "4096 MHz): no counter is ever calibrated first"
                           : nullptr;
}

// true, and the skip said (TICKCLOCK_SKIPPED), when why is set: what
// cannot run on this ISA, and why; false when it can.
inline bool skipped(const char *what, const char *why) {
  if (why == nullptr) return false;
  tctest::skip(std::string(what) + " (" + isa.arch + "): " + why);
  return true;
}
inline bool no_counter(const char *what) { return skipped(what, no_counter_why()); }
inline bool x86_only(const char *what) { return skipped(what, x86_only_why()); }
inline bool calibrated_first(const char *what) { return skipped(what, calibrated_first_why()); }
}  // namespace fake

struct FakeWorld {
  // time
  uint64_t now_ns = UINT64_C(5000000000);  // simulated CLOCK_MONOTONIC(_RAW)
  uint64_t read_cost_ns = 10;              // one counter read
  uint64_t os_cost_ns = 25;                // one clock read
  // counter: ticks = base + now_ns * num / den + offset (+ per-CPU offset)
  uint64_t base = 0;
  uint64_t num = fake::isa.num, den = fake::isa.den;  // 2.5 GHz (s390x TOD: 4.096 GHz)
  int64_t offset = 0;                                 // a jump: added to every later reading
  int64_t cpu_offset[2] = {0, 0};
  int migrate_every_read = 0;  // alternate CPUs on every counter read
  int cpu = 0;
  uint64_t counter_reads = 0;
  // OS facts
  std::string clocksource = fake::isa.clocksource;
  std::string available = fake::isa.counter == TICKCLOCK_SOURCE_TSC
                              ? "tsc hpet acpi_pm"
                              : std::string(fake::isa.clocksource) + " jiffies";
  // The ISA's own statement of the counter's rate, in Hz (fake::isa):
  // aarch64's CNTFRQ_EL0, POWER's "timebase" line in /proc/cpuinfo,
  // RISC-V's device-tree timebase-frequency; 0: not stated (an
  // unprogrammed CNTFRQ, no such line or node). s390x states 4096 MHz
  // whatever this says. state_rate() states the counter's true rate.
  uint64_t stated_hz = 0;
  void state_rate() { stated_hz = hz(); }
  int sysfs_missing = 0;
  uint64_t available_reads = 0;  // reads of available_clocksource
  int prctl_mode = TICKCLOCK_PRCTL_ENABLED;
  // With prctl_mode == SIGSEGV a real RDTSC traps, and so does the vDSO's
  // clock_gettime (it executes RDTSC with clocksource tsc): every such call
  // is counted here instead of killing the test. The system call never traps.
  uint64_t counter_traps = 0;
  uint64_t vdso_traps = 0;
  uint64_t syscall_reads = 0;
  int perf_errno = 0;  // perf_event_open fails with this (0: page ok, cap_user_time 0)
  // Published frequencies (0: not published). The perf page's conversion
  // (cap_user_time = 1) when perf_mult is set; leaf 0x15 with its crystal
  // (TSC = crystal_hz * l15_num / l15_den; crystal 0 with a ratio: the
  // crystal table's model 0x9E, 24 MHz); a KVM guest's timing leaf
  // 0x40000010 (EAX = TSC kHz; needs hypervisor = 1).
  uint32_t perf_mult = 0;
  uint32_t perf_shift = 0;
  uint32_t crystal_hz = 0, l15_num = 0, l15_den = 0;
  uint32_t hv_tsc_khz = 0;
  uint32_t base_mhz = 0;   // leaf 0x16 EAX: a nominal base, not a statement of the TSC rate
  int kvm_stable_bit = 1;  // KVM_FEATURE_CLOCKSOURCE_STABLE_BIT in 0x40000001 EAX
  // CPU
  int invariant = 1, rdtscp = 1, hypervisor = 0;
  uint32_t max_leaf = 0x16, max_ext = 0x80000008;
  int garbage_hv = 0;        // hypervisor leaves answer with garbage
  int garbage_past_max = 0;  // leaves past the maxima answer with garbage

  // Suspend: CLOCK_BOOTTIME - CLOCK_MONOTONIC (suspended_ns) grows by the
  // time suspended, CLOCK_MONOTONIC(_RAW) stands still; the counter keeps
  // counting through it when counts_in_suspend (the TSC in s2idle and in
  // most VMs) and stops with the clocks otherwise.
  uint64_t suspended = 0;
  int counts_in_suspend = 1;
  void suspend(uint64_t ns) { suspended += ns; }
  // A suspend that happens while the library asks: at its suspend_at_call-th
  // reading of the suspended time (inside a bracket, say), suspend_for_ns.
  uint64_t suspend_at_call = 0, suspend_for_ns = 0, suspended_reads = 0;
  // A machine that suspends at every suspend_every-th reading of the
  // suspended time (0: never), for suspend_for_ns each time.
  uint64_t suspend_every = 0;
  // CLOCK_MONOTONIC_RAW denied (a seccomp filter): its reads fail (0).
  int raw_fail = 0;
  // A signal handler that runs once, inside the interrupt_at_raw-th
  // reading of CLOCK_MONOTONIC_RAW (a calibration, a bracket): in the
  // thread that is reading, as a real handler would.
  void (*interrupt)(void *arg) = nullptr;
  void *interrupt_arg = nullptr;
  uint64_t interrupt_at_raw = 0, raw_reads = 0;
  // A stall (an interrupt, a preemption, a vCPU the host descheduled)
  // just before the stall_before-th read of any clock or counter, counted
  // in reads: stall_ns of time passes between that read and the one
  // before it.
  uint64_t reads = 0, stall_before = 0, stall_ns = 0;
  void read_starts() {
    if (++reads == stall_before) now_ns += stall_ns;
  }
  // A rate change (a VM restored onto a host with another TSC rate and no
  // scaling): from rate_from_ns on (counter time) the counter runs at
  // num2/den2 ticks per ns.
  uint64_t rate_from_ns = UINT64_MAX;
  uint64_t num2 = 5, den2 = 2;
  // The paravirtual clock page (kvm-clock's pvclock_vcpu_time_info) the
  // kernel maps for its vDSO: pv_mapped 0 means the probe of the page
  // fails with EFAULT (not mapped). pv is what the host last wrote there
  // (pv_publish() describes the counter's current rate, the way KVM's
  // master clock does); pv_torn: that many further reads find the host
  // writing it (an odd version every try). pv_reads counts the reads.
  int pv_mapped = 0;
  tickclock_pvclock_page pv{};
  int pv_torn = 0;
  uint64_t pv_reads = 0;
  // mul/shift for hz ticks per second, as KVM computes them: the shift that
  // puts mul = 1e9 * 2^(32 - shift) / hz in [2^31, 2^32)
  static void pv_scale(uint64_t hz, uint32_t *mul, int8_t *shift) {
    for (int sh = -8; sh <= 12; sh++) {
      uint64_t m = UINT64_C(1000000000) / hz, r = UINT64_C(1000000000) % hz;
      for (int k = 0; k < 32 - sh; k++) {  // long division by bits: 1e9 * 2^k / hz
        m = 2 * m + (2 * r >= hz);
        r = 2 * r >= hz ? 2 * r - hz : 2 * r;
      }
      if (m >= (UINT64_C(1) << 31) && m < (UINT64_C(1) << 32)) {
        *mul = (uint32_t)m;
        *shift = (int8_t)sh;
        return;
      }
    }
    *mul = 0;
    *shift = 0;
  }
  // The host writes the page afresh: the rate hz (0: the counter's own),
  // tsc_timestamp/system_time at now, stable, the version two on.
  void pv_publish(uint64_t rate_hz = 0) {
    pv_mapped = 1;
    pv.kind = TKC_PV_KVM;
    pv_scale(rate_hz ? rate_hz : hz(), &pv.mul, &pv.shift);
    pv.tsc_timestamp = ticks_at(now_ns);
    pv.system_time = now_ns;
    pv.flags = TKC_PVCLOCK_STABLE;
    pv.version += 2;
  }

  static uint64_t scaled(uint64_t ns, uint64_t n, uint64_t d) {
    uint64_t whole = ns / d, rem = ns % d;
    return whole * n + rem * n / d;
  }
  // the counter's rate, and the ticks it counts in ns nanoseconds (for
  // jumps and offsets written in time)
  uint64_t hz() const { return scaled(UINT64_C(1000000000), num, den); }
  int64_t ticks(int64_t ns) const {
    return ns < 0 ? -(int64_t)scaled((uint64_t)-ns, num, den)
                  : (int64_t)scaled((uint64_t)ns, num, den);
  }
  uint64_t ticks_at(uint64_t ns) const {
    uint64_t t = ns + (counts_in_suspend ? suspended : 0), ticks;
    if (t < rate_from_ns)
      ticks = scaled(t, num, den);
    else
      ticks = scaled(rate_from_ns, num, den) + scaled(t - rate_from_ns, num2, den2);
    return base + ticks + (uint64_t)offset + (uint64_t)cpu_offset[cpu];
  }
};

namespace fake {
inline FakeWorld *W(void *ctx) { return static_cast<FakeWorld *>(ctx); }

inline uint32_t garbage(uint32_t leaf, uint32_t sub, int reg) {
  uint64_t k = (uint64_t)leaf * 0x9E3779B97F4A7C15ull ^ ((uint64_t)sub << 17) ^ (uint64_t)reg;
  k ^= k >> 29;
  k *= 0xBF58476D1CE4E5B9ull;
  return (uint32_t)(k >> 32);
}

// what a CPU returns for a leaf it does not define: deterministic junk
inline void fill_garbage(uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *r) {
  r->eax = garbage(leaf, sub, 0);
  r->ebx = garbage(leaf, sub, 1);
  r->ecx = garbage(leaf, sub, 2);
  r->edx = garbage(leaf, sub, 3);
}

inline int cpuid(void *ctx, uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *r) {
  FakeWorld *w = W(ctx);
  memset(r, 0, sizeof *r);
  int std_range = leaf <= 0x3fffffff;
  int ext_range = leaf >= 0x80000000u;
  int hv_range = leaf >= 0x40000000u && leaf < 0x80000000u;
  if ((std_range && leaf > w->max_leaf) || (ext_range && leaf > w->max_ext)) {
    if (w->garbage_past_max) fill_garbage(leaf, sub, r);
    return 1;
  }
  if (hv_range && w->hypervisor && w->hv_tsc_khz != 0) {  // a KVM guest with the timing leaf
    if (leaf == 0x40000000u) {
      r->eax = 0x40000010u;
      memcpy(&r->ebx, "KVMK", 4);
      memcpy(&r->ecx, "VMKV", 4);
      memcpy(&r->edx, "M\0\0\0", 4);
    } else if (leaf == 0x40000001u) {
      r->eax = w->kvm_stable_bit ? 1u << 24 : 0;
    } else if (leaf == 0x40000010u) {
      r->eax = w->hv_tsc_khz;
      r->ebx = 1000000;  // APIC bus kHz
    }
    return 1;
  }
  if (hv_range) {
    if (w->garbage_hv) fill_garbage(leaf, sub, r);
    return 1;
  }
  switch (leaf) {
    case 0:
      r->eax = w->max_leaf;
      memcpy(&r->ebx, "Genu", 4);
      memcpy(&r->edx, "ineI", 4);
      memcpy(&r->ecx, "ntel", 4);
      break;
    case 1:
      r->eax = 0x000906EA;                    // family 6 model 0x9E
      r->edx = 1u << 4;                       // TSC
      r->ecx = w->hypervisor ? 1u << 31 : 0;  // hypervisor present
      break;
    case 0x80000000u:
      r->eax = w->max_ext;
      break;
    case 0x80000001u:
      r->edx = w->rdtscp ? 1u << 27 : 0;
      break;
    case 0x80000002u:
    case 0x80000003u:
    case 0x80000004u: {  // the brand string, 16 bytes a leaf
      static const char brand[49] = "  Fake(R) CPU 9E @ 2.50GHz";
      memcpy(r, brand + 16 * (leaf - 0x80000002u), 16);
      break;
    }
    case 0x80000007u:
      r->edx = w->invariant ? 1u << 8 : 0;
      break;
    case 0x15:  // zero unless the crystal is published
      r->eax = w->l15_den;
      r->ebx = w->l15_num;
      r->ecx = w->crystal_hz;
      break;
    case 0x16:
      r->eax = w->base_mhz;
      break;
    default:
      break;
  }
  return 1;
}

inline int read_line(void *ctx, const char *path, char *buf, size_t n) {
  FakeWorld *w = W(ctx);
  if (w->sysfs_missing) return 0;
  std::string v;
  if (strstr(path, "current_clocksource"))
    v = w->clocksource;
  else if (strstr(path, "available_clocksource"))
    v = w->available, w->available_reads++;
  else
    return 0;
  tkc_strlcpy(buf, v.c_str(), n);
  return !v.empty();
}

inline int prctl_get_tsc(void *ctx) { return W(ctx)->prctl_mode; }

inline void perf_page(void *ctx, tickclock_perf_page *pp) {
  pp->attempted = 1;
  if (W(ctx)->perf_errno) {
    pp->err = W(ctx)->perf_errno;
    return;
  }
  pp->ok = 1;
  pp->cap_user_time = W(ctx)->perf_mult != 0;
  pp->time_mult = W(ctx)->perf_mult;
  pp->time_shift = W(ctx)->perf_shift;
}

inline void pvclock(void *ctx, int kind, tickclock_pvclock_page *pv) {
  FakeWorld *w = W(ctx);
  w->pv_reads++;
  memset(pv, 0, sizeof *pv);
  if (!w->pv_mapped || kind != w->pv.kind) {
    pv->absent = w->pv_mapped ? TKC_PV_ABSENT_NO_MAPPING : TKC_PV_ABSENT_UNMAPPED;
    return;
  }
  if (w->pv_torn > 0) {
    w->pv_torn--;
    pv->absent = TKC_PV_ABSENT_TORN;
    return;
  }
  *pv = w->pv;
}

inline uint64_t counter(void *ctx) {
  FakeWorld *w = W(ctx);
  if (w->prctl_mode == TICKCLOCK_PRCTL_SIGSEGV) w->counter_traps++;
  w->read_starts();
  w->now_ns += w->read_cost_ns;
  w->counter_reads++;
  if (w->migrate_every_read) w->cpu ^= 1;
  return w->ticks_at(w->now_ns);
}

inline uint64_t clock_ns(void *ctx) {  // through the vDSO
  FakeWorld *w = W(ctx);
  if (w->prctl_mode == TICKCLOCK_PRCTL_SIGSEGV) w->vdso_traps++;
  w->read_starts();
  w->now_ns += w->os_cost_ns;
  return w->now_ns;
}

inline uint64_t clock_ns_sys(void *ctx) {  // the system call: slower, never traps
  FakeWorld *w = W(ctx);
  w->syscall_reads++;
  w->read_starts();
  w->now_ns += 4 * w->os_cost_ns;
  return w->now_ns;
}

inline void sleep_ns(void *ctx, uint64_t ns) { W(ctx)->now_ns += ns; }

inline uint64_t suspended_ns(void *ctx) {
  FakeWorld *w = W(ctx);
  if (++w->suspended_reads == w->suspend_at_call) w->suspend(w->suspend_for_ns);
  if (w->suspend_every != 0 && w->suspended_reads % w->suspend_every == 0)
    w->suspend(w->suspend_for_ns);
  return w->suspended;
}

inline uint64_t raw_clock_ns(void *ctx) {  // CLOCK_MONOTONIC_RAW through the vDSO
  FakeWorld *w = W(ctx);
  if (w->interrupt != nullptr && ++w->raw_reads == w->interrupt_at_raw)
    w->interrupt(w->interrupt_arg);
  if (w->raw_fail) return 0;
  return clock_ns(ctx);
}

inline uint64_t raw_clock_ns_sys(void *ctx) {
  if (W(ctx)->raw_fail) return 0;
  return clock_ns_sys(ctx);
}

inline const char *no_env(void *, const char *) { return nullptr; }

// /proc/cpuinfo: the "timebase" line POWER's kernel writes (and RISC-V's
// fallback), when the rate is stated.
inline int find_line(void *ctx, const char *path, const char *prefix, char *buf, size_t n) {
  FakeWorld *w = W(ctx);
  if (strcmp(path, "/proc/cpuinfo") != 0 || strcmp(prefix, "timebase") != 0 || w->stated_hz == 0 ||
      isa.stated_method != TICKCLOCK_FREQ_OS)
    return 0;
  std::string line = "timebase\t: " + std::to_string(w->stated_hz);
  tkc_strlcpy(buf, line.c_str(), n);
  return 1;
}

// The device tree's /cpus/timebase-frequency: a big-endian u32 (u64 when
// it does not fit), on RISC-V, when the rate is stated.
inline size_t read_bytes(void *ctx, const char *path, void *buf, size_t n) {
  FakeWorld *w = W(ctx);
  if (strcmp(path, "/proc/device-tree/cpus/timebase-frequency") != 0 || w->stated_hz == 0 ||
      isa.counter != TICKCLOCK_SOURCE_RDTIME)
    return 0;
  size_t len = w->stated_hz > UINT32_MAX ? 8 : 4;
  if (n < len) return 0;
  unsigned char *b = static_cast<unsigned char *>(buf);
  for (size_t i = 0; i < len; i++) b[i] = (unsigned char)(w->stated_hz >> (8 * (len - 1 - i)));
  return len;
}

// CNTFRQ_EL0 (aarch64): what firmware programmed.
inline uint64_t freq_register(void *ctx) { return W(ctx)->stated_hz; }

// Everything faked: CPU, sysfs, /proc/cpuinfo, device tree, prctl, perf,
// counter (and its frequency register), clocks, env.
inline tickclock_platform full(FakeWorld *w) {
  tickclock_platform p;
  memset(&p, 0, sizeof p);
  p.ctx = w;
  p.cpuid = cpuid;
  p.read_line = read_line;
  p.prctl_get_tsc = prctl_get_tsc;
  p.perf_page = perf_page;
  p.pvclock = pvclock;
  p.counter = counter;
  p.counter_ordered = counter;
  p.raw_ns = raw_clock_ns;
  p.os_ns = clock_ns;
  p.raw_ns_sys = raw_clock_ns_sys;
  p.os_ns_sys = clock_ns_sys;
  p.sleep_ns = sleep_ns;
  p.getenv = no_env;
  p.suspended_ns = suspended_ns;
  p.find_line = find_line;
  p.read_bytes = read_bytes;
  p.freq_register = freq_register;
  return p;
}

// Only the facts faked (CPU, sysfs, /proc/cpuinfo, device tree, prctl,
// perf, env); counter, its frequency register and clocks native: usable
// in the normal build of the core.
inline tickclock_platform facts_only(FakeWorld *w) {
  tickclock_platform p = full(w);
  p.counter = nullptr;
  p.counter_ordered = nullptr;
  p.raw_ns = nullptr;
  p.os_ns = nullptr;
  p.raw_ns_sys = nullptr;
  p.os_ns_sys = nullptr;
  p.sleep_ns = nullptr;
  p.suspended_ns = nullptr;
  p.freq_register = nullptr;
  return p;
}
}  // namespace fake

#endif
