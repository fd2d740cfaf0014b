/* tickclock — the tick unit and the continuity of readings across
 * publications: pure arithmetic on states (no clock read, no lock, no
 * global; publish.c reads the clocks and hands the readings in). Tested
 * alone (tests/tickclock/unit_test.cc).
 *
 * One tick unit per process: the first state's source's ticks. A later
 * state's readings are base_ticks + unit(source reading - src_base), with
 * base_ticks no lower than any reading handed out before, and its
 * conversion is to_ns(t) = base_ns + conv(t - base_ticks) with base_ns the
 * previous state's to_ns(base_ticks). */
#include "unit.h"

/* A source reading -> unit ticks under s (never below base_ticks). */
uint64_t tkc_map(const tickclock_info *s, uint64_t r) {
  uint64_t d = r >= s->src_base ? r - s->src_base : 0, ns;
  if (s->read_path == TICKCLOCK_READ_COUNTER) return r; /* the raw counter is the unit */
  if (s->src_is_unit) return s->base_ticks + d;
  /* a source whose ticks are nanoseconds (the OS clock mapped into a
   * counter's unit) needs no conversion of its own: the identity exits
   * before the multiplies */
  ns = s->src_conv.ns_int == 1 && s->src_conv.ns_frac == 0
           ? d
           : tickclock_conv_ticks_to_ns(&s->src_conv, d);
  return s->base_ticks + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
}

uint64_t tkc_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ticks below s->base_ticks: the newest earlier state whose base lies at
 * or below them (bases need not grow with generations: a same-counter
 * republication puts its base a guard ahead). skip jumps over a run of
 * states none of which can be it (their lowest base is above ticks), so
 * the walk takes O(log^2 n) steps, never one per publication. */
uint64_t tkc_ns_before(const tickclock_info *s, uint64_t ticks) {
  const tickclock_info *x = s->prev, *root = s;
  uint64_t ns;
  while (x != NULL) {
    root = x;
    if (x->base_ticks <= ticks) return tkc_ns_in(x, ticks);
    x = (x->skip_min_base > ticks && x->skip != NULL) ? x->skip : x->prev;
  }
  /* before the first base (the first state's base is 0: not in practice) */
  ns = tickclock_conv_ticks_to_ns(&root->conv, root->base_ticks - ticks);
  return ns > root->base_ns ? 0 : root->base_ns - ns;
}

/* Links a state about to be published into the history's jumps: skip is
 * the ancestor whose generation is its own with the lowest set bit
 * cleared, reached through the ancestors' own jumps, which tile the
 * generations in between (as a Fenwick tree does). */
void tkc_link_history(tickclock_info *st) {
  unsigned target = st->generation & (st->generation - 1u);
  const tickclock_info *x = st->prev;
  uint64_t low = st->base_ticks;
  while (x != NULL && x->generation > target) {
    if (x->skip_min_base < low) low = x->skip_min_base;
    x = x->skip; /* NULL: its run reached the first state */
  }
  st->skip = x;
  st->skip_min_base = low;
}

/* The unit tick ns after from under s (saturating below UINT64_MAX). */
uint64_t tkc_after(const tickclock_info *s, uint64_t from, uint64_t ns) {
  uint64_t d = from + (s->scaled ? tickclock_conv_ns_to_ticks(&s->conv, ns) : ns);
  return (d < from || d == UINT64_MAX) ? UINT64_MAX - 1 : d;
}

uint64_t tkc_extrapolate(const tickclock_info *old, tkc_bracket prev, uint64_t raw, uint64_t susp,
                         double *allow_ns) {
  uint64_t dt = raw > prev.ns ? raw - prev.ns : 0;
  double slack;
  /* CLOCK_MONOTONIC_RAW stopped in a suspend since; the counter may not have */
  if (susp != UINT64_MAX && prev.susp != UINT64_MAX && susp > prev.susp) dt += susp - prev.susp;
  slack = (double)dt * (TICKCLOCK_REVALIDATE_DRIFT_PPM + old->uncertainty_ppm) * 1e-6 +
          TICKCLOCK_REVALIDATE_DRIFT_ABS_NS;
  /* the counter, had it stayed healthy, lies within the sample's width
   * and its stated uncertainty of dt from the sample: the extrapolation
   * is at most slack + that away (measured from the result, never from a
   * reading of a counter that failed) */
  *allow_ns = slack + (double)dt * old->uncertainty_ppm * 1e-6 +
              (double)tickclock_conv_ticks_to_ns(&old->src_conv, prev.width) + 2.0;
  return prev.mid + prev.width / 2 +
         tickclock_conv_ns_to_ticks(&old->src_conv, dt + (uint64_t)slack);
}

void tkc_unit_first(tickclock_info *st, int read_path) {
  st->unit_source = st->source;
  st->scaled = st->source != TICKCLOCK_SOURCE_SYSTEM;
  st->src_is_unit = 1;
  st->base_ticks = st->base_ns = st->src_base = 0;
  st->read_path = read_path;
}

void tkc_unit_keep(const tickclock_info *old, tickclock_info *st) {
  st->unit_source = old->unit_source;
  st->scaled = old->scaled;
  st->src_is_unit = st->source == old->unit_source;
}

/* The base a guard interval ahead: a tick taken just after this, by a
 * reader that still holds the old state, converts with the old state
 * whether it loads that one or this one (below the base, a tick converts
 * with the state it was taken under). A reader whose counter read and
 * state load straddle the publication thus never sees the new rate
 * applied to a tick the old one already converted; the old rate stays in
 * use for that interval only. */
void tkc_unit_same_counter(const tickclock_info *old, tickclock_info *st, uint64_t t) {
  st->read_path = TICKCLOCK_READ_COUNTER;
  st->base_ticks = t + tickclock_conv_ns_to_ticks(&st->conv, TKC_REPUBLISH_GUARD_NS);
  st->src_base = st->base_ticks;
  st->base_ns = tkc_ns_in(old, st->base_ticks);
}

/* The step (what the new source reads at the base minus what the old one
 * would) lies between 0 and the time between the two readings (r0, r1
 * bracket them on CLOCK_MONOTONIC_RAW) plus how far the base lies above
 * the old reading, or, extrapolated, the allowance. */
void tkc_unit_mapped(const tickclock_info *old, tickclock_info *st, uint64_t t, uint64_t lo,
                     uint64_t r0, uint64_t r1, double allow_ns, int bounded, int read_path) {
  uint64_t step;
  st->base_ticks = t;
  st->base_ns = tkc_ns_in(old, t);
  step = t > lo ? tkc_ns_in(old, t) - tkc_ns_in(old, lo) : 0;
  if (r0 == 0 || r1 < r0) /* the raw clock unreadable: a read's worth */
    r0 = 0, r1 = UINT64_C(100000);
  st->tkc_cont_bound_ns = step + (r1 - r0) + (uint64_t)allow_ns + 2;
  /* away from a counter that failed or may not be read: bounded by the
   * extrapolation, or, with no sample to extrapolate from, not at all */
  st->tkc_bounded_switch = bounded;
  if (st->tkc_bounded_switch && allow_ns <= 0) st->tkc_cont_bound_ns = UINT64_MAX / 2;
  st->read_path = read_path;
  if (!st->src_is_unit) st->conv = old->conv; /* the unit keeps its frequency */
}

int tkc_unit_guard(const tickclock_info *old, tickclock_info *st, uint64_t now) {
  uint64_t half = tickclock_conv_ns_to_ticks(&st->conv, TKC_REPUBLISH_GUARD_NS / 2);
  if (now + half <= st->base_ticks) return 0;
  st->base_ticks = now + 2 * half;
  st->src_base = st->base_ticks;
  st->base_ns = tkc_ns_in(old, st->base_ticks);
  return 1;
}
