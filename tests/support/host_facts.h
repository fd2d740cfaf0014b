// The facts under which an x86 host must get the TSC, each read here
// without the library: the kernel's clocksource files, CPUID through
// <cpuid.h>, prctl(PR_GET_TSC), and the two read costs measured by the
// test itself (min over batches of RDTSC and of clock_gettime).
#ifndef TICKCLOCK_TESTS_HOST_FACTS_H
#define TICKCLOCK_TESTS_HOST_FACTS_H

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/prctl.h>
#include <time.h>
#include <x86intrin.h>

#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace tctest {

struct HostFacts {
  std::string clocksource, available;
  bool tsc_bit = false, invariant = false, prctl_enabled = false;
  double rdtsc_ns = 0, gettime_ns = 0;

  bool tsc_listed() const { return (" " + available + " ").find(" tsc ") != std::string::npos; }
  // Everything the policy asks of a bare TSC holds, with a clear margin on
  // the read cost (the library's rule is "not dearer"; a margin keeps the
  // two measurements from disagreeing on a borderline host). "" if so,
  // else what is missing.
  std::string tsc_required_missing() const {
    std::string m;
    if (clocksource != "tsc") m += "clocksource is '" + clocksource + "', not tsc; ";
    if (!tsc_bit) m += "no TSC bit; ";
    if (!invariant) m += "no invariant TSC; ";
    if (!prctl_enabled) m += "prctl(PR_GET_TSC) does not report RDTSC enabled; ";
    if (tsc_bit && prctl_enabled && !(rdtsc_ns < 0.75 * gettime_ns))
      m += "RDTSC not clearly cheaper than clock_gettime; ";
    return m;
  }
  std::string describe() const {
    char b[400];
    std::snprintf(b, sizeof b,
                  "clocksource '%s' (available '%s'), TSC bit %d, invariant %d, PR_GET_TSC "
                  "enabled %d, RDTSC %.1f ns, clock_gettime %.1f ns",
                  clocksource.c_str(), available.c_str(), tsc_bit, invariant, prctl_enabled,
                  rdtsc_ns, gettime_ns);
    return b;
  }
};

inline std::string first_line(const char *path) {
  std::string s;
  if (FILE *f = std::fopen(path, "r")) {
    char b[512];
    if (std::fgets(b, sizeof b, f)) s = b;
    std::fclose(f);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline double min_read_cost_ns(bool counter) {
  double best = 1e9;
  for (int batch = 0; batch < 16; batch++) {
    struct timespec a, b, t;
    unsigned long long sink = 0;
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    for (int i = 0; i < 2000; i++) {
      if (counter) {
        sink += __rdtsc();
      } else {
        clock_gettime(CLOCK_MONOTONIC, &t);
        sink += (unsigned long long)t.tv_nsec;
      }
    }
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 2000;
    if (ns < best) best = ns;
    if (sink == 42) best += 0;
  }
  return best;
}

// QEMU user mode on an x86 host (the CPU-model cells): CPUID is QEMU's
// TCG ("TCGTCGTCGTCG") while the kernel, and its /proc/cpuinfo, are the
// host's. There the prctl and seccomp calls reach the emulator, not the
// program, and an exec leaves the emulation. Under QEMU system emulation
// the guest's own kernel writes CPUID's brand string as the model name
// ("QEMU Virtual CPU version 2.5+", "Intel Core i7 9xx (Nehalem Class Core
// i7)"), so a model name that is not CPUID's brand is the host's.
inline std::string trimmed(std::string s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\0'))
    s.pop_back();
  size_t k = s.find_first_not_of(" \t");
  return k == std::string::npos ? std::string() : s.substr(k);
}
inline bool qemu_user_x86() {
  unsigned a, b, c, d;
  char sig[13] = {0};
  __cpuid(1, a, b, c, d);
  if (!((c >> 31) & 1)) return false;
  __cpuid(0x40000000u, a, b, c, d);
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  if (std::string(sig) != "TCGTCGTCGTCG") return false;
  std::string brand;
  __cpuid(0x80000000u, a, b, c, d);
  if (a >= 0x80000004u && a <= 0x8000ffffu) {
    char buf[49] = {0};
    for (unsigned k = 0; k < 3; k++) {
      __cpuid(0x80000002u + k, a, b, c, d);
      std::memcpy(buf + 16 * k, &a, 4);
      std::memcpy(buf + 16 * k + 4, &b, 4);
      std::memcpy(buf + 16 * k + 8, &c, 4);
      std::memcpy(buf + 16 * k + 12, &d, 4);
    }
    brand = trimmed(buf);
  }
  std::string model;
  if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (model.empty() && std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "model name", 10) == 0) {
        const char *colon = std::strchr(line, ':');
        model = trimmed(colon ? colon + 1 : "");
      }
    std::fclose(f);
  }
  if (brand.empty()) return model.find("QEMU") == std::string::npos;
  return model != brand;
}

// How a test puts the counter in use in a fresh process on this host. The
// library's own choice where the host's facts bless the TSC; forced where
// RDTSC executes but the kernel keeps another clocksource (kvm-clock,
// tsc=unstable on its command line): TICKCLOCK_SOURCE=tsc set in the child
// before its first use, which the library honours as it would for a user.
// Not at all where RDTSC cannot execute (no TSC bit, PR_SET_TSC) or where
// it is QEMU user mode's emulation (CPUID says TCG, the kernel is the
// host's): then `why` says so and the counter-path case skips.
struct CounterPlan {
  bool usable = false, forced = false;
  std::string why;  // forced: what the blessing lacks; unusable: why not
  // In the child, before the library's first use. Where the library's own
  // choice is the plan, a TICKCLOCK_SOURCE inherited from whoever ran the
  // test goes: it would decide instead.
  void apply() const {
    if (forced)
      setenv("TICKCLOCK_SOURCE", "tsc", 1);
    else if (usable)
      unsetenv("TICKCLOCK_SOURCE");
  }
  std::string how() const {
    return !usable  ? "the counter cannot be used here (" + why + ")"
           : forced ? "the TSC forced with TICKCLOCK_SOURCE=tsc (" + why + ")"
                    : std::string("the TSC, the library's own choice");
  }
};

inline HostFacts host_facts();

inline CounterPlan counter_plan() {
  static CounterPlan plan = [] {
    CounterPlan p;
    HostFacts h = host_facts();
    if (qemu_user_x86()) {
      p.why = "under QEMU user mode RDTSC is the emulator's, and so is every read cost";
    } else if (!h.tsc_bit) {
      p.why = "CPUID.01H:EDX[4] (TSC) is clear";
    } else if (!h.prctl_enabled) {
      p.why = "prctl(PR_GET_TSC) says RDTSC is disabled for this process";
    } else {
      p.usable = true;
      p.why = h.tsc_required_missing();
      p.forced = !p.why.empty();
    }
    return p;
  }();
  return plan;
}

inline HostFacts host_facts() {
  HostFacts h;
  h.clocksource = first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  h.available = first_line("/sys/devices/system/clocksource/clocksource0/available_clocksource");
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d)) h.tsc_bit = (d >> 4) & 1;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u && a <= 0x8000ffffu &&
      __get_cpuid(0x80000007u, &a, &b, &c, &d))
    h.invariant = (d >> 8) & 1;
  int mode = 0;
  h.prctl_enabled = prctl(PR_GET_TSC, &mode, 0, 0, 0) == 0 && mode == PR_TSC_ENABLE;
  if (h.tsc_bit && h.prctl_enabled) {  // never execute RDTSC where it may trap
    h.rdtsc_ns = min_read_cost_ns(true);
    h.gettime_ns = min_read_cost_ns(false);
  }
  return h;
}

}  // namespace tctest

#endif
#endif
