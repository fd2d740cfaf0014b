// The fixture parser and the evidence replayed from a fixture's metadata
// (fixture.c), on fixtures written here.
#include "doctest/doctest.h"
#include "tests/support/x86_leaves.h"

using namespace tctest;

// ---- fixture parser ----------------------------------------------------------

TEST_CASE("fixture parser: leaves, metadata, comments, CRLF") {
  std::string t =
      "# a comment line\r\n"
      "# clocksource: tsc\n"
      "#expect.tsc_hz:  2100000000  \n"
      "\n"
      "00000000 00000000 00000016 756e6547 6c65746e 49656e69\n"
      "00000015 00000000 00000002 000000B8 016e3600 00000000\r\n"
      "  00000007 00000001 00000000 00000000 00000000 00000000  \n";
  Parsed p = parse_text(t, "x.cpuid");
  REQUIRE_MESSAGE(p.bad_line == 0, p.err);
  CHECK(p.fx->n_leaves == 3);
  CHECK(meta(p.fx.get(), "clocksource") == "tsc");
  CHECK(meta(p.fx.get(), "expect.tsc_hz") == "2100000000");
  CHECK(tickclock_fixture_meta_get(p.fx.get(), "a") == nullptr);
  tickclock_cpuid_regs r;
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 0x15, 0, &r) == 1);
  CHECK(r.ebx == 0xb8u);
  CHECK(r.ecx == 0x016e3600u);
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 7, 1, &r) == 1);
  CHECK(tickclock_fixture_cpuid(p.fx.get(), 7, 0, &r) == 1);  // absent: zeros
  CHECK(r.eax == 0);
  CHECK(r.ebx == 0);
}

TEST_CASE("fixture parser: malformed input names the file and line") {
  struct Case {
    const char *text;
    unsigned line;
    const char *what;
  } cases[] = {
      {"00000000 00000000 00000001 0 0 0\n", 1, "8 hex digits"},
      {"# ok\n00000000 00000000 00000001 00000000 00000000\n", 2, "6 fields"},
      {"00000000 00000000 00000001 00000000 00000000 00000000 00000000\n", 1, "trailing"},
      {"00000000 00000000 00000001 00000000 00000000 0000000g\n", 1, "8 hex digits"},
      {"00000000 00000000 00000001 00000000 00000000 000000001\n", 1, "8 hex digits"},
      {"00000000 00000000 0000000d 00000000 00000000 00000000\n\n"
       "00000000 00000000 0000000d 00000000 00000000 00000000\n",
       3, "duplicate"},
      {"# nothing but comments\n", 1, "no CPUID leaves"},
      {"", 1, "no CPUID leaves"},
      {"garbage\n", 1, "8 hex digits"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.text);
    Parsed p = parse_text(c.text, "bad.cpuid");
    CHECK(p.bad_line == c.line);
    CHECK(p.err.rfind("bad.cpuid:" + std::to_string(c.line) + ": ", 0) == 0);
    CHECK(contains(p.err, c.what));
  }
  std::string nul("00000000 00000000 0000000d 00000000 00000000 00000000\n0000\0", 59);
  Parsed p = parse_text(nul, "nul.cpuid");
  CHECK(p.bad_line == 2);
}

// ---- fixture evidence: each metadata key read as the header says ---------------

TEST_CASE("fixture evidence: metadata keys") {
  std::string t =
      "# clocksource: kvm-clock\n"
      "# available_clocksource: kvm-clock tsc acpi_pm\n"
      "# calibration_hz: 2100000000.5\n"
      "# calibration_ppm: 7.5\n"
      "# read_ns.tsc: 12.5\n"
      "# read_ns.system: 31.25\n"
      "# perf.time_mult: 0x1234\n"
      "# perf.time_shift: 10\n"
      "00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n";
  Parsed p = parse_text(t, "meta.cpuid");
  REQUIRE(p.bad_line == 0);
  tickclock_evidence ev;
  tickclock_fixture_evidence(p.fx.get(), &ev);
  CHECK(ev.arch_counter == TICKCLOCK_SOURCE_TSC);
  CHECK(ev.x86.have_cpuid == 1);
  CHECK(ev.os_linux == 1);
  CHECK(ev.clocksource_known == 1);
  CHECK(std::string(ev.clocksource) == "kvm-clock");
  CHECK(ev.available_known == 1);
  CHECK(std::string(ev.available_clocksource) == "kvm-clock tsc acpi_pm");
  CHECK(ev.cal.ok == 1);
  CHECK(ev.cal.hz_num == UINT64_C(4200000001));
  CHECK(ev.cal.hz_den == 2);
  CHECK(ev.cal.uncertainty_ppm == 7.5);
  CHECK(ev.counter_read_ns == 12.5);
  CHECK(ev.os_read_ns == 31.25);
  CHECK(ev.perf.ok == 1);
  CHECK(ev.perf.cap_user_time == 1);
  CHECK(ev.perf.time_mult == 0x1234u);
  CHECK(ev.perf.time_shift == 10u);
  CHECK(ev.tsc_prctl == TICKCLOCK_PRCTL_ENABLED);

  // NUM/DEN, no ppm (default 1), no clocksource (Linux checks off)
  Parsed q = parse_text(
      "# calibration_hz: 7000000000/3\n"
      "00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n",
      "q.cpuid");
  REQUIRE(q.bad_line == 0);
  tickclock_fixture_evidence(q.fx.get(), &ev);
  CHECK(ev.cal.hz_num == UINT64_C(7000000000));
  CHECK(ev.cal.hz_den == 3);
  CHECK(ev.cal.uncertainty_ppm == 1.0);
  CHECK(ev.os_linux == 0);
  CHECK(ev.clocksource_known == 0);
  CHECK(ev.perf.attempted == 0);
  CHECK(ev.counter_read_ns == 0);

  // malformed calibration: none
  for (const char *bad : {"0", "x", "21/0", "21/", "2.1e9", "-5"}) {
    CAPTURE(bad);
    Parsed b = parse_text(std::string("# calibration_hz: ") + bad +
                              "\n00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n",
                          "b.cpuid");
    REQUIRE(b.bad_line == 0);
    tickclock_fixture_evidence(b.fx.get(), &ev);
    CHECK(ev.cal.ok == 0);
  }

  // a fixture without leaf 0 describes no CPUID
  Parsed n = parse_text("00000001 00000000 000906a3 00000000 00000000 00000010\n", "n.cpuid");
  REQUIRE(n.bad_line == 0);
  tickclock_fixture_evidence(n.fx.get(), &ev);
  CHECK(ev.x86.have_cpuid == 0);
}
