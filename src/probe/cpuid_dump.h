// tickclock-probe: this CPU's CPUID leaves in the fixture format
// (`cpuid --dump`, and the fixture `validate --fixture-out` writes).
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tickclock_tools.h"

namespace tickclock_probe {

struct Leaf {
  uint32_t leaf, subleaf;
  tickclock_cpuid_regs r;
};

// Every leaf of this CPU worth keeping, ranges gated as the decoder does.
std::vector<Leaf> enumerate_native();
// The leaves as fixture lines, with the host's facts as metadata when
// native.
void print_dump(const std::vector<Leaf> &leaves, bool native, FILE *out = stdout);

}  // namespace tickclock_probe
