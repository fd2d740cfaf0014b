// The probe's shared pieces (util.h): argument parsing, the source names
// and forcing, output files, escaping, the interrupt handling and the clock
// readers; formatting, the JSON envelope, progress and atomic outputs are in
// output.cc.
#include "src/probe/util.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "src/probe/json.h"

#include "tickclock.h"

namespace tickclock_probe {

std::string split_opt(const std::string &arg, std::string *value, bool *has_value) {
  size_t eq = arg.find('=');
  if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
    *value = arg.substr(eq + 1);
    *has_value = true;
    return arg.substr(0, eq);
  }
  value->clear();
  *has_value = false;
  return arg;
}

std::string Args::value(const std::string &opt, const std::string &inline_value, bool has_inline) {
  if (has_inline) return inline_value;
  if (done()) throw UsageError{opt + " needs a value"};
  return next();
}

double parse_seconds(const std::string &opt, const std::string &v, double max_s) {
  char *end = nullptr;
  errno = 0;
  double s = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || end == nullptr || *end != '\0' || !(s > 0) || s > max_s)
    throw UsageError{fmt("%s: expected a number of seconds in (0, %g], got '%s'", opt.c_str(),
                         max_s, v.c_str())};
  return s;
}

std::string source_names() {
  std::string v;
  for (int s = 0; s < TICKCLOCK_SOURCE_COUNT_; s++)
    v += (s ? ", " : "") + std::string(tickclock_source_name(s));
  return v;
}

namespace {
// timing's reads and the source each belongs to (an ISA counter's reads
// are named after the source: cntvct, cntvct_ordered)
const struct {
  const char *read;
  int source;
} kReads[] = {
    {"tickclock_now", TICKCLOCK_SOURCE_AUTO},
    {"tickclock_now_ordered", TICKCLOCK_SOURCE_AUTO},
    {"rdtsc", TICKCLOCK_SOURCE_TSC},
    {"lfence_rdtsc", TICKCLOCK_SOURCE_TSC},
    {"rdtscp", TICKCLOCK_SOURCE_TSC},
    {"clock_gettime", TICKCLOCK_SOURCE_SYSTEM},
    {"clock_gettime_raw", TICKCLOCK_SOURCE_SYSTEM},
    {"clock_gettime_coarse", TICKCLOCK_SOURCE_SYSTEM},
};
}  // namespace

int source_of_name(const std::string &name) {
  int s = tickclock_source_from_name(name.c_str());
  if (s >= 0) return s;
  for (const auto &r : kReads)
    if (name == r.read) return r.source;
  const std::string suffix = "_ordered";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    s = tickclock_source_from_name(name.substr(0, name.size() - suffix.size()).c_str());
    if (s > TICKCLOCK_SOURCE_SYSTEM && s != TICKCLOCK_SOURCE_TSC && s != TICKCLOCK_SOURCE_QPC)
      return s;
  }
  return -1;
}

std::string source_vocabulary() {
  std::string reads;
  for (const auto &r : kReads) reads += (reads.empty() ? "" : ", ") + std::string(r.read);
  return "a source (" + source_names() + ") or a read (" + reads + ", <counter>_ordered)";
}

void force_source(const std::string &name) {
  int s = source_of_name(name);
  if (s < 0)
    throw UsageError{"--source: unknown source '" + name + "' (expected " + source_vocabulary() +
                     ")"};
  tickclock_config cfg = {s, 0, 0};
  if (tickclock_init(&cfg) == TICKCLOCK_OK) return;
  // the requested source's own reason, not the one in use: the candidate
  // whose source matches, else the list of what this machine has
  const tickclock_info *i = tickclock_info_get();
  std::string have;
  for (unsigned k = 0; k < i->n_candidates; k++) {
    if (i->candidates[k].source == s)
      throw UsageError{"--source " + name + ": not usable here: " + i->candidates[k].reason};
    have += (have.empty() ? "" : ", ") + std::string(i->candidates[k].name);
  }
  throw UsageError{"--source " + name +
                   ": not usable here: not a source of this machine "
                   "(its candidates: " +
                   have + ")"};
}

const tickclock_info *settled_info() {
  const tickclock_info *i = tickclock_info_get();
  uint64_t give_up = mono_raw_ns() + UINT64_C(1000000000);
  while (i->freq_pending_check && mono_raw_ns() < give_up && !interrupted()) {
    struct timespec req = {0, 2000000};
    nanosleep(&req, nullptr);
    (void)tickclock_revalidate();  // runs the cross-check once it is due
    i = tickclock_info_get();
  }
  return i;
}

FILE *open_output(const std::string &opt, const std::string &path) {
  if (path.empty()) throw UsageError{opt + ": expected a file name, got ''"};
  // O_NONBLOCK: opening a FIFO without a reader fails (ENXIO) instead of
  // waiting for one
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UsageError{opt + " " + path + ": cannot open for writing: " + std::strerror(errno)};
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
    close(fd);
    throw UsageError{opt + " " + path + ": not a regular file"};
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    throw UsageError{opt + " " + path + ": cannot open for writing: " + std::strerror(errno)};
  }
  return f;
}

std::string esc(const std::string &s) {
  std::vector<char> buf(s.size() * 4 + 1);
  tkt_escape(buf.data(), buf.size(), s.c_str());
  return buf.data();
}

namespace {
// Set by the handler (in whichever thread the signal lands), read by the
// measuring threads (warp, validate's monotonic check): a lock-free atomic
// is both async-signal-safe and race-free between threads, which a
// volatile sig_atomic_t is not (ThreadSanitizer reports the race).
std::atomic<int> g_interrupted{0};
static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs a lock-free int");
void on_signal(int sig) { g_interrupted.store(sig, std::memory_order_relaxed); }
}  // namespace

void install_sigint() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);  // no SA_RESTART: sleeps end at once
  sigaction(SIGTERM, &sa, nullptr);
}
bool interrupted() { return g_interrupted.load(std::memory_order_relaxed) != 0; }
int interrupt_signal() { return g_interrupted.load(std::memory_order_relaxed); }
int interrupted_exit() { return 128 + interrupt_signal(); }
const char *interrupt_name() {
  int sig = interrupt_signal();
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

std::string Unfinished::json() const {
  std::string o = "[";
  for (size_t i = 0; i < items_.size(); i++)
    o += (i ? "," : "") + json_unfinished(items_[i].first, items_[i].second);
  return o + "]";
}

std::string Unfinished::line() const {
  std::string list;
  for (const auto &u : items_) list += (list.empty() ? "" : ", ") + u.first + " (" + u.second + ")";
  return fmt("INCOMPLETE: interrupted by %s; not finished: %s", interrupt_name(), list.c_str());
}

int Unfinished::finish(const char *command, const std::string &text) const {
  std::fprintf(stderr, "tickclock-probe %s: %s\n", command, (text.empty() ? line() : text).c_str());
  return interrupted_exit();
}

uint64_t mono_raw_ns() { return tkt_os_now_raw(); }
uint64_t mono_ns() { return tkt_os_now(); }
uint64_t read_now() { return tickclock_now(); }
uint64_t read_now_ordered() { return tickclock_now_ordered(); }

tickclock_duration bound_of_interval_now(uint64_t ns) {
  const tickclock_info *i = tickclock_info_get();
  uint64_t end = tickclock_now();
  uint64_t ticks = i->scaled ? tickclock_conv_ns_to_ticks(&i->conv, ns) : ns;
  tickclock_duration d;
  (void)tickclock_duration_get(end > ticks ? end - ticks : 0, end, &d);
  return d;
}

namespace {

uint64_t read_cg(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t read_mono() { return read_cg(CLOCK_MONOTONIC); }
#if defined(CLOCK_MONOTONIC_RAW)
uint64_t read_mono_raw() { return read_cg(CLOCK_MONOTONIC_RAW); }
#endif
#if defined(CLOCK_MONOTONIC_COARSE)
uint64_t read_mono_coarse() { return read_cg(CLOCK_MONOTONIC_COARSE); }
#endif
#if defined(__x86_64__) || defined(__i386__)
uint64_t read_rdtscp() {
  uint32_t aux;
  return tkt_x86_rdtscp(&aux);
}
#endif

}  // namespace

std::vector<Reader> all_readers() {
  std::vector<Reader> v;
  const tickclock_info *info = tickclock_info_get();
  tickclock_evidence ev;
  tkt_gather(&ev);
  char why[TICKCLOCK_REASON_LEN] = "";
  bool counter_ok = ev.arch_counter && tkt_counter_executable(&ev, why, sizeof why);

  tickclock_conv counter_conv;
  bool have_conv = false;
  std::string conv_why;
#if defined(TKT_COUNTER)
  if (counter_ok) {
    if (info->source == ev.arch_counter) {
      counter_conv = info->conv;
      have_conv = true;
    } else {
      uint64_t num, den;
      if (tkt_calibrate(tkt_counter_read_ordered, 20, &num, &den) &&
          tickclock_conv_init(&counter_conv, num, den) == TICKCLOCK_OK)
        have_conv = true;
      else
        conv_why = "calibration failed";
    }
  }
#endif
  auto add = [&](const char *name, const char *what, uint64_t (*rd)(), bool ns, bool usable,
                 const std::string &why_not) {
    Reader r;
    r.name = name;
    r.what = what;
    r.read = rd;
    r.ticks_are_ns = ns;
    r.usable = usable;
    r.why_not = why_not;
    if (!ns && have_conv) r.conv = counter_conv;
    if (!ns && !have_conv && usable) {
      r.usable = false;
      r.why_not = conv_why.empty() ? why : conv_why;
    }
    v.push_back(r);
  };
  bool lib_ns = info->source == TICKCLOCK_SOURCE_SYSTEM;
  {
    Reader r;
    r.name = "tickclock_now";
    r.what = std::string("tickclock_now() [") + info->source_name + "]";
    r.read = read_now;
    r.ticks_are_ns = lib_ns;
    r.conv = info->conv;
    r.usable = true;
    v.push_back(r);
    r.name = "tickclock_now_ordered";
    r.what = std::string("tickclock_now_ordered() [") + info->source_name + "]";
    r.read = read_now_ordered;
    v.push_back(r);
  }
#if defined(__x86_64__) || defined(__i386__)
  add("rdtsc", "RDTSC", tkt_counter_read, false, counter_ok, why);
  add("lfence_rdtsc", "LFENCE; RDTSC", tkt_counter_read_ordered, false, counter_ok, why);
  bool rdtscp = counter_ok && ev.x86.rdtscp;
  add("rdtscp", "RDTSCP", read_rdtscp, false, rdtscp,
      counter_ok ? "CPUID.80000001H:EDX[27] (RDTSCP) is clear: it would raise #UD" : why);
#elif defined(TKT_COUNTER)
  add(tickclock_source_name(TKT_COUNTER), "the architectural counter", tkt_counter_read, false,
      counter_ok, why);
  add((std::string(tickclock_source_name(TKT_COUNTER)) + "_ordered").c_str(),
      "the architectural counter, ordered", tkt_counter_read_ordered, false, counter_ok, why);
#endif
  add("clock_gettime", "clock_gettime(CLOCK_MONOTONIC)", read_mono, true, true, "");
#if defined(CLOCK_MONOTONIC_RAW)
  add("clock_gettime_raw", "clock_gettime(CLOCK_MONOTONIC_RAW)", read_mono_raw, true, true, "");
#endif
#if defined(CLOCK_MONOTONIC_COARSE)
  add("clock_gettime_coarse", "clock_gettime(CLOCK_MONOTONIC_COARSE)", read_mono_coarse, true, true,
      "");
#endif
  return v;
}

uint64_t Histogram::percentile(double p) const {
  if (count == 0) return 0;
  uint64_t need = (uint64_t)std::ceil(p / 100.0 * (double)count);
  if (need == 0) need = 1;
  uint64_t seen = 0;
  for (uint64_t ns = 0; ns < kExact; ns++) {
    seen += exact[ns];
    if (seen >= need) return ns;
  }
  // beyond the exact range: walk the log2 buckets that start at >= kExact
  for (int b = log2_bucket_inline(kExact); b < 65; b++) {
    seen += log2[b];
    if (seen >= need) return b >= 64 ? UINT64_MAX : (1ull << b) - 1;
  }
  return max_ns;
}

}  // namespace tickclock_probe
