// Shared pieces of the probe commands: argument parsing with one-line
// errors (exit 2), Ctrl-C handling, the clock reads the probe compares,
// duration histograms, and terminal formatting.
#ifndef TICKCLOCK_PROBE_UTIL_H
#define TICKCLOCK_PROBE_UTIL_H

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tickclock_tools.h"

namespace tickclock_probe {

// ---- arguments -------------------------------------------------------------
// Thrown by the parsers; main() prints "tickclock-probe CMD: MESSAGE" and
// exits 2.
struct UsageError {
  std::string message;
};
// Thrown by parse_options for --help / -h: main() prints that command's
// usage on stdout and exits 0.
struct HelpRequest {};

struct Args {
  explicit Args(int argc, char **argv) : argc_(argc), argv_(argv), i_(1) {}
  bool done() const { return i_ >= argc_; }
  std::string next() { return argv_[i_++]; }
  // the value of an option that takes one ("--seconds 3" or "--seconds=3")
  std::string value(const std::string &opt, const std::string &inline_value, bool has_inline);
  int argc_;
  char **argv_;
  int i_;
};

// Splits "--name=value"; returns the name, sets value/has_value.
std::string split_opt(const std::string &arg, std::string *value, bool *has_value);

// Calls on(opt, value) for every option of a subcommand; value() fetches
// the option's argument ("--seconds 3" or "--seconds=3") or throws, and
// has_value says whether one was given inline. on() returns false for an
// option it does not know; the error then lists `expected`.
struct Option {
  std::string name;
  Args *args;
  std::string inline_value;
  bool has_value;
  std::string value() const { return args->value(name, inline_value, has_value); }
  bool is_flag(const char *flag) const { return name == flag && !has_value; }
};
template <typename F>
void parse_options(int argc, char **argv, const char *expected, F on) {
  Args a(argc, argv);
  while (!a.done()) {
    Option o;
    o.args = &a;
    o.name = split_opt(a.next(), &o.inline_value, &o.has_value);
    if ((o.name == "--help" || o.name == "-h") && !o.has_value) throw HelpRequest{};
    if (!on(o)) throw UsageError{"unknown option '" + o.name + "' (expected " + expected + ")"};
  }
}

// --source NAME for validate/warp (a source, or a read standing for its
// source): re-initialises tickclock with that source forced, or throws a
// UsageError saying why it cannot be used here (an unknown name: the list
// of valid ones).
void force_source(const std::string &name);
// The current state, once a frequency published at first use has had its
// cross-check with calibration (due 1 ms after publication, later when the
// brackets are wide): what validate judges is the settled choice.
const tickclock_info *settled_info();
// The source names, from the core's name table: "auto, system, tsc, ...".
std::string source_names();
// --source NAME, one vocabulary for every subcommand: a source of the
// library (auto, system, tsc, cntvct, ...; any case) or one of timing's
// reads (tickclock_now, rdtsc, lfence_rdtsc, clock_gettime_raw,
// cntvct_ordered, ...), each read belonging to one source: the reads of
// tickclock itself to auto, the TSC's to tsc, clock_gettime's to system,
// an ISA counter's to that counter. The source NAME names, or -1.
int source_of_name(const std::string &name);
// What --source accepts, for messages: "a source (auto, system, ...) or a
// read (tickclock_now, ...)".
std::string source_vocabulary();

// Opens an output file (--svg; --fixture-out goes through AtomicOutput) before any measurement, so
// a bad path fails at once. A regular file or a character device
// (/dev/null, /dev/full); a FIFO, directory or socket is refused without
// blocking. Throws a UsageError naming the option and the path.
FILE *open_output(const std::string &opt, const std::string &path);

// User-supplied text (a file name, an environment value) as one line of
// printable ASCII: control and non-ASCII bytes escaped (\n, \xHH).
std::string esc(const std::string &s);

double parse_seconds(const std::string &opt, const std::string &v, double max_s);

// The options timing, validate and warp share: --seconds S (at most 600 s),
// --source NAME and --json. true when o was one of them (its value stored).
inline bool common_option(const Option &o, double *seconds, std::string *source, bool *json) {
  if (o.name == "--seconds")
    *seconds = parse_seconds(o.name, o.value(), 600);
  else if (o.name == "--source")
    *source = o.value();
  else if (o.is_flag("--json"))
    *json = true;
  else
    return false;
  return true;
}

// ---- Ctrl-C ------------------------------------------------------------------
// SIGINT and SIGTERM set a flag; loops poll interrupted() and stop, and the
// command prints what it has, says INCOMPLETE with what it did not finish
// and exits 128 + the signal (130 for Ctrl-C). main() installs it for the
// commands that measure, before anything else runs.
void install_sigint();
bool interrupted();
int interrupt_signal();        // the signal that interrupted, 0 if none
int interrupted_exit();        // 128 + interrupt_signal()
const char *interrupt_name();  // "SIGINT", "SIGTERM"

// What a measuring command (timing, validate, warp) had not finished when
// a signal stopped it -- a check, a source or a CPU pair, each "cut short"
// or "not started" -- and the one ending they share: the JSON list, the
// INCOMPLETE line and the exit status.
class Unfinished {
 public:
  void cut_short(const std::string &what) { items_.push_back({what, "cut short"}); }
  void not_started(const std::string &what) { items_.push_back({what, "not started"}); }
  void add(const std::string &what, const std::string &reason) { items_.push_back({what, reason}); }
  bool empty() const { return items_.empty(); }
  // [{"check":WHAT,"reason":REASON},...] (json_unfinished each)
  std::string json() const;
  // "INCOMPLETE: interrupted by SIGINT; not finished: a (cut short), b (not started)"
  std::string line() const;
  // Says `tickclock-probe COMMAND: TEXT` on stderr (TEXT: line() when
  // empty) and returns the exit status, 128 + the signal.
  int finish(const char *command, const std::string &text = std::string()) const;

 private:
  std::vector<std::pair<std::string, std::string>> items_;  // (what, reason)
};

// ---- time ------------------------------------------------------------------
uint64_t mono_raw_ns();
uint64_t mono_ns();
// tickclock_now() / tickclock_now_ordered() as plain function pointers
uint64_t read_now();
uint64_t read_now_ordered();
// The library's bound (tickclock_duration_get) for an interval of ns
// nanoseconds ending now, under the states it would span.
tickclock_duration bound_of_interval_now(uint64_t ns);
// nanoseconds per tick of the source in use (1 for the OS clock)
inline double ns_per_tick(const tickclock_info *i) { return 1e9 / i->hz; }

// ---- the reads the probe compares ------------------------------------------
struct Reader {
  std::string name;     // --source NAME
  std::string what;     // one-line description
  uint64_t (*read)();   // raw ticks
  bool ticks_are_ns;    // else converted with conv
  tickclock_conv conv;  // ticks -> ns when !ticks_are_ns
  bool usable;
  std::string why_not;  // when !usable
};

// Every read this machine has (unusable ones carry why_not). Counter
// frequencies come from the library's decision when it chose that counter,
// else from a 20 ms calibration against CLOCK_MONOTONIC_RAW.
std::vector<Reader> all_readers();

// ---- durations -------------------------------------------------------------
struct Histogram {
  static const uint64_t kExact = 65536;  // exact-ns counts below this
  // log2 buckets: [0] = 0 ns, [k] = [2^(k-1), 2^k) ns
  uint64_t log2[65] = {};
  std::vector<uint64_t> exact = std::vector<uint64_t>(kExact, 0);
  uint64_t count = 0;
  uint64_t max_ns = 0;
  uint64_t backward = 0;  // observed steps backwards
  uint64_t worst_backward_ns = 0;
  void add(uint64_t ns) {
    log2[log2_bucket_inline(ns)]++;
    if (ns < kExact) exact[ns]++;
    count++;
    if (ns > max_ns) max_ns = ns;
  }
  // smallest d with at least p% of samples <= d (exact below kExact, else
  // the upper edge of the log2 bucket)
  uint64_t percentile(double p) const;
  static int log2_bucket_inline(uint64_t ns) { return ns ? 64 - __builtin_clzll(ns) : 0; }
  // exclusive upper edge of log2 bucket b, ns ("< edge"); UINT64_MAX for the last
  static uint64_t bucket_edge(int b) { return b == 0 ? 1 : (b >= 64 ? UINT64_MAX : 1ull << b); }
  // the highest non-empty log2 bucket (0 when empty)
  int last_bucket() const {
    int last = 0;
    for (int b = 0; b < 65; b++)
      if (log2[b]) last = b;
    return last;
  }
};

// ---- output ----------------------------------------------------------------
std::string fmt(const char *f, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
std::string bar(double fraction, int width);
std::string json_num(double v);  // finite -> number, else null
// A frequency in full double precision (round-trips: %.17g), else null.
std::string json_hz(double v);

}  // namespace tickclock_probe

namespace tickclock_probe {

// ---- JSON envelope -----------------------------------------------------------
// Every JSON document the probe prints starts with these keys (the schema:
// src/probe/schema/tickclock-probe.schema.json):
//   "schema_version": kSchemaVersion, "tool_version": "MAJOR.MINOR.PATCH",
//   "command": CMD, "host": {kernel_release, cpu_model, hypervisor,
//   clocksource} (each a string or null where unknown).
// Raise kSchemaVersion when a key is removed or changes its type.
constexpr int kSchemaVersion = 2;
std::string tool_version();
// The CPU as the kernel names it (/proc/cpuinfo), else CPUID's brand string.
std::string cpu_model();
// `{"schema_version":2,...,"host":{...}` without the closing brace: the
// command appends ",KEY:VALUE..." and "}".
std::string json_envelope(const char *command);
// {"check":..., "reason":...}: one entry of an "unfinished" or "not_run" list.
std::string json_unfinished(const std::string &check, const std::string &reason);

// ---- exit status ---------------------------------------------------------------
enum ExitStatus {
  kExitOk = 0,            // PASS / success
  kExitFail = 1,          // a check failed
  kExitUsage = 2,         // bad input
  kExitWrite = 3,         // the output could not be written
  kExitInconclusive = 4,  // an essential check could not run (validate, warp)
};

// ---- progress ------------------------------------------------------------------
// One line on stderr, rewritten in place with '\r', only when stderr is a
// terminal and the output is not JSON (never in a pipe or a log).
void progress_enable(bool json);
void progress(const char *f, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void progress_clear();  // erases the line (before the report is printed)
// Text put before every progress line ("validate [6/8] warp: ").
void progress_prefix(const std::string &p);

// ---- an output file replaced only on success ----------------------------------
// --fixture-out: the data goes to a temporary file in the same folder,
// renamed over PATH by commit(); abandon() (or the destructor) removes the
// temporary and leaves whatever PATH held untouched. A character device
// (/dev/null) is written directly. open() checks the path before anything
// is measured and throws a UsageError naming the option.
class AtomicOutput {
 public:
  AtomicOutput() = default;
  ~AtomicOutput() { abandon(); }
  AtomicOutput(const AtomicOutput &) = delete;
  AtomicOutput &operator=(const AtomicOutput &) = delete;
  void open(const std::string &opt, const std::string &path);
  FILE *file() const { return f_; }
  // flushes, closes and renames; false (errno set) when any of it failed,
  // the temporary then removed
  bool commit();
  void abandon();

 private:
  FILE *f_ = nullptr;
  std::string path_, tmp_;  // tmp_ empty: writing PATH directly
};

}  // namespace tickclock_probe

#endif
