/* tickclock — the crystal table: nominal crystals the CPU does not state,
 * by Intel family 6 model, with the evidence for each entry. Pure. */
#include "cpuid_x86.h"

#include <string.h>

/* ---- crystals the CPU does not state ----------------------------------------
 * Leaf 0x15 may give the TSC/crystal ratio with ECX (the crystal) 0. The SDM
 * then sends the reader to a table of nominal crystals by processor; this
 * is ours, by family 6 model number, each entry with the evidence for it.
 * An entry is a claim about every part sharing the model number, so a
 * model is listed only where that evidence agrees; an entry is never
 * trusted on its own: tickclock_decide() uses it only after calibration
 * agrees (TICKCLOCK_AGREE_PPM), and a wrong crystal is off by whole
 * percent (24 vs 25 MHz is 4 %), far outside that bound.
 *
 * "Corpus" below: the shared corpus of real dumps; for every listed model
 * each dump there has crystal x ratio within 1 % of its leaf 0x16 base MHz
 * (a rounded nominal figure), while every other crystal in use (19.2, 25,
 * 38.4 MHz) lands 3 % or more away; tests/crystal_table_test checks this
 * on the dumps. Where a part's base does not fit, the entry is not applied
 * to it (tickclock_x86_crystal_fits_base). */
static const tickclock_x86_crystal tkc_x86_crystals[] = {
    {0x4E, 24000000u, "Skylake client U/Y",
     "SDM crystal table: 6th/7th generation Core 24 MHz; corpus: every dump fits 24 MHz"},
    {0x5E, 24000000u, "Skylake client S/H",
     "SDM crystal table: 6th/7th generation Core 24 MHz; corpus: every dump fits 24 MHz"},
    {0x8E, 24000000u, "Kaby/Amber/Whiskey/Comet Lake U/Y",
     "SDM crystal table: 7th generation Core 24 MHz; later parts keep the model number "
     "and the client platform; corpus: every dump fits 24 MHz"},
    {0x9E, 24000000u, "Kaby/Coffee Lake S/H",
     "SDM crystal table: 7th generation Core 24 MHz; Coffee Lake keeps the model number "
     "and the client platform; corpus: every S/H dump fits 24 MHz; Kaby Lake-X (same "
     "model, X299 platform) does not, and the leaf 0x16 check turns the entry off there"},
    {0xA5, 24000000u, "Comet Lake S/H",
     "not in the SDM table; corpus: every dump fits 24 MHz, and Rocket Lake (0xA7), "
     "next on the same client platform, states 24 MHz in ECX itself"},
    {0xA6, 24000000u, "Comet Lake U (6 core)",
     "not in the SDM table; corpus: its dump fits 24 MHz; 4-core Comet Lake-U is model "
     "0x8E (24 MHz)"},
    {0xA7, 24000000u, "Rocket Lake S",
     "every bare-metal dump states 24 MHz in ECX; listed for guests whose hypervisor "
     "clears ECX but passes the ratio through"},
    {0x5F, 25000000u, "Atom Goldmont-D (Denverton)",
     "Linux still sets 25 MHz for this model (no leaf 0x16 to derive one from); corpus: "
     "25 MHz x 240/3 = 2000 MHz, the C3958's rated 2.00 GHz"},
    {0x5C, 19200000u, "Atom Goldmont (Apollo Lake)",
     "SDM crystal table: Goldmont 06_5CH 19.2 MHz; corpus: every dump states 19.2 MHz "
     "in ECX itself"},
};

/* Models left out on purpose: the same model number with different
 * crystals, so no table entry can be right for all its parts. */
static const struct {
  uint32_t model;
  const char *why;
} tkc_x86_no_crystal[] = {
    {0x55,
     "Skylake/Cascade Lake server and workstation: the SDM gives 25 MHz for Xeon "
     "Scalable and 24 MHz for Xeon W, same model; Linux dropped its hard-coded 25 MHz "
     "after 4 % errors on such workstations; corpus: the Xeons fit 25 MHz, Core X "
     "(i9-7980XE, i7-7800X) 24 MHz"},
    {0x6A,
     "Ice Lake-SP: one dump (fits 25 MHz); its successor Sapphire Rapids (0x8F) states "
     "24 MHz on some parts and 25 MHz on others"},
    {0x8F, "Sapphire Rapids: states 24 MHz on some parts and 25 MHz on others"},
};

const tickclock_x86_crystal *tickclock_x86_crystal_table(unsigned *n) {
  *n = (unsigned)(sizeof tkc_x86_crystals / sizeof tkc_x86_crystals[0]);
  return tkc_x86_crystals;
}

const tickclock_x86_crystal *tickclock_x86_crystal_lookup(const tickclock_x86_facts *f) {
  unsigned i, n;
  const tickclock_x86_crystal *t = tickclock_x86_crystal_table(&n);
  if (strcmp(f->vendor, "GenuineIntel") != 0 || f->family != 6) return NULL;
  for (i = 0; i < n; i++)
    if (t[i].model == f->model) return &t[i];
  return NULL;
}

int tickclock_x86_crystal_fits_base(const tickclock_x86_facts *f, const tickclock_x86_crystal *c) {
  double tsc, base;
  if (!f->leaf16_valid || f->base_mhz == 0 || !f->leaf15_valid || f->leaf15_den == 0) return -1;
  tsc = (double)c->hz * (double)f->leaf15_num / (double)f->leaf15_den;
  base = (double)f->base_mhz * 1e6;
  return tsc <= base * (1 + TICKCLOCK_CRYSTAL_BASE_TOLERANCE) &&
         tsc >= base * (1 - TICKCLOCK_CRYSTAL_BASE_TOLERANCE);
}

const char *tickclock_x86_crystal_excluded(const tickclock_x86_facts *f) {
  unsigned i;
  if (strcmp(f->vendor, "GenuineIntel") != 0 || f->family != 6) return NULL;
  for (i = 0; i < sizeof tkc_x86_no_crystal / sizeof tkc_x86_no_crystal[0]; i++)
    if (tkc_x86_no_crystal[i].model == f->model) return tkc_x86_no_crystal[i].why;
  return NULL;
}
