// TICKCLOCK_SOURCE: honoured when usable, a bad value reported once on
// stderr with the automatic choice kept; tickclock_config wins over it.
// Its own binary: the "once" is per process.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "doctest/doctest.h"
#include "internal.h"
#include "tickclock.h"

namespace {

// Runs fn with fd 2 redirected to a temporary file; returns what it wrote.
template <typename Fn>
std::string capture_stderr(Fn fn) {
  std::fflush(stderr);
  FILE *tmp = std::tmpfile();
  REQUIRE(tmp != NULL);
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

int auto_choice() {
  unsetenv("TICKCLOCK_SOURCE");
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  return tickclock_info_get()->source;
}

bool counter_executable() {
  tickclock_evidence ev;
  tickclock__gather(NULL, &ev);
  char why[TICKCLOCK_REASON_LEN];
  return ev.arch_counter && tickclock__counter_executable(&ev, why, sizeof why);
}

}  // namespace

TEST_CASE("TICKCLOCK_SOURCE=system forces the OS clock") {
  setenv("TICKCLOCK_SOURCE", "system", 1);
  CHECK(tickclock_init(NULL) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(tickclock_info_get()->forced == 2);
  CHECK(std::strstr(tickclock_info_get()->why, "TICKCLOCK_SOURCE") != NULL);
}

TEST_CASE("TICKCLOCK_SOURCE=auto is the automatic choice") {
  int a = auto_choice();
  setenv("TICKCLOCK_SOURCE", "auto", 1);
  CHECK(tickclock_init(NULL) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == a);
  CHECK(tickclock_info_get()->forced == 0);
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE("TICKCLOCK_SOURCE=tsc forces the TSC where RDTSC can execute") {
  setenv("TICKCLOCK_SOURCE", "tsc", 1);
  int rc = tickclock_init(NULL);
  if (counter_executable()) {
    CHECK(rc == TICKCLOCK_OK);
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_TSC);
    CHECK(tickclock_info_get()->forced == 2);
    CHECK(tickclock_info_get()->freq_method == TICKCLOCK_FREQ_CALIBRATED);
  } else {
    MESSAGE("RDTSC not executable here: checking the refusal instead");
    CHECK(tickclock_info_get()->request_refused == 1);
  }
}
#endif

TEST_CASE("a bad TICKCLOCK_SOURCE is reported once on stderr and auto is kept") {
  int a = auto_choice();
  setenv("TICKCLOCK_SOURCE", "bogus-clock", 1);
  std::string first = capture_stderr([] { CHECK(tickclock_init(NULL) == TICKCLOCK_OK); });
  CHECK(tickclock_info_get()->source == a);
  CHECK(tickclock_info_get()->forced == 0);
  CHECK(std::strstr(tickclock_info_get()->env_error, "bogus-clock") != NULL);
  // one line, naming the variable and the value
  CHECK(first.find("TICKCLOCK_SOURCE='bogus-clock'") != std::string::npos);
  CHECK(first.find('\n') == first.size() - 1);
  std::string second = capture_stderr([] { CHECK(tickclock_init(NULL) == TICKCLOCK_OK); });
  CHECK(second.empty());
}

TEST_CASE("an unusable TICKCLOCK_SOURCE (another architecture's counter) keeps auto") {
  int a = auto_choice();
#if defined(__s390x__)
  setenv("TICKCLOCK_SOURCE", "tsc", 1);
#else
  setenv("TICKCLOCK_SOURCE", "tod", 1);
#endif
  tickclock_init(NULL);
  CHECK(tickclock_info_get()->source == a);
  CHECK(tickclock_info_get()->request_refused == 1);
  CHECK(std::strstr(tickclock_info_get()->env_error, "unusable") != NULL);
}

TEST_CASE("tickclock_config wins over TICKCLOCK_SOURCE") {
  setenv("TICKCLOCK_SOURCE", "tsc", 1);
  tickclock_config cfg = {TICKCLOCK_SOURCE_SYSTEM, 0, 0};
  CHECK(tickclock_init(&cfg) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(tickclock_info_get()->forced == 1);
  unsetenv("TICKCLOCK_SOURCE");
}
