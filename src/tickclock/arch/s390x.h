/* tickclock — s390x: the TOD clock (internal).
 *
 * STCKF (store clock fast, z9 and later) stores the 64-bit TOD clock from
 * problem state; it never traps. Bit 51 ticks once per microsecond, so the
 * clock advances 4096 units per microsecond: exactly 4.096 GHz, an
 * architectural constant (z/Architecture Principles of Operation, "TOD
 * clock"), which qemu-s390x emulates faithfully.
 *
 * STCKF is not serialising (that is what makes it fast); the ordered read
 * puts BCR 15,0 (serialisation) before it.
 */
#ifndef TICKCLOCK_ARCH_S390X_H
#define TICKCLOCK_ARCH_S390X_H

#include "../port.h"

#define TKC_TOD_HZ UINT64_C(4096000000)

TKC_INLINE uint64_t tkc_s390_stckf(void) {
  uint64_t v;
  __asm__ __volatile__("stckf %0" : "=Q"(v) : : "cc");
  return v;
}
TKC_INLINE uint64_t tkc_s390_stckf_ordered(void) {
  uint64_t v;
  __asm__ __volatile__("bcr 15,0\n\tstckf %0" : "=Q"(v) : : "cc", "memory");
  return v;
}

#define TKC_ARCH_COUNTER TICKCLOCK_SOURCE_TOD
#define tkc_arch_read tkc_s390_stckf
#define tkc_arch_read_ordered tkc_s390_stckf_ordered

/* The stated frequency (evidence.c): the TOD clock's architectural rate. */
#define TKC_NOMINAL_NAME "tod_architecture"
#define TKC_NOMINAL_HZ() TKC_TOD_HZ

#endif /* TICKCLOCK_ARCH_S390X_H */
