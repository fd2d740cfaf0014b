/* tickclock — the CPUID instruction, three ways (internal).
 *
 * One inline entry point, tkc_cpuid_insn(), compiled from one of
 * three paths, chosen by what the compiler provides (never by version):
 *  - TICKCLOCK_CPUID_USE_CPUIDEX: __cpuidex(int[4], leaf, subleaf) from
 *    <intrin.h> (MSVC, clang-cl) or <cpuid.h> (gcc >= 11, clang >= 19;
 *    clang 13-16's <cpuid.h> lacks it, so it is never the gcc/clang default);
 *  - TICKCLOCK_CPUID_USE_CPUID_COUNT: the __cpuid_count macro of <cpuid.h>
 *    (every gcc and clang); the default there;
 *  - TICKCLOCK_CPUID_USE_ASM: inline asm, EBX saved by hand on i686 (PIC
 *    code may reserve it); the default for other GNU-compatible compilers.
 * Defining one of the three macros forces that path; tests/cpuid_shim_test
 * is compiled once per path and checks that they give identical leaves.
 */
#ifndef TICKCLOCK_CPUID_SHIM_H
#define TICKCLOCK_CPUID_SHIM_H

#include "port.h"

#if defined(TKC_X86)

#if !defined(TICKCLOCK_CPUID_USE_CPUIDEX) && !defined(TICKCLOCK_CPUID_USE_CPUID_COUNT) && \
    !defined(TICKCLOCK_CPUID_USE_ASM)
#if defined(_MSC_VER) && !defined(__GNUC__)
#define TICKCLOCK_CPUID_USE_CPUIDEX 1
#elif defined(__GNUC__) || defined(__clang__)
#define TICKCLOCK_CPUID_USE_CPUID_COUNT 1
#else
#define TICKCLOCK_CPUID_USE_ASM 1
#endif
#endif

#if defined(_MSC_VER) && !defined(__GNUC__)
#include <intrin.h>
#elif defined(__GNUC__) || defined(__clang__)
#include <cpuid.h>
#endif

#if defined(TICKCLOCK_CPUID_USE_CPUIDEX)
#define TKC_CPUID_PATH_NAME "cpuidex"
#elif defined(TICKCLOCK_CPUID_USE_CPUID_COUNT)
#define TKC_CPUID_PATH_NAME "cpuid_count"
#else
#define TKC_CPUID_PATH_NAME "asm"
#endif

/* r[0..3] = EAX, EBX, ECX, EDX of CPUID(leaf, subleaf). */
TKC_INLINE void tkc_cpuid_insn(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
#if defined(TICKCLOCK_CPUID_USE_CPUIDEX)
  int v[4];
  __cpuidex(v, (int)leaf, (int)subleaf);
  r[0] = (uint32_t)v[0];
  r[1] = (uint32_t)v[1];
  r[2] = (uint32_t)v[2];
  r[3] = (uint32_t)v[3];
#elif defined(TICKCLOCK_CPUID_USE_CPUID_COUNT)
  unsigned int a, b, c, d;
  __cpuid_count(leaf, subleaf, a, b, c, d);
  r[0] = a;
  r[1] = b;
  r[2] = c;
  r[3] = d;
#else
  uint32_t a, b, c, d;
#if defined(__i386__)
  __asm__ __volatile__("xchgl %%ebx, %1\n\tcpuid\n\txchgl %%ebx, %1"
                       : "=a"(a), "=&r"(b), "=c"(c), "=d"(d)
                       : "0"(leaf), "2"(subleaf));
#else
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "0"(leaf), "2"(subleaf));
#endif
  r[0] = a;
  r[1] = b;
  r[2] = c;
  r[3] = d;
#endif
}

/* Does this CPU have the CPUID instruction? (i486 and older do not.) */
TKC_INLINE int tkc_have_cpuid_insn(void) {
#if defined(__i386__) && (defined(__GNUC__) || defined(__clang__))
  return __get_cpuid_max(0, NULL) != 0;
#else
  return 1;
#endif
}
#endif /* x86 */

#endif /* TICKCLOCK_CPUID_SHIM_H */
