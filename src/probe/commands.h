// tickclock-probe subcommands. Each returns the process exit status:
// 0 success, 1 a check failed, 4 inconclusive (kExitInconclusive: an
// essential check could not run), 128 + N interrupted by signal N; bad input
// is thrown as a UsageError (main prints one line, exit 2).
#ifndef TICKCLOCK_PROBE_COMMANDS_H
#define TICKCLOCK_PROBE_COMMANDS_H

namespace tickclock_probe {

struct Command {
  const char *name;                   // argv[1]; "" for the default report
  int (*run)(int argc, char **argv);  // argv[0] is the subcommand name
  const char *usage;                  // one line: the synopsis
  const char *help;                   // what --help adds: a sentence and one line per option
};

#include <cstdio>

int cmd_cpuid(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_timing(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_warp(int argc, char **argv);

// This CPU's leaves in the fixture format, with the host facts as
// metadata comments (cmd_cpuid.cc; used by validate --fixture-out).
void write_cpuid_dump(FILE *f);

}  // namespace tickclock_probe

#endif
