/* tickclock tools — recorded CPUID fixtures: a pure parser, a leaf
 * source over a parsed fixture, and evidence replayed from its metadata
 * (fixture.c; the format is in src/tickclock/README.md). For the probe and
 * the tests: part of the tools library (src/tools), never of the core or
 * the single header. */
#ifndef TICKCLOCK_FIXTURE_H
#define TICKCLOCK_FIXTURE_H

#include "sys.h"
#include "tickclock.h"
#include "cpuid_x86.h"
#include "evidence.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TICKCLOCK_FIXTURE_MAX_LEAVES 512
#define TICKCLOCK_FIXTURE_MAX_META 48
typedef struct tickclock_fixture_leaf {
  uint32_t leaf, subleaf;
  tickclock_cpuid_regs r;
} tickclock_fixture_leaf;
typedef struct tickclock_fixture_meta {
  char key[48];
  char value[208];
  unsigned line;
} tickclock_fixture_meta;
typedef struct tickclock_fixture {
  unsigned n_leaves;
  tickclock_fixture_leaf leaves[TICKCLOCK_FIXTURE_MAX_LEAVES];
  unsigned n_meta;
  tickclock_fixture_meta meta[TICKCLOCK_FIXTURE_MAX_META];
} tickclock_fixture;

/* Parses len bytes of buf. Returns 0 on success; on error returns the
 * 1-based line number and writes "NAME:LINE: what" into err. */
unsigned tickclock_fixture_parse(const char *buf, size_t len, const char *name,
                                 tickclock_fixture *out, char *err, size_t errlen);
/* A tickclock_cpuid_fn over a parsed fixture (ctx = the fixture). */
int tickclock_fixture_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out);
/* The value of "# key: value", or NULL. */
const char *tickclock_fixture_meta_get(const tickclock_fixture *fx, const char *key);

/* Evidence replayed from a fixture: the decoded leaves, and from its
 * metadata "# clocksource:", "# available_clocksource:", "# calibration_hz:"
 * (a decimal, or NUM/DEN), "# read_ns.tsc:", "# read_ns.system:",
 * "# perf.time_mult:", "# perf.time_shift:" (cap_user_time set when both
 * are given), "# cpu_packages:", "# warp_check: pass|fail",
 * "# warp_max_ns:", the kvm-clock page as read ("# pvclock.version:",
 * "# pvclock.flags:", "# pvclock.mul:", "# pvclock.shift:",
 * "# pvclock.tsc_timestamp:", "# pvclock.system_time:"; the page is there
 * when pvclock.mul is given) or why it was not ("# pvclock.absent:
 * no_mapping|unmapped|torn|no_maps"). Without a clocksource the Linux
 * checks are off. */
void tickclock_fixture_evidence(const tickclock_fixture *fx, tickclock_evidence *ev);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TICKCLOCK_FIXTURE_H */
