/* tickclock — x86 CPUID: one native entry point and a pure decoder.
 *
 * The native entry point has three paths, chosen by what the compiler
 * provides (never by version numbers); a test forces each one with
 * TICKCLOCK_CPUID_USE_{CPUIDEX,CPUID_COUNT,ASM} and checks they agree:
 *  - MSVC / clang-cl: __cpuidex from <intrin.h>;
 *  - gcc and clang: __cpuid_count from <cpuid.h> (present in every
 *    version we build with; __cpuidex is missing from clang 13-16's
 *    <cpuid.h>, so it is only used when asked for);
 *  - anything else: inline asm (EBX saved by hand for i686 PIC).
 */
#include "internal.h"

#include <string.h>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define TICKCLOCK__X86 1
#endif

#if defined(TICKCLOCK__X86)
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

static int tickclock__have_cpuid_insn(void) {
#if defined(__i386__) && (defined(__GNUC__) || defined(__clang__))
  /* i486 and older lack CPUID; __get_cpuid_max toggles EFLAGS.ID */
  return __get_cpuid_max(0, NULL) != 0;
#else
  return 1;
#endif
}
#endif /* TICKCLOCK__X86 */

int tickclock_cpuid_native(void *ctx, uint32_t leaf, uint32_t subleaf,
                           tickclock_cpuid_regs *out) {
  (void)ctx;
  memset(out, 0, sizeof *out);
#if defined(TICKCLOCK__X86)
  if (!tickclock__have_cpuid_insn()) return 0;
  {
#if defined(TICKCLOCK_CPUID_USE_CPUIDEX)
    int r[4];
    __cpuidex(r, (int)leaf, (int)subleaf);
    out->eax = (uint32_t)r[0];
    out->ebx = (uint32_t)r[1];
    out->ecx = (uint32_t)r[2];
    out->edx = (uint32_t)r[3];
#elif defined(TICKCLOCK_CPUID_USE_CPUID_COUNT)
    unsigned int a, b, c, d;
    __cpuid_count(leaf, subleaf, a, b, c, d);
    out->eax = a;
    out->ebx = b;
    out->ecx = c;
    out->edx = d;
#else
    uint32_t a, b, c, d;
#if defined(__i386__)
    __asm__ __volatile__("xchgl %%ebx, %1\n\tcpuid\n\txchgl %%ebx, %1"
                         : "=a"(a), "=&r"(b), "=c"(c), "=d"(d)
                         : "0"(leaf), "2"(subleaf));
#else
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "0"(leaf), "2"(subleaf));
#endif
    out->eax = a;
    out->ebx = b;
    out->ecx = c;
    out->edx = d;
#endif
  }
  return 1;
#else
  (void)leaf;
  (void)subleaf;
  return 0;
#endif
}

/* ---- decoding: a pure function of the leaves ---------------------------- */

static int tickclock__leaf(tickclock_cpuid_fn fn, void *ctx, uint32_t leaf, uint32_t max,
                           tickclock_cpuid_regs *r) {
  memset(r, 0, sizeof *r);
  if (leaf > max) return 0; /* past the range's maximum: absent, whatever it returns */
  return fn(ctx, leaf, 0, r);
}

void tickclock_x86_decode(tickclock_cpuid_fn fn, void *ctx, tickclock_x86_facts *out) {
  tickclock_cpuid_regs r;
  uint32_t base_family, ext_family, base_model, ext_model;
  memset(out, 0, sizeof *out);
  if (!fn(ctx, 0, 0, &r)) return;
  out->have_cpuid = 1;
  out->max_leaf = r.eax;
  memcpy(out->vendor + 0, &r.ebx, 4); /* "Genu" "ineI" "ntel": EBX, EDX, ECX */
  memcpy(out->vendor + 4, &r.edx, 4);
  memcpy(out->vendor + 8, &r.ecx, 4);
  out->vendor[12] = '\0';
  if (tickclock__leaf(fn, ctx, 1, out->max_leaf, &r)) {
    base_family = (r.eax >> 8) & 0xf;
    ext_family = (r.eax >> 20) & 0xff;
    base_model = (r.eax >> 4) & 0xf;
    ext_model = (r.eax >> 16) & 0xf;
    out->stepping = r.eax & 0xf;
    out->family = base_family == 0xf ? base_family + ext_family : base_family;
    out->model = (base_family == 0x6 || base_family == 0xf) ? (ext_model << 4) | base_model
                                                            : base_model;
    out->tsc = (r.edx >> 4) & 1;
    out->hypervisor = (r.ecx >> 31) & 1;
  }
  if (fn(ctx, 0x80000000u, 0, &r) && r.eax >= 0x80000000u && r.eax <= 0x8000ffffu)
    out->max_ext_leaf = r.eax;
  if (out->max_ext_leaf) {
    if (tickclock__leaf(fn, ctx, 0x80000001u, out->max_ext_leaf, &r))
      out->rdtscp = (r.edx >> 27) & 1;
    if (tickclock__leaf(fn, ctx, 0x80000007u, out->max_ext_leaf, &r)) {
      out->invariant_known = 1;
      out->invariant_tsc = (r.edx >> 8) & 1;
    }
  }
}
