/* tickclock — every internal header, for the tests and the tools library.
 *
 * The implementation files include only the topic headers they use; the
 * headers include each other in one direction (no cycle):
 *
 *   text.h, freq.h                 strings; exact rational frequencies
 *   cpuid_x86.h   <- freq.h        x86 CPUID facts and frequency rules
 *   platform.h    <- cpuid_x86.h   the outside world (injectable)
 *   calibrate.h                    calibration against the raw clock
 *   evidence.h    <- platform.h, calibrate.h   what the decider reads
 *                                  (with its frequency claims, claims.c)
 *   decide.h      <- evidence.h    the pure decider, trust, frequency pick
 *   unit.h        <- calibrate.h   the tick unit: continuity arithmetic
 *   state.h       <- evidence.h, unit.h   published states, re-validation bounds
 *
 * Naming: `tickclock_` + a word is public API (tickclock.h,
 * tickclock.hpp). Everything internal carries the prefix `tkc_` / `TKC_`
 * (no `__`: such names are reserved in C++) or is declared only in these
 * headers
 * (`tickclock_x86_*`, `tickclock_decide`: internal entry points the
 * tests and the tools library call); none is part of the API. What the
 * probe and the tests need beyond them (fixtures, the rules only the tools
 * report) is in the tools library, src/tools, outside the core.
 */
#ifndef TICKCLOCK_INTERNAL_H
#define TICKCLOCK_INTERNAL_H

#include "text.h"
#include "freq.h"
#include "cpuid_x86.h"
#include "platform.h"
#include "calibrate.h"
#include "evidence.h"
#include "decide.h"
#include "unit.h"
#include "state.h"

#endif /* TICKCLOCK_INTERNAL_H */
