// TICKCLOCK_SOURCE: honoured when usable, a bad value reported once on
// stderr with the automatic choice kept; tickclock_config wins over it.
// Its own binary: the "once" is per process.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "doctest/doctest.h"
#include "internal.h"
#include "tickclock.h"

namespace {

// Runs fn with fd 2 redirected to a pipe (the library writes its one line
// only where stderr is a terminal, a pipe, a socket, a character device or
// a file opened for appending); returns what it wrote.
template <typename Fn>
std::string capture_stderr(Fn fn) {
  std::fflush(stderr);
  int p[2];
  REQUIRE(pipe(p) == 0);
  int saved = dup(2);
  dup2(p[1], 2);
  close(p[1]);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);  // the pipe's last writer closes
  close(saved);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, (size_t)n);
  close(p[0]);
  return out;
}

// In a child: fd 2 is a file the program opened itself (flags), holding
// 4 bytes of its data; a bad TICKCLOCK_SOURCE is met. Returns the file's
// size and fd 2's offset afterwards as size * 10000 + offset, -1 on error.
long child_with_fd2_file(int flags) {
  char path[] = "/tmp/tickclock-env-fd2-XXXXXX";
  int made = mkstemp(path);
  if (made < 0) return -1;
  close(made);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path, flags);
    if (fd < 0 || dup2(fd, 2) != 2) _exit(3);
    if (fd != 2) close(fd);
    if (write(2, "data", 4) != 4) _exit(4);
    setenv("TICKCLOCK_SOURCE", "bogus", 1);
    (void)tickclock_init(NULL);
    if (tickclock_info_get()->env_error[0] == '\0') _exit(5);  // it is still said here
    std::fflush(stderr);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  struct stat sb;
  long size = stat(path, &sb) == 0 ? (long)sb.st_size : -1;
  unlink(path);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  return size;
}

int auto_choice() {
  unsetenv("TICKCLOCK_SOURCE");
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  return tickclock_info_get()->source;
}

bool counter_executable() {
  tickclock_evidence ev;
  tkc_gather(NULL, &ev);
  char why[TICKCLOCK_REASON_LEN];
  return ev.arch_counter && tkc_counter_executable(&ev, why, sizeof why);
}

}  // namespace

// First in this file: the line is said once per process, and the children
// below must come from a process that has not said it yet.
TEST_CASE("the complaint never goes into a file the program reused fd 2 for") {
  // a data file opened for plain writing: left as the program wrote it
  CHECK(child_with_fd2_file(O_WRONLY) == 4);
  CHECK(child_with_fd2_file(O_RDWR) == 4);
  // opened for appending (2>>, a log): the line goes there
  long appended = child_with_fd2_file(O_WRONLY | O_APPEND);
  CHECK(appended > 4 + 20);
}

TEST_CASE("TICKCLOCK_SOURCE=system forces the OS clock") {
  setenv("TICKCLOCK_SOURCE", "system", 1);
  CHECK(tickclock_init(NULL) == TICKCLOCK_OK);
  CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
  CHECK(tickclock_info_get()->forced == 2);
  CHECK(std::strstr(tickclock_info_get()->why, "TICKCLOCK_SOURCE") != NULL);
}

TEST_CASE("TICKCLOCK_SOURCE is read in any case: SYSTEM, System") {
  for (const char *v : {"SYSTEM", "System", "sYsTeM"}) {
    CAPTURE(v);
    setenv("TICKCLOCK_SOURCE", v, 1);
    CHECK(tickclock_init(NULL) == TICKCLOCK_OK);
    CHECK(tickclock_info_get()->source == TICKCLOCK_SOURCE_SYSTEM);
    CHECK(tickclock_info_get()->forced == 2);
    CHECK(tickclock_info_get()->env_error[0] == '\0');
  }
  CHECK(tickclock_source_from_name("TSC") == TICKCLOCK_SOURCE_TSC);
  CHECK(tickclock_source_from_name("Auto") == TICKCLOCK_SOURCE_AUTO);
  CHECK(tickclock_source_from_name("tscx") == -1);
  CHECK(tickclock_source_from_name("ts") == -1);
  unsetenv("TICKCLOCK_SOURCE");
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
    // a forced counter is calibrated before its first state: the frequency
    // is calibration's, or a source calibration confirmed (a perf page or
    // leaf 0x15 crystal outranks it where the host publishes one)
    const tickclock_info *i = tickclock_info_get();
    CHECK(i->freq_pending_check == 0);
    CHECK(i->baseline_ns > 0);
    bool confirmed = i->freq_method == TICKCLOCK_FREQ_CALIBRATED;
    for (unsigned k = 0; k < i->n_freqs; k++)
      if (i->freqs[k].chosen && i->freqs[k].checked && i->freqs[k].usable) confirmed = true;
    CHECK_MESSAGE(confirmed, i->why);
  } else {
    MESSAGE("RDTSC not executable here: checking the refusal instead");
    CHECK(tickclock_info_get()->request_refused == 1);
  }
}
#endif

TEST_CASE("a bad TICKCLOCK_SOURCE is reported once on stderr and auto is kept") {
  int a = auto_choice();
  // a newline, an escape sequence (clear screen) and a non-ASCII byte in
  // the value: echoed escaped, so the warning stays one inert line
  setenv("TICKCLOCK_SOURCE", "bogus-clock\n\x1b[2J\xff\\", 1);
  std::string first = capture_stderr([] { CHECK(tickclock_init(NULL) == TICKCLOCK_OK); });
  CHECK(tickclock_info_get()->source == a);
  CHECK(tickclock_info_get()->forced == 0);
  const char *err = tickclock_info_get()->env_error;
  CHECK(std::strstr(err, "TICKCLOCK_SOURCE='bogus-clock\\n\\x1b[2J\\xff\\\\'") != NULL);
  for (const char *c = err; *c; c++) CHECK((unsigned char)*c >= 0x20);
  // it lists the names that would do
  CHECK(std::strstr(err, "auto, system, tsc, cntvct, timebase, tod, rdtime, qpc") != NULL);
  // one line, naming the variable and the value
  CHECK(first.find("TICKCLOCK_SOURCE='bogus-clock\\n\\x1b[2J\\xff\\\\'") != std::string::npos);
  CHECK(first.find('\n') == first.size() - 1);
  CHECK(first.find('\x1b') == std::string::npos);
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

TEST_CASE("an empty TICKCLOCK_SOURCE is the same as an unset one") {
  int a = auto_choice();
  setenv("TICKCLOCK_SOURCE", "", 1);
  std::string said = capture_stderr([] { CHECK(tickclock_init(NULL) == TICKCLOCK_OK); });
  CHECK(said.empty());
  CHECK(tickclock_info_get()->source == a);
  CHECK(tickclock_info_get()->forced == 0);
  CHECK(tickclock_info_get()->env_error[0] == '\0');
  // the pure decider too, whatever the process reported before
  tickclock_evidence ev;
  tkc_gather(NULL, &ev);
  ev.have_env = 1;
  ev.env_value[0] = '\0';
  tickclock_info *out = new tickclock_info;
  (void)tickclock_decide(&ev, out);
  CHECK(out->env_error[0] == '\0');
  CHECK(out->forced == 0);
  delete out;
  unsetenv("TICKCLOCK_SOURCE");
}

TEST_CASE("tkc_escape: printable ASCII kept, everything else escaped, never cut inside an escape") {
  char b[64];
  tkc_escape(b, sizeof b, "plain text-1.cpuid");
  CHECK(std::string(b) == "plain text-1.cpuid");
  tkc_escape(b, sizeof b, "a\nb\tc\rd\\e\x01\x7f\x80\xff");
  CHECK(std::string(b) == "a\\nb\\tc\\rd\\\\e\\x01\\x7f\\x80\\xff");
  tkc_escape(b, 6, "ab\x1b");  // room for "ab" + 3 chars: the 4-char escape does not fit
  CHECK(std::string(b) == "ab");
  tkc_escape(b, 7, "ab\x1b");
  CHECK(std::string(b) == "ab\\x1b");
  tkc_escape(b, 1, "abc");
  CHECK(std::string(b) == "");
}
