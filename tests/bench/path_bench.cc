// The cost of tickclock_now() on each read path, one path per process
// (the tick unit is fixed by the first published state, so a process that
// has left the raw counter never returns to the inline read):
//   --path=counter         the first state is the counter: the inline RDTSC
//   --path=system          the OS clock from the start (TICKCLOCK_SOURCE_SYSTEM,
//                          or a host without a trusted counter): ticks are
//                          nanoseconds, the conversion is the identity
//   --path=os_mapped       counter first, then tickclock_init(SYSTEM): the OS
//                          clock mapped into counter ticks
//   --path=counter_mapped  OS clock first, then the counter: the counter
//                          mapped into nanoseconds
//   --path=os_syscall      PR_SET_TSC before first use: the system call (RDTSC
//                          is enabled again right after: the library's choice
//                          is sticky, and the benchmark framework's own timer
//                          reads the TSC)
// Each run also measures its baselines (bare RDTSC, clock_gettime through
// the vDSO and through the system call) in the same process, so ci/checks/bench
// reports ratios, never raw times.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tests/bench/read_loop.h"
#include "tickclock.h"

namespace {
std::string g_path;

// The shared read loop, labelled with the path and the source it ran on.
template <class F>
void ReadLoop(benchmark::State& st, F read) {
  tickclock_bench::ReadLoop(st, read);
  st.SetLabel(g_path + ": " + tickclock_info_get()->source_name);
}

void BM_rdtsc(benchmark::State& st) {
  ReadLoop(st, [] { return __rdtsc(); });
}
void BM_vdso(benchmark::State& st) {
  ReadLoop(st, [] {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_nsec;
  });
}
// The same, joined into one count of nanoseconds: what a caller of
// clock_gettime computes to get what tickclock_now() returns on the OS
// clock (BM_vdso returns tv_nsec alone, no multiply).
void BM_vdso_ns(benchmark::State& st) {
  ReadLoop(st, [] {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  });
}
void BM_syscall(benchmark::State& st) {
  ReadLoop(st, [] {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_nsec;
  });
}
void BM_now(benchmark::State& st) {
  ReadLoop(st, [] { return tickclock_now(); });
}
void BM_now_to_ns(benchmark::State& st) {
  ReadLoop(st, [] { return tickclock_to_ns(tickclock_now()); });
}
BENCHMARK(BM_rdtsc)->Name("BM_path/rdtsc");
BENCHMARK(BM_vdso)->Name("BM_path/clock_gettime_vdso");
BENCHMARK(BM_vdso_ns)->Name("BM_path/clock_gettime_vdso_ns");
BENCHMARK(BM_syscall)->Name("BM_path/clock_gettime_syscall");
BENCHMARK(BM_now)->Name("BM_path/tickclock_now");
BENCHMARK(BM_now_to_ns)->Name("BM_path/tickclock_now_to_ns");

// Puts the process on the path; returns the expected read_path or -1.
int Setup(const std::string& p) {
  tickclock_config sys = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  tickclock_config tsc = {TICKCLOCK_SOURCE_TSC, 0, 0};
  if (p == "counter") return tickclock_init(&tsc) == TICKCLOCK_OK ? TICKCLOCK_READ_COUNTER : -1;
  if (p == "system") return tickclock_init(&sys) == TICKCLOCK_OK ? TICKCLOCK_READ_OS : -1;
  if (p == "os_mapped") {
    if (tickclock_init(&tsc) != TICKCLOCK_OK || tickclock_init(&sys) != TICKCLOCK_OK) return -1;
    return TICKCLOCK_READ_OS;
  }
  if (p == "counter_mapped") {
    if (tickclock_init(&sys) != TICKCLOCK_OK || tickclock_init(&tsc) != TICKCLOCK_OK) return -1;
    return TICKCLOCK_READ_COUNTER_MAPPED;
  }
  if (p == "os_syscall") {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) return -1;
    (void)tickclock_now();
    if (prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0) != 0) return -1;
    return TICKCLOCK_READ_OS_SYSCALL;
  }
  return -2;
}
}  // namespace

int main(int argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; i++) {
    if (std::strncmp(argv[i], "--path=", 7) == 0)
      g_path = argv[i] + 7;
    else
      argv[out++] = argv[i];
  }
  argc = out;
  int want = Setup(g_path);
  if (want == -2) {
    std::fprintf(stderr,
                 "path_bench: --path=%s: expected counter, system, os_mapped, counter_mapped or "
                 "os_syscall\n",
                 g_path.c_str());
    return 2;
  }
  const tickclock_info* i = tickclock_info_get();
  if (want < 0 || i->read_path != want) {
    std::fprintf(stderr, "path_bench: path %s not reachable here (%s)\n", g_path.c_str(), i->why);
    return 3;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
