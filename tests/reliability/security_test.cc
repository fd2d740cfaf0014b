// Security properties of initialisation on the real machine:
//  - the files the library opens are all under /sys or /proc (open,
//    open64, openat and fopen are interposed here and recorded);
//  - TICKCLOCK_SOURCE is ignored in AT_SECURE (setuid/setgid) processes:
//    a setgid copy of this binary is executed when the file system allows
//    it (root, no nosuid mount); otherwise the case reports a skip
//    (TICKCLOCK_SKIPPED, counted as skipped by ci/matrix_lab/summarize), never a pass.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"
#include "tests/support/interpose.h"
#include "tests/support/skip.h"

namespace {
bool g_recording = false;
std::vector<std::string> *g_paths = nullptr;

void record(const char *path) {
  if (!g_recording) return;
  if (g_paths == nullptr) g_paths = new std::vector<std::string>;
  g_paths->push_back(path ? path : "(null)");
}
}  // namespace

// The library reads files with open (and openat where a libc routes it
// there); fopen is interposed too, though the core uses no stdio.
extern "C" int open(const char *path, int flags, ...) {
  typedef int (*fn)(const char *, int, ...);
  static fn real = (fn)dlsym(RTLD_NEXT, "open");
  TCTEST_OPEN_MODE(flags, mode);
  record(path);
  return real(path, flags, mode);
}
extern "C" int open64(const char *path, int flags, ...) {
  typedef int (*fn)(const char *, int, ...);
  static fn real = (fn)dlsym(RTLD_NEXT, "open64");
  TCTEST_OPEN_MODE(flags, mode);
  record(path);
  return real(path, flags, mode);
}
extern "C" int openat(int dirfd, const char *path, int flags, ...) {
  typedef int (*fn)(int, const char *, int, ...);
  static fn real = (fn)dlsym(RTLD_NEXT, "openat");
  TCTEST_OPEN_MODE(flags, mode);
  record(path);
  return real(dirfd, path, flags, mode);
}
extern "C" FILE *fopen(const char *path, const char *mode) {
  typedef FILE *(*fn)(const char *, const char *);
  static fn real = (fn)dlsym(RTLD_NEXT, "fopen");
  record(path);
  return real(path, mode);
}

// The setgid child: runs before doctest's main when asked to.
namespace {
struct SecureChild {
  SecureChild() {
    if (getenv("TICKCLOCK_SECURITY_CHILD") == nullptr) return;
    if (getauxval(AT_SECURE) == 0) _exit(77);  // not actually secure here
    const tickclock_info *i = tickclock_info_get();
    // TICKCLOCK_SOURCE=bogus-or-tsc must be invisible: no env error, not forced
    _exit(i->forced == 0 && i->env_error[0] == '\0' ? 0 : 1);
  }
} g_secure_child;
}  // namespace

TEST_CASE("initialisation opens only /sys and /proc files") {
  g_recording = true;
  REQUIRE(tickclock_init(NULL) == TICKCLOCK_OK);
  tickclock_config cfg = {TICKCLOCK_SOURCE_TSC, 0, 0};
  tickclock_init(&cfg);
  (void)tickclock_revalidate();
  g_recording = false;
  REQUIRE(g_paths != nullptr);  // the interposition saw the clocksource reads
  bool saw_clocksource = false;
  for (const std::string &p : *g_paths) {
    INFO(p);
    CHECK((p.rfind("/sys/", 0) == 0 || p.rfind("/proc/", 0) == 0));
    if (p.find("current_clocksource") != std::string::npos) saw_clocksource = true;
  }
  CHECK(saw_clocksource);
}

TEST_CASE("secure_getenv: honoured normally, ignored under AT_SECURE") {
  REQUIRE(getauxval(AT_SECURE) == 0);
  setenv("TICKCLOCK_SECURITY_PROBE", "x", 1);
  const char *v = tkc_secure_getenv("TICKCLOCK_SECURITY_PROBE");
  CHECK(v != nullptr);
  unsetenv("TICKCLOCK_SECURITY_PROBE");

  const char *tmp = getenv("TEST_TMPDIR");
  std::string copy = std::string(tmp ? tmp : "/tmp") + "/security_test_setgid";
  // this binary's own path: /proc/self/exe, which QEMU user mode answers
  // with the program it runs (/proc/PID/exe would be QEMU itself)
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = '\0';
  std::string cmd = std::string("cp '") + self + "' '" + copy + "'";
  REQUIRE(system(cmd.c_str()) == 0);
  if (chown(copy.c_str(), (uid_t)-1, 65534) != 0 || chmod(copy.c_str(), 02755) != 0) {
    tctest::skip("secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)");
    return;
  }
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("TICKCLOCK_SECURITY_CHILD", "1", 1);
    setenv("TICKCLOCK_SOURCE", "tsc", 1);
    execl(copy.c_str(), copy.c_str(), (char *)NULL);
    _exit(99);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  REQUIRE(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) {
    tctest::skip(
        "secure_getenv under AT_SECURE: the setgid bit is not honoured here (nosuid "
        "mount or user namespace)");
    return;
  }
  CHECK(WEXITSTATUS(st) == 0);
}
