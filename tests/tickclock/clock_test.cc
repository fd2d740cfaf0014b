// The clock itself: monotonic reads, cross-thread ordering, forced and
// fallback sources, calibration accuracy. Each source the machine can run
// is tested; a source it cannot run is reported as skipped with the reason.
#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <sched.h>
#include <time.h>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tickclock.h"
#include "tests/support/host_costs.h"
#include "tests/support/skip.h"
#include "tests/support/sysclock_ref.h"

// Under ThreadSanitizer every atomic access is a runtime call, and the
// ping-pong below becomes a context switch per round on a loaded 2-core
// machine (clang-19 --config=tsan: 200000 rounds ran past the 120 s test
// timeout). TSan needs far fewer rounds to check the protocol.
#if defined(__SANITIZE_THREAD__)
#define CLOCK_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CLOCK_TEST_TSAN 1
#endif
#endif
#if defined(CLOCK_TEST_TSAN)
constexpr int kPingPongRounds = 20000;
#else
constexpr int kPingPongRounds = 200000;
#endif

namespace {

// Sources this process can actually run: the OS clock always; the arch
// counter when the decider says it is executable here.
std::vector<int> runnable_sources() {
  std::vector<int> v = {TICKCLOCK_SOURCE_SYSTEM};
  tickclock_evidence ev;
  tkc_gather(NULL, &ev);
  char why[TICKCLOCK_REASON_LEN];
  if (ev.arch_counter && tkc_counter_executable(&ev, why, sizeof why))
    v.push_back(ev.arch_counter);
  else
    MESSAGE("arch counter not tested: " << why);
  return v;
}

void force(int source) {
  tickclock_config cfg = {source, 0, 0};
  REQUIRE(tickclock_init(&cfg) == TICKCLOCK_OK);
  REQUIRE(tickclock_info_get()->source == source);
}

template <typename Read>
uint64_t count_backward_steps(Read read, long n) {
  uint64_t prev = read(), back = 0;
  for (long i = 0; i < n; i++) {
    uint64_t cur = read();
    back += cur < prev;
    prev = cur;
  }
  return back;
}

// Spin, then yield: on a loaded or oversubscribed machine (CI, ci/matrix
// running cells side by side) a pure spin burns the time slice the other
// thread needs to take its turn (gcc-11 cell: clock_test 69.8 s at load 13).
void wait_for_turn(const std::atomic<int> &turn, int want) {
  for (int spins = 0; turn.load(std::memory_order_acquire) != want;) {
    if (++spins >= 64) {
      std::this_thread::yield();
      spins = 0;
    }
  }
}

uint64_t raw_ns() { return tctest::clock_ns(CLOCK_MONOTONIC_RAW); }
uint64_t mono_ns() { return tctest::clock_ns(CLOCK_MONOTONIC); }

}  // namespace

TEST_CASE("10^7 consecutive reads per thread never decrease, on 2 threads, both variants") {
  for (int src : runnable_sources()) {
    force(src);
    CAPTURE(tickclock_source_name(src));
    std::atomic<uint64_t> back_fast(0), back_ordered(0);
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; t++)
      ts.emplace_back([&] {
        back_fast += count_backward_steps([] { return tickclock_now(); }, 10000000);
        back_ordered += count_backward_steps([] { return tickclock_now_ordered(); }, 10000000);
      });
    for (auto &t : ts) t.join();
    CHECK(back_fast.load() == 0);
    CHECK(back_ordered.load() == 0);
  }
}

// Under emulation a counter read is the host's RDTSC, executed by the
// emulator's helper on whichever host CPU runs the emulating thread, and
// QEMU does not order a guest load before that host RDTSC: two emulated
// threads then see backward steps that real hardware forbids (qemu-x86_64
// CPU models on a host whose kernel trusts its TSC: 8 backward
// observations, worst 155 ticks; qemu-riscv64 on a host with
// unsynchronised TSCs: 26, worst 168 ticks). The cause is emulation, so
// emulation decides: the forced TSC under QEMU TCG (CPUID hypervisor
// signature "TCGTCGTCGTCG", read here with <cpuid.h>), and the riscv64
// time CSR / POWER timebase on an x86 host (the host's /proc/cpuinfo shows
// through). There both threads are pinned to one host CPU, so the test
// still checks the ordering of publish and read; on real hardware it is
// never pinned. AArch64 CNTVCT and s390x TOD derive from the host's
// clock_gettime under QEMU and are checked unpinned everywhere.
std::string emulated_counter(int src) {
  if (src != TICKCLOCK_SOURCE_RDTIME && src != TICKCLOCK_SOURCE_TIMEBASE &&
      src != TICKCLOCK_SOURCE_TSC)
    return "";
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 31) & 1)) return "";
  __cpuid(0x40000000u, a, b, c, d);
  char sig[13];
  std::memcpy(sig + 0, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  sig[12] = '\0';
  if (std::strcmp(sig, "TCGTCGTCGTCG") != 0) return "";
  return "QEMU TCG (hypervisor signature TCGTCGTCGTCG)";
#else
  char line[512];
  if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
    bool x86_host = false;
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "vendor_id", 9) == 0) x86_host = true;
    std::fclose(f);
    if (x86_host) return "QEMU user mode on an x86 host (/proc/cpuinfo has vendor_id)";
  }
  return "";
#endif
}

TEST_CASE(
    "cross-thread ordering: a reading taken after acquiring a published reading is never earlier") {
  for (int src : runnable_sources()) {
    force(src);
    std::string name = tickclock_source_name(src);
    CAPTURE(name);
    cpu_set_t saved;
    bool pinned = false;
    std::string emulated = emulated_counter(src);
    if (!emulated.empty() && sched_getaffinity(0, sizeof saved, &saved) == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &saved)) {
          CPU_SET(c, &one);
          break;
        }
      pinned = sched_setaffinity(0, sizeof one, &one) == 0;
      std::string note = name + " is emulated (" + emulated +
                         "): QEMU does not order a guest load before the host RDTSC it executes, "
                         "so both threads are pinned to one host CPU" +
                         (pinned ? "" : " (pinning failed)");
      MESSAGE(note);
    }
    const int rounds = kPingPongRounds;
    std::atomic<uint64_t> published(0);
    std::atomic<int> turn(0);
    uint64_t violations = 0, worst = 0;
    std::thread writer([&] {
      for (int i = 0; i < rounds; i++) {
        wait_for_turn(turn, 0);
        published.store(tickclock_now_ordered(), std::memory_order_release);
        turn.store(1, std::memory_order_release);
      }
    });
    for (int i = 0; i < rounds; i++) {
      wait_for_turn(turn, 1);
      uint64_t seen = published.load(std::memory_order_acquire);
      uint64_t mine = tickclock_now_ordered();
      if (mine < seen) {
        violations++;
        if (seen - mine > worst) worst = seen - mine;
      }
      turn.store(0, std::memory_order_release);
    }
    writer.join();
    CHECK_MESSAGE(violations == 0,
                  violations << " backward observations, worst " << worst << " ticks");
    if (pinned) sched_setaffinity(0, sizeof saved, &saved);
  }
}

TEST_CASE("converted counter time tracks CLOCK_MONOTONIC_RAW") {
  for (int src : runnable_sources()) {
    force(src);
    std::string name = tickclock_source_name(src);
    CAPTURE(name);
    // Each counter read is bracketed by two raw reads, so the counter
    // interval lies between the inner (r1a - r0b) and the outer (r1b - r0a)
    // raw interval whatever happens between the reads: under QEMU on a
    // loaded host the emulator is preempted for milliseconds between two
    // adjacent reads (11 ms seen on s390x), which a single raw read per end
    // took for a counter error. Tolerance: the frequency uncertainty
    // (generously 1000 ppm) plus 1 us.
    uint64_t r0a = raw_ns(), t0 = tickclock_now_ordered(), r0b = raw_ns();
    struct timespec req = {0, 50000000};  // 50 ms
    nanosleep(&req, NULL);
    uint64_t r1a = raw_ns(), t1 = tickclock_now_ordered(), r1b = raw_ns();
    int64_t got = tickclock_delta_ns(t0, t1);
    int64_t outer = (int64_t)(r1b - r0a), inner = (int64_t)(r1a - r0b);
    CAPTURE(got);
    CAPTURE(inner);
    CAPTURE(outer);
    CHECK(inner >= 50000000);
    CHECK(got <= outer + outer / 1000 + 1000);
    CHECK(got >= inner - inner / 1000 - 1000);
  }
}

TEST_CASE("forcing the OS clock: readings follow CLOCK_MONOTONIC in the process's tick unit") {
  force(TICKCLOCK_SOURCE_SYSTEM);
  const tickclock_info *i = tickclock_info_get();
  CHECK(std::strcmp(i->source_name, "system") == 0);
  CHECK(i->freq_method == TICKCLOCK_FREQ_IDENTITY);
  CHECK(i->forced == 1);
  if (i->scaled == 0) {  // the process started on the OS clock: ticks are ns
    CHECK(tickclock_to_ns(123456789ull) == 123456789ull);
    CHECK(tickclock_delta_ns(1000, 250) == -750);
  } else {  // it started on the counter: the OS clock maps into counter ticks
    CHECK(i->unit_source != TICKCLOCK_SOURCE_SYSTEM);
    CHECK(i->read_path == TICKCLOCK_READ_OS);
  }
  // Each tickclock read is bracketed by two CLOCK_MONOTONIC reads, so its
  // interval lies between the inner (m1a - m0b) and the outer (m1b - m0a)
  // reference interval. With a single reference read per end, an emulator
  // preempted for over a millisecond between the two reads (QEMU user mode
  // on a loaded 2-CPU runner) looked like a clock running slow.
  uint64_t m0a = mono_ns(), t0 = tickclock_now(), m0b = mono_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint64_t m1a = mono_ns(), t1 = tickclock_now(), m1b = mono_ns();
  int64_t d = tickclock_delta_ns(t0, t1);
  int64_t outer = (int64_t)(m1b - m0a), inner = (int64_t)(m1a - m0b);
  CAPTURE(d);
  CAPTURE(inner);
  CAPTURE(outer);
  CHECK(d > 0);
  // The OS clock read through the process's unit: exact in ns, or mapped
  // into counter ticks and back through one conversion (a few ns of
  // rounding; 1 us covers it). The lower bound also allows 1000 ppm, as the
  // test had before it bracketed its reads.
  CHECK(d <= outer + 1000);
  CHECK(d >= inner - inner / 1000 - 1000);
}

TEST_CASE("tickclock_init validates its config") {
  tickclock_config bad_src = {99, 0, 0};
  tickclock_config bad_ms = {0, 5000, 0};
  tickclock_config bad_flags = {0, 0, 1};
  const tickclock_info *before = tickclock_info_get();
  CHECK(tickclock_init(&bad_src) == TICKCLOCK_EINVAL);
  CHECK(tickclock_init(&bad_ms) == TICKCLOCK_EINVAL);
  CHECK(tickclock_init(&bad_flags) == TICKCLOCK_EINVAL);
  CHECK(tickclock_info_get() == before);  // nothing changed
}

TEST_CASE("a source that does not exist on this architecture is refused, auto kept") {
  int foreign = TICKCLOCK_SOURCE_TOD;  // s390x only
#if defined(__s390x__)
  foreign = TICKCLOCK_SOURCE_TSC;
#endif
  tickclock_config cfg = {foreign, 0, 0};
  CHECK(tickclock_init(&cfg) == TICKCLOCK_EUNAVAILABLE);
  const tickclock_info *i = tickclock_info_get();
  CHECK(i->request_refused == 1);
  CHECK(i->source != foreign);
  CHECK(i->forced == 0);
}

TEST_CASE("info explains the choice and every refused candidate") {
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  const tickclock_info *i = tickclock_info_get();
  CHECK(i->why[0] != '\0');
  CHECK(i->n_candidates >= 1);
  int chosen = 0;
  for (unsigned k = 0; k < i->n_candidates; k++) {
    const tickclock_candidate &c = i->candidates[k];
    CAPTURE(c.name);
    CHECK(c.reason[0] != '\0');
    chosen += c.chosen;
    if (c.chosen) CHECK(c.source == i->source);
    if (!c.usable) CHECK(!c.chosen);
  }
  CHECK(chosen == 1);
  CHECK(i->resolution_ns > 0);
  CHECK(i->hz > 0);
  MESSAGE("automatic choice here: " << i->why);
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
uint64_t rdtsc_ordered_fn() { return tkc_x86_rdtsc_ordered(); }
}  // namespace

TEST_CASE("TSC calibration (20 ms, tightest bracket) agrees with a 1 s reference within 10 ppm") {
  tickclock_evidence ev;
  tkc_gather(NULL, &ev);
  char why[TICKCLOCK_REASON_LEN];
  if (!tkc_counter_executable(&ev, why, sizeof why)) {
    tctest::skip(std::string("TSC calibration vs the syscall clock: ") + why);
    return;
  }
  tickclock_calibration quick;
  uint64_t call0 = raw_ns();
  REQUIRE(tkc_calibrate(rdtsc_ordered_fn, 20, &quick) == 1);
  uint64_t call_ns = raw_ns() - call0;
  // the oracle: the test's own brackets around CLOCK_MONOTONIC_RAW through
  // the system call over 1 s, not the library's calibration at 1 s (a
  // scale error would cancel between two runs of the same function)
  tctest::SysRef ref = tctest::sys_reference(rdtsc_ordered_fn, 1000);
  REQUIRE(ref.ok);
  double ppm = std::fabs(quick.hz - ref.hz) / ref.hz * 1e6;
  MESSAGE("20 ms: " << quick.hz << " Hz (+-" << quick.uncertainty_ppm << " ppm, brackets "
                    << quick.bracket_start << "/" << quick.bracket_end
                    << " ticks); 1 s syscall reference: " << ref.hz << " Hz (+-" << ref.err_ppm
                    << " ppm); disagreement " << ppm << " ppm");
  CHECK(ppm <= 10.0 + ref.err_ppm);
  bool tcg = ev.x86.hv_valid && std::strcmp(ev.x86.hv_signature, "TCGTCGTCGTCG") == 0;
  // Under QEMU TCG each emulated RDTSC costs ~125 ns, so the tightest
  // bracket is ~525 ticks instead of ~84 and the honest bound is ~13 ppm
  // (qemu-i386): there the check is that the bound holds, i.e. covers the
  // actual disagreement with the 1 s reference.
  if (tcg)
    CHECK(ppm <= quick.uncertainty_ppm + ref.err_ppm);
  else
    CHECK(quick.uncertainty_ppm < 10.0);
  CHECK(quick.ns >= 20000000ull);
  // Bounded, but not by wall time (preemption on a loaded machine, TSan and
  // QEMU TCG stretch it: 34.9 ms under clang-19 TSan, 44.7 ms under
  // qemu-i386 at load 30): the calibrated interval lies inside the call's
  // own duration, and a 20 ms calibration is shorter than a 1 s one.
  CHECK(quick.ns <= call_ns);
  CHECK(quick.ns < ref.ns);
  // the library's hz_num/hz_den is ticks * 1e9 / ns of its own interval
  CHECK(std::fabs((double)quick.ticks * 1e9 / (double)quick.ns - quick.hz) < 1e-3);
  if (tcg)
    MESSAGE("under QEMU TCG: 20 ms calibration spanned " << quick.ns / 1000 << " us of a "
                                                         << call_ns / 1000 << " us call");
  // the rational is exact enough to reproduce hz
  CHECK(std::fabs((double)quick.hz_num / (double)quick.hz_den - quick.hz) < 1e-3);
}
#endif
