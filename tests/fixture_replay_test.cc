// Every curated fixture (tests/fixtures/cpuid/*.cpuid) through the parser,
// the decoder, the frequency rules and the decider; each `# expect.*` line
// (written by an independent Python implementation, annotate.py) checked.
#include <set>
#include <sstream>

#include "doctest/doctest.h"
#include "tests/fixture_util.h"

using namespace tctest;

namespace {

std::set<std::string> words(const std::string &s) {
  std::set<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w)
    if (w != "none") out.insert(w);
  return out;
}

unsigned long parse_num(const std::string &s) { return std::strtoul(s.c_str(), nullptr, 0); }

}  // namespace

TEST_CASE("curated fixtures replay with their expectations") {
  std::string dir = runfiles_root() + "/tests/fixtures/cpuid";
  std::vector<std::string> files = list_cpuid(dir);
  REQUIRE(files.size() >= 40);
  std::set<std::string> hv_seen, vendors_seen;
  int n_tsc = 0, n_system = 0;
  for (const std::string &path : files) {
    CAPTURE(path);
    std::string text;
    REQUIRE(read_file(path, &text));
    Parsed p = parse_text(text, path);
    REQUIRE_MESSAGE(p.bad_line == 0, p.err);
    const tickclock_fixture *fx = p.fx.get();
    for (const char *k : {"expect.vendor", "expect.family", "expect.model", "expect.stepping",
                          "expect.invariant_tsc", "expect.hypervisor", "expect.tsc_hz",
                          "expect.tsc_hz.method", "expect.source", "expect.freq",
                          "expect.refused", "expect.hz", "clocksource"})
      REQUIRE_MESSAGE(tickclock_fixture_meta_get(fx, k) != nullptr, "missing # " << k);

    tickclock_evidence ev;
    tickclock_fixture_evidence(fx, &ev);
    const tickclock_x86_facts &x = ev.x86;
    CHECK(x.have_cpuid);
    CHECK(rtrim(x.vendor) == meta(fx, "expect.vendor"));
    CHECK(x.family == parse_num(meta(fx, "expect.family")));
    CHECK(x.model == parse_num(meta(fx, "expect.model")));
    CHECK(x.stepping == parse_num(meta(fx, "expect.stepping")));
    std::string inv = meta(fx, "expect.invariant_tsc");
    if (inv == "unknown") {
      CHECK_FALSE(x.invariant_known);
    } else {
      CHECK(x.invariant_known);
      CHECK(x.invariant_tsc == (int)parse_num(inv));
    }
    std::string hv = meta(fx, "expect.hypervisor");
    if (hv == "none") {
      CHECK_FALSE(x.hv_valid);
    } else {
      CHECK(x.hv_valid);
      CHECK(rtrim(x.hv_signature) == hv);
      hv_seen.insert(hv);
    }
    vendors_seen.insert(rtrim(x.vendor));
    tickclock_freq f;
    int have = tickclock_x86_freq_cpuid(&x, &f);
    if (meta(fx, "expect.tsc_hz") == "none") {
      CHECK_FALSE(have);
      CHECK(meta(fx, "expect.tsc_hz.method") == "none");
    } else {
      REQUIRE(have);
      CHECK(hz_text(f.hz_num, f.hz_den) == meta(fx, "expect.tsc_hz"));
      CHECK(std::string(f.name) == meta(fx, "expect.tsc_hz.method"));
    }

    std::unique_ptr<tickclock_info> info(new tickclock_info);
    int rc = tickclock_decide(&ev, info.get());
    REQUIRE_MESSAGE(rc == 0, "the decision needs a calibration the fixture does not give");
    CHECK_MESSAGE(malformed(*info) == "", malformed(*info));
    CHECK(std::string(info->source_name) == meta(fx, "expect.source"));
    CHECK(std::string(info->freq_detail) == meta(fx, "expect.freq"));
    // the frequency itself, not only the name of the rule that gave it
    CHECK(hz_text(info->hz_num, info->hz_den) == meta(fx, "expect.hz"));
    CHECK(hz_text(info->conv.hz_num, info->conv.hz_den) == meta(fx, "expect.hz"));
    std::set<std::string> refused;
    for (unsigned i = 0; i < info->n_freqs; i++)
      if (info->freqs[i].checked && !info->freqs[i].usable) {
        refused.insert(info->freqs[i].name);
        CHECK(std::string(info->freqs[i].reason).find("disagrees with calibration") !=
              std::string::npos);
      }
    CHECK(refused == words(meta(fx, "expect.refused")));
    if (info->source == TICKCLOCK_SOURCE_TSC) n_tsc++;
    else n_system++;
  }
  // coverage of the curated set
  for (const char *h : {"KVMKVMKVM", "XenVMMXenVMM", "Microsoft Hv", "VMwareVMware",
                        "VBoxVBoxVBox"})
    CHECK_MESSAGE(hv_seen.count(h) == 1, "no fixture for hypervisor " << h);
  for (const char *v : {"GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls"})
    CHECK_MESSAGE(vendors_seen.count(v) == 1, "no fixture for vendor " << v);
  CHECK(n_tsc >= 10);
  // the policy fixtures: each rule of the oracle's policy on both sides
  for (const char *f : {"policy__hyperv-promise__wsl2.cpuid", "policy__read-cost-equal__coffeelake.cpuid",
                        "policy__read-cost-dearer__coffeelake.cpuid",
                        "policy__cal-cap-inside__coffeelake.cpuid",
                        "policy__cal-cap-outside__coffeelake.cpuid",
                        "policy__perf-page__coffeelake.cpuid",
                        "policy__agree-inside__coffeelake.cpuid",
                        "policy__agree-outside__coffeelake.cpuid"}) {
    bool found = false;
    for (const std::string &path : files)
      if (path.size() >= std::strlen(f) && path.compare(path.size() - std::strlen(f), std::string::npos, f) == 0)
        found = true;
    CHECK_MESSAGE(found, "missing policy fixture " << f);
  }
  CHECK(n_system >= 10);
  MESSAGE("replayed " << files.size() << " fixtures: " << n_tsc << " tsc, " << n_system
                      << " system");
}
