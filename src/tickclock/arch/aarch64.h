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
TICKCLOCK__INLINE uint64_t tickclock__a64_cntvct(void) {
  return TICKCLOCK__CAST(uint64_t, _ReadStatusReg(ARM64_CNTVCT));
}
TICKCLOCK__INLINE uint64_t tickclock__a64_cntvct_ordered(void) {
  __isb(_ARM64_BARRIER_SY);
  return TICKCLOCK__CAST(uint64_t, _ReadStatusReg(ARM64_CNTVCT));
}
TICKCLOCK__INLINE uint64_t tickclock__a64_cntfrq(void) {
  return TICKCLOCK__CAST(uint64_t, _ReadStatusReg(ARM64_CNTFRQ));
}
#else
TICKCLOCK__INLINE uint64_t tickclock__a64_cntvct(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
TICKCLOCK__INLINE uint64_t tickclock__a64_cntvct_ordered(void) {
  uint64_t v;
  __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
  return v;
}
TICKCLOCK__INLINE uint64_t tickclock__a64_cntfrq(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
  return v;
}
#endif

#define TICKCLOCK__ARCH_COUNTER TICKCLOCK_SOURCE_CNTVCT
#define tickclock__arch_read tickclock__a64_cntvct
#define tickclock__arch_read_ordered tickclock__a64_cntvct_ordered

/* The stated frequency (evidence.c): CNTFRQ_EL0, as firmware programmed it. */
#if defined(__aarch64__)
#define TICKCLOCK__NOMINAL_NAME "cntfrq_el0"
#define TICKCLOCK__NOMINAL_HZ() tickclock__a64_cntfrq()
#endif

#endif /* TICKCLOCK_ARCH_AARCH64_H */
