/* Compiled to assembly by //tests/reliability:hot_path_asm; checked by
 * hot_path_test.sh: tickclock_now() stays load + compare + RDTSC, with
 * no call and nothing from re-validation on it; the due test before a
 * conversion is one window compare whatever the tick. */
#include "tickclock.h"

uint64_t tickclock_hot_path_now(void);
uint64_t tickclock_hot_path_now(void) { return tickclock_now(); }

/* What is due first (tickclock_to_ns, tickclock_delta_ns): a recent
 * reading and a tick far ahead are told apart from a due one by the same
 * single compare. */
void tickclock_hot_path_due(uint64_t ticks);
void tickclock_hot_path_due(uint64_t ticks) { tkc_due_first(ticks); }
