/* tickclock — ISAs where the OS clock is the only source (internal).
 *
 * armv7 (armhf): the generic timer's CNTVCT (mrrc p15, 1, ..., c14) is
 *   readable from user mode only when the kernel set CNTKCTL.PL0VCTEN, and
 *   on cores without the generic timer extension the instruction is
 *   UNDEFINED. There is no non-trapping way to ask, so we do not probe:
 *   clock_gettime, whose vDSO already uses the counter when it is usable.
 * mips64el: the CP0 Count register (rdhwr $2) runs at half the pipeline
 *   clock, changes rate with DVFS, and Linux may trap and emulate rdhwr or
 *   refuse it; its frequency is not exposed. clock_gettime.
 * anything else: clock_gettime.
 *
 * No TKC_ARCH_COUNTER is defined: tickclock_now() goes straight to
 * the OS clock.
 */
#ifndef TICKCLOCK_ARCH_OS_ONLY_H
#define TICKCLOCK_ARCH_OS_ONLY_H
#endif
