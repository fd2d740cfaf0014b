/* tickclock tools — the x86 CPUID frequency rules only the tools report:
 * Linux's leaf 0x15 rule (next to the core's own, tickclock_x86_freq_leaf15)
 * and the CPUID-only answer. Pure functions of the decoded facts. */
#include "tickclock_tools.h"

#include <string.h>

/* Linux's present rule, in its own integer kHz arithmetic: the crystal
 * from ECX (truncated to kHz); Denverton 25 MHz; else the crystal derived
 * from leaf 0x16 as base MHz x 1000 x den / num (truncated), and the TSC
 * as crystal kHz x num / den (truncated): a whole number of kHz. */
int tickclock_x86_freq_leaf15_linux(const tickclock_x86_facts *f, tickclock_freq *out) {
  uint32_t crystal_khz;
  uint64_t hz;
  const char *name = "cpuid_15h_crystal";
  double unc = 0;
  memset(out, 0, sizeof *out);
  if (strcmp(f->vendor, "GenuineIntel") != 0 || !f->leaf15_valid) return 0;
  if (f->leaf15_den == 0 || f->leaf15_num == 0) return 0;
  crystal_khz = f->leaf15_crystal_hz / 1000u;
  if (crystal_khz == 0 && f->family == 6 && f->model == 0x5F) {
    crystal_khz = 25000u;
    name = "cpuid_15h_known_crystal";
  }
  if (crystal_khz == 0 && f->leaf16_valid) {
    /* 32-bit like the kernel's: base MHz < 2^16, den small in practice */
    crystal_khz = (uint32_t)((uint64_t)f->base_mhz * 1000u * f->leaf15_den / f->leaf15_num);
    name = "cpuid_15h_from_16h";
    unc = f->base_mhz ? 0.5 / (double)f->base_mhz * 1e6 : 0;
  }
  if (crystal_khz == 0) return 0;
  hz = (uint64_t)crystal_khz * f->leaf15_num / f->leaf15_den * 1000u;
  if (hz == 0) return 0;
  out->ok = 1;
  out->hz_num = hz; /* over 1: already reduced */
  out->hz_den = 1;
  out->method = TICKCLOCK_FREQ_CPUID_15H;
  out->name = name;
  out->uncertainty_ppm = unc;
  return 1;
}

int tickclock_x86_freq_cpuid(const tickclock_x86_facts *f, tickclock_freq *out) {
  if (f->hypervisor && tickclock_x86_freq_hypervisor(f, out)) return 1;
  if (tickclock_x86_freq_leaf15(f, out)) return 1;
  return tickclock_x86_freq_leaf16(f, out);
}
