/* TICKCLOCK_STATIC: one file holds the implementation and its only
 * caller, and the program exports no tickclock symbol (symbols_test.sh
 * checks the binary). Built as C11 and as C++17 with the warnings users
 * build with: every unused static function must stay silent. */
#include <inttypes.h>
#include <stdio.h>

#define TICKCLOCK_STATIC
#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"

int main(void) {
  uint64_t t0 = tickclock_now_ordered();
  const tickclock_info *info = tickclock_info_get();
  uint64_t t1 = tickclock_now_ordered();
  int64_t d = tickclock_delta_ns(t0, t1);
  int ok = info != NULL && info->source_name != NULL && d >= 0;
  printf("%s: static copy, source %s, two reads %" PRId64 " ns apart\n", ok ? "ok" : "FAIL",
         info ? info->source_name : "?", d);
  return ok ? 0 : 1;
}
