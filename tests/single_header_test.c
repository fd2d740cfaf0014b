/* The amalgamated single header (//:single_header) compiles as C99 and as
 * C++11 (this file is compiled as both: single_header_{c,cc}_test) with
 * -pedantic -Werror, and its x86 pieces work: the fixture parser, the
 * decoder and the decider, through the header alone. */
#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"

#include <stdio.h>
#include <string.h>

static const char kFixture[] =
    "# clocksource: tsc\n"
    "# calibration_hz: 2496000100\n"
    "00000000 00000000 00000016 756e6547 6c65746e 49656e69\n"
    "00000001 00000000 00090672 00000000 00000000 00000010\n"
    "00000015 00000000 00000002 00000082 0249f000 00000000\n"
    "00000016 00000000 00000960 00001324 00000064 00000000\n"
    "80000000 00000000 80000008 00000000 00000000 00000000\n"
    "80000007 00000000 00000000 00000000 00000000 00000100\n";

static tickclock_fixture fx;
static tickclock_info info;

int main(void) {
  char err[256];
  tickclock_evidence ev;
  const tickclock_info *live;
  uint64_t t0, t1;
  int failures = 0;
  if (tickclock_fixture_parse(kFixture, sizeof kFixture - 1, "inline", &fx, err, sizeof err) != 0) {
    printf("parse: %s\n", err);
    return 1;
  }
  tickclock_fixture_evidence(&fx, &ev);
  if (tickclock_decide(&ev, &info) != 0) failures++;
  if (info.source != TICKCLOCK_SOURCE_TSC) failures++;
  if (strcmp(info.freq_detail, "cpuid_15h_crystal") != 0) failures++;
  if (info.hz_num != UINT64_C(2496000000) || info.hz_den != 1) failures++;
  live = tickclock_info_get();
  if (live == NULL || live->why[0] == '\0') failures++;
  t0 = tickclock_now_ordered();
  t1 = tickclock_now_ordered();
  if (tickclock_delta_ns(t0, t1) < 0) failures++;
  printf("%s: decision %s/%s; this machine: %s\n", failures ? "FAIL" : "ok", info.source_name,
         info.freq_detail, live ? live->why : "?");
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures != 0;
}
