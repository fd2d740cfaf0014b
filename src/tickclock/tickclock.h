/* tickclock — a verified, low-overhead clock for short intervals.
 *
 * The only header users include. C99 / C++11 common subset, libc only.
 *
 * ```c
 * uint64_t t0 = tickclock_now();
 * work();
 * int64_t ns = tickclock_delta_ns(t0, tickclock_now());
 * ```
 * (Every fenced block in this header is compiled and run by a test.)
 *
 * tickclock_now() reads the CPU's counter where it is trustworthy (the TSC
 * on x86 with invariant-TSC and the kernel's blessing) and the OS clock
 * (CLOCK_MONOTONIC) everywhere else; with the OS clock, ticks are
 * nanoseconds. tickclock_info_get() says what was chosen and why.
 *
 * The API, in the order of this file:
 *   reading       tickclock_now()                 fastest read (inline)
 *                 tickclock_now_ordered()         not before earlier loads
 *   converting    tickclock_to_ns(ticks)          absolute ticks -> ns
 *                 tickclock_delta_ns(start, end)  signed end - start in ns
 *   conversion    tickclock_conv                  a frequency as 64.64 scales
 *   objects       tickclock_conv_init(), _ticks_to_ns(), _ns_to_ticks(),
 *                 _delta_to_ns()
 *   provenance    (the types: tickclock_info.h, included here)
 *                 tickclock_info_get()            source, frequency, reasons
 *                 tickclock_source_name(), tickclock_freq_method_name(),
 *                 tickclock_source_from_name(), tickclock_strerror(rc)
 *                 (info->unit_hz: the rate of the ticks handed out)
 *   durations     (tickclock_duration.h, included here)
 *                 tickclock_duration_get(s, e, d) end - start in ns with an
 *                                                 error bound and flags
 *   sampling      tickclock_sampler               caller-owned: which
 *                 tickclock_sampler_init(), _should_time() (inline),
 *                 _next_timed() (inline), _add(), executions to time, and
 *                 _count(), _estimate(),          the total with a 95 % CI
 *                 _estimate_for() (per stratum)
 *   control       tickclock_init(cfg)             optional; choose or force
 *                 tickclock_revalidate(), tickclock_revalidate_every(ms)
 *   C++           tickclock.hpp: tickclock::clock (std::chrono), stopwatch
 *                 (elapsed_bounded(): value and bound as durations)
 * Types and constants come first, then the declarations; the inline
 * machinery (conversion arithmetic, the per-ISA read, the hot path) is at
 * the bottom. Names starting tkc_ / TKC_ are internal: not API, never
 * to be used by callers.
 *
 * The contract through transitions (in full: src/tickclock/README.md):
 *  - One tick unit for the life of the process: a tick taken at any time
 *    is comparable with any later tick; a re-initialisation, a
 *    re-calibration or a switch of source maps the new readings into that
 *    unit, so to_ns and delta_ns are continuous and to_ns(now()) never
 *    decreases. tickclock_info.read_path says how readings are taken.
 *  - A published state is never written again: the tickclock_info_get()
 *    pointer and its content stay valid for the life of the process. The
 *    history is bounded: at most TICKCLOCK_MAX_STATES states are ever
 *    published (about 6.6 KB each); past TICKCLOCK_COALESCE_AFTER of them a
 *    re-initialisation that decides what the current state says keeps it,
 *    and one that would need a new state past the limit returns
 *    TICKCLOCK_ELIMIT (refinements then stop; a switch to the OS clock
 *    always has its slot). Converting a tick taken under an old state
 *    costs O(log n) steps through the history, not one per publication.
 *  - RDTSC disabled with prctl(PR_SET_TSC, PR_TSC_SIGSEGV) before first use
 *    (or seen by re-validation): nothing executes RDTSC or calls the vDSO;
 *    clock reads use the clock_gettime system call. The setting is per
 *    thread: a thread that disables RDTSC after first use calls
 *    tickclock_revalidate() itself before its next read, whichever source
 *    is in use (the OS clock's vDSO reads the TSC too).
 *
 * Through a process's life:
 *  - The first call that reads the clock or its state (now, to_ns,
 *    info_get, init, revalidate, ...) initialises: it allocates nothing
 *    (its state, the spare a counter state keeps and the slots reserved
 *    for the conversions are static) and reads the kernel's files with
 *    open/read/close, never stdio, holding no descriptor afterwards.
 *    Under a seccomp filter it makes only system calls it has always
 *    made (the README lists them): the paravirtual page is then found in
 *    the maps' text and proved readable with a pipe, not by PROCMAP_QUERY
 *    and rt_sigprocmask's copy, which a filter that traps what it does
 *    not know would kill the program for.
 *  - Async-signal-safe once initialised: tickclock_now,
 *    tickclock_now_ordered, tickclock_to_ns, tickclock_delta_ns,
 *    tickclock_duration_get, tickclock_info_get (and the sampler's
 *    functions, which touch only the caller's state). Nothing reachable
 *    from them allocates, does I/O, calls libc's formatting or waits on a
 *    lock: the work that falls due in to_ns/delta_ns (the rate check, a
 *    refinement, a cross-check) runs under a try-lock that never waits
 *    (another thread doing it, or a handler that interrupted it, carries
 *    on with the current state), publishes into a slot reserved in
 *    advance (none left: it waits for the next tickclock_init,
 *    tickclock_revalidate or tickclock_revalidate_every) and formats its
 *    reasons with the library's own formatter. A signal handler that
 *    interrupts the first initialisation in its own thread never waits:
 *    its reads come straight from CLOCK_MONOTONIC (nanoseconds) and
 *    tickclock_info_get() describes exactly that. Those reads compare with
 *    every later one: the first state then continues them (nanoseconds
 *    are the process's tick unit, the counter is read out of line and
 *    mapped into them). tickclock_init,
 *    tickclock_revalidate and tickclock_revalidate_every are not
 *    async-signal-safe; called from a handler that interrupted the
 *    library in the same thread, init and revalidate return TICKCLOCK_EBUSY.
 *  - fork() at any moment leaves a child that works: the fork handlers
 *    are registered when the program is loaded (or, loaded later, at first
 *    use), and a child that finds the lock held by a thread its parent had
 *    takes it over.
 *  - Cancellation: deferred cancellation is disabled while the library
 *    holds its lock (calibration sleeps, sysfs reads), so a cancelled
 *    thread never leaves it held; it is acted on at the next cancellation
 *    point after the call.
 *  - errno: every call leaves it as it was (as clock_gettime does), even
 *    where the library's own system calls failed inside, a first use's
 *    included: a program may time a call between a failure and its report
 *    of errno.
 *  - Descriptors: the library keeps none open between calls (each file is
 *    opened, read and closed, close-on-exec), so a program that closes
 *    its descriptors and reuses the numbers is never read or moved.
 *  - Suspend: ticks count what the source counts. CLOCK_MONOTONIC (the OS
 *    clock) stops while the system is suspended; a counter may keep
 *    counting (the x86 TSC in s2idle and in most virtual machines, the
 *    AArch64 system counter) or stop (x86 S3 on bare metal may even reset
 *    it, which re-validation then sees as a backward step and leaves).
 *    So an interval spanning a suspend measures between the time awake
 *    and that plus the time suspended. The library never measures a rate
 *    across a suspend (a calibration or refinement sample whose ends see
 *    different CLOCK_BOOTTIME - CLOCK_MONOTONIC is discarded and measuring
 *    starts again), and the rate check accepts a counter that advanced
 *    across one by anything from the time awake to the time awake and
 *    suspended (the kernel's account of a suspend may be off by whole
 *    seconds of the RTC: 2 s are allowed), then checks the total from
 *    there. No counter state states less than 0.01 ppm.
 *  - Durations: tickclock_delta_ns converts with the best rate known when
 *    it runs (what is due is done first, for the later of its two ticks);
 *    two calls with the same ticks agree unless a state was published
 *    between them, and then differ by at most the stated uncertainties of
 *    the states current at either call and in between, summed, over the
 *    interval (plus 1 ns), except across the replacement of a published
 *    rate its cross-check refused (it was further off than it stated:
 *    delta_ns then moves by that discrepancy too); delta_ns(a, b) ==
 *    -delta_ns(b, a) under one state. tickclock_duration_get gives an
 *    interval with an error bound: see "Durations with a bound" below.
 *  - The rate check (on by default, every TICKCLOCK_CHECK_DEFAULT_MS): on
 *    the slow paths only (tickclock_to_ns/tickclock_delta_ns with a tick
 *    past its deadline; never tickclock_now), it compares the counter
 *    with CLOCK_MONOTONIC_RAW since the last conclusive sample and since
 *    publication, without I/O. A counter whose rate changed (a virtual
 *    machine restored or migrated onto a host with another TSC rate and
 *    no scaling) by more than TICKCLOCK_REVALIDATE_DRIFT_PPM plus the
 *    stated uncertainty is left for the OS clock once its accumulated
 *    error passes TICKCLOCK_REVALIDATE_DRIFT_ABS_NS: a 1000 ppm change
 *    within about 1 s of the change (measured on the fake platform: 1.0
 *    s), a 100 ppm change within about 4 s (4.0 s). A change under
 *    DRIFT_PPM keeps the counter, but not its stated rate: the same
 *    samples hold it to that (RESOLUTION_NS below), and a break restates
 *    it. A counter that jumped forward is caught
 *    at the next check. One that stepped backward (a CPU whose TSC is
 *    behind, a counter reset in S3) is caught by tickclock_revalidate() at
 *    once, but by the conversions only when its ticks pass the deadline
 *    again: they compare a tick with a deadline and cannot see ticks fall
 *    (until then to_ns(now()) follows the counter back). A tick from the
 *    future (an interval converted as if it were a tick, a deadline) makes
 *    nothing due early and costs what any tick costs: the first one past
 *    the deadline goes out of line once (a try-lock, a prctl and a counter
 *    read, about 1 us, and the work due by the counter's time), and the
 *    ticks within 50 ms of it, or any tick 50 years or more ahead, are
 *    then left alone until the deadline moves (a reading converted after
 *    the next deadline moves it). So what is due runs at most once per
 *    deadline whatever the ticks, and a reading that later falls among
 *    the ticks seen ahead puts it off by at most 100 ms of counter time,
 *    except where the counter itself jumps 50 years or more ahead after
 *    such a tick was converted: its readings then all fall among the far
 *    ticks, which the conversions leave alone (a far tick and a reading
 *    take the same single compare; telling them apart takes a counter
 *    read), so tickclock_to_ns and tickclock_delta_ns never check it.
 *    tickclock_duration_get does: one in 64 durations whose later tick
 *    lies among the far ticks goes out of line and reads the counter (a
 *    far tick finds nothing due, a reading after the jump runs the check;
 *    measured on the fake platform: the 64th duration after a 55-year
 *    jump, 6.4 s after it with one every 97 ms), and tickclock_revalidate()
 *    at once.
 *    A tick less than 1 ms ahead (a reading from a CPU a little ahead) is
 *    not left alone: it goes out of line each time, for at most 1 ms.
 *    tickclock_revalidate() runs it at once, plus the checks that need I/O
 *    (the kernel's clocksource).
 *  - Limits, each stated where it applies: readings a faulty counter gave
 *    before a check are not corrected; a reader that loaded the old source
 *    just before a switch may produce one more counter reading; 32-bit
 *    targets need lock-free 64-bit atomics (i686 and armv7 have them; the
 *    build refuses the others).
 *
 * Vendoring: the amalgamated single header (bazel build //:single_header)
 * holds everything; `#define TICKCLOCK_IMPLEMENTATION` before including it
 * in exactly one .c/.cc file (any include order). Link errors naming
 * tkc_g_source, tkc_g_state, tkc_now_slow or tickclock_info_get mean no
 * file defined TICKCLOCK_IMPLEMENTATION (or TICKCLOCK_STATIC is set in some
 * files only): define it in exactly one.
 */
#ifndef TICKCLOCK_H
#define TICKCLOCK_H

#include <stdint.h>
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TICKCLOCK_VERSION_MAJOR 0
#define TICKCLOCK_VERSION_MINOR 1
#define TICKCLOCK_VERSION_PATCH 0

/* ---- sources --------------------------------------------------------- */
typedef enum tickclock_source {
  TICKCLOCK_SOURCE_AUTO = 0,     /* in a config: decide automatically */
  TICKCLOCK_SOURCE_SYSTEM = 1,   /* clock_gettime(CLOCK_MONOTONIC); ticks = ns */
  TICKCLOCK_SOURCE_TSC = 2,      /* x86 time-stamp counter */
  TICKCLOCK_SOURCE_CNTVCT = 3,   /* AArch64 virtual counter */
  TICKCLOCK_SOURCE_TIMEBASE = 4, /* POWER timebase */
  TICKCLOCK_SOURCE_TOD = 5,      /* s390x TOD clock */
  TICKCLOCK_SOURCE_RDTIME = 6,   /* RISC-V time CSR */
  TICKCLOCK_SOURCE_QPC = 7,      /* Windows QueryPerformanceCounter */
  TICKCLOCK_SOURCE_COUNT_ = 8
} tickclock_source;

/* How the counter frequency was found. */
typedef enum tickclock_freq_method {
  TICKCLOCK_FREQ_NONE = 0,          /* not known */
  TICKCLOCK_FREQ_IDENTITY = 1,      /* the source counts nanoseconds */
  TICKCLOCK_FREQ_CALIBRATED = 2,    /* measured against CLOCK_MONOTONIC_RAW */
  TICKCLOCK_FREQ_CPUID_15H = 3,     /* CPUID leaf 0x15 (ratio x crystal) */
  TICKCLOCK_FREQ_CPUID_16H = 4,     /* CPUID leaf 0x16 base frequency */
  TICKCLOCK_FREQ_HYPERVISOR = 5,    /* hypervisor timing leaf */
  TICKCLOCK_FREQ_PERF_PAGE = 6,     /* perf_event mmap page time_mult/shift */
  TICKCLOCK_FREQ_ARCH_REGISTER = 7, /* architectural (CNTFRQ_EL0, TOD) */
  TICKCLOCK_FREQ_OS = 8,            /* OS-reported (QPF, device tree, cpuinfo) */
  TICKCLOCK_FREQ_CONFIG = 9,        /* given in tickclock_config */
  TICKCLOCK_FREQ_PVCLOCK = 10,      /* the paravirtual clock page's mul/shift (kvm-clock) */
  TICKCLOCK_FREQ_METHOD_COUNT_ = 11
} tickclock_freq_method;

/* Return codes. */
#define TICKCLOCK_OK 0
#define TICKCLOCK_EINVAL (-1)       /* invalid argument */
#define TICKCLOCK_EUNAVAILABLE (-2) /* forced source unusable; auto choice kept */
#define TICKCLOCK_EBUSY (-3)        /* re-entered from a signal handler; nothing changed */
#define TICKCLOCK_ENOMEM (-4)       /* no memory for a new state; the current one is kept */
#define TICKCLOCK_ELIMIT (-5)       /* TICKCLOCK_MAX_STATES reached; the current one is kept */

/* The bounded history (see the contract at the top). */
#define TICKCLOCK_MAX_STATES 2048
#define TICKCLOCK_COALESCE_AFTER 1024

/* The rate check (tickclock_revalidate, the periodic and default checks):
 * counter time and CLOCK_MONOTONIC_RAW must agree, over the step since the
 * previous conclusive sample and over the total since publication, within
 * DRIFT_PPM plus the frequency's own uncertainty of the elapsed time, plus
 * DRIFT_ABS_NS and the two samples' bracket half-widths. A sample whose
 * tightest (counter, clock, counter) bracket is wider than MAX_BRACKET_NS
 * (preempted every time) is inconclusive: retried at the next check, never
 * counted as a failure. */
#define TICKCLOCK_REVALIDATE_DRIFT_PPM 50.0
#define TICKCLOCK_REVALIDATE_DRIFT_ABS_NS 100000.0
#define TICKCLOCK_REVALIDATE_MAX_BRACKET_NS 20000.0
/* Below that threshold, the same samples hold the counter to its stated
 * rate: over the step since the last sample whose bracket was tight
 * enough, since the previous sample, and over the total since
 * publication, counter time and
 * CLOCK_MONOTONIC_RAW must agree within the stated uncertainty of the
 * elapsed time plus the two brackets' half-widths (and 2 ns of rounding).
 * A pair of samples whose half-widths add up to more than RESOLUTION_NS
 * (a clock read that costs more, a preempted bracket) is still compared,
 * with those half-widths, but a sample that wide never becomes the
 * reference of the next step. A counter that fails it (a step, a rate change too
 * small to switch for) keeps its readings: the window the check looked at
 * is kept with the discrepancy found (durations that meet it carry it:
 * TICKCLOCK_DURATION_SPANS_BREAK), the state is published again with an
 * uncertainty that covers the discrepancy, and the rate is measured again
 * from that sample on; past TICKCLOCK_REVALIDATE_MAX_BREAKS of them since
 * the last initialisation the counter is left for the OS clock. What no
 * check can see is what stays within RESOLUTION_NS per check period (the
 * brackets' half-widths where every bracket is wider). */
#define TICKCLOCK_REVALIDATE_RESOLUTION_NS 200.0
#define TICKCLOCK_REVALIDATE_MAX_BREAKS 16
/* The period of the rate check until tickclock_revalidate_every() sets
 * another (0: off). */
#define TICKCLOCK_CHECK_DEFAULT_MS 1000

/* How tickclock_now() produces ticks under a state (tickclock_info.read_path). */
#define TICKCLOCK_READ_OS 0             /* the OS clock (vDSO), mapped into the unit */
#define TICKCLOCK_READ_OS_SYSCALL 1     /* the OS clock through the system call */
#define TICKCLOCK_READ_COUNTER 2        /* the raw counter, inline: the fast path */
#define TICKCLOCK_READ_COUNTER_MAPPED 3 /* the counter, mapped into the unit (out of line) */

/* ---- conversion ---------------------------------------------------------
 * A frequency f = hz_num / hz_den Hz is turned into a 64.64 fixed-point
 * scale (integer part + 64-bit fraction, the fraction rounded up) in each
 * direction. Contract for f in [1 kHz, 100 GHz] and every 64-bit input:
 *   floor(t*1e9/f) <= ticks_to_ns(t) <= floor(t*1e9/f) + 1,
 * exact whenever t*1e9/f is an integer, never decreasing in t, saturating
 * at UINT64_MAX; one multiply above 1 GHz, two below, no division, no
 * branch on the magnitude.
 * delta_to_ns(d) is within 1 of trunc(d*1e9/f), saturates at
 * INT64_MIN/INT64_MAX, and delta(-d) == -delta(d) wherever neither side
 * saturates. Complete type: keep one on the stack. */
typedef struct tickclock_conv {
  uint64_t hz_num, hz_den; /* the frequency, reduced */
  uint64_t ns_int;         /* ns per tick, integer part */
  uint64_t ns_frac;        /* ns per tick, fraction * 2^64, rounded up */
  uint64_t tk_int;         /* ticks per ns, integer part */
  uint64_t tk_frac;        /* ticks per ns, fraction * 2^64, rounded up */
} tickclock_conv;

/* Accepts 1 Hz <= f <= 1 THz with hz_den <= 18446744073 after reduction;
 * otherwise returns TICKCLOCK_EINVAL and leaves *c untouched. */
TICKCLOCK_API int tickclock_conv_init(tickclock_conv *c, uint64_t hz_num, uint64_t hz_den);

/* The conversions themselves (inline, at the bottom of this file):
 *   tickclock_conv_ticks_to_ns, tickclock_conv_ns_to_ticks,
 *   tickclock_conv_delta_to_ns. */

/* The configuration and provenance types (tickclock_config,
 * tickclock_info and the candidates it lists): their own file, part of
 * this header. */
#include "tickclock_info.h"

TICKCLOCK_API const char *tickclock_source_name(int source);
TICKCLOCK_API const char *tickclock_freq_method_name(int method);
/* "tsc" (any case: "TSC") -> TICKCLOCK_SOURCE_TSC, "auto" -> AUTO; -1 if
 * unknown. TICKCLOCK_SOURCE is read with it. */
TICKCLOCK_API int tickclock_source_from_name(const char *name);
/* One line for a return code of tickclock_init, tickclock_revalidate,
 * tickclock_conv_init (TICKCLOCK_OK, TICKCLOCK_SWITCHED, the negative
 * TICKCLOCK_E*); never NULL. */
TICKCLOCK_API const char *tickclock_strerror(int rc);

/* Optional: choose (or force) the source. NULL = automatic. Thread-safe;
 * the tick unit stays the process's (see the contract at the top), so
 * readings taken before and after compare. Returns TICKCLOCK_OK,
 * TICKCLOCK_EINVAL (bad config, nothing changed), TICKCLOCK_EUNAVAILABLE
 * (forced source unusable; automatic choice made), TICKCLOCK_EBUSY,
 * TICKCLOCK_ENOMEM or TICKCLOCK_ELIMIT (nothing changed). Past
 * TICKCLOCK_COALESCE_AFTER published states, a decision that agrees with
 * the current state (same source, read path and frequency method, its
 * rate within the two states' bounds plus 25 ppm) keeps it and returns
 * TICKCLOCK_OK. Not async-signal-safe. */
TICKCLOCK_API int tickclock_init(const tickclock_config *cfg);

/* Run-time re-validation, now. Checks that
 *  - RDTSC was not disabled with prctl(PR_SET_TSC, PR_TSC_SIGSEGV) for the
 *    calling thread (the flag is per thread: other threads' settings are
 *    invisible here); if it was, nothing reads the counter or the vDSO
 *    again: a counter state switches to the OS clock through the system
 *    call (its continuity bound computed without them), and the OS clock
 *    moves to the system call too,
 *  - while the counter is in use: the kernel still uses the clocksource it
 *    used at initialisation (Linux: current_clocksource; e.g. the watchdog
 *    switched tsc -> hpet), and the rate check (see TICKCLOCK_REVALIDATE_*
 *    above; catches a backward step, a jump, a wrong frequency, a
 *    migration to a CPU whose TSC is offset),
 * and if any fails switches every thread to the OS clock, mapped into the
 * same tick unit, starting no lower than any reading handed out: when the
 * counter failed or may not be read, that bound is extrapolated from the
 * last conclusive sample at (DRIFT_PPM + uncertainty) plus DRIFT_ABS_NS, so
 * such a switch steps forward by up to that much (about 100 us), never
 * back.
 * Also runs what is due of the frequency's refinement, and first the
 * cross-check of a frequency published at first use (freq_pending_check),
 * so a wrong stated rate is replaced rather than taken for the counter
 * drifting, and tops up the slots the conversions publish into. Returns
 * 0 if the current source is kept (or is not the counter),
 * TICKCLOCK_SWITCHED if it switched to the OS clock (a failed check, or a
 * paravirtual clock's hypervisor frequency refused by its cross-check),
 * TICKCLOCK_EBUSY when re-entered from a signal handler. Never called from
 * tickclock_now(); costs a few microseconds. Not async-signal-safe. */
#define TICKCLOCK_SWITCHED 1
TICKCLOCK_API int tickclock_revalidate(void);
/* The period of the rate check (TICKCLOCK_CHECK_DEFAULT_MS until this is
 * called): at most every ms milliseconds, piggybacked on tickclock_to_ns()
 * and tickclock_delta_ns() (one relaxed load and compare of a tick with a
 * deadline, which they make anyway); never on tickclock_now() or
 * tickclock_info_get(). A check does no allocation, no I/O and no libc
 * formatting (one prctl on x86 Linux, a few dozen clock reads); the
 * clocksource is compared only by tickclock_revalidate(). 0 turns it off.
 * Not async-signal-safe. */
TICKCLOCK_API void tickclock_revalidate_every(uint32_t ms);

/* Durations with an error bound (tickclock_duration_get) and sampled
 * timing (tickclock_sampler): their own file, part of this header. */
#include "tickclock_duration.h"

/* Provenance of the current choice; initialises on first use. Reads no
 * counter. The pointer and its content stay valid for the life of the
 * process (a later choice publishes a new state; this one is never
 * rewritten). */
TICKCLOCK_API const tickclock_info *tickclock_info_get(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The inline machinery: the per-ISA read, the conversion arithmetic, the
 * hot path. Not API: read it to see what a call costs. */
#include "tickclock_inline.h"

#endif /* TICKCLOCK_H */
