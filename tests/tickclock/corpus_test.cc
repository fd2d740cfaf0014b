// Walks a whole directory of CPUID dumps (the shared corpus) through the
// parser, decoder and decider. Directory: $TICKCLOCK_CORPUS, else
// shared/cpuid-corpus/dumps inside or beside the workspace (found through
// the real path of a runfile), else /work/shared/cpuid-corpus/dumps. When
// none exists the test reports a skip (TICKCLOCK_SKIPPED), not a pass.
//
// For every dump: it parses; decoding never asks for a leaf outside its
// range (checked by a leaf source that knows the ranges independently);
// the decision under several kernels' verdicts is well-formed.
#include <cstring>
#include <set>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"
#include "tests/support/skip.h"

using namespace tctest;

namespace {

std::string find_corpus(std::string *tried) {
  std::vector<std::string> cand;
  if (const char *e = std::getenv("TICKCLOCK_CORPUS")) cand.push_back(e);
  char real[PATH_MAX];
  std::string anchor = runfiles_root() + "/tests/fixtures/cpuid/SOURCES.tsv";
  if (realpath(anchor.c_str(), real)) {
    std::string r = real;
    std::string suffix = "/tests/fixtures/cpuid/SOURCES.tsv";
    if (r.size() > suffix.size()) {
      std::string root = r.substr(0, r.size() - suffix.size());
      cand.push_back(root + "/shared/cpuid-corpus/dumps");
      cand.push_back(root + "/../shared/cpuid-corpus/dumps");
    }
  }
  cand.push_back("/work/shared/cpuid-corpus/dumps");
  for (const std::string &c : cand) {
    *tried += c + " ";
    if (is_dir(c)) return c;
  }
  return "";
}

// A leaf source over a fixture that records every question asked outside
// the ranges the leaves define (computed here, independently of the
// decoder), and answers such questions with garbage.
struct Gate {
  const tickclock_fixture *fx;
  std::vector<std::string> violations;
  uint32_t raw(uint32_t leaf, int reg) {
    tickclock_cpuid_regs r;
    tickclock_fixture_cpuid((void *)fx, leaf, 0, &r);
    return reg == 0 ? r.eax : reg == 2 ? r.ecx : r.ebx;
  }
  bool allowed(uint32_t leaf) {
    uint32_t max = raw(0, 0);
    if (leaf == 0 || leaf == 0x80000000u) return true;
    if (leaf < 0x40000000u) return leaf <= max;
    if (leaf >= 0x80000000u) {
      uint32_t e = raw(0x80000000u, 0);
      return e >= 0x80000000u && e <= 0x8000ffffu && leaf <= e;
    }
    if (leaf < 0x40010000u) {
      if (max < 1 || !((raw(1, 2) >> 31) & 1)) return false;  // no hypervisor range
      uint32_t base = leaf & ~0xffu;
      if (leaf == base) return true;  // the scan
      uint32_t bmax = raw(base, 0);
      if (bmax == 0) bmax = base + 1;  // old KVM
      return bmax >= base && bmax <= base + 0xff && leaf <= bmax;
    }
    return false;
  }
  static int fn(void *ctx, uint32_t leaf, uint32_t sub, tickclock_cpuid_regs *out) {
    Gate *g = static_cast<Gate *>(ctx);
    if (!g->allowed(leaf)) {
      char b[64];
      std::snprintf(b, sizeof b, "leaf 0x%08x", leaf);
      g->violations.push_back(b);
      *out = tickclock_cpuid_regs{0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef};
      return 1;
    }
    return tickclock_fixture_cpuid((void *)g->fx, leaf, sub, out);
  }
};

}  // namespace

TEST_CASE("shared corpus: parse, gating, well-formed decisions") {
  std::string tried;
  std::string dir = find_corpus(&tried);
  if (dir.empty()) {
    tctest::skip("shared corpus: no CPUID corpus found (set TICKCLOCK_CORPUS); tried: " + tried);
    return;
  }
  std::vector<std::string> files = list_cpuid(dir);
  MESSAGE("corpus " << dir << ": " << files.size() << " dumps");
  REQUIRE(files.size() > 0);
  int n_tsc = 0, n_hv = 0, n_freq = 0;
  std::set<std::string> methods;
  for (const std::string &path : files) {
    CAPTURE(path);
    std::string text;
    REQUIRE(read_file(path, &text));
    Parsed p = parse_text(text, path);
    REQUIRE_MESSAGE(p.bad_line == 0, p.err);

    Gate g{p.fx.get(), {}};
    tickclock_x86_facts gated, plain;
    tickclock_x86_decode(Gate::fn, &g, &gated);
    CHECK_MESSAGE(g.violations.empty(), "asked outside its range: " << g.violations[0]);
    tickclock_x86_decode(tickclock_fixture_cpuid, p.fx.get(), &plain);
    CHECK(std::memcmp(&gated, &plain, sizeof gated) == 0);
    CHECK(plain.have_cpuid == 1);
    if (!plain.hypervisor) CHECK_FALSE(plain.hv_valid);
    if (plain.max_leaf < 0x15) CHECK_FALSE(plain.leaf15_valid);
    if (plain.max_ext_leaf < 0x80000007u) CHECK_FALSE(plain.invariant_known);
    n_hv += plain.hv_valid;
    tickclock_freq f;
    if (tickclock_x86_freq_cpuid(&plain, &f)) {
      n_freq++;
      methods.insert(f.name);
      CHECK(f.hz_den != 0);
      double hz = (double)f.hz_num / (double)f.hz_den;
      CHECK_MESSAGE((hz > 1e8 && hz < 1e10), "implausible TSC frequency " << hz);
    }

    const char *verdicts[][2] = {{"tsc", "tsc hpet acpi_pm"},
                                 {"kvm-clock", "kvm-clock tsc"},
                                 {"kvm-clock", "kvm-clock"},
                                 {"hpet", "hpet acpi_pm"},
                                 {"", ""}};
    for (auto &v : verdicts) {
      tickclock_evidence ev;
      tickclock_fixture_evidence(p.fx.get(), &ev);
      ev.os_linux = v[0][0] != '\0';
      ev.clocksource_known = ev.os_linux;
      tkc_strlcpy(ev.clocksource, v[0], sizeof ev.clocksource);
      ev.available_known = ev.os_linux;
      tkc_strlcpy(ev.available_clocksource, v[1], sizeof ev.available_clocksource);
      list_claims(&ev);  // the perf page's reason names the clocksource
      std::unique_ptr<tickclock_info> info(new tickclock_info);
      int rc = tickclock_decide(&ev, info.get());
      if (rc == 1) {  // wants a calibration: give one near the CPUID answer or 2.5 GHz
        ev.cal.ok = 1;
        ev.cal.hz_num = tickclock_x86_freq_cpuid(&plain, &f) ? f.hz_num : UINT64_C(2500000000);
        ev.cal.hz_den = tickclock_x86_freq_cpuid(&plain, &f) ? f.hz_den : 1;
        ev.cal.hz = (double)ev.cal.hz_num / (double)ev.cal.hz_den;
        ev.cal.ns = 20000000;
        ev.cal.ticks = 1;
        ev.cal.uncertainty_ppm = 1;
        list_claims(&ev);
        rc = tickclock_decide(&ev, info.get());
      }
      CHECK(rc == 0);
      // every reason whole: none fills its buffer (a cut one would), and
      // the state's line does not repeat the source's name
      CHECK(std::strlen(info->why) + 1 < sizeof info->why);
      for (unsigned k = 0; k < info->n_candidates; k++)
        CHECK(std::strlen(info->candidates[k].reason) + 1 < sizeof info->candidates[k].reason);
      for (unsigned k = 0; k < info->n_freqs; k++)
        CHECK(std::strlen(info->freqs[k].reason) + 1 < sizeof info->freqs[k].reason);
      CHECK(std::strncmp(info->why, (std::string(info->source_name) + ":").c_str(),
                         std::strlen(info->source_name) + 1) != 0);
      std::string m = malformed(*info);
      CHECK_MESSAGE(m == "", m << " under clocksource '" << v[0] << "'");
      if (info->source == TICKCLOCK_SOURCE_TSC) {
        n_tsc++;
        CHECK((plain.invariant_tsc || plain.hv_valid));
        CHECK(std::string(v[0]) != "hpet");
        CHECK(std::string(v[1]) != "kvm-clock");
      }
    }
  }
  MESSAGE(files.size() << " dumps: " << n_hv << " with a hypervisor range, " << n_freq
                       << " with a CPUID frequency, " << n_tsc << " TSC decisions");
  CHECK(n_freq > 0);
}
