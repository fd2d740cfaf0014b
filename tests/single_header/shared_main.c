/* Uses the API through the shared library built from shared_impl.c: links
 * only if every function and variable the header's inline read path
 * needs was exported. */
#include <stdio.h>

#include "tickclock.h"

int main(void) {
  tickclock_conv c;
  uint64_t t0 = tickclock_now();
  uint64_t t1 = tickclock_now_ordered();
  const tickclock_info *info = tickclock_info_get();
  int ok = info != NULL && tickclock_delta_ns(t0, t1) >= 0 && tickclock_to_ns(t1) > 0 &&
           tickclock_init(NULL) == TICKCLOCK_OK &&
           tickclock_conv_init(&c, UINT64_C(1000000000), 1) == TICKCLOCK_OK &&
           tickclock_source_from_name("system") == TICKCLOCK_SOURCE_SYSTEM;
  printf("%s: through the shared library, source %s\n", ok ? "ok" : "FAIL",
         info ? info->source_name : "?");
  return ok ? 0 : 1;
}
