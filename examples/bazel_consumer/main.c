/* Uses tickclock from another workspace: two ordered reads and the
 * provenance of the source. */
#include <stdio.h>

#include "tickclock.h"

int main(void) {
  uint64_t t0 = tickclock_now_ordered();
  const tickclock_info *info = tickclock_info_get();
  uint64_t t1 = tickclock_now_ordered();
  int64_t d = tickclock_delta_ns(t0, t1);
  int ok = info != NULL && info->source_name != NULL && d >= 0;
  printf("%s: source %s (%s), %lld ns between two reads\n", ok ? "ok" : "FAIL",
         info != NULL ? info->source_name : "?", info != NULL ? info->why : "?", (long long)d);
  return ok ? 0 : 1;
}
