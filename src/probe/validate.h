// tickclock-probe validate: the checks, one function each, in one table
// (validate_checks.cc), and the PR_SET_TSC fault children they use
// (validate_faults.cc). cmd_validate.cc runs the table and reports.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// The clocksource check's verdict ("PASS", "FAIL" or "SKIP" where it does
// not apply) on a run's choice and the evidence read after it, the reason
// appended to *detail (validate_checks.cc; tests/probe:validate_checks_test).
std::string clocksource_verdict(const tickclock_info &info, const tickclock_evidence &ev,
                                std::string *detail);

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

// Beside the verdict where the OS clock was chosen over an x86 TSC
// (validate_advice.cc): why, from what the host states; what it costs;
// what the operator may do and when not to.
struct Advice {
  bool applies = false;
  std::string clocksource, available;
  std::string cmdline;            // the clock words of the kernel command line
  std::string signature;          // CPUID's hypervisor signature ("" if none)
  std::string kernel_hypervisor;  // whose paravirtual clock the kernel uses
  bool outer = false;             // the signature is not that hypervisor's
  double system_ns = 0, tsc_ns = 0, syscall_ns = 0;
  std::vector<std::string> lines;  // the text, one finding a line
  std::string json() const;        // an object, or null where it does not apply
};
// What advise() reads: the host's statements and the measured costs.
struct AdviceFacts {
  std::string clocksource, available, cmdline, signature, why;
  // The signatures of the further hypervisor leaves (0x40000100, ...): KVM
  // and Xen with Hyper-V enlightenments show 'Microsoft Hv' at 0x40000000
  // and their own there.
  std::vector<std::string> more_signatures;
  bool invariant_tsc = true;
  double system_ns = 0, tsc_ns = 0, syscall_ns = 0;
};
Advice advise(const AdviceFacts &f);  // pure: the tests feed it recorded hosts
// This host's facts, where the OS clock was chosen over an x86 TSC; an
// Advice that does not apply elsewhere.
Advice explain_refusal(const Run &r);
// The kernel command line's clock words ("tsc=unstable clocksource=kvm-clock"),
// escaped, as many whole words as fit in max_len characters.
std::string kernel_clock_words(size_t max_len);
std::string clock_words_text(const std::string &cmdline, size_t max_len);  // the same, pure

}  // namespace tickclock_probe
