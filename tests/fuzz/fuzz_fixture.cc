// libFuzzer target: the CPUID fixture parser, then the evidence it yields
// through the decider (the same path `tickclock-probe cpuid --file` takes).
// Checks the parser's contract, not just "no crash": an error is a
// terminated "fuzz:LINE: what" naming the line it returned; a success
// holds 1..MAX leaves, no duplicate (leaf, subleaf), answers each stored
// leaf back, and decides the system clock or the TSC with one chosen
// candidate.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tickclock_tools.h"

static tickclock_fixture fx;
static tickclock_evidence ev;
static tickclock_info info;

static void check(int ok) {
  if (!ok) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  memset(err, 'x', sizeof err);  // the parser must terminate what it writes
  unsigned line = tickclock_fixture_parse(reinterpret_cast<const char *>(data), size, "fuzz", &fx,
                                          err, sizeof err);
  if (line != 0) {
    char prefix[32];
    check(memchr(err, '\0', sizeof err) != NULL);
    snprintf(prefix, sizeof prefix, "fuzz:%u: ", line);
    check(strncmp(err, prefix, strlen(prefix)) == 0);
    check(strlen(err) > strlen(prefix));  // says what is wrong
    return 0;
  }
  check(err[0] == '\0');
  check(fx.n_leaves >= 1 && fx.n_leaves <= TICKCLOCK_FIXTURE_MAX_LEAVES);
  check(fx.n_meta <= TICKCLOCK_FIXTURE_MAX_META);
  for (unsigned i = 0; i < fx.n_leaves; i++) {
    tickclock_cpuid_regs r;
    for (unsigned j = i + 1; j < fx.n_leaves; j++)
      check(fx.leaves[i].leaf != fx.leaves[j].leaf || fx.leaves[i].subleaf != fx.leaves[j].subleaf);
    check(tickclock_fixture_cpuid(&fx, fx.leaves[i].leaf, fx.leaves[i].subleaf, &r) == 1);
    check(memcmp(&r, &fx.leaves[i].r, sizeof r) == 0);
  }
  for (unsigned i = 0; i < fx.n_meta; i++) {
    check(fx.meta[i].key[0] != '\0');
    check(memchr(fx.meta[i].key, '\0', sizeof fx.meta[i].key) != NULL);
    check(memchr(fx.meta[i].value, '\0', sizeof fx.meta[i].value) != NULL);
  }
  tickclock_fixture_evidence(&fx, &ev);
  if (tickclock_decide(&ev, &info)) {
    ev.cal.ns = 1;  // attempted
    tkc_list_claims(&ev);
    check(tickclock_decide(&ev, &info) == 0);
  }
  check(info.source == TICKCLOCK_SOURCE_SYSTEM || info.source == TICKCLOCK_SOURCE_TSC);
  {
    unsigned k, chosen = 0;
    for (k = 0; k < info.n_candidates; k++) chosen += info.candidates[k].chosen != 0;
    check(chosen == 1);
  }
  return 0;
}
