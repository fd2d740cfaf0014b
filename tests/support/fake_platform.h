// A deterministic fake platform for the core (tickclock_platform): a
// synthetic x86 CPU, fake sysfs, fake prctl and perf page, and — in the
// test-only build with -DTICKCLOCK_TEST_FAKE_COUNTER — a fake TSC and fake
// clocks driven by one simulated time line. Each counter read costs
// read_cost_ns of simulated time, each clock read os_cost_ns, sleeps
// advance it: everything is reproducible to the tick.
#ifndef TICKCLOCK_TESTS_FAKE_PLATFORM_H
#define TICKCLOCK_TESTS_FAKE_PLATFORM_H

#include <stdint.h>
#include <string.h>

#include <string>

#include "internal.h"

struct FakeWorld {
  // time
  uint64_t now_ns = UINT64_C(5000000000);  // simulated CLOCK_MONOTONIC(_RAW)
  uint64_t read_cost_ns = 10;              // one counter read
  uint64_t os_cost_ns = 25;                // one clock read
  // counter: ticks = base + now_ns * num / den + offset (+ per-CPU offset)
  uint64_t base = 0;
  uint64_t num = 5, den = 2;  // 2.5 GHz
  int64_t offset = 0;         // a jump: added to every later reading
  int64_t cpu_offset[2] = {0, 0};
  int migrate_every_read = 0;  // alternate CPUs on every counter read
  int cpu = 0;
  uint64_t counter_reads = 0;
  // OS facts
  std::string clocksource = "tsc";
  std::string available = "tsc hpet acpi_pm";
  int sysfs_missing = 0;
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
  uint32_t base_mhz = 0;  // leaf 0x16 EAX: a nominal base, not a statement of the TSC rate
  int kvm_stable_bit = 1;  // KVM_FEATURE_CLOCKSOURCE_STABLE_BIT in 0x40000001 EAX
  // CPU
  int invariant = 1, rdtscp = 1, hypervisor = 0;
  uint32_t max_leaf = 0x16, max_ext = 0x80000008;
  int garbage_hv = 0;      // hypervisor leaves answer with garbage
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
  // CLOCK_MONOTONIC_RAW denied (a seccomp filter): its reads fail (0).
  int raw_fail = 0;
  // A rate change (a VM restored onto a host with another TSC rate and no
  // scaling): from rate_from_ns on (counter time) the counter runs at
  // num2/den2 ticks per ns.
  uint64_t rate_from_ns = UINT64_MAX;
  uint64_t num2 = 5, den2 = 2;

  static uint64_t scaled(uint64_t ns, uint64_t n, uint64_t d) {
    uint64_t whole = ns / d, rem = ns % d;
    return whole * n + rem * n / d;
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
    v = w->available;
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

inline uint64_t counter(void *ctx) {
  FakeWorld *w = W(ctx);
  if (w->prctl_mode == TICKCLOCK_PRCTL_SIGSEGV) w->counter_traps++;
  w->now_ns += w->read_cost_ns;
  w->counter_reads++;
  if (w->migrate_every_read) w->cpu ^= 1;
  return w->ticks_at(w->now_ns);
}

inline uint64_t clock_ns(void *ctx) {  // through the vDSO
  FakeWorld *w = W(ctx);
  if (w->prctl_mode == TICKCLOCK_PRCTL_SIGSEGV) w->vdso_traps++;
  w->now_ns += w->os_cost_ns;
  return w->now_ns;
}

inline uint64_t clock_ns_sys(void *ctx) {  // the system call: slower, never traps
  FakeWorld *w = W(ctx);
  w->syscall_reads++;
  w->now_ns += 4 * w->os_cost_ns;
  return w->now_ns;
}

inline void sleep_ns(void *ctx, uint64_t ns) { W(ctx)->now_ns += ns; }

inline uint64_t suspended_ns(void *ctx) {
  FakeWorld *w = W(ctx);
  if (++w->suspended_reads == w->suspend_at_call) w->suspend(w->suspend_for_ns);
  return w->suspended;
}

inline uint64_t raw_clock_ns(void *ctx) {  // CLOCK_MONOTONIC_RAW through the vDSO
  if (W(ctx)->raw_fail) return 0;
  return clock_ns(ctx);
}

inline uint64_t raw_clock_ns_sys(void *ctx) {
  if (W(ctx)->raw_fail) return 0;
  return clock_ns_sys(ctx);
}

inline const char *no_env(void *, const char *) { return nullptr; }

// Everything faked: CPU, sysfs, prctl, perf, counter, clocks, env.
inline tickclock_platform full(FakeWorld *w) {
  tickclock_platform p;
  memset(&p, 0, sizeof p);
  p.ctx = w;
  p.cpuid = cpuid;
  p.read_line = read_line;
  p.prctl_get_tsc = prctl_get_tsc;
  p.perf_page = perf_page;
  p.counter = counter;
  p.counter_ordered = counter;
  p.raw_ns = raw_clock_ns;
  p.os_ns = clock_ns;
  p.raw_ns_sys = raw_clock_ns_sys;
  p.os_ns_sys = clock_ns_sys;
  p.sleep_ns = sleep_ns;
  p.getenv = no_env;
  p.suspended_ns = suspended_ns;
  return p;
}

// Only the facts faked (CPU, sysfs, prctl, perf, env); counter and clocks
// native: usable in the normal build of the core.
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
  return p;
}
}  // namespace fake

#endif
