// tickclock-probe: subcommand dispatcher. Add a subcommand by writing
// cmd_NAME.cc, declaring it in commands.h and listing it below.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/probe/commands.h"
#include "src/probe/util.h"
#include "tickclock.h"

namespace tickclock_probe {
namespace {

const Command kCommands[] = {
    {"", cmd_report, "[--json]                                 the report: source, frequency, candidates, reasons"},
    {"timing", cmd_timing, "timing [--seconds S] [--source NAME|all] [--json] [--svg F]   pg_test_timing for every read"},
    {"validate", cmd_validate, "validate [--seconds S] [--source NAME] [--fixture-out F] [--json]   the checklist; exit 0 only if all pass"},
    {"warp", cmd_warp, "warp [--seconds S] [--source NAME] [--json]   cross-CPU ordering test"},
    {"cpuid", cmd_cpuid, "cpuid [--file F] [--dump] [--json]   decode this CPU or a recorded dump"},
};

void usage(FILE *f) {
  std::fprintf(f, "usage: tickclock-probe <subcommand> [options]\n");
  for (const Command &c : kCommands) std::fprintf(f, "  tickclock-probe %s\n", c.usage);
  std::fprintf(f, "Bad input gets a one-line error and exit status 2.\n");
}

}  // namespace
}  // namespace tickclock_probe

namespace {
int run(const tickclock_probe::Command &c, int argc, char **argv) {
  try {
    return c.run(argc, argv);
  } catch (const tickclock_probe::UsageError &e) {
    std::fprintf(stderr, "tickclock-probe%s%s: %s\n", c.name[0] ? " " : "", c.name,
                 e.message.c_str());
    return 2;
  }
}
}  // namespace

int main(int argc, char **argv) {
  using namespace tickclock_probe;
  // The environment is input too: a TICKCLOCK_SOURCE the library would
  // ignore with a warning is a usage error for the probe (one line, exit 2).
  if (const char *env = std::getenv("TICKCLOCK_SOURCE")) {
    if (tickclock_source_from_name(env) < 0) {
      std::fprintf(stderr,
                   "tickclock-probe: TICKCLOCK_SOURCE='%.40s' is not one of auto, system, tsc, "
                   "cntvct, timebase, tod, rdtime, qpc\n",
                   env);
      return 2;
    }
  }
  // no subcommand, or an option first: the report
  if (argc < 2 || (argv[1][0] == '-' && std::strcmp(argv[1], "--help") != 0 &&
                   std::strcmp(argv[1], "-h") != 0))
    return run(kCommands[0], argc, argv);
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (const Command &c : kCommands)
    if (c.name[0] && std::strcmp(argv[1], c.name) == 0) return run(c, argc - 1, argv + 1);
  std::fprintf(stderr, "tickclock-probe: unknown subcommand '%s' (expected timing, validate, warp, cpuid; try --help)\n", argv[1]);
  return 2;
}
