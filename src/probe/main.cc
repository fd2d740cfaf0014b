// tickclock-probe: subcommand dispatcher. Add a subcommand by writing
// cmd_NAME.cc, declaring it in commands.h and listing it below.
#include <cstdio>
#include <cstring>

#include "src/probe/commands.h"

namespace tickclock_probe {
namespace {

const Command kCommands[] = {
    {"cpuid", cmd_cpuid, "cpuid [--file F] [--dump] [--json]   decode this CPU or a recorded dump"},
};

void usage(FILE *f) {
  std::fprintf(f, "usage: tickclock-probe <subcommand> [options]\n");
  for (const Command &c : kCommands) std::fprintf(f, "  tickclock-probe %s\n", c.usage);
}

}  // namespace
}  // namespace tickclock_probe

int main(int argc, char **argv) {
  using namespace tickclock_probe;
  if (argc < 2) {
    std::fprintf(stderr, "tickclock-probe: no subcommand given (try --help)\n");
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (const Command &c : kCommands)
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "tickclock-probe: unknown subcommand '%s' (try --help)\n", argv[1]);
  return 2;
}
