/* tickclock internals — the process's tick unit and the continuity of its
 * readings across publications: pure arithmetic on states (unit.c), no
 * clock read, no lock, no global. The caller reads the clocks and hands
 * the readings in. */
#ifndef TICKCLOCK_UNIT_H
#define TICKCLOCK_UNIT_H

#include "sys.h"
#include "tickclock.h"
#include "calibrate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A new frequency for the same raw counter takes effect this far after the
 * moment of publication (tkc_unit_same_counter). */
#define TKC_REPUBLISH_GUARD_NS UINT64_C(1000000)

/* A source reading -> unit ticks under s (never below base_ticks). */
TKC_INTERNAL uint64_t tkc_map(const tickclock_info *s, uint64_t r);
TKC_INTERNAL uint64_t tkc_max_u64(uint64_t a, uint64_t b);
/* The unit tick ns after from under s (saturating below UINT64_MAX). */
TKC_INTERNAL uint64_t tkc_after(const tickclock_info *s, uint64_t from, uint64_t ns);
/* (tkc_ns_before, the conversion of a tick below a state's base, is
 * declared in tickclock_inline.h: the inline conversion calls it.) */
/* Links st, about to be published, into the history's jumps (skip,
 * skip_min_base) so that tkc_ns_before takes O(log^2 n) steps. */
TKC_INTERNAL void tkc_link_history(tickclock_info *st);

/* Where old's counter lies at most, extrapolated from its last conclusive
 * sample prev to CLOCK_MONOTONIC_RAW reading raw (susp: suspended time
 * then, UINT64_MAX unknown) at the frequency's uncertainty plus the drift
 * allowance: a source reading. *allow_ns: how far that may lie from where
 * a healthy counter would be. */
TKC_INTERNAL uint64_t tkc_extrapolate(const tickclock_info *old, tkc_bracket prev, uint64_t raw,
                                      uint64_t susp, double *allow_ns);

/* tkc_continue's arithmetic: the unit fields of st, a fresh decision.
 * The first state fixes the unit (its source's ticks; read_path its way
 * of reading). */
TKC_INTERNAL void tkc_unit_first(tickclock_info *st, int read_path);
/* A later state keeps old's unit: unit_source, scaled, src_is_unit. */
TKC_INTERNAL void tkc_unit_keep(const tickclock_info *old, tickclock_info *st);
/* The same raw counter read inline, only its frequency new: the base a
 * guard interval above t (the highest tick handed out). */
TKC_INTERNAL void tkc_unit_same_counter(const tickclock_info *old, tickclock_info *st, uint64_t t);
/* Any other continuation: the base at t (the highest tick handed out), lo
 * the old source's own reading (the step's lower end), [r0, r1] the
 * CLOCK_MONOTONIC_RAW readings around the two sources' readings (r0 == 0
 * or r1 < r0: unreadable), allow_ns the extrapolation's allowance,
 * bounded: leaving a counter that failed or may not be read. Sets the
 * base, the continuity bound and read_path. */
TKC_INTERNAL void tkc_unit_mapped(const tickclock_info *old, tickclock_info *st, uint64_t t,
                                  uint64_t lo, uint64_t r0, uint64_t r1, double allow_ns,
                                  int bounded, int read_path);
/* A same-counter republication about to become visible with the counter
 * at now: if now came within half the guard of the base, the base moves
 * ahead again (1), so no tick read before is converted with the new rate
 * after the old one converted it. */
TKC_INTERNAL int tkc_unit_guard(const tickclock_info *old, tickclock_info *st, uint64_t now);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_UNIT_H */
