/* tickclock — POWER: the timebase register (internal).
 *
 * The timebase is readable from problem state (mftb / mfspr 268) on every
 * 64-bit POWER CPU, at a fixed frequency the kernel reports (512 MHz on
 * POWER8-10). glibc gives it as __ppc_get_timebase_freq() (from the vDSO
 * or /proc/cpuinfo "timebase"); under qemu-ppc64le the register runs at the
 * host's TSC rate while /proc/cpuinfo is the host's x86 one, so the
 * nominal frequency is always checked against calibration.
 *
 * Ordered: isync before mftb — context-synchronising, so the read does not
 * happen before earlier instructions complete (Linux's get_cycles uses the
 * same pairing where it needs order).
 */
#ifndef TICKCLOCK_ARCH_PPC64_H
#define TICKCLOCK_ARCH_PPC64_H

#include "../port.h"

TKC_INLINE uint64_t tkc_ppc_mftb(void) {
  uint64_t v;
  __asm__ __volatile__("mfspr %0, 268" : "=r"(v));
  return v;
}
TKC_INLINE uint64_t tkc_ppc_mftb_ordered(void) {
  uint64_t v;
  __asm__ __volatile__("isync\n\tmfspr %0, 268" : "=r"(v) : : "memory");
  return v;
}

#define TKC_ARCH_COUNTER TICKCLOCK_SOURCE_TIMEBASE
#define tkc_arch_read tkc_ppc_mftb
#define tkc_arch_read_ordered tkc_ppc_mftb_ordered

/* The stated frequency (evidence.c): "timebase" in /proc/cpuinfo (Linux). */
#define TKC_NOMINAL_CPUINFO_TIMEBASE 1

#endif /* TICKCLOCK_ARCH_PPC64_H */
