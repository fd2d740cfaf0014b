/* Compiled to assembly by //tests/reliability:hot_path_asm; checked by
 * hot_path_test.sh: tickclock_now() stays load + compare + RDTSC, with
 * no call and nothing from re-validation on it. */
#include "tickclock.h"

uint64_t tickclock_hot_path_now(void);
uint64_t tickclock_hot_path_now(void) { return tickclock_now(); }
