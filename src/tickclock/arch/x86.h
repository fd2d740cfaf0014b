/* tickclock — x86 (x86-64 and i686) counter reads (internal).
 *
 * The TSC is read with RDTSC; it is available on every x86-64 CPU and on
 * every i686 (Pentium Pro and later) CPU, but the kernel can make it trap
 * (prctl PR_SET_TSC) and hypervisors can intercept it: the initialiser
 * checks both before this path is ever taken (see evidence.c / decide.c).
 *
 * The ordered read is LFENCE;RDTSC rather than RDTSCP:
 *  - LFENCE waits until all earlier instructions have completed locally
 *    (Intel SDM: "does not execute until all prior instructions have
 *    completed locally"), so RDTSC cannot start before earlier loads have
 *    their data. AMD documents the same for LFENCE when it is dispatch
 *    serialising, which is the default on Zen 2+ and which Linux forces
 *    (MSR C001_1029[1]) on older families since 2018.
 *  - RDTSCP waits for earlier instructions too, but RDTSCP is missing on
 *    some CPUs and emulators (QEMU's qemu64 and Nehalem models raise #UD),
 *    so it would need a CPUID check and a branch on the hot path.
 *  - Measured on the development host (Intel 6/0xCF, KVM): LFENCE;RDTSC
 *    and RDTSCP both ~28 ns per read vs ~19.5 ns for bare RDTSC, so the
 *    portable choice costs nothing (numbers: tests/bench, README).
 * Neither waits for earlier stores to drain from the store buffer; callers
 * that need that put a full fence (MFENCE / atomic_thread_fence seq_cst)
 * before the read.
 */
#ifndef TICKCLOCK_ARCH_X86_H
#define TICKCLOCK_ARCH_X86_H

#include "../port.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#pragma intrinsic(__rdtsc, _mm_lfence)
TKC_INLINE uint64_t tkc_x86_rdtsc(void) { return __rdtsc(); }
TKC_INLINE uint64_t tkc_x86_rdtsc_ordered(void) {
  _mm_lfence();
  return __rdtsc();
}
#else
TKC_INLINE uint64_t tkc_x86_rdtsc(void) {
  uint32_t lo, hi;
  /* No "memory" clobber: the fast read may move relative to loads and
   * stores the compiler can see, which is the contract of tickclock_now. */
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (TKC_CAST(uint64_t, hi) << 32) | lo;
}
TKC_INLINE uint64_t tkc_x86_rdtsc_ordered(void) {
  uint32_t lo, hi;
  /* "memory": the compiler must not sink earlier loads/stores below it. */
  __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
  return (TKC_CAST(uint64_t, hi) << 32) | lo;
}
#endif

#define TKC_ARCH_COUNTER TICKCLOCK_SOURCE_TSC
#define tkc_arch_read tkc_x86_rdtsc
#define tkc_arch_read_ordered tkc_x86_rdtsc_ordered

#endif /* TICKCLOCK_ARCH_X86_H */
