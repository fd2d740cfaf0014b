/* tickclock — the inline machinery behind tickclock.h (included at its
 * bottom; never on its own): the state the hot path loads, the per-ISA
 * counter read, the conversion arithmetic, and tickclock_now /
 * tickclock_to_ns / tickclock_delta_ns. */
#ifndef TICKCLOCK_INLINE_H
#define TICKCLOCK_INLINE_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- internal state behind the inline read path ------------------------
 * tickclock__g_source is 0 until initialisation completes; then
 * TICKCLOCK__ARCH_COUNTER while the raw counter is the reading (the inline
 * fast path), TICKCLOCK_SOURCE_SYSTEM while readings go out of line
 * through the state. It is the only thing the hot path loads.
 * tickclock__g_state points at the immutable state (conversion,
 * provenance) and is published with release ordering before
 * tickclock__g_source. */
#if !defined(TICKCLOCK_STATIC)
TICKCLOCK__API_VAR TICKCLOCK__SHARED int tickclock__g_source;
TICKCLOCK__API_VAR const tickclock_info *TICKCLOCK__SHARED tickclock__g_state;
/* Tick at which tickclock_to_ns/tickclock_delta_ns do what is due
 * out of line (a periodic re-validation, a refinement of the frequency);
 * UINT64_MAX when nothing is. */
TICKCLOCK__API_VAR TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline;
#else
/* TICKCLOCK_STATIC: this translation unit's own copy (init.c does not
 * define them then); the initial values are init.c's. */
static TICKCLOCK__UNUSED TICKCLOCK__SHARED int tickclock__g_source = 0;
static TICKCLOCK__UNUSED const tickclock_info *TICKCLOCK__SHARED tickclock__g_state = NULL;
static TICKCLOCK__UNUSED TICKCLOCK__SHARED uint64_t tickclock__g_reval_deadline = UINT64_MAX;
#endif
TICKCLOCK_API void tickclock__revalidate_due(uint64_t ticks);
TICKCLOCK_API uint64_t tickclock__now_slow(void);
TICKCLOCK_API uint64_t tickclock__now_ordered_slow(void);
TICKCLOCK_API const tickclock_info *tickclock__state_slow(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- the counter read for this ISA (one header per ISA) ---------------- */
#if defined(TICKCLOCK_NO_ARCH_COUNTER)
#include "arch/os_only.h"
#elif defined(TICKCLOCK__X86)
#include "arch/x86.h"
#elif defined(__aarch64__) || defined(_M_ARM64)
#include "arch/aarch64.h"
#elif defined(__powerpc64__) && (defined(__GNUC__) || defined(__clang__))
#include "arch/ppc64.h"
#elif defined(__s390x__) && (defined(__GNUC__) || defined(__clang__))
#include "arch/s390x.h"
#elif defined(__riscv) && defined(__riscv_xlen) && __riscv_xlen == 64 && \
    (defined(__GNUC__) || defined(__clang__))
#include "arch/riscv64.h"
#else
#include "arch/os_only.h"
#endif

/* Test-only build of the core: the counter read goes through the fake
 * platform (internal.h). Never defined in a normal build. */
#if defined(TICKCLOCK_TEST_FAKE_COUNTER) && defined(TICKCLOCK__ARCH_COUNTER)
#ifdef __cplusplus
extern "C" {
#endif
uint64_t tickclock__platform_read(void);
uint64_t tickclock__platform_read_ordered(void);
#ifdef __cplusplus
}
#endif
#undef tickclock__arch_read
#undef tickclock__arch_read_ordered
#define tickclock__arch_read tickclock__platform_read
#define tickclock__arch_read_ordered tickclock__platform_read_ordered
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- conversion (inline) ------------------------------------------------ */
/* t * (i + f/2^64), saturating. */
TICKCLOCK__INLINE uint64_t tickclock__scale(uint64_t t, uint64_t i, uint64_t f) {
  uint64_t frac_lo, int_lo, sum;
  uint64_t frac_hi = tickclock__mul64(t, f, &frac_lo);
  uint64_t int_hi = tickclock__mul64(t, i, &int_lo);
  sum = int_lo + frac_hi;
  /* overflow if the integer product spilled or the sum carried */
  return (int_hi | TICKCLOCK__CAST(uint64_t, sum < int_lo)) ? UINT64_MAX : sum;
}

/* Scale below one: a single high multiply, which cannot overflow. The
 * branch is on the frequency (fixed per conversion, always predicted),
 * never on the magnitude of t: every t costs the same. */
TICKCLOCK__INLINE uint64_t tickclock__scale_frac(uint64_t t, uint64_t f) {
  uint64_t lo;
  return tickclock__mul64(t, f, &lo);
}

TICKCLOCK__INLINE uint64_t tickclock_conv_ticks_to_ns(const tickclock_conv *c,
                                                      uint64_t ticks) {
  if (c->ns_int == 0) return tickclock__scale_frac(ticks, c->ns_frac); /* f > 1 GHz */
  return tickclock__scale(ticks, c->ns_int, c->ns_frac);
}

TICKCLOCK__INLINE uint64_t tickclock_conv_ns_to_ticks(const tickclock_conv *c,
                                                      uint64_t ns) {
  if (c->tk_int == 0) return tickclock__scale_frac(ns, c->tk_frac); /* f < 1 GHz */
  return tickclock__scale(ns, c->tk_int, c->tk_frac);
}

/* Signed: magnitude through the unsigned path, so delta(-d) == -delta(d). */
TICKCLOCK__INLINE int64_t tickclock__signed_ns(uint64_t mag_ns, int negative) {
  if (negative)
    return mag_ns >= (UINT64_C(1) << 63) ? INT64_MIN : -TICKCLOCK__CAST(int64_t, mag_ns);
  return mag_ns > TICKCLOCK__CAST(uint64_t, INT64_MAX) ? INT64_MAX : TICKCLOCK__CAST(int64_t, mag_ns);
}

TICKCLOCK__INLINE int64_t tickclock_conv_delta_to_ns(const tickclock_conv *c,
                                                     int64_t dticks) {
  int neg = dticks < 0;
  /* |INT64_MIN| = 2^63 is representable as uint64_t */
  uint64_t mag = neg ? UINT64_C(0) - TICKCLOCK__CAST(uint64_t, dticks) : TICKCLOCK__CAST(uint64_t, dticks);
  return tickclock__signed_ns(tickclock_conv_ticks_to_ns(c, mag), neg);
}

/* ---- reading and converting (inline) ----------------------------------- */

/* Fastest read. May be reordered with surrounding instructions. */
TICKCLOCK__INLINE uint64_t tickclock_now(void) {
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (TICKCLOCK__LIKELY(TICKCLOCK__LOAD_RELAXED(&tickclock__g_source) == TICKCLOCK__ARCH_COUNTER))
    return tickclock__arch_read();
#endif
  return tickclock__now_slow();
}

/* Not executed before earlier loads have completed (see arch/ for each
 * ISA's instruction sequence). */
TICKCLOCK__INLINE uint64_t tickclock_now_ordered(void) {
#if defined(TICKCLOCK__ARCH_COUNTER)
  if (TICKCLOCK__LIKELY(TICKCLOCK__LOAD_RELAXED(&tickclock__g_source) == TICKCLOCK__ARCH_COUNTER))
    return tickclock__arch_read_ordered();
#endif
  return tickclock__now_ordered_slow();
}

TICKCLOCK__INLINE const tickclock_info *tickclock__state(void) {
  const tickclock_info *s = TICKCLOCK__LOAD_ACQUIRE(&tickclock__g_state);
  if (TICKCLOCK__UNLIKELY(s == NULL)) s = tickclock__state_slow();
  return s;
}

/* Unit ticks -> ns under state s: base_ns + conv(t - base_ticks),
 * saturating; a tick below base_ticks was taken under an earlier state and
 * converts with that one (out of line). */
TICKCLOCK_API uint64_t tickclock__ns_before(const tickclock_info *s, uint64_t ticks);
TICKCLOCK__INLINE uint64_t tickclock__ns_in(const tickclock_info *s, uint64_t ticks) {
  uint64_t ns;
  if (!s->scaled) return ticks;
  if (TICKCLOCK__UNLIKELY(ticks < s->base_ticks)) return tickclock__ns_before(s, ticks);
  ns = s->base_ns + tickclock_conv_ticks_to_ns(&s->conv, ticks - s->base_ticks);
  return ns < s->base_ns ? UINT64_MAX : ns;
}

/* Absolute ticks (a tickclock_now() value) -> ns, relative to the
 * state's base: continuous across every publication. Identity while ticks
 * are nanoseconds. */
TICKCLOCK__INLINE uint64_t tickclock_to_ns(uint64_t ticks) {
  const tickclock_info *s = tickclock__state();
  if (TICKCLOCK__UNLIKELY(ticks >= TICKCLOCK__LOAD_RELAXED(&tickclock__g_reval_deadline)))
    tickclock__revalidate_due(ticks);
  return tickclock__ns_in(s, ticks);
}

/* end - start in ns, signed (end may precede start). A difference of
 * exactly 2^63 ticks is positive when end > start as unsigned numbers, so
 * delta_ns(a, b) == -delta_ns(b, a) wherever neither saturates. */
TICKCLOCK__INLINE int64_t tickclock_delta_ns(uint64_t start, uint64_t end) {
  const tickclock_info *s = tickclock__state();
  if (TICKCLOCK__UNLIKELY(end >= TICKCLOCK__LOAD_RELAXED(&tickclock__g_reval_deadline)))
    tickclock__revalidate_due(end);
  uint64_t d = end - start; /* two's complement difference */
  int neg = d > (UINT64_C(1) << 63) || (d == (UINT64_C(1) << 63) && end < start);
  uint64_t mag = neg ? UINT64_C(0) - d : d;
  if (s->scaled) mag = tickclock_conv_ticks_to_ns(&s->conv, mag);
  return tickclock__signed_ns(mag, neg);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_INLINE_H */
