// validate's advice beside a verdict of the OS clock (validate_advice.cc),
// fed the facts of the hosts met so far: the reasons it gives come from
// what each host states, it tells an outer hypervisor's CPUID signature
// from the kernel's own, and it says what the refusal costs.

#include <cstdlib>
#include <string>

#include "doctest/doctest.h"
#include "src/probe/validate.h"
#include "tests/support/fixture_util.h"

using tickclock_probe::Advice;
using tickclock_probe::AdviceFacts;
using tickclock_probe::advise;

namespace {
bool has(const Advice &a, const std::string &text) {
  for (const std::string &l : a.lines)
    if (l.find(text) != std::string::npos) return true;
  return a.json().find(text) != std::string::npos;
}

// A PVM guest nested in a bhyve VM: kvm-clock only, the TSC marked
// unstable on the command line, the outer hypervisor's signature in CPUID,
// where the TSC was refused: as it was before the kvm-clock page was read,
// and as it is wherever that page is unreadable or not stable (the advice
// is for a verdict of the OS clock; where the page is stable the library
// takes the TSC and no advice is given).
AdviceFacts pvm_guest() {
  AdviceFacts f;
  f.clocksource = "kvm-clock";
  f.available = "kvm-clock";
  f.cmdline =
      "console=ttyS0 clocksource=kvm-clock tsc=reliable tsc=unstable quiet -- --init tsc=ignored";
  f.signature = "bhyve bhyve ";
  f.why = "tsc refused: the kernel prefers the paravirtual clock 'kvm-clock'";
  f.system_ns = 26;
  f.tsc_ns = 10.5;
  f.syscall_ns = 2600;
  return f;
}
}  // namespace

TEST_CASE("a nested PVM guest: the command line's words, the outer signature, the costs") {
  Advice a = advise(pvm_guest());
  for (const std::string &l : a.lines) MESSAGE(l);
  CHECK(a.applies);
  CHECK(a.cmdline == "clocksource=kvm-clock tsc=reliable tsc=unstable");  // not init's words
  CHECK(a.outer);
  CHECK(has(a, "the kernel was told not to trust the TSC"));
  CHECK(has(a, "'bhyve bhyve ' is not KVM"));
  CHECK(has(a, "outer hypervisor"));
  CHECK(has(a, "26.0 ns a read against the TSC's 10.5 ns (2.5x)"));
  CHECK(has(a, "system call, 2.60 us here"));
  CHECK(has(a, "dmesg | grep -i -E 'tsc|clocksource'"));
  CHECK(has(a, "snapshots"));
  CHECK(has(a, "\"outer_hypervisor\":true"));
  CHECK(has(a, "\"syscall\":2600"));
}

TEST_CASE("kvm-clock under KVM itself: the signature is the kernel's own hypervisor") {
  AdviceFacts f = pvm_guest();
  f.signature = "KVMKVMKVM";
  f.cmdline = "console=ttyS0";
  Advice a = advise(f);
  CHECK_FALSE(a.outer);
  CHECK(a.cmdline.empty());
  CHECK(has(a, "'KVMKVMKVM' is the hypervisor whose clock 'kvm-clock'"));
  CHECK_FALSE(has(a, "outer hypervisor"));
  CHECK_FALSE(has(a, "told not to trust"));
}

TEST_CASE("the Hyper-V TSC page: Hyper-V's signature matches, another one is an outer VM's") {
  AdviceFacts f = pvm_guest();
  f.clocksource = "hyperv_clocksource_tsc_page";
  f.cmdline = "";
  f.signature = "Microsoft Hv";
  CHECK_FALSE(advise(f).outer);
  f.signature = "KVMKVMKVM";
  CHECK(advise(f).outer);
}

TEST_CASE("no paravirtual clock (hpet under TCG): no signature judgement, the CPU's lack named") {
  AdviceFacts f;
  f.clocksource = "hpet";
  f.available = "hpet acpi_pm";
  f.signature = "TCGTCGTCGTCG";
  f.invariant_tsc = false;
  f.why = "tsc refused: no invariant TSC";
  f.system_ns = 40;
  Advice a = advise(f);
  CHECK_FALSE(a.outer);
  CHECK(a.kernel_hypervisor.empty());
  CHECK_FALSE(has(a, "CPUID signature"));
  CHECK(has(a, "CPUID states no invariant TSC"));
  CHECK(has(a, "the OS clock 40.0 ns a read;"));  // no TSC cost measured: no ratio
  CHECK(has(a, "\"tsc\":null"));
}

TEST_CASE(
    "every recorded host that gets the OS clock (or would without its clock page): the advice "
    "reads that host's statements") {
  int advised = 0, outer = 0;
  for (const std::string &path :
       tctest::list_cpuid(tctest::runfiles_root() + "/tests/fixtures/hosts")) {
    std::string n = path.substr(path.rfind('/') + 1), text;
    CAPTURE(n);
    REQUIRE(tctest::read_file(path, &text));
    tctest::Parsed p = tctest::parse_text(text, n);
    REQUIRE_MESSAGE(p.bad_line == 0, p.err);
    const tickclock_fixture *fx = p.fx.get();
    auto meta = [&](const char *k) { return tctest::meta(fx, k); };
    // the OS clock, or the OS clock where its clock page could not be read
    // (the page is what trusts the TSC there)
    if ((meta("expect.source") != "system" && meta("pvclock.mul").empty()) ||
        meta("clocksource").empty())
      continue;
    tickclock_x86_facts x;
    tickclock_x86_decode(tickclock_fixture_cpuid, (void *)fx, &x);
    AdviceFacts facts;
    facts.clocksource = meta("clocksource");
    facts.available = meta("available_clocksource");
    facts.cmdline = meta("kernel.cmdline_clock");
    facts.signature = x.hv_valid ? x.hv_signature : "";
    facts.invariant_tsc = x.invariant_tsc != 0;
    facts.why = "(recorded)";
    facts.system_ns = atof(meta("read_ns.system").c_str());
    facts.tsc_ns = atof(meta("read_ns.tsc").c_str());
    facts.syscall_ns = 2600;
    Advice a = advise(facts);
    MESSAGE(n << ": " << a.lines[0]);
    CHECK(has(a, "'" + facts.clocksource + "'"));
    if (!x.invariant_tsc) CHECK(has(a, "no invariant TSC"));
    if (facts.cmdline.find("tsc=unstable") != std::string::npos)
      CHECK(has(a, "told not to trust the TSC"));
    // kvm-clock seen with another hypervisor's signature: the nested guest
    if (facts.clocksource == "kvm-clock" && facts.signature != "KVMKVMKVM") CHECK(a.outer);
    advised++;
    outer += a.outer;
  }
  MESSAGE(advised << " recorded hosts on the OS clock advised, " << outer
                  << " seeing an outer hypervisor's signature");
  CHECK(advised >= 2);
  CHECK(outer >= 1);  // the nested PVM guest
}

TEST_CASE("the command line as the kernel parses it: a quoted value is not a parameter") {
  AdviceFacts f = pvm_guest();
  // dyndbg's quoted value holds words that are no parameters of their own;
  // the kernel reads '-' and '_' in a parameter's name alike
  f.cmdline =
      "console=ttyS0 dyndbg=\"file tsc=unstable +p\" no_kvmclock tsc-early-khz=2100000 "
      "tsc=reliable";
  Advice a = advise(f);
  CHECK(a.cmdline == "no_kvmclock tsc-early-khz=2100000 tsc=reliable");
  CHECK_FALSE(has(a, "told not to trust"));
  f.cmdline = "clocksource=\"kvm-clock\" tsc=unstable";
  CHECK(advise(f).cmdline == "clocksource=\"kvm-clock\" tsc=unstable");
}

TEST_CASE("bytes that are no text (the command line's, a signature's): escaped in lines and JSON") {
  // the library hands out a printable signature; the command line is read
  // as it is, whatever a boot loader put there
  AdviceFacts f = pvm_guest();
  f.signature = std::string("\x1b[2J\x01\"evil\\", 10);
  f.cmdline = std::string("tsc=unstable\x1b]0;owned\x07 clocksource=kvm-clock");
  Advice a = advise(f);
  for (const std::string &l : a.lines)
    for (unsigned char c : l) CHECK((c >= 0x20 && c < 0x7f));
  CHECK(has(a, "\\x1b[2J\\x01"));
  CHECK(has(a, "tsc=unstable\\x1b]0;owned\\x07"));
  std::string j = a.json();
  CHECK(j.find('\x1b') == std::string::npos);
  CHECK(j.find('\x01') == std::string::npos);
  CHECK(j.find('\x07') == std::string::npos);
}

TEST_CASE("KVM and Xen also show Hyper-V's signature: not an outer hypervisor by itself") {
  // a guest with Hyper-V enlightenments: 'Microsoft Hv' at 0x40000000, the
  // hypervisor's own signature at 0x40000100
  AdviceFacts f = pvm_guest();
  f.cmdline = "";
  f.signature = "Microsoft Hv";
  f.more_signatures = {"KVMKVMKVM"};
  Advice a = advise(f);
  CHECK_FALSE(a.outer);
  CHECK_FALSE(has(a, "outer hypervisor"));
  f.clocksource = f.available = "xen";
  f.more_signatures = {"XenVMMXenVMM"};
  CHECK_FALSE(advise(f).outer);
  // no further signature read: KVM's and Xen's Hyper-V face cannot be told
  // from an outer Hyper-V, and the advice says both
  f.more_signatures.clear();
  a = advise(f);
  CHECK_FALSE(a.outer);
  CHECK(has(a, "Hyper-V-compatible interface"));
  // a signature of neither family is still an outer one's
  f.signature = "bhyve bhyve ";
  CHECK(advise(f).outer);
}

TEST_CASE("the fixture's clock words: whole words only, escaped, within the metadata limit") {
  using tickclock_probe::clock_words_text;
  std::string line = "ro tsc=unstable clocksource=kvm-clock quiet";
  CHECK(clock_words_text(line, 200) == "tsc=unstable clocksource=kvm-clock");
  CHECK(clock_words_text(line, 30) == "tsc=unstable");  // never "tsc=unstable clocksou"
  CHECK(clock_words_text(line, 11).empty());
  std::string ctl = std::string("tsc=unsta") + '\x1b' + "ble";
  std::string got = clock_words_text(ctl, 200);
  CHECK(got.find('\x1b') == std::string::npos);
  MESSAGE("escaped: " << got);
}
