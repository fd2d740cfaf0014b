// The native platform's file readers (Linux), on files written here: the
// first line of a sysfs file, the line of /proc/cpuinfo that starts with a
// prefix, a device-tree value's bytes, and the line scanner under
// /proc/self/maps's search. Lines across the scanner's 512-byte reads,
// lines longer than the caller's buffer, a last line without its newline,
// a prefix that appears only inside a long line, missing files.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "internal.h"

// read(2), interposed: after g_fail_after bytes from a file opened while
// g_fail_path_fd matches, it fails with EIO (a file that breaks mid-read).
static int g_fail_fd = -1;
static long g_fail_after = -1;
static long g_fail_seen = 0;
extern "C" ssize_t read(int fd, void *buf, size_t n) {
  if (fd == g_fail_fd && g_fail_after >= 0) {
    if (g_fail_seen >= g_fail_after) {
      errno = EIO;
      return -1;
    }
    if ((long)n > g_fail_after - g_fail_seen) n = (size_t)(g_fail_after - g_fail_seen);
    ssize_t r = (ssize_t)syscall(SYS_read, fd, buf, n);
    if (r > 0) g_fail_seen += r;
    return r;
  }
  return (ssize_t)syscall(SYS_read, fd, buf, n);
}

namespace {
struct TempFile {
  std::string path;
  explicit TempFile(const std::string &text) {
    char tmpl[] = "/tmp/tkc-files-XXXXXX";
    int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    path = tmpl;
    REQUIRE(write(fd, text.data(), text.size()) == (ssize_t)text.size());
    close(fd);
  }
  ~TempFile() { unlink(path.c_str()); }
};

struct Seen {
  std::vector<std::string> lines;
  std::vector<int> cut;
  size_t stop_at = 0;  // 1-based line whose call returns 7; 0: never
};
int record(const char *line, size_t len, int cut, void *ctx) {
  Seen *s = (Seen *)ctx;
  CHECK(strlen(line) == len);
  s->lines.push_back(line);
  s->cut.push_back(cut);
  return s->lines.size() == s->stop_at ? 7 : 0;
}
}  // namespace

TEST_CASE("read_line: the first line, without its newline and trailing spaces") {
  char buf[64];
  TempFile one("kvm-clock \n");
  CHECK(tkc_native_read_line(one.path.c_str(), buf, sizeof buf) == 1);
  CHECK(std::string(buf) == "kvm-clock");
  TempFile two("tsc hpet acpi_pm \nsecond\n");
  CHECK(tkc_native_read_line(two.path.c_str(), buf, sizeof buf) == 1);
  CHECK(std::string(buf) == "tsc hpet acpi_pm");
  TempFile bare("tsc");
  CHECK(tkc_native_read_line(bare.path.c_str(), buf, sizeof buf) == 1);
  CHECK(std::string(buf) == "tsc");
  char small[4];
  TempFile longer("kvm-clock\n");
  CHECK(tkc_native_read_line(longer.path.c_str(), small, sizeof small) == 1);
  CHECK(std::string(small) == "kvm");
  TempFile nul(std::string("\0tsc\n", 5));  // a NUL ends the line
  CHECK(tkc_native_read_line(nul.path.c_str(), buf, sizeof buf) == 0);
  TempFile nul2(std::string("tsc \0 \n", 7));
  CHECK(tkc_native_read_line(nul2.path.c_str(), buf, sizeof buf) == 1);
  CHECK(std::string(buf) == "tsc");
  TempFile empty("\n");
  CHECK(tkc_native_read_line(empty.path.c_str(), buf, sizeof buf) == 0);
  CHECK(buf[0] == '\0');
  CHECK(tkc_native_read_line("/nonexistent/tickclock", buf, sizeof buf) == 0);
  CHECK(buf[0] == '\0');
  CHECK(tkc_native_read_line(one.path.c_str(), buf, 0) == 0);
}

TEST_CASE("find_line: the first line that starts with the prefix, wherever the reads split it") {
  std::string text;
  for (int i = 0; i < 40; i++) text += "processor\t: " + std::to_string(i) + " padding padding\n";
  REQUIRE(text.size() > 1024);
  // a long line that holds the prefix right past the buffer's reach (where
  // fgets's next piece would start): not a match
  text += std::string(255, 'x') + "timebase\t: 1\n";
  text += "timebase\t: 512000000\n";
  text += "timebase\t: 2\n";
  char line[256];
  TempFile f(text);
  REQUIRE(tkc_native_find_line(f.path.c_str(), "timebase", line, sizeof line) == 1);
  CHECK(std::string(line) == "timebase\t: 512000000");
  // every split of the same line across the 512-byte reads
  for (size_t pad = 0; pad < 40; pad++) {
    std::string t = std::string(490 + pad, 'p') + "\ntimebase\t: 7\n";
    TempFile g(t);
    INFO(pad);
    CHECK(tkc_native_find_line(g.path.c_str(), "timebase", line, sizeof line) == 1);
    CHECK(std::string(line) == "timebase\t: 7");
  }
  TempFile last("model\t: x\ntimebase\t: 9");  // no final newline
  CHECK(tkc_native_find_line(last.path.c_str(), "timebase", line, sizeof line) == 1);
  CHECK(std::string(line) == "timebase\t: 9");
  TempFile none("model\t: x\n");
  CHECK(tkc_native_find_line(none.path.c_str(), "timebase", line, sizeof line) == 0);
  CHECK(line[0] == '\0');
  CHECK(tkc_native_find_line("/nonexistent/tickclock", "timebase", line, sizeof line) == 0);
  char tiny[6];  // a matching line longer than the buffer: found, cut
  CHECK(tkc_native_find_line(f.path.c_str(), "time", tiny, sizeof tiny) == 1);
  CHECK(std::string(tiny) == "timeb");
}

TEST_CASE("scan_lines: every line once, cut ones marked, the callback's verdict returned") {
  std::string text = "short\n" + std::string(700, 'L') + "\n\nend";
  TempFile f(text);
  char line[16];
  Seen all;
  CHECK(tkc_native_scan_lines(f.path.c_str(), line, sizeof line, record, &all) == 0);
  REQUIRE(all.lines.size() == 4);
  CHECK(all.lines[0] == "short");
  CHECK(all.cut[0] == 0);
  CHECK(all.lines[1] == std::string(15, 'L'));
  CHECK(all.cut[1] == 1);
  CHECK(all.lines[2].empty());
  CHECK(all.lines[3] == "end");
  CHECK(all.cut[3] == 0);
  Seen stop;
  stop.stop_at = 2;
  CHECK(tkc_native_scan_lines(f.path.c_str(), line, sizeof line, record, &stop) == 7);
  CHECK(stop.lines.size() == 2);
  TempFile nul(std::string("ab\0cd\nef\n", 9));  // a NUL ends the line
  Seen z;
  CHECK(tkc_native_scan_lines(nul.path.c_str(), line, sizeof line, record, &z) == 0);
  REQUIRE(z.lines.size() == 2);
  CHECK(z.lines[0] == "ab");
  CHECK(z.lines[1] == "ef");
  Seen missing;
  CHECK(tkc_native_scan_lines("/nonexistent/tickclock", line, sizeof line, record, &missing) == -1);
  CHECK(missing.lines.empty());
}

TEST_CASE("read_bytes: a device-tree value's bytes, zeros included") {
  std::string be("\x1e\x84\x80\x00", 4);  // 512 000 000, big-endian
  TempFile f(be);
  unsigned char b[8];
  CHECK(tkc_native_read_bytes(f.path.c_str(), b, sizeof b) == 4);
  CHECK(memcmp(b, be.data(), 4) == 0);
  CHECK(tkc_native_read_bytes(f.path.c_str(), b, 2) == 2);
  CHECK(tkc_native_read_bytes("/nonexistent/tickclock", b, sizeof b) == 0);
}

TEST_CASE("a read opens no descriptor that outlives it") {
  TempFile f("tsc\n");
  char buf[16];
  int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(probe >= 0);
  close(probe);  // the lowest free number
  REQUIRE(tkc_native_read_line(f.path.c_str(), buf, sizeof buf) == 1);
  char line[64];
  REQUIRE(tkc_native_find_line("/proc/self/maps", "", line, sizeof line) == 1);
  int after = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(after == probe);
  close(after);
}

namespace {
// The descriptor the next open will get: the lowest free number.
int next_fd() {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  close(fd);
  return fd;
}
}  // namespace

TEST_CASE("a read that fails part-way gives nothing, not the part before it") {
  char buf[64], line[64];
  TempFile cs("kvm-clock\n");
  TempFile cpu("processor\t: 0\ntimebase\t: 512000000\n");
  TempFile be(std::string("\x1e\x84\x80\x00", 4));
  for (long after : {0L, 2L, 9L}) {
    INFO(after);
    g_fail_fd = next_fd();
    g_fail_after = after;
    g_fail_seen = 0;
    CHECK(tkc_native_read_line(cs.path.c_str(), buf, sizeof buf) == 0);
    CHECK(buf[0] == '\0');
    g_fail_seen = 0;
    g_fail_after = 14 + after;  // inside the timebase line (bytes 14-34)
    CHECK(tkc_native_find_line(cpu.path.c_str(), "timebase", line, sizeof line) == 0);
    Seen s;
    g_fail_seen = 0;
    CHECK(tkc_native_scan_lines(cpu.path.c_str(), line, sizeof line, record, &s) == -1);
    CHECK(s.lines.size() == 1);  // the whole first line only
    if (after < 4) {             // inside the 4 bytes
      g_fail_seen = 0;
      g_fail_after = after;
      unsigned char b[8];
      CHECK(tkc_native_read_bytes(be.path.c_str(), b, sizeof b) == 0);
    }
    g_fail_after = -1;
  }
  g_fail_fd = -1;
  CHECK(tkc_native_read_line(cs.path.c_str(), buf, sizeof buf) == 1);  // the control
}

TEST_CASE("read_line returns at the line's end, without waiting for the file's") {
  // a FIFO whose writer sends one line and closes only after the reader
  // has returned: a reader that read to the end would never return (the
  // child is killed after 20 s: a hang, reported as such)
  char dir[] = "/tmp/tkc-fifo-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string fifo = std::string(dir) + "/f";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  int done[2];
  REQUIRE(pipe(done) == 0);
  pid_t writer = fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    int fd = open(fifo.c_str(), O_WRONLY);
    if (fd < 0 || write(fd, "tsc\n", 4) != 4) _exit(2);
    char c;
    (void)!read(done[0], &c, 1);  // until the reader returned (or went away)
    close(fd);
    _exit(0);
  }
  pid_t reader = fork();
  REQUIRE(reader >= 0);
  if (reader == 0) {
    char buf[64];
    int ok = tkc_native_read_line(fifo.c_str(), buf, sizeof buf);
    (void)!write(done[1], "x", 1);
    _exit(ok == 1 && strcmp(buf, "tsc") == 0 ? 0 : 3);
  }
  close(done[0]);
  int st = -1;
  bool exited = false;
  for (int i = 0; i < 2000 && !exited; i++) {  // 20 s
    if (waitpid(reader, &st, WNOHANG) == reader)
      exited = true;
    else
      usleep(10000);
  }
  if (!exited) {
    kill(reader, SIGKILL);
    waitpid(reader, &st, 0);
  }
  close(done[1]);  // the writer's read returns
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  unlink(fifo.c_str());
  rmdir(dir);
  CHECK_MESSAGE(exited, "read_line waited for the end of a file whose line had come");
  CHECK((exited && WIFEXITED(st) && WEXITSTATUS(st) == 0));
}
