/* tickclock — RISC-V 64: the `time` CSR (internal).
 *
 * rdtime reads the platform timer (mtime) through the `time` CSR, which
 * Linux makes readable from U-mode (SBI firmware emulates it where the
 * hardware does not — the read-cost check sees that). Its frequency is
 * the device tree's /cpus/timebase-frequency (10-25 MHz on real boards);
 * under qemu-riscv64 user mode it runs at the host's TSC rate, so the
 * nominal value is checked against calibration.
 *
 * Never rdcycle: since Linux 6.6 user access to the cycle CSR is off by
 * default and it raises SIGILL.
 *
 * Ordered: `fence iorw, iorw` first. The ISA does not order CSR reads with
 * memory accesses by any fence, so this is the best available (it keeps
 * the compiler and the memory system from moving earlier accesses past it).
 */
#ifndef TICKCLOCK_ARCH_RISCV64_H
#define TICKCLOCK_ARCH_RISCV64_H

#include "../port.h"

TKC_INLINE uint64_t tkc_rv_rdtime(void) {
  uint64_t v;
  __asm__ __volatile__("rdtime %0" : "=r"(v));
  return v;
}
TKC_INLINE uint64_t tkc_rv_rdtime_ordered(void) {
  uint64_t v;
  __asm__ __volatile__("fence iorw, iorw\n\trdtime %0" : "=r"(v) : : "memory");
  return v;
}

#define TKC_ARCH_COUNTER TICKCLOCK_SOURCE_RDTIME
#define tkc_arch_read tkc_rv_rdtime
#define tkc_arch_read_ordered tkc_rv_rdtime_ordered

/* The stated frequency (evidence.c, Linux): the device tree's
 * /cpus/timebase-frequency, else "timebase" in /proc/cpuinfo. */
#define TKC_NOMINAL_DT_TIMEBASE 1
#define TKC_NOMINAL_CPUINFO_TIMEBASE 1

#endif /* TICKCLOCK_ARCH_RISCV64_H */
