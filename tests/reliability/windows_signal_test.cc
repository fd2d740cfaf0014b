// The suspend and break windows (windows.c) read by a signal handler that
// interrupted their writer in its own thread: the writer cannot finish
// while the handler runs, so the handler sees the sequence count odd on
// every try. What it then reports must still be a bound: the windows as
// unknown (UINT64_MAX), never a window found with nothing in it (before:
// the suspend ring said "a suspend lies between" with 0 ns suspended, so
// tickclock_duration_get's bound left out the time suspended).
//
// A second thread sends the writer's thread signals while it keeps adding
// windows (every one 2 ms of suspend, or a 5 us break), until 50 handlers
// have landed inside a write or 2 000 000 signals were sent (then the case
// cannot be judged on this host, and says so).
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <atomic>

#include <chrono>

#include "doctest/doctest.h"
#include "tests/support/host_facts.h"
#include "internal.h"
#include "tests/support/skip.h"

namespace {

constexpr uint64_t kSuspendNs = 2000000;  // each suspend window's time
constexpr uint64_t kBreakNs = 5000;       // each break window's excess

std::atomic<long> g_handled{0}, g_inside{0}, g_bad_susp{0}, g_bad_break{0};
std::atomic<bool> g_stop{false};

void on_signal(int) {
  int saved = errno;
  uint64_t slept = 0, excess = 0;
  // every window meets [0, UINT64_MAX): a consistent read finds at least one
  int fs = tkc_suspends_in(0, UINT64_MAX, 0, &slept);
  int fb = tkc_breaks_in(0, UINT64_MAX, &excess);
  if (fs && slept == UINT64_MAX) g_inside++;
  if (fb && excess == UINT64_MAX) g_inside++;
  if (!fs || slept < kSuspendNs) g_bad_susp++;
  if (!fb || excess < kBreakNs) g_bad_break++;
  g_handled++;
  errno = saved;
}

void *signaler(void *arg) {
  pthread_t target = *static_cast<pthread_t *>(arg);
  long sent = 0;
  while (!g_stop.load() && sent < 2000000) {
    long h = g_handled.load();
    if (pthread_kill(target, SIGUSR1) != 0) break;
    sent++;
    // wait for the handler before the next one (a pending signal merges);
    // at most 50 ms: an emulator (QEMU user mode) may lose one
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (!g_stop.load() && g_handled.load() == h && std::chrono::steady_clock::now() < until)
      sched_yield();
  }
  g_stop.store(true);
  return nullptr;
}

}  // namespace

TEST_CASE("a handler inside a window write reads the windows as unknown, never as empty") {
#if defined(__x86_64__) || defined(__i386__)
  if (tctest::qemu_user_x86()) {
    // measured under qemu-i386 (the gcc-12 cross i686 cell): 7 of 20 runs
    // aborted with std::bad_alloc in the emulated program and 1 of 20 hung
    // (its signals stopped coming), 0 of 20 natively: a storm of
    // pthread_kill across threads is the emulator's to deliver, which this
    // test cannot tell from the library's
    tctest::skip(
        "a handler inside a window write: under QEMU user mode a signal storm across threads is "
        "the emulator's to deliver (it aborted or stopped delivering)");
    return;
  }
#endif
  tkc_suspends_reset();
  tkc_breaks_reset();
  uint64_t t = 1000, susp = 0;
  // a reference sample, then windows in both rings
  tkc_note_sample(t, t + 10, susp);
  for (int k = 0; k < 20; k++) {
    t += 1000000;
    susp += kSuspendNs;
    tkc_note_sample(t, t + 10, susp);
    tkc_note_break(t - 1000, t + 10, kBreakNs);
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
  pthread_t self = pthread_self(), th;
  REQUIRE(pthread_create(&th, nullptr, signaler, &self) == 0);
  // until 50 handlers landed inside a write, or 20 s (an emulator's
  // signals may stop coming)
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!g_stop.load() && g_inside.load() < 50 && std::chrono::steady_clock::now() < deadline) {
    t += 1000000;
    susp += kSuspendNs;
    tkc_note_sample(t, t + 10, susp);
    tkc_note_break(t - 1000, t + 10, kBreakNs);
  }
  g_stop.store(true);
  pthread_join(th, nullptr);
  sigaction(SIGUSR1, &old, nullptr);
  tkc_suspends_reset();
  tkc_breaks_reset();
  MESSAGE(g_handled.load() << " handlers, " << g_inside.load()
                           << " inside a write; read as empty: suspends " << g_bad_susp.load()
                           << ", breaks " << g_bad_break.load());
  CHECK(g_bad_susp.load() == 0);
  CHECK(g_bad_break.load() == 0);
  if (g_inside.load() == 0)
    MESSAGE("no handler landed inside a write on this host: the unknown case was not judged");
}
