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
 * tkc_g_source is 0 until initialisation completes; then
 * TKC_ARCH_COUNTER while the raw counter is the reading (the inline
 * fast path), TICKCLOCK_SOURCE_SYSTEM while readings go out of line
 * through the state. It is the only thing the hot path loads.
 * tkc_g_state points at the immutable state (conversion,
 * provenance) and is published with release ordering before
 * tkc_g_source. */
#if !defined(TICKCLOCK_STATIC)
TKC_API_VAR TKC_SHARED int tkc_g_source;
TKC_API_VAR const tickclock_info *TKC_SHARED tkc_g_state;
/* Tick at which tickclock_to_ns/tickclock_delta_ns do what is due
 * out of line (a periodic re-validation, a refinement of the frequency);
 * UINT64_MAX when nothing is. */
TKC_API_VAR TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_reval_deadline;
/* The ticks that may go out of line: ticks - tkc_g_reval_deadline <
 * tkc_g_due_span, one subtraction and one compare whatever the tick (a
 * tick before the deadline wraps to a difference above the span). The
 * window ends where the ticks far ahead of the counter start (ticks from
 * the future 50 years or more ahead, seen by the out-of-line path, which
 * then did what was due by the counter's time): the span is far -
 * deadline, UINT64_MAX - deadline while none was seen, 0 while nothing is
 * due. Inside the window, the ticks near ahead seen the same way,
 * [tkc_g_ahead_lo, tkc_g_ahead_lo + tkc_g_ahead_span] (empty: lo =
 * UINT64_MAX, span = 0), are left alone too. Both are emptied when the
 * deadline moves. */
TKC_API_VAR TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_due_span;
TKC_API_VAR TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_lo;
TKC_API_VAR TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_span;
#else
/* TICKCLOCK_STATIC: this translation unit's own copy (publish.c and
 * bookkeeping.c do not define them then); the initial values are theirs. */
static TKC_UNUSED TKC_SHARED int tkc_g_source = 0;
static TKC_UNUSED const tickclock_info *TKC_SHARED tkc_g_state = NULL;
static TKC_UNUSED TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_reval_deadline = UINT64_MAX;
static TKC_UNUSED TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_due_span = 0;
static TKC_UNUSED TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_lo = UINT64_MAX;
static TKC_UNUSED TKC_ALIGN8 TKC_SHARED uint64_t tkc_g_ahead_span = 0;
#endif
TICKCLOCK_API void tkc_revalidate_due(uint64_t ticks);
TICKCLOCK_API uint64_t tkc_now_slow(void);
TICKCLOCK_API uint64_t tkc_now_ordered_slow(void);
TICKCLOCK_API const tickclock_info *tkc_state_slow(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- the counter read for this ISA (one header per ISA) ---------------- */
#if defined(TICKCLOCK_NO_ARCH_COUNTER)
#include "arch/os_only.h"
#elif defined(TKC_X86)
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
#if defined(TICKCLOCK_TEST_FAKE_COUNTER) && defined(TKC_ARCH_COUNTER)
#ifdef __cplusplus
extern "C" {
#endif
uint64_t tkc_platform_read(void);
uint64_t tkc_platform_read_ordered(void);
/* where the stated rate is a register (CNTFRQ_EL0), the fake states it */
#if defined(__aarch64__) && defined(TKC_NOMINAL_HZ)
#define TKC_NOMINAL_FREQ_REGISTER tkc_a64_cntfrq
uint64_t tkc_platform_freq_register(void);
#undef TKC_NOMINAL_HZ
#define TKC_NOMINAL_HZ tkc_platform_freq_register
#endif
#ifdef __cplusplus
}
#endif
#undef tkc_arch_read
#undef tkc_arch_read_ordered
#define tkc_arch_read tkc_platform_read
#define tkc_arch_read_ordered tkc_platform_read_ordered
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- conversion (inline) ------------------------------------------------ */
/* t * (i + f/2^64), saturating. */
TKC_INLINE uint64_t tkc_scale(uint64_t t, uint64_t i, uint64_t f) {
  uint64_t frac_lo, int_lo, sum;
  uint64_t frac_hi = tkc_mul64(t, f, &frac_lo);
  uint64_t int_hi = tkc_mul64(t, i, &int_lo);
  sum = int_lo + frac_hi;
  /* overflow if the integer product spilled or the sum carried */
  return (int_hi | TKC_CAST(uint64_t, sum < int_lo)) ? UINT64_MAX : sum;
}

/* Scale below one: a single high multiply, which cannot overflow. The
 * branch is on the frequency (fixed per conversion, always predicted),
 * never on the magnitude of t: every t costs the same. */
TKC_INLINE uint64_t tkc_scale_frac(uint64_t t, uint64_t f) {
  uint64_t lo;
  return tkc_mul64(t, f, &lo);
}

TKC_INLINE uint64_t tickclock_conv_ticks_to_ns(const tickclock_conv *c, uint64_t ticks) {
  if (c->ns_int == 0) return tkc_scale_frac(ticks, c->ns_frac); /* f > 1 GHz */
  return tkc_scale(ticks, c->ns_int, c->ns_frac);
}

TKC_INLINE uint64_t tickclock_conv_ns_to_ticks(const tickclock_conv *c, uint64_t ns) {
  if (c->tk_int == 0) return tkc_scale_frac(ns, c->tk_frac); /* f < 1 GHz */
  return tkc_scale(ns, c->tk_int, c->tk_frac);
}

/* Signed: magnitude through the unsigned path, so delta(-d) == -delta(d). */
TKC_INLINE int64_t tkc_signed_ns(uint64_t mag_ns, int negative) {
  if (negative) return mag_ns >= (UINT64_C(1) << 63) ? INT64_MIN : -TKC_CAST(int64_t, mag_ns);
  return mag_ns > TKC_CAST(uint64_t, INT64_MAX) ? INT64_MAX : TKC_CAST(int64_t, mag_ns);
}

TKC_INLINE int64_t tickclock_conv_delta_to_ns(const tickclock_conv *c, int64_t dticks) {
  int neg = dticks < 0;
  /* |INT64_MIN| = 2^63 is representable as uint64_t */
  uint64_t mag = neg ? UINT64_C(0) - TKC_CAST(uint64_t, dticks) : TKC_CAST(uint64_t, dticks);
  return tkc_signed_ns(tickclock_conv_ticks_to_ns(c, mag), neg);
}

/* ---- reading and converting (inline) ----------------------------------- */

/* Fastest read. May be reordered with surrounding instructions. */
TKC_INLINE uint64_t tickclock_now(void) {
#if defined(TKC_ARCH_COUNTER)
  if (TKC_LIKELY(TKC_LOAD_RELAXED(&tkc_g_source) == TKC_ARCH_COUNTER)) return tkc_arch_read();
#endif
  return tkc_now_slow();
}

/* Not executed before earlier loads have completed (see arch/ for each
 * ISA's instruction sequence). */
TKC_INLINE uint64_t tickclock_now_ordered(void) {
#if defined(TKC_ARCH_COUNTER)
  if (TKC_LIKELY(TKC_LOAD_RELAXED(&tkc_g_source) == TKC_ARCH_COUNTER))
    return tkc_arch_read_ordered();
#endif
  return tkc_now_ordered_slow();
}

TKC_INLINE const tickclock_info *tkc_state(void) {
  const tickclock_info *s = TKC_LOAD_ACQUIRE(&tkc_g_state);
  if (TKC_UNLIKELY(s == NULL)) s = tkc_state_slow();
  return s;
}

/* Unit ticks -> ns under state s: base_ns + conv(t - base_ticks),
 * saturating; a tick below base_ticks was taken under an earlier state and
 * converts with that one (out of line). */
TICKCLOCK_API uint64_t tkc_ns_before(const tickclock_info *s, uint64_t ticks);
TKC_INLINE uint64_t tkc_ns_in(const tickclock_info *s, uint64_t ticks) {
  uint64_t ns;
  if (!s->scaled) return ticks;
  if (TKC_UNLIKELY(ticks < s->base_ticks)) return tkc_ns_before(s, ticks);
  ns = s->base_ns + tickclock_conv_ticks_to_ns(&s->conv, ticks - s->base_ticks);
  return ns < s->base_ns ? UINT64_MAX : ns;
}

/* What is due by tick ticks (a refinement, the rate check) is done out
 * of line once ticks reaches the deadline; nothing is due before. A tick
 * the out-of-line path already found ahead of the counter (past the
 * window's end, or in the near range) does not go there again until the
 * deadline moves: whatever the tick, what is due runs at most once per
 * deadline. A recent reading and a tick far ahead take the same single
 * compare. The deadline and the span are two words stored one after the
 * other (with the lock held): a pair read across a store may at worst
 * send one call out of line for nothing (tkc_revalidate_due checks the
 * deadline again under the lock and does only what the counter's own
 * time has made due) or keep one call from going there (the next one
 * does); the conversion never depends on them (it loads the state). */
TKC_INLINE void tkc_due_first(uint64_t ticks) {
  if (TKC_UNLIKELY(ticks - TKC_LOAD_RELAXED(&tkc_g_reval_deadline) <
                   TKC_LOAD_RELAXED(&tkc_g_due_span)) &&
      ticks - TKC_LOAD_RELAXED(&tkc_g_ahead_lo) > TKC_LOAD_RELAXED(&tkc_g_ahead_span))
    tkc_revalidate_due(ticks);
}

/* Absolute ticks (a tickclock_now() value) -> ns, relative to the
 * state's base: continuous across every publication. Identity while ticks
 * are nanoseconds. */
TKC_INLINE uint64_t tickclock_to_ns(uint64_t ticks) {
  const tickclock_info *s;
  /* what is due first (a refinement, the rate check), then the state:
   * the conversion uses the best rate known when it runs */
  tkc_due_first(ticks);
  s = tkc_state();
  return tkc_ns_in(s, ticks);
}

/* end - start in ns, signed (end may precede start). A difference of
 * exactly 2^63 ticks is positive when end > start as unsigned numbers, so
 * delta_ns(a, b) == -delta_ns(b, a) wherever neither saturates. */
TKC_INLINE int64_t tickclock_delta_ns(uint64_t start, uint64_t end) {
  const tickclock_info *s;
  uint64_t d = end - start; /* two's complement difference */
  int neg = d > (UINT64_C(1) << 63) || (d == (UINT64_C(1) << 63) && end < start);
  uint64_t mag = neg ? UINT64_C(0) - d : d;
  /* what is due for the later tick first, then the state: the best rate
   * known converts, and (a, b) and (b, a) see the same one */
  uint64_t later = end > start ? end : start;
  tkc_due_first(later);
  s = tkc_state();
  if (s->scaled) mag = tickclock_conv_ticks_to_ns(&s->conv, mag);
  return tkc_signed_ns(mag, neg);
}

/* ---- sampling (inline) -------------------------------------------------- */
/* Draws the gap after this one (duration.c): for the timed execution that
 * ends a gap when the last timed one was not added. */
TICKCLOCK_API void tkc_sampler_draw_ahead(tickclock_sampler *s);

/* 1: time this execution (then tickclock_sampler_add its duration); 0:
 * don't. One decrement and one predicted branch on a caller-owned state;
 * a timed execution's decision takes the gap drawn ahead and draws
 * nothing (tickclock_sampler_add draws the next one, after the end). */
TKC_INLINE int tickclock_sampler_should_time(tickclock_sampler *s) {
  if (TKC_LIKELY(--s->left != 0)) return 0;
  if (TKC_UNLIKELY(s->ahead == 0)) tkc_sampler_draw_ahead(s);
  s->done += s->gap;
  s->gap = s->left = s->ahead;
  s->ahead = 0;
  return 1;
}

/* 1 when the next tickclock_sampler_should_time(s) will return 1 (nothing
 * changes): a caller can do, right after the execution before a timed one,
 * what must not happen inside the timed one or long before it. */
TKC_INLINE int tickclock_sampler_next_timed(const tickclock_sampler *s) { return s->left == 1; }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_INLINE_H */
