/* tickclock — AArch64: the generic timer's virtual counter (internal).
 *
 * CNTVCT_EL0 is readable from EL0 on Linux (the kernel sets
 * CNTKCTL_EL1.EL0VCTEN; where an erratum makes the counter unreliable it
 * clears it and the kernel traps and emulates the read — our read-cost
 * check then sees a read slower than clock_gettime and refuses it).
 * Its frequency is architectural: CNTFRQ_EL0, programmed by firmware (and
 * checked against calibration, because firmware gets it wrong). Under
 * qemu-aarch64 both tick at 62.5 MHz.
 *
 * Never PMCCNTR_EL0 (the cycle counter): user access traps on Linux, and
 * clang's __builtin_readcyclecounter reads exactly that on AArch64.
 *
 * The ordered read puts an ISB first: the counter read is not performed
 * speculatively ahead of earlier instructions (Arm ARM D11.2.2; the same
 * sequence as Linux's __arch_counter_get_cntvct()).
 */
#ifndef TICKCLOCK_ARCH_AARCH64_H
#define TICKCLOCK_ARCH_AARCH64_H

#include "../port.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
TKC_INLINE uint64_t tkc_a64_cntvct(void) {
  return TKC_CAST(uint64_t, _ReadStatusReg(ARM64_CNTVCT));
}
TKC_INLINE uint64_t tkc_a64_cntvct_ordered(void) {
  __isb(_ARM64_BARRIER_SY);
  return TKC_CAST(uint64_t, _ReadStatusReg(ARM64_CNTVCT));
}
TKC_INLINE uint64_t tkc_a64_cntfrq(void) {
  return TKC_CAST(uint64_t, _ReadStatusReg(ARM64_CNTFRQ));
}
#else
TKC_INLINE uint64_t tkc_a64_cntvct(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
TKC_INLINE uint64_t tkc_a64_cntvct_ordered(void) {
  uint64_t v;
  __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
  return v;
}
TKC_INLINE uint64_t tkc_a64_cntfrq(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
  return v;
}
#endif

#define TKC_ARCH_COUNTER TICKCLOCK_SOURCE_CNTVCT
#define tkc_arch_read tkc_a64_cntvct
#define tkc_arch_read_ordered tkc_a64_cntvct_ordered

/* The stated frequency (evidence.c): CNTFRQ_EL0, as firmware programmed it. */
#if defined(__aarch64__)
#define TKC_NOMINAL_NAME "cntfrq_el0"
#define TKC_NOMINAL_HZ() tkc_a64_cntfrq()
#endif

#endif /* TICKCLOCK_ARCH_AARCH64_H */
