// The probe's shared pieces (util.h), the output half: printf-style
// formatting, bars, JSON numbers, the JSON envelope every --json output
// starts with, the progress line on a terminal, and the atomic output files
// (--fixture-out) renamed over their path only when a run finishes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/probe/json.h"
#include "src/probe/util.h"
#include "tickclock.h"

namespace tickclock_probe {

std::string fmt(const char *f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string bar(double fraction, int width) {
  if (!(fraction > 0)) return "";
  int n = (int)std::lround(fraction * width);
  if (n < 1) n = 1;  // visible when non-zero
  if (n > width) n = width;
  return std::string((size_t)n, '#');
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt("%.6g", v);
}

std::string json_hz(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt("%.17g", v);
}

// ---- JSON envelope -----------------------------------------------------------

std::string tool_version() {
  return fmt("%d.%d.%d", TICKCLOCK_VERSION_MAJOR, TICKCLOCK_VERSION_MINOR, TICKCLOCK_VERSION_PATCH);
}

// "model name" (x86), else "cpu" (POWER), else "Processor"/"uarch" lines of
// /proc/cpuinfo; on x86 the CPUID brand string when /proc is not there.
std::string cpu_model() {
  if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    std::string found;
    while (found.empty() && std::fgets(line, sizeof line, f)) {
      std::string l(line);
      size_t colon = l.find(':');
      if (colon == std::string::npos) continue;
      std::string key = l.substr(0, colon);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
      if (key != "model name" && key != "cpu" && key != "Processor" && key != "uarch") continue;
      std::string v = l.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      found = v;
    }
    std::fclose(f);
    if (!found.empty()) return found;
  }
#if defined(__x86_64__) || defined(__i386__)
  tickclock_x86_facts x;
  tickclock_x86_decode(tickclock_cpuid_native, nullptr, &x);
  if (x.brand[0]) return x.brand;
#endif
  return std::string();
}

namespace {

std::string first_line(const char *path) {
  char buf[256];
  return tkt_read_line(path, buf, sizeof buf) ? std::string(buf) : std::string();
}

std::string hypervisor_signature() {
#if defined(__x86_64__) || defined(__i386__)
  tickclock_x86_facts x;
  tickclock_x86_decode(tickclock_cpuid_native, nullptr, &x);
  if (x.hypervisor && x.hv_valid && x.hv_signature[0]) return x.hv_signature;
#endif
  return std::string();
}

std::string json_or_null(const std::string &s) { return s.empty() ? "null" : json_str(s); }

}  // namespace

std::string json_envelope(const char *command) {
  struct utsname u;
  std::string kernel = uname(&u) == 0 ? std::string(u.release) : std::string();
  return "{\"schema_version\":" + std::to_string(kSchemaVersion) +
         ",\"tool_version\":" + json_str(tool_version()) + ",\"command\":" + json_str(command) +
         ",\"host\":{\"kernel_release\":" + json_or_null(kernel) +
         ",\"cpu_model\":" + json_or_null(cpu_model()) +
         ",\"hypervisor\":" + json_or_null(hypervisor_signature()) +
         ",\"clocksource\":" + json_or_null(first_line(TKT_SYSFS_CURRENT_CLOCKSOURCE)) + "}";
}

std::string json_unfinished(const std::string &check, const std::string &reason) {
  return "{\"check\":" + json_str(check) + ",\"reason\":" + json_str(reason) + "}";
}

// ---- progress ------------------------------------------------------------------

namespace {
bool g_progress = false;
size_t g_progress_len = 0;
std::string g_progress_prefix;
}  // namespace

void progress_prefix(const std::string &p) { g_progress_prefix = p; }

void progress_enable(bool json) { g_progress = !json && isatty(STDERR_FILENO); }

void progress(const char *f, ...) {
  if (!g_progress) return;
  char buf[160];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  std::string text = g_progress_prefix + buf;
  size_t n = text.size();
  // pad over the previous line's tail; one write, so a line is never torn
  std::string line = "\r" + text;
  if (g_progress_len > n) line += std::string(g_progress_len - n, ' ');
  g_progress_len = n;
  ssize_t w = write(STDERR_FILENO, line.data(), line.size());
  (void)w;
}

void progress_clear() {
  if (!g_progress || g_progress_len == 0) return;
  std::string line = "\r" + std::string(g_progress_len, ' ') + "\r";
  g_progress_len = 0;
  ssize_t w = write(STDERR_FILENO, line.data(), line.size());
  (void)w;
}

// ---- AtomicOutput ----------------------------------------------------------------

void AtomicOutput::open(const std::string &opt, const std::string &given) {
  if (given.empty()) throw UsageError{opt + ": expected a file name, got ''"};
  struct stat st;
  const bool exists = stat(given.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    if (!S_ISCHR(st.st_mode)) throw UsageError{opt + " " + given + ": not a regular file"};
    f_ = open_output(opt, given);  // /dev/null, /dev/full: written directly
    path_ = given;
    return;
  }
  // an existing file is replaced where it is (a symbolic link stays one,
  // pointing at the new file), with its permissions
  std::string path = given;
  if (exists) {
    if (char *rp = realpath(given.c_str(), nullptr)) {
      path = rp;
      std::free(rp);
    }
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw UsageError{opt + " " + given + ": not a regular file"};
  std::string tmpl = (dir == "/" ? "" : dir) + "/." + base + ".tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0)
    throw UsageError{opt + " " + given + ": cannot open for writing: " + std::strerror(errno)};
  if (exists) {
    fchmod(fd, st.st_mode & 07777);
  } else {
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  f_ = fdopen(fd, "w");
  if (!f_) {
    int e = errno;
    close(fd);
    unlink(name.data());
    throw UsageError{opt + " " + given + ": cannot open for writing: " + std::strerror(e)};
  }
  path_ = path;
  tmp_ = name.data();
}

bool AtomicOutput::commit() {
  if (!f_) return false;
  bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
  int e = errno;
  if (ok && !tmp_.empty() && fsync(fileno(f_)) != 0) {
    ok = false;
    e = errno;
  }
  if (std::fclose(f_) != 0 && ok) {
    ok = false;
    e = errno;
  }
  f_ = nullptr;
  if (ok && !tmp_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok && !tmp_.empty()) unlink(tmp_.c_str());
  tmp_.clear();
  errno = e ? e : EIO;
  return ok;
}

void AtomicOutput::abandon() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  if (!tmp_.empty()) unlink(tmp_.c_str());
  tmp_.clear();
}

}  // namespace tickclock_probe
