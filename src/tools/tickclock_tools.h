/* tickclock tools — what tickclock-probe and the tests use beyond the
 * public API (tickclock.h, tickclock.hpp). A library of its own
 * (//src/tools:tools; CMake: tickclock_tools) linked with the core; never
 * part of the core's sources or of the vendored single header, so nothing
 * here ships to the library's users.
 *
 * It offers, deliberately and no more:
 *  - the records the core gathers and decides from, as data: the evidence
 *    (tickclock_evidence, evidence.h) with its CPUID facts
 *    (tickclock_x86_facts), calibration and frequency claims, and the CPUID
 *    decoder's entry points (tickclock_x86_*, cpuid_x86.h) that turn leaves
 *    into facts;
 *  - recorded CPUID fixtures (fixture.h: parser, leaf source, replayed
 *    evidence);
 *  - the CPUID frequency rules only the tools report (Linux's leaf 0x15
 *    rule, the CPUID-only answer) and the RDTSCP read;
 *  - a small window into the core (tkt_*): gathering, the decider, the
 *    counter and OS clock reads, calibration brackets, the measured read
 *    cost, the sysfs reads, exact ratios and the escaping of untrusted
 *    text, each the core's own function, so the probe reports what the
 *    library does rather than a copy of it.
 * Names: the moved entry points keep their tickclock_x86_* /
 * tickclock_fixture_* names; the window is tkt_* / TKT_*.
 */
#ifndef TICKCLOCK_TOOLS_H
#define TICKCLOCK_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "tickclock.h"
#include "evidence.h"
#include "fixture.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- x86 CPUID: the rules only the tools report -------------------------- */

/* Linux's present rule, in its integer kHz arithmetic: ECX; Denverton
 * 25 MHz; else the crystal derived from leaf 0x16 (what the kernel's
 * "Detected ... MHz" comes from before its refined calibration). Same
 * names as tickclock_x86_freq_leaf15; reported next to it by
 * `tickclock-probe cpuid`. */
int tickclock_x86_freq_leaf15_linux(const tickclock_x86_facts *f, tickclock_freq *out);
/* The CPUID-only answer (what `tickclock-probe cpuid` reports as tsc_hz):
 * under a hypervisor its timing leaf first; then 0x15, then 0x16. */
int tickclock_x86_freq_cpuid(const tickclock_x86_facts *f, tickclock_freq *out);

/* ---- counter reads ----------------------------------------------------------- */

/* TKT_COUNTER: the source id of this build's hardware counter (the one
 * tickclock_now() reads when it uses one), defined only where there is one.
 * tkt_counter_read / tkt_counter_read_ordered read it as the core does
 * (on x86 RDTSC and LFENCE;RDTSC); call them only once
 * tkt_counter_executable() said yes. */
#if defined(TKC_ARCH_COUNTER)
#define TKT_COUNTER TKC_ARCH_COUNTER
uint64_t tkt_counter_read(void);
uint64_t tkt_counter_read_ordered(void);
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif
/* RDTSCP, with IA32_TSC_AUX in *aux: only after checking
 * CPUID.80000001H:EDX[27] (tickclock_x86_facts.rdtscp); it raises #UD
 * where absent. */
TKC_INLINE uint64_t tkt_x86_rdtscp(uint32_t *aux) {
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned int a;
  uint64_t t = __rdtscp(&a);
  *aux = a;
  return t;
#else
  uint32_t lo, hi, c;
  __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c) : : "memory");
  *aux = c;
  return ((uint64_t)hi << 32) | lo;
#endif
}
#endif

/* ---- the core's window ---------------------------------------------------------- */

/* Gathers the evidence the automatic choice would decide from (no
 * configuration: the environment override is read as at first use), and
 * what the first use leaves out since no decision reads it (the kernel's
 * list of clocksources, CPUID's brand string). */
void tkt_gather(tickclock_evidence *ev);
/* The decider on recorded or gathered evidence: fills *out as
 * tickclock_info_get() would; returns 0, or non-zero when the counter
 * would be used but needs a calibration the evidence lacks. */
int tkt_decide(const tickclock_evidence *ev, tickclock_info *out);
/* The paravirtual clock page in the evidence (tickclock_evidence.pv):
 * its kind, and the stable bit of a pvclock page's flags. */
#define TKT_PV_KVM TKC_PV_KVM
#define TKT_PV_HYPERV TKC_PV_HYPERV
#define TKT_PVCLOCK_STABLE TKC_PVCLOCK_STABLE
#define TKT_PV_ABSENT_UNMAPPED TKC_PV_ABSENT_UNMAPPED
#define TKT_PV_ABSENT_TORN TKC_PV_ABSENT_TORN
#define TKT_PV_ABSENT_NO_MAPS TKC_PV_ABSENT_NO_MAPS
/* The page's frequency claim as the decider reads it (ok with the rate,
 * or the check that failed in why); NULL where there is no such claim
 * (not x86). */
const tickclock_freq *tkt_pv_claim(const tickclock_evidence *ev);
/* Is word a blank-separated entry of list, as the decider reads the
 * kernel's available_clocksource ("tsc" is not "tsc-early")? */
int tkt_has_word(const char *list, const char *word);
/* Whether the evidence's counter may be executed at all (policy step 1:
 * CPUID, PR_SET_TSC); 0 with the reason in why[n] otherwise. */
int tkt_counter_executable(const tickclock_evidence *ev, char *why, size_t n);
/* Calibrates read_ordered against CLOCK_MONOTONIC_RAW over ms
 * milliseconds, as the core does; 1 with the reduced frequency in
 * *hz_num / *hz_den, else 0. */
int tkt_calibrate(uint64_t (*read_ordered)(void), uint32_t ms, uint64_t *hz_num, uint64_t *hz_den);
/* The tightest of the core's (counter, raw clock, counter) brackets: the
 * counter's midpoint, CLOCK_MONOTONIC_RAW in ns, the bracket's width in
 * ticks. */
void tkt_tightest_bracket(uint64_t (*read_ordered)(void), uint64_t *counter_mid, uint64_t *raw_ns,
                          uint64_t *width);
/* Nanoseconds per call of rd, the minimum over batches (the read cost the
 * decider compares). */
double tkt_measure_read_ns(uint64_t (*rd)(void));
/* The OS clock as the core reads it: tkt_os_read is the fallback source's
 * read (what tickclock_now() returns on it), tkt_os_now CLOCK_MONOTONIC in
 * ns, tkt_os_now_raw CLOCK_MONOTONIC_RAW in ns (0 if unreadable). */
uint64_t tkt_os_read(void);
uint64_t tkt_os_now(void);
uint64_t tkt_os_now_raw(void);
/* The first line of a small file (sysfs, procfs) into buf[n], newline
 * removed, opened and closed at once; 1 on success, else 0. */
int tkt_read_line(const char *path, char *buf, size_t n);
/* The kernel's current and available clocksources, read as the core's
 * policy step 3 reads them. */
#define TKT_SYSFS_CURRENT_CLOCKSOURCE TKC_SYSFS_CURRENT_CLOCKSOURCE
#define TKT_SYSFS_AVAILABLE_CLOCKSOURCE TKC_SYSFS_AVAILABLE_CLOCKSOURCE
/* Exact ratios: num/den reduced in place; (a - b) / b in ppm. */
void tkt_reduce(uint64_t *num, uint64_t *den);
double tkt_ppm(uint64_t a_num, uint64_t a_den, uint64_t b_num, uint64_t b_den);
/* Text from outside (a file, the environment, CPUID bytes) as one line of
 * printable ASCII, as the core prints it: backslash, control bytes and
 * bytes >= 0x7f become \\, \n, \r, \t or \xHH; truncated to n - 1 bytes
 * between escapes. */
void tkt_escape(char *dst, size_t n, const char *src);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_TOOLS_H */
