// tickclock-probe validate: the checks, one function each, in one table
// (validate_checks.cc), and the PR_SET_TSC fault children they use
// (validate_faults.cc). cmd_validate.cc runs the table and reports.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tickclock_tools.h"

namespace tickclock_probe {

struct Item {
  // status: PASS, FAIL, SKIP (does not apply here), NOT_RUN (applies, but
  // could not run here: why in detail, what to do in advice), INCOMPLETE
  std::string name, status, detail;
  std::string json_extra;  // ,"key":value...
  std::string advice;      // NOT_RUN: what would let it run
};

struct TscFaults {
  bool applicable = false;  // x86 Linux, a TSC, not under emulation
  std::string not_why;      // when !applicable
  int before = -2;          // wait status of the before-first-use child
  int after = -2;           // ... of the after-init child
  int rdtsc = -2;           // ... of the bare-RDTSC-after-PR_SET_TSC child
  int vdso = -2;            // ... of the vDSO-clock_gettime-after child
};

// What one run of validate shares between its checks and its report.
struct Run {
  const tickclock_info *info = nullptr;
  tickclock_evidence ev;
  bool counter = false;  // the source in use is a hardware counter
  double seconds = 2.0;
  TscFaults tsc_faults;
  // observed, for the fixture
  double drift_ppm = NAN;
  uint64_t mono_back = 0, warp_back = 0, warp_max = 0;
  double warp_max_ns = 0;
  bool warp_ran = false;  // a warp check over every pair of online CPUs
};

// A check fills it (its status starts as SKIP) and returns whether it ran
// to completion (false: a signal cut its measurement short). An essential
// check that is NOT_RUN makes the verdict INCONCLUSIVE; next_step is what
// the verdict says to do when the check FAILs.
struct Check {
  const char *name;
  bool (*run)(Run &r, Item &it);
  bool essential;
  const char *next_step;
};
extern const Check kChecks[];
extern const size_t kNumChecks;

// PR_SET_TSC in forked children (validate_faults.cc).
void pr_set_tsc_before(TscFaults *f);  // before this process uses the library
void pr_set_tsc_after(TscFaults *f);
bool child_ok(int st);
bool child_cannot(int st);
bool child_segv(int st);
const char *traps(int st);  // "yes" (SIGSEGV), "no" (kept working), "unknown"
std::string describe_status(int st);
// Physical packages among the CPUs this process may run on; 0 unknown.
int count_packages();

}  // namespace tickclock_probe
