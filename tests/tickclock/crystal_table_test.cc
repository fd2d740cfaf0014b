// The crystal table (cpuid_x86.c): its entries, its use by the decider
// (never without calibration agreeing), and which dumps of the shared
// CPUID corpus it covers, next to what Linux's present rule gives them.
// Corpus directory: $TICKCLOCK_CORPUS, else shared/cpuid-corpus/dumps inside
// or beside the workspace (through the real path of a runfile), else the
// shared folder's usual place (as corpus_test looks); without one the
// corpus case says so and checks nothing.
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

using namespace tctest;

namespace {

std::string find_corpus() {
  std::vector<std::string> cand;
  if (const char *e = std::getenv("TICKCLOCK_CORPUS")) cand.push_back(e);
  char real[PATH_MAX];
  std::string anchor = runfiles_root() + "/tests/fixtures/cpuid/SOURCES.tsv";
  if (realpath(anchor.c_str(), real)) {
    std::string r = real, suffix = "/tests/fixtures/cpuid/SOURCES.tsv";
    if (r.size() > suffix.size()) {
      std::string root = r.substr(0, r.size() - suffix.size());
      cand.push_back(root + "/shared/cpuid-corpus/dumps");
      cand.push_back(root + "/../shared/cpuid-corpus/dumps");
    }
  }
  cand.push_back("/work/shared/cpuid-corpus/dumps");
  for (const std::string &c : cand)
    if (is_dir(c)) return c;
  return "";
}

tickclock_x86_facts decode_file(const std::string &path, std::unique_ptr<tickclock_fixture> *keep) {
  std::string text;
  REQUIRE_MESSAGE(read_file(path, &text), "cannot read " << path);
  Parsed p = parse_text(text, path);
  REQUIRE_MESSAGE(p.bad_line == 0, p.err);
  tickclock_x86_facts x;
  tickclock_x86_decode(tickclock_fixture_cpuid, p.fx.get(), &x);
  *keep = std::move(p.fx);
  return x;
}

// Intel family 6 facts with a leaf 0x15 ratio and no crystal.
tickclock_x86_facts intel(uint32_t model, uint32_t den, uint32_t num, uint32_t base_mhz) {
  tickclock_x86_facts x;
  std::memset(&x, 0, sizeof x);
  x.have_cpuid = 1;
  std::strcpy(x.vendor, "GenuineIntel");
  x.max_leaf = base_mhz ? 0x16 : 0x15;
  x.family = 6;
  x.model = model;
  x.tsc = 1;
  x.invariant_tsc = x.invariant_known = 1;
  x.leaf15_valid = 1;
  x.leaf15_den = den;
  x.leaf15_num = num;
  x.leaf16_valid = base_mhz != 0;
  x.base_mhz = base_mhz;
  return x;
}

double hz(const tickclock_freq &f) { return (double)f.hz_num / (double)f.hz_den; }

}  // namespace

TEST_CASE("crystal table: one entry per model, a crystal in use, evidence cited") {
  unsigned n = 0;
  const tickclock_x86_crystal *t = tickclock_x86_crystal_table(&n);
  REQUIRE(n >= 7);
  std::set<uint32_t> models;
  for (unsigned i = 0; i < n; i++) {
    CAPTURE(t[i].model);
    CHECK(models.insert(t[i].model).second);
    CHECK((t[i].hz == 19200000u || t[i].hz == 24000000u || t[i].hz == 25000000u ||
           t[i].hz == 38400000u));
    CHECK(std::strlen(t[i].parts) > 0);
    CHECK(std::strlen(t[i].evidence) > 20);
    tickclock_x86_facts x = intel(t[i].model, 2, 200, 0);
    CHECK(tickclock_x86_crystal_lookup(&x) == &t[i]);
    CHECK(tickclock_x86_crystal_excluded(&x) == nullptr);  // never both
  }
  // the models left out, each with its reason, and absent from the table
  for (uint32_t m : {0x55u, 0x6Au, 0x8Fu}) {
    CAPTURE(m);
    tickclock_x86_facts x = intel(m, 2, 200, 2000);
    CHECK(tickclock_x86_crystal_lookup(&x) == nullptr);
    REQUIRE(tickclock_x86_crystal_excluded(&x) != nullptr);
  }
  tickclock_x86_facts amd = intel(0x4E, 2, 200, 2000);
  std::strcpy(amd.vendor, "AuthenticAMD");
  CHECK(tickclock_x86_crystal_lookup(&amd) == nullptr);
  tickclock_x86_facts fam15 = intel(0x4E, 2, 200, 2000);
  fam15.family = 15;
  CHECK(tickclock_x86_crystal_lookup(&fam15) == nullptr);
}

TEST_CASE("our rule vs Linux's present rule on a Skylake-U (i7-6600U-like: 216/2, base 2600)") {
  tickclock_x86_facts x = intel(0x4E, 2, 216, 2600);
  tickclock_freq ours, lx;
  REQUIRE(tickclock_x86_freq_leaf15(&x, &ours));
  REQUIRE(tickclock_x86_freq_leaf15_linux(&x, &lx));
  CHECK(std::string(ours.name) == "cpuid_15h_known_crystal");
  CHECK(ours.from_table == 1);
  CHECK(ours.hz_num == UINT64_C(2592000000));  // 24 MHz x 108
  CHECK(ours.hz_den == 1);
  // Linux: crystal 2600000 kHz x 2 / 216 = 24074 kHz (truncated), TSC 24074 x 108 kHz
  CHECK(std::string(lx.name) == "cpuid_15h_from_16h");
  CHECK(lx.from_table == 0);
  CHECK(lx.hz_num == UINT64_C(2599992000));
  CHECK(tkc_ppm(ours.hz_num, ours.hz_den, lx.hz_num, lx.hz_den) ==
        doctest::Approx(-3073.86).epsilon(1e-5));
  // ECX stated: both rules agree and nothing comes from the table
  x.leaf15_crystal_hz = 24000000;
  REQUIRE(tickclock_x86_freq_leaf15(&x, &ours));
  REQUIRE(tickclock_x86_freq_leaf15_linux(&x, &lx));
  CHECK(std::string(ours.name) == "cpuid_15h_crystal");
  CHECK(ours.from_table == 0);
  CHECK(ours.hz_num == lx.hz_num);
  // Denverton: Linux's one remaining hard-coded crystal, no leaf 0x16
  tickclock_x86_facts d = intel(0x5F, 3, 240, 0);
  REQUIRE(tickclock_x86_freq_leaf15(&d, &ours));
  REQUIRE(tickclock_x86_freq_leaf15_linux(&d, &lx));
  CHECK(ours.hz_num == UINT64_C(2000000000));
  CHECK(lx.hz_num == UINT64_C(2000000000));
  CHECK(std::string(lx.name) == "cpuid_15h_known_crystal");
  // a model left out: ours falls back to the base frequency, exactly
  tickclock_x86_facts s = intel(0x55, 2, 216, 2600);
  REQUIRE(tickclock_x86_freq_leaf15(&s, &ours));
  CHECK(std::string(ours.name) == "cpuid_15h_from_16h");
  CHECK(ours.hz_num == UINT64_C(2600000000));
}

TEST_CASE("a table crystal is used only after calibration agrees with it") {
  tickclock_evidence ev;
  std::memset(&ev, 0, sizeof ev);
  ev.arch_counter = TICKCLOCK_SOURCE_TSC;
  ev.x86 = intel(0x8E, 2, 226, 2700);  // Kaby Lake-U: 24 MHz x 113 = 2712 MHz
  ev.x86.rdtscp = 1;
  ev.tsc_prctl = TICKCLOCK_PRCTL_ENABLED;
  ev.os_linux = 1;
  ev.clocksource_known = 1;
  tkc_strlcpy(ev.clocksource, "tsc", sizeof ev.clocksource);
  ev.os_resolution_ns = 1;
  list_claims(&ev);
  std::unique_ptr<tickclock_info> info(new tickclock_info);
  REQUIRE(tickclock_decide(&ev, info.get()) == 1);  // wants a calibration first
  auto calibrate = [&](double hz_value, double unc) {
    ev.cal.ok = 1;
    ev.cal.hz_num = (uint64_t)hz_value;
    ev.cal.hz_den = 1;
    ev.cal.hz = hz_value;
    ev.cal.ns = 20000000;
    ev.cal.ticks = (uint64_t)(hz_value * 0.02);
    ev.cal.uncertainty_ppm = unc;
    list_claims(&ev);
    REQUIRE(tickclock_decide(&ev, info.get()) == 0);
    for (unsigned i = 0; i < info->n_freqs; i++)
      if (std::strcmp(info->freqs[i].name, "cpuid_15h_known_crystal") == 0) return &info->freqs[i];
    return (tickclock_freq_candidate *)nullptr;
  };
  SUBCASE("agrees: the exact table value is chosen, and says where it came from") {
    tickclock_freq_candidate *c = calibrate(2712001356.0, 1.0);
    REQUIRE(c != nullptr);
    CHECK(c->usable);
    CHECK(c->chosen);
    CHECK(std::strstr(c->reason, "table crystal agrees") != nullptr);
    CHECK(info->hz_num == UINT64_C(2712000000));
  }
  SUBCASE("the part really has a 25 MHz crystal: 4 % off, refused, calibration used") {
    tickclock_freq_candidate *c = calibrate(25e6 * 113, 1.0);
    REQUIRE(c != nullptr);
    CHECK_FALSE(c->usable);
    CHECK(std::strstr(c->reason, "disagrees with calibration") != nullptr);
    CHECK(std::string(info->freq_detail) == "calibration");
  }
  SUBCASE("a 0.3 % error (what Linux's 0x16 rule makes) is refused as well") {
    tickclock_freq_candidate *c = calibrate(2712000000.0 * 1.003, 1.0);
    REQUIRE(c != nullptr);
    CHECK_FALSE(c->usable);
  }
}

TEST_CASE("corpus: the dumps the crystal table covers, and Linux's rule on them") {
  std::string dir = find_corpus();
  if (dir.empty()) {
    MESSAGE("SKIP: no CPUID corpus found (set TICKCLOCK_CORPUS)");
    return;
  }
  std::vector<std::string> files = list_cpuid(dir);
  REQUIRE(!files.empty());
  struct PerModel {
    int covered = 0, bare = 0, differ = 0, linux_none = 0;
    double min_ppm = 1e9, max_ppm = -1e9;
  };
  std::map<uint32_t, PerModel> per;
  std::map<uint32_t, std::pair<int, int>> left_out;  // model -> (fits 24 MHz, fits 25 MHz)
  int ratio_no_crystal = 0, bare_ratio_no_crystal = 0, covered = 0, unknown = 0, off_base = 0;
  for (const std::string &path : files) {
    CAPTURE(path);
    std::unique_ptr<tickclock_fixture> fx;
    tickclock_x86_facts x = decode_file(path, &fx);
    if (std::strcmp(x.vendor, "GenuineIntel") != 0 || !x.leaf15_valid || !x.leaf15_den ||
        !x.leaf15_num || x.leaf15_crystal_hz != 0)
      continue;
    ratio_no_crystal++;
    bare_ratio_no_crystal += !x.hypervisor;
    const tickclock_x86_crystal *e = tickclock_x86_crystal_lookup(&x);
    double ratio = (double)x.leaf15_num / (double)x.leaf15_den;
    if (e == nullptr) {
      if (tickclock_x86_crystal_excluded(&x) == nullptr) {
        unknown++;
        continue;
      }
      if (x.leaf16_valid && x.base_mhz) {  // which crystal fits this part?
        double base = x.base_mhz * 1e6;
        left_out[x.model].first += std::fabs(24e6 * ratio / base - 1) <= 0.01;
        left_out[x.model].second += std::fabs(25e6 * ratio / base - 1) <= 0.01;
      }
      continue;
    }
    tickclock_freq ours, lx;
    REQUIRE(tickclock_x86_freq_leaf15(&x, &ours));
    if (tickclock_x86_crystal_fits_base(&x, e) == 0) {  // another platform under this model
      off_base++;
      MESSAGE("entry not applied (crystal x ratio off the base by over 1 %): " << path);
      CHECK(std::string(ours.name) == "cpuid_15h_from_16h");
      continue;
    }
    covered++;
    PerModel &m = per[x.model];
    m.covered++;
    m.bare += !x.hypervisor;
    CHECK(std::string(ours.name) == "cpuid_15h_known_crystal");
    CHECK(ours.from_table == 1);
    uint64_t n = (uint64_t)e->hz * x.leaf15_num;
    CHECK(ours.hz_num == n / std::gcd(n, (uint64_t)x.leaf15_den));
    // the entry's evidence: on every dump with a base MHz the table's TSC
    // is within 1 % of it, and every other crystal in use is not
    if (x.leaf16_valid && x.base_mhz) {
      double base = x.base_mhz * 1e6;
      CHECK_MESSAGE(std::fabs(hz(ours) / base - 1) <= 0.01,
                    "table TSC " << hz(ours) << " vs base " << base);
      for (double other : {19.2e6, 24e6, 25e6, 38.4e6})
        if (other != (double)e->hz) CHECK(std::fabs(other * ratio / base - 1) > 0.03);
    }
    if (tickclock_x86_freq_leaf15_linux(&x, &lx)) {
      double ppm = tkc_ppm(ours.hz_num, ours.hz_den, lx.hz_num, lx.hz_den);
      if (std::fabs(ppm) > 1) m.differ++;
      m.min_ppm = std::min(m.min_ppm, ppm);
      m.max_ppm = std::max(m.max_ppm, ppm);
    } else {
      m.linux_none++;  // leaf 0x16 hidden (a Hyper-V guest): Linux's rule gives nothing
    }
  }
  MESSAGE("corpus " << dir << ": " << files.size() << " dumps; Intel with a leaf 0x15 ratio "
                    << "and crystal 0: " << ratio_no_crystal << " (" << bare_ratio_no_crystal
                    << " bare metal); covered by the crystal table: " << covered
                    << "; entry not applied (base does not fit): " << off_base
                    << "; left out on purpose: " << ratio_no_crystal - covered - off_base - unknown
                    << "; model unknown: " << unknown);
  for (auto &kv : per) {
    char b[256];
    std::snprintf(b, sizeof b,
                  "  model 0x%02X: %d covered (%d bare metal); differs from Linux's rule on %d, "
                  "%+.0f..%+.0f ppm; Linux's rule gives nothing on %d",
                  (unsigned)kv.first, kv.second.covered, kv.second.bare, kv.second.differ,
                  kv.second.differ ? kv.second.min_ppm : 0.0,
                  kv.second.differ ? kv.second.max_ppm : 0.0, kv.second.linux_none);
    MESSAGE(b);
  }
  for (auto &kv : left_out) {
    char b[160];
    std::snprintf(b, sizeof b, "  left out 0x%02X: %d dumps fit 24 MHz, %d fit 25 MHz",
                  (unsigned)kv.first, kv.second.first, kv.second.second);
    MESSAGE(b);
  }
  CHECK(covered > 0);
  CHECK(unknown == 0);  // every model seen with a ratio and no crystal is decided on
  // Skylake-X/SP (0x55) is left out because its parts differ: the corpus shows both
  REQUIRE(left_out.count(0x55) == 1);
  CHECK(left_out[0x55].first > 0);
  CHECK(left_out[0x55].second > 0);
  if (files.size() == 631) {  // the shared corpus as it is: its exact figures
    CHECK(bare_ratio_no_crystal == 56);
    CHECK(covered == 44);
    CHECK(off_base == 1);  // Kaby Lake-X
    CHECK(per[0x4E].covered == 3);
    CHECK(per[0x5E].covered == 5);
    CHECK(per[0x8E].covered == 14);
    CHECK(per[0x9E].covered == 14);
    CHECK(per[0xA5].covered == 5);
    CHECK(per[0xA5].linux_none == 2);
    int differ = 0, linux_none = 0;
    double lo = 0, hi = 0;
    for (auto &kv : per) {
      differ += kv.second.differ;
      linux_none += kv.second.linux_none;
      if (kv.second.differ) {
        lo = std::min(lo, kv.second.min_ppm);
        hi = std::max(hi, kv.second.max_ppm);
      }
    }
    CHECK(differ == 35);
    CHECK(linux_none == 3);
    CHECK(lo == doctest::Approx(-3984).epsilon(1e-3));  // the README's figures
    CHECK(hi == doctest::Approx(8022).epsilon(1e-3));
  }

  // specific dumps, values worked out by hand
  struct Want {
    const char *file;
    uint64_t table_hz, linux_hz;
  } wants[] = {
      // Kaby Lake-U, 226/2, base 2700: 24 MHz x 113; Linux
      // 2700000 x 2 / 226 = 23893 kHz, x 113 = 2699909 kHz (-4478 ppm)
      {"instlatx64__GenuineIntel00806E9_Kabylake_CPUID.cpuid", UINT64_C(2712000000),
       UINT64_C(2699909000)},
      // Skylake-U, 216/2, base 2600: 24 MHz x 108; Linux 24074 kHz x 108
      {"instlatx64__GenuineIntel00406E3_Skylake_CPUID.cpuid", UINT64_C(2592000000),
       UINT64_C(2599992000)},
      // Kaby Lake-S, 350/2, base 4200: both exact (24 MHz x 175)
      {"instlatx64__GenuineIntel00906E9_Kabylake_CPUID.cpuid", UINT64_C(4200000000),
       UINT64_C(4200000000)},
      // Denverton, 240/3, no leaf 0x16: 25 MHz x 80 by both
      {"instlatx64__GenuineIntel00506F1_Denverton_CPUID.cpuid", UINT64_C(2000000000),
       UINT64_C(2000000000)},
      // Comet Lake-S under Hyper-V, 308/2, leaf 0x16 zeroed: only the table answers
      {"instlatx64__GenuineIntel00A0654_CometLake_CPUID.cpuid", UINT64_C(3696000000), 0},
  };
  for (const Want &w : wants) {
    CAPTURE(w.file);
    std::unique_ptr<tickclock_fixture> fx;
    tickclock_x86_facts x = decode_file(dir + "/" + w.file, &fx);
    tickclock_freq ours, lx;
    REQUIRE(tickclock_x86_freq_leaf15(&x, &ours));
    CHECK(std::string(ours.name) == "cpuid_15h_known_crystal");
    CHECK(ours.hz_den == 1);
    CHECK(ours.hz_num == w.table_hz);
    if (w.linux_hz) {
      REQUIRE(tickclock_x86_freq_leaf15_linux(&x, &lx));
      CHECK(lx.hz_num == w.linux_hz);
    } else {
      CHECK_FALSE(tickclock_x86_freq_leaf15_linux(&x, &lx));
    }
  }
}
