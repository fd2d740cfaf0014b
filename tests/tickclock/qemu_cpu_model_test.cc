// The decision under QEMU's x86-64 CPU models, and the CPUID
// gating it rests on, on whatever x86-64 CPU runs it.
//
//   bazel test --config=x86_64_qemu --test_env=QEMU_CPU=Nehalem \
//     //tests/tickclock:qemu_cpu_model_test
//   ci/checks/cpu-models        (every model, one PASS/FAIL line each)
//
// Everywhere (host CPU too): the decoder asks for no basic leaf above leaf
// 0's maximum and no extended leaf above 0x80000000's (QEMU and real CPUs
// answer those with another leaf's data); RDTSCP is executed only when
// CPUID.80000001H:EDX[27] says it exists.
// With QEMU_CPU set to a model this file knows: the vendor, RDTSCP bit,
// maximum leaf and TCG hypervisor signature that model must show; the TSC
// refused because QEMU never sets invariant TSC (the reason says so) and the
// OS clock chosen. Where RDTSCP is absent (a child executing it dies of
// SIGILL), a child runs every library entry point with the TSC forced and
// must survive: the library itself is observed executing no RDTSCP. Where
// CPUID hides RDTSCP but the CPU executes it (a hypervisor's hiding), that
// proof cannot run and says so; no_rdtscp_test reads the object code.
// QEMU_CPU unset or an unknown model, or a CPU with RDTSCP: those checks
// report TICKCLOCK_SKIPPED (counted as skipped by ci/matrix_lab/summarize).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tickclock_tools.h"
#include "tickclock.h"
#include "tests/support/skip.h"

namespace {

struct Model {
  const char *qemu_cpu;
  const char *vendor;
  int rdtscp;
  uint32_t max_leaf;  // 0: not asserted
};

// One row per line of tests/cpu_models.tsv (generated: cpu_models.inc).
const Model kModels[] = {
#include "tests/cpu_models.inc"
};

const Model *this_model() {
  const char *q = std::getenv("QEMU_CPU");
  if (q == NULL || *q == '\0') return NULL;
  for (const Model &m : kModels)
    if (std::strcmp(m.qemu_cpu, q) == 0) return &m;
  return NULL;
}

struct Recorder {
  std::vector<uint32_t> leaves;
};

int recording_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  static_cast<Recorder *>(ctx)->leaves.push_back(leaf);
  return tickclock_cpuid_native(NULL, leaf, subleaf, out);
}

tickclock_x86_facts decode(Recorder *rec) {
  tickclock_x86_facts x;
  tickclock_x86_decode(recording_cpuid, rec, &x);
  return x;
}

}  // namespace

TEST_CASE("no leaf past its range's maximum is decoded") {
  Recorder rec;
  tickclock_x86_facts x = decode(&rec);
  REQUIRE(x.have_cpuid);
  char buf[160];
  std::snprintf(buf, sizeof buf, "vendor %s, max leaf 0x%x, max ext leaf 0x%x, %u leaves asked",
                x.vendor, (unsigned)x.max_leaf, (unsigned)x.max_ext_leaf,
                (unsigned)rec.leaves.size());
  MESSAGE(std::string(buf));
  for (uint32_t l : rec.leaves) {
    CAPTURE(l);
    if (l < 0x40000000u) CHECK(l <= x.max_leaf);
    if (l >= 0x80000000u && l < 0x90000000u && l != 0x80000000u) CHECK(l <= x.max_ext_leaf);
  }
  // what the decoder derived from gated leaves only
  if (x.max_leaf < 0x15) CHECK_FALSE(x.leaf15_valid);
  if (x.max_leaf < 0x16) CHECK_FALSE(x.leaf16_valid);
  if (x.max_ext_leaf < 0x80000007u) CHECK_FALSE(x.invariant_known);
  if (x.max_ext_leaf < 0x80000001u) CHECK_FALSE(x.rdtscp);
}

namespace {

// Runs fn in a child; returns its wait status.
template <class F>
int in_child(F fn) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGILL, SIG_DFL);
    fn();
    _exit(0);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  return st;
}

}  // namespace

TEST_CASE("the library never executes RDTSCP (observed where RDTSCP raises SIGILL)") {
  Recorder rec;
  tickclock_x86_facts x = decode(&rec);
  if (x.rdtscp) {
    tctest::skip(
        "library executes no RDTSCP: RDTSCP exists on this CPU, so a stray one would "
        "not trap (observed under qemu-x86_64 -cpu qemu64, Nehalem, max,-rdtscp)");
    return;
  }
  // control: on this CPU a raw RDTSCP kills the process with SIGILL
  int st = in_child([] {
    uint32_t aux;
    (void)tkt_x86_rdtscp(&aux);
  });
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    // a hypervisor can hide RDTSCP from CPUID while the CPU still executes
    // it (a PVM guest does): no trap to observe, so this proof cannot run
    // here; the object-code scan (no_rdtscp_test) holds on every host
    tctest::skip(
        "library executes no RDTSCP: CPUID hides RDTSCP but the CPU executes it (hidden by a "
        "hypervisor, not absent), so a stray one would not trap; the object-code scan "
        "no_rdtscp_test proves it instead");
    return;
  }
  REQUIRE_MESSAGE(WIFSIGNALED(st), "a child executing RDTSCP neither trapped nor exited cleanly");
  REQUIRE(WTERMSIG(st) == SIGILL);
  // the library, with the TSC forced (every counter path in use) and then
  // automatic: every entry point survives, so none executes RDTSCP
  st = in_child([] {
    tickclock_config cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.source = TICKCLOCK_SOURCE_TSC;
    if (tickclock_init(&cfg) != TICKCLOCK_OK) _exit(3);
    if (tickclock_info_get()->source != TICKCLOCK_SOURCE_TSC) _exit(4);
    uint64_t acc = 0;
    for (int i = 0; i < 1000; i++) {
      uint64_t a = tickclock_now(), b = tickclock_now_ordered();
      acc += tickclock_to_ns(b) + (uint64_t)tickclock_delta_ns(a, b);
    }
    (void)tickclock_revalidate();
    tickclock_revalidate_every(1);
    for (int i = 0; i < 1000; i++) acc += tickclock_to_ns(tickclock_now_ordered());
    (void)tickclock_info_get();
    if (tickclock_init(NULL) != TICKCLOCK_OK) _exit(5);
    acc += tickclock_now() + tickclock_now_ordered();
    if (acc == 1) _exit(6);
  });
  CHECK(WIFEXITED(st));
  if (WIFSIGNALED(st)) CHECK_MESSAGE(WTERMSIG(st) != SIGILL, "the library executed RDTSCP");
  if (WIFEXITED(st)) CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("the decision QEMU's CPU model must produce") {
  const Model *m = this_model();
  if (m == NULL) {
    const char *q = std::getenv("QEMU_CPU");
    tctest::skip(std::string("the decision of a QEMU CPU model: ") +
                 (q && *q ? "QEMU_CPU is a model this test has no expectation for"
                          : "QEMU_CPU is unset (not under qemu-x86_64)"));
    return;
  }
  std::string name = m->qemu_cpu;
  CAPTURE(name);
  Recorder rec;
  tickclock_x86_facts x = decode(&rec);
  CHECK(std::string(x.vendor) == m->vendor);
  CHECK(x.rdtscp == m->rdtscp);
  CHECK(x.tsc);
  CHECK_FALSE(x.invariant_tsc);  // QEMU cannot set it
  CHECK(x.hypervisor);
  CHECK(x.hv_valid);
  CHECK(std::string(x.hv_signature) == "TCGTCGTCGTCG");
  if (m->max_leaf) CHECK(x.max_leaf == m->max_leaf);

  unsetenv("TICKCLOCK_SOURCE");
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  const tickclock_info *in = tickclock_info_get();
  std::string said = name + ": " + in->source_name + "; " + in->why;
  MESSAGE(said);
  CHECK(in->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(std::string(in->why).find("invariant TSC") != std::string::npos);
  bool found = false;
  for (unsigned i = 0; i < in->n_candidates; i++)
    if (in->candidates[i].source == TICKCLOCK_SOURCE_TSC) {
      found = true;
      CHECK_FALSE(in->candidates[i].usable);
      CHECK(std::string(in->candidates[i].reason).find("invariant TSC") != std::string::npos);
    }
  CHECK(found);
  uint64_t t0 = tickclock_now(), t1 = tickclock_now();
  CHECK(t1 >= t0);

  // the RDTSCP bit the decoder reports is what the model really does
  // (the test case above then observes the library under it)
  if (!m->rdtscp) {
    int st = in_child([] {
      uint32_t aux;
      (void)tkt_x86_rdtscp(&aux);
    });
    CHECK(WIFSIGNALED(st));
    if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == SIGILL);
  }
}
