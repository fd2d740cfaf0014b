// tickclock-probe: subcommand dispatcher. Add a subcommand by writing
// cmd_NAME.cc, declaring it in commands.h and listing it below.
//
// Exit status (listed in --help): 0 success; 1 a check failed; 2 bad input
// (one line on stderr, "tickclock-probe CMD: ..."); 3 the output could not
// be written; 4 inconclusive (an essential check could not run); 128 + N
// interrupted by signal N (130 for Ctrl-C, 143 for SIGTERM).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/probe/commands.h"
#include "src/probe/util.h"
#include "tickclock.h"

namespace tickclock_probe {
namespace {

const Command kCommands[] = {
    {"", cmd_report, "report [--json]",
     "The report: source, frequency, candidates, reasons. The default: `tickclock-probe`\n"
     "with no subcommand is the same as `tickclock-probe report`.\n"
     "  --json        machine-readable (the schema: see tickclock-probe --help)\n"},
    {"timing", cmd_timing, "timing [--seconds S] [--source NAME|all] [--json] [--svg F]",
     "pg_test_timing for every read this machine has.\n"
     "  --seconds S   total measuring time, split evenly between the sources (default 1)\n"
     "  --source NAME one read (tickclock_now, rdtsc, clock_gettime, ...), a source's\n"
     "                reads (tsc: rdtsc, lfence_rdtsc, rdtscp; system: clock_gettime*;\n"
     "                auto: tickclock_now*) or all (default)\n"
     "  --json        machine-readable\n"
     "  --svg F       also draw the histograms into F (checked before measuring)\n"
     "Ends with a summary table, one line per source.\n"
     "Exit: 0 done, 1 a read stepped backwards, 2 bad input, 3 output not written,\n"
     "130/143 interrupted (INCOMPLETE).\n"},
    {"validate", cmd_validate, "validate [--seconds S] [--source NAME] [--fixture-out F] [--json]",
     "The checklist for a new machine or hypervisor: cpuid, clocksource, frequency,\n"
     "drift, monotonic, warp, read_cost, pr_set_tsc. Each is PASS, FAIL, SKIP (does not\n"
     "apply here) or NOT_RUN (applies, but could not run here).\n"
     "Essential checks: cpuid, clocksource, frequency, drift, monotonic, warp. warp is\n"
     "the only check that sees per-CPU offsets; pinned to one CPU (taskset -c 0, a\n"
     "one-CPU cpuset) while others are online it cannot run: run with >= 2 CPUs.\n"
     "  --seconds S   time for drift, monotonicity and warp together (default 2)\n"
     "  --source NAME force a source: auto, system, tsc, ..., or a read of timing\n"
     "                standing for its source (rdtsc: tsc) (default: tickclock's choice)\n"
     "  --fixture-out F  write this host's fixture to F (checked before measuring;\n"
     "                written to a temporary file and renamed over F only when the\n"
     "                run finishes: an interrupted run leaves F as it was)\n"
     "  --json        machine-readable\n"
     "Verdicts and exit status:\n"
     "  0   PASS          every check that applies ran and passed\n"
     "  1   FAIL          a check failed (named, with the next step)\n"
     "  4   INCONCLUSIVE  nothing failed, but an essential check could not run\n"
     "                    (named, with what to do: e.g. run with >= 2 CPUs)\n"
     "  130 INCOMPLETE    interrupted by SIGINT (143: SIGTERM); no fixture written\n"
     "  2   bad input, 3 the output or the fixture could not be written\n"},
    {"warp", cmd_warp, "warp [--seconds S] [--source NAME] [--json]",
     "Cross-CPU ordering test (every CPU pair).\n"
     "  --seconds S   total time, split between the CPU pairs (default 2)\n"
     "  --source NAME force a source, as validate takes it (default: tickclock's choice)\n"
     "  --json        machine-readable\n"
     "Exit: 0 no warp, 1 a warp, 4 INCONCLUSIVE (one CPU allowed while others are\n"
     "online: no pair to test; run with >= 2 CPUs), 130/143 interrupted.\n"},
    {"cpuid", cmd_cpuid, "cpuid [--file F] [--dump] [--json]",
     "Decode this CPU or a recorded dump.\n"
     "  --file F      a fixture (LEAF SUBLEAF EAX EBX ECX EDX lines); a regular file\n"
     "  --dump        print the leaves in fixture format\n"
     "  --json        machine-readable\n"},
};

void usage(FILE *f) {
  std::fprintf(f, "usage: tickclock-probe <subcommand> [options]\n");
  std::fprintf(f, "  tickclock-probe [--json]   (no subcommand: the report)\n");
  for (const Command &c : kCommands) std::fprintf(f, "  tickclock-probe %s\n", c.usage);
  std::fprintf(f,
               "  tickclock-probe help [SUBCOMMAND]\n"
               "  tickclock-probe --version\n"
               "Every subcommand takes --help (or: tickclock-probe help SUBCOMMAND).\n"
               "On a terminal, timing, validate and warp show a progress line on stderr\n"
               "(never in a pipe, never with --json).\n"
               "--json output: one object with schema_version, tool_version, command and\n"
               "host first; the schema is share/tickclock-probe/tickclock-probe.schema.json\n"
               "under the install prefix (/usr/share/... from the .deb; in the source tree:\n"
               "src/probe/schema/tickclock-probe.schema.json).\n"
               "Exit status:\n"
               "  0    success; validate: PASS\n"
               "  1    a check failed: validate FAIL, a warp, a backward step in timing\n"
               "  2    bad input: unknown subcommand or option, bad value, unreadable or\n"
               "       malformed file, bad TICKCLOCK_SOURCE (one line on stderr)\n"
               "  3    the output (stdout, --svg, --fixture-out) could not be written\n"
               "  4    INCONCLUSIVE: validate or warp could not run an essential check\n"
               "       (e.g. pinned to one CPU: per-CPU offsets not checked)\n"
               "  130  interrupted by SIGINT (Ctrl-C): INCOMPLETE, partial results printed\n"
               "  143  interrupted by SIGTERM: the same\n");
}

void command_usage(const Command &c) {
  std::printf("usage: tickclock-probe %s\n%s", c.usage, c.help);
}

// stdout must have reached its file: a full disk or a closed pipe is an
// error the caller sees in the exit status, not a silent truncation.
int finish(const Command &c, int rc) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int e = errno;
    std::fprintf(stderr, "tickclock-probe%s%s: cannot write the output: %s\n", c.name[0] ? " " : "",
                 c.name, std::strerror(e ? e : EIO));
    return 3;
  }
  return rc;
}

int run(const Command &c, int argc, char **argv) {
  const char *sp = c.name[0] ? " " : "";
  // The environment is input too: a TICKCLOCK_SOURCE the library would
  // ignore with a warning is a usage error for the probe. Empty = unset.
  const char *env = std::getenv("TICKCLOCK_SOURCE");
  if (env && *env && tickclock_source_from_name(env) < 0) {
    std::fprintf(stderr, "tickclock-probe%s%s: TICKCLOCK_SOURCE='%s' is not one of %s\n", sp,
                 c.name, esc(std::string(env).substr(0, 60)).c_str(), source_names().c_str());
    return 2;
  }
  try {
    return finish(c, c.run(argc, argv));
  } catch (const HelpRequest &) {
    command_usage(c);
    return finish(c, 0);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "tickclock-probe%s%s: %s\n", sp, c.name, esc(e.message).c_str());
    return 2;
  }
}

bool is_help(const char *a) { return std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0; }

}  // namespace
}  // namespace tickclock_probe

int main(int argc, char **argv) {
  using namespace tickclock_probe;
  // A reader that has gone (`tickclock-probe --json | head -c1`) is a write
  // error like a full disk: finish() says so and exits 3, as documented,
  // instead of the process dying silently of SIGPIPE (141).
  std::signal(SIGPIPE, SIG_IGN);
  const Command &report = kCommands[0];
  if (argc >= 2 && is_help(argv[1])) {
    usage(stdout);
    return finish(report, 0);
  }
  // help [SUBCOMMAND]: the same as --help, or SUBCOMMAND --help
  if (argc >= 2 && std::strcmp(argv[1], "help") == 0) {
    if (argc == 2 || (argc == 3 && is_help(argv[2]))) {
      usage(stdout);
      return finish(report, 0);
    }
    if (argc > 3) {
      std::fprintf(stderr, "tickclock-probe: help takes one subcommand, got %d arguments\n",
                   argc - 2);
      return 2;
    }
    for (const Command &c : kCommands) {
      if (std::strcmp(argv[2], c.name[0] ? c.name : "report") != 0) continue;
      command_usage(c);
      return finish(c, 0);
    }
    std::fprintf(stderr,
                 "tickclock-probe: help: unknown subcommand '%s' (expected report, timing, "
                 "validate, warp, cpuid)\n",
                 esc(argv[2]).c_str());
    return 2;
  }
  // report: the same as no subcommand
  if (argc >= 2 && std::strcmp(argv[1], "report") == 0) return run(report, argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("tickclock-probe %d.%d.%d (tickclock %d.%d.%d)\n", TICKCLOCK_VERSION_MAJOR,
                TICKCLOCK_VERSION_MINOR, TICKCLOCK_VERSION_PATCH, TICKCLOCK_VERSION_MAJOR,
                TICKCLOCK_VERSION_MINOR, TICKCLOCK_VERSION_PATCH);
    return finish(report, 0);
  }
  // no subcommand, or an option first: the report
  if (argc < 2 || argv[1][0] == '-') return run(report, argc, argv);
  for (const Command &c : kCommands) {
    if (!c.name[0] || std::strcmp(argv[1], c.name) != 0) continue;
    // the commands that measure: Ctrl-C from here on ends the run early
    // with what it has, reported INCOMPLETE
    if (c.run == cmd_timing || c.run == cmd_validate || c.run == cmd_warp) install_sigint();
    return run(c, argc - 1, argv + 1);
  }
  std::fprintf(stderr,
               "tickclock-probe: unknown subcommand '%s' (expected report, timing, validate, "
               "warp, cpuid, help; try --help)\n",
               esc(argv[1]).c_str());
  return 2;
}
