/* A C user of the CMake package: only "tickclock.h", linked to tickclock::tickclock. */
#include <stdio.h>

#include "tickclock.h"

int main(void) {
  uint64_t t0 = tickclock_now_ordered();
  const tickclock_info *info = tickclock_info_get();
  uint64_t t1 = tickclock_now_ordered();
  int64_t d = tickclock_delta_ns(t0, t1);
  int ok = info != NULL && info->source_name != NULL && d >= 0 && d < INT64_C(1000000000);
  printf("%s: C consumer, source %s, %lld ns between two reads\n", ok ? "ok" : "FAIL",
         info != NULL ? info->source_name : "?", (long long)d);
  return ok ? 0 : 1;
}
