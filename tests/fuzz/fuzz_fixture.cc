// libFuzzer target: the CPUID fixture parser, then the evidence it yields
// through the decider (the same path `tickclock-probe cpuid --file` takes).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

static tickclock_fixture fx;
static tickclock_evidence ev;
static tickclock_info info;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  unsigned line = tickclock_fixture_parse(reinterpret_cast<const char *>(data), size, "fuzz",
                                          &fx, err, sizeof err);
  if (line != 0) {
    if (strlen(err) >= sizeof err) __builtin_trap();
    return 0;
  }
  tickclock_fixture_evidence(&fx, &ev);
  if (tickclock_decide(&ev, &info)) {
    ev.cal.ns = 1;  // attempted
    tickclock_decide(&ev, &info);
  }
  return 0;
}
