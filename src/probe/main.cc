// tickclock-probe: subcommand dispatcher. Add a subcommand by writing
// cmd_NAME.cc, declaring it in commands.h and listing it below.
//
// Exit status: 0 success; 1 a check failed; 2 bad input (one line on
// stderr, "tickclock-probe CMD: ..."); 3 the output could not be written;
// 128 + N interrupted by signal N (130 for Ctrl-C) before the run finished.
#include <cerrno>
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
    {"", cmd_report, "[--json]",
     "The report: source, frequency, candidates, reasons.\n"
     "  --json        machine-readable (keys in README.md)\n"},
    {"timing", cmd_timing, "timing [--seconds S] [--source NAME|all] [--json] [--svg F]",
     "pg_test_timing for every read this machine has.\n"
     "  --seconds S   total measuring time, split evenly between the sources (default 1)\n"
     "  --source NAME one read (tickclock_now, rdtsc, clock_gettime, ...) or all (default)\n"
     "  --json        machine-readable\n"
     "  --svg F       also draw the histograms into F (checked before measuring)\n"},
    {"validate", cmd_validate,
     "validate [--seconds S] [--source NAME] [--fixture-out F] [--json]",
     "The checklist for a new machine or hypervisor; exit 0 only if every check passes.\n"
     "  --seconds S   time for drift, monotonicity and warp together (default 2)\n"
     "  --source NAME force a source: auto, system, tsc, ... (default: tickclock's choice)\n"
     "  --fixture-out F  write this host's fixture to F (checked before measuring)\n"
     "  --json        machine-readable\n"
     "Exit: 0 PASS, 1 FAIL, 2 bad input, 130 interrupted (INCOMPLETE).\n"},
    {"warp", cmd_warp, "warp [--seconds S] [--source NAME] [--json]",
     "Cross-CPU ordering test (every CPU pair); exit 1 on any warp.\n"
     "  --seconds S   total time, split between the CPU pairs (default 2)\n"
     "  --source NAME force a source (default: tickclock's choice)\n"
     "  --json        machine-readable\n"},
    {"cpuid", cmd_cpuid, "cpuid [--file F] [--dump] [--json]",
     "Decode this CPU or a recorded dump.\n"
     "  --file F      a fixture (LEAF SUBLEAF EAX EBX ECX EDX lines); a regular file\n"
     "  --dump        print the leaves in fixture format\n"
     "  --json        machine-readable\n"},
};

void usage(FILE *f) {
  std::fprintf(f, "usage: tickclock-probe <subcommand> [options]\n");
  for (const Command &c : kCommands) std::fprintf(f, "  tickclock-probe %s\n", c.usage);
  std::fprintf(f,
               "  tickclock-probe --version\n"
               "Every subcommand takes --help. Bad input gets a one-line error and exit "
               "status 2.\n");
}

void command_usage(const Command &c) {
  std::printf("usage: tickclock-probe %s\n%s", c.usage, c.help);
}

// stdout must have reached its file: a full disk or a closed pipe is an
// error the caller sees in the exit status, not a silent truncation.
int finish(const Command &c, int rc) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int e = errno;
    std::fprintf(stderr, "tickclock-probe%s%s: cannot write the output: %s\n",
                 c.name[0] ? " " : "", c.name, std::strerror(e ? e : EIO));
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
  const Command &report = kCommands[0];
  if (argc >= 2 && is_help(argv[1])) {
    usage(stdout);
    return finish(report, 0);
  }
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
               "tickclock-probe: unknown subcommand '%s' (expected timing, validate, warp, "
               "cpuid; try --help)\n",
               esc(argv[1]).c_str());
  return 2;
}
