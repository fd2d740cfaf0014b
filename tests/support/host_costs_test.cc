// host_costs() measures with SIGUSR2 and a real-time timer: what the
// process had of either before is what it has after.
#include "tests/support/host_costs.h"

#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctest/doctest.h"

namespace {
volatile sig_atomic_t g_alarms = 0;
void count_alarm(int) { g_alarms = g_alarms + 1; }
}  // namespace

TEST_CASE("a real-time timer armed before the measurement runs on after it") {
  // In a child: host_costs() is measured once per process.
  fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGALRM, count_alarm);
    struct itimerval armed = {{0, 0}, {100, 0}}, now;  // 100 s from here
    setitimer(ITIMER_REAL, &armed, nullptr);
    (void)tctest::host_costs();
    getitimer(ITIMER_REAL, &now);
    struct sigaction sa;
    sigaction(SIGALRM, nullptr, &sa);
    // still armed, less what the measurement took; the handler kept
    int rc = now.it_value.tv_sec >= 90 && now.it_value.tv_sec <= 100 ? 0 : 1;
    if (sa.sa_handler != count_alarm) rc |= 2;
    if (g_alarms != 0) rc |= 4;  // none of the measurement's reached it
    _exit(rc);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  INFO("1: the timer was not running on, 2: the handler changed, 4: a stray SIGALRM");
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("measured while SIGUSR2 and SIGALRM are blocked: nothing is left pending") {
  fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    sigset_t block, pending;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, nullptr);
    const tctest::HostCosts &c = tctest::host_costs();
    sigpending(&pending);
    int rc = 0;
    if (sigismember(&pending, SIGUSR2)) rc |= 1;
    if (sigismember(&pending, SIGALRM)) rc |= 2;
    // (timer_us may be 0 on a host where a timer signal costs less than
    // the spinning loop's noise: not asserted)
    if (!(c.signal_us > 0)) rc |= 4;
    sigset_t still;
    sigprocmask(SIG_SETMASK, nullptr, &still);
    if (!sigismember(&still, SIGUSR2) || !sigismember(&still, SIGALRM)) rc |= 16;
    _exit(rc);  // with either pending, unblocking here would kill the process
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  INFO("1/2: SIGUSR2/SIGALRM left pending, 4: a signal's cost not measured, 16: mask changed");
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}
