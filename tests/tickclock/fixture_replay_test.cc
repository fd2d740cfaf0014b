// Every curated fixture (tests/fixtures/cpuid/*.cpuid) through the parser,
// the decoder, the frequency rules and the decider; each `# expect.*` line
// (written by an independent Python implementation, annotate.py) checked.
#include <set>
#include <sstream>

#include "doctest/doctest.h"
#include "tests/support/fixture_util.h"

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

// What the coverage test counts over the whole set.
struct Tally {
  std::set<std::string> hv_seen, vendors_seen;
  int n_tsc = 0, n_system = 0;
};

// One fixture: every expectation it carries. A problem that leaves nothing
// further to check (unreadable, unparsable, a missing expectation, no
// decision) fails this fixture and ends it: no other fixture is hidden.
void replay_one(const std::string &path, Tally *tally) {
  CAPTURE(path);
  std::string text;
  if (!read_file(path, &text)) {
    FAIL_CHECK("cannot read " << path);
    return;
  }
  Parsed p = parse_text(text, path);
  if (p.bad_line != 0) {
    FAIL_CHECK(p.err);
    return;
  }
  const tickclock_fixture *fx = p.fx.get();
  bool complete = true;
  for (const char *k :
       {"expect.vendor", "expect.family", "expect.model", "expect.stepping", "expect.invariant_tsc",
        "expect.hypervisor", "expect.tsc_hz", "expect.tsc_hz.method", "expect.source",
        "expect.freq", "expect.refused", "expect.hz", "clocksource"})
    if (tickclock_fixture_meta_get(fx, k) == nullptr) {
      FAIL_CHECK("missing # " << k);
      complete = false;
    }
  if (!complete) return;

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
    if (tally) tally->hv_seen.insert(hv);
  }
  if (tally) tally->vendors_seen.insert(rtrim(x.vendor));
  tickclock_freq f;
  int have = tickclock_x86_freq_cpuid(&x, &f);
  if (meta(fx, "expect.tsc_hz") == "none") {
    CHECK_FALSE(have);
    CHECK(meta(fx, "expect.tsc_hz.method") == "none");
  } else if (!have) {
    FAIL_CHECK("no CPUID frequency, expected " << meta(fx, "expect.tsc_hz") << ": " << f.why);
  } else {
    CHECK(hz_text(f.hz_num, f.hz_den) == meta(fx, "expect.tsc_hz"));
    CHECK(std::string(f.name) == meta(fx, "expect.tsc_hz.method"));
  }

  std::unique_ptr<tickclock_info> info(new tickclock_info);
  int rc = tickclock_decide(&ev, info.get());
  if (rc != 0) {
    FAIL_CHECK("the decision needs a calibration the fixture does not give");
    return;
  }
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
  if (tally) {
    if (info->source == TICKCLOCK_SOURCE_TSC)
      tally->n_tsc++;
    else
      tally->n_system++;
  }
}

std::vector<std::string> curated() { return list_cpuid(runfiles_root() + "/tests/fixtures/cpuid"); }

}  // namespace

// One subcase per fixture, named by its file: run one alone with
// --subcase=NAME.cpuid.
TEST_CASE("curated fixtures replay with their expectations") {
  std::vector<std::string> files = curated();
  REQUIRE(files.size() >= 40);
  for (const std::string &path : files) {
    std::string name = path.substr(path.rfind('/') + 1);
    SUBCASE(name.c_str()) { replay_one(path, nullptr); }
  }
}

TEST_CASE("the curated set covers every hypervisor, vendor and policy rule") {
  std::vector<std::string> files = curated();
  REQUIRE(files.size() >= 40);
  Tally t;
  for (const std::string &path : files) replay_one(path, &t);
  // coverage of the curated set
  for (const char *h :
       {"KVMKVMKVM", "XenVMMXenVMM", "Microsoft Hv", "VMwareVMware", "VBoxVBoxVBox"})
    CHECK_MESSAGE(t.hv_seen.count(h) == 1, "no fixture for hypervisor " << h);
  for (const char *v : {"GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls"})
    CHECK_MESSAGE(t.vendors_seen.count(v) == 1, "no fixture for vendor " << v);
  CHECK(t.n_tsc >= 10);
  // the policy fixtures: each rule of the oracle's policy on both sides
  for (const char *f :
       {"policy__hyperv-promise__wsl2.cpuid", "policy__read-cost-equal__coffeelake.cpuid",
        "policy__read-cost-dearer__coffeelake.cpuid", "policy__cal-cap-inside__coffeelake.cpuid",
        "policy__cal-cap-outside__coffeelake.cpuid", "policy__perf-page__coffeelake.cpuid",
        "policy__agree-inside__coffeelake.cpuid", "policy__agree-outside__coffeelake.cpuid"}) {
    bool found = false;
    for (const std::string &path : files)
      if (path.size() >= std::strlen(f) &&
          path.compare(path.size() - std::strlen(f), std::string::npos, f) == 0)
        found = true;
    CHECK_MESSAGE(found, "missing policy fixture " << f);
  }
  CHECK(t.n_system >= 10);
  MESSAGE("replayed " << files.size() << " fixtures: " << t.n_tsc << " tsc, " << t.n_system
                      << " system");
}
