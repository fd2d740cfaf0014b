// libFuzzer target: the decider over evidence built from fuzz bytes
// (CPUID facts from a fuzzed CPU, Linux facts, read costs, calibration,
// perf page, env value, config request), decided twice the way init.c
// does. Checks the decision's invariants, not just "no crash".
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

namespace {
struct Reader {
  const uint8_t *p;
  size_t n, i;
  uint8_t u8() { return i < n ? p[i++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = (v << 8) | u8();
    return v;
  }
  uint64_t u64() { return ((uint64_t)u32() << 32) | u32(); }
  double dbl() {
    uint64_t v = u64();
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
  }
  void str(char *dst, size_t cap) {
    size_t len = u8() % cap;
    for (size_t k = 0; k < len; k++) dst[k] = (char)u8();
    dst[len] = '\0';
  }
};

int fuzz_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  const Reader *r = static_cast<const Reader *>(ctx);
  uint64_t k = ((uint64_t)leaf * 0x9E3779B1u) ^ ((uint64_t)subleaf * 0x85EBCA77u);
  uint32_t w[4] = {0, 0, 0, 0};
  if (r->n)
    for (int j = 0; j < 4; j++)
      for (int i = 0; i < 4; i++)
        w[j] = (w[j] << 8) | r->p[(k * 16 + (uint64_t)(j * 4 + i)) % r->n];
  out->eax = w[0];
  out->ebx = w[1];
  out->ecx = w[2];
  out->edx = w[3];
  return 1;
}

const char *const kClocksources[] = {
    "tsc", "kvm-clock", "hpet", "xen", "hyperv_clocksource_tsc_page", "acpi_pm", ""};
const char *const kAvail[] = {"tsc kvm-clock", "kvm-clock", "tsc hpet acpi_pm", "", "tsc"};
}  // namespace

static tickclock_evidence ev;
static tickclock_info info;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r = {data, size, 0};
  memset(&ev, 0, sizeof ev);
  uint8_t sel = r.u8();
  ev.arch_counter = (sel & 1) ? TICKCLOCK_SOURCE_TSC : (int)(r.u8() % TICKCLOCK_SOURCE_COUNT_);
  tickclock_x86_decode(fuzz_cpuid, &r, &ev.x86);
  ev.os_source = (sel & 2) ? TICKCLOCK_SOURCE_QPC : TICKCLOCK_SOURCE_SYSTEM;
  ev.os_hz = (sel & 2) ? r.u64() : UINT64_C(1000000000);
  ev.os_linux = (sel >> 2) & 1;
  ev.tsc_prctl = r.u8() % 3;
  ev.clocksource_known = (sel >> 3) & 1;
  if (sel & 0x10)
    r.str(ev.clocksource, sizeof ev.clocksource);
  else
    tkc_strlcpy(ev.clocksource, kClocksources[r.u8() % 7], sizeof ev.clocksource);
  ev.available_known = (sel >> 5) & 1;
  if (sel & 0x40)
    r.str(ev.available_clocksource, sizeof ev.available_clocksource);
  else
    tkc_strlcpy(ev.available_clocksource, kAvail[r.u8() % 5], sizeof ev.available_clocksource);
  ev.perf.attempted = 1;
  ev.perf.ok = r.u8() & 1;
  ev.perf.cap_user_time = r.u8() & 1;
  ev.perf.time_mult = r.u32();
  ev.perf.time_shift = r.u8();
  if (r.u8() & 1) {
    ev.arch_nominal.ok = 1;
    ev.arch_nominal.hz_num = r.u64();
    ev.arch_nominal.hz_den = r.u64();
    ev.arch_nominal.method = TICKCLOCK_FREQ_ARCH_REGISTER;
    ev.arch_nominal.source = TKC_SRC_ARCH_REGISTER;
    ev.arch_nominal.name = "fuzz_nominal";
    ev.arch_nominal.uncertainty_ppm = r.dbl();
  }
  ev.counter_read_ns = r.dbl();
  ev.os_read_ns = r.dbl();
  ev.os_resolution_ns = r.dbl();
  ev.cfg_source = (int)(r.u8() % TICKCLOCK_SOURCE_COUNT_);
  ev.have_env = r.u8() & 1;
  if (ev.have_env) r.str(ev.env_value, sizeof ev.env_value);
  tkc_list_claims(&ev);
  int again = tickclock_decide(&ev, &info);
  if (again) {
    ev.cal.ok = r.u8() & 1;
    ev.cal.ticks = r.u64();
    ev.cal.ns = r.u64() | 1;
    ev.cal.hz_num = r.u64();
    ev.cal.hz_den = r.u64();
    ev.cal.hz = r.dbl();
    ev.cal.uncertainty_ppm = r.dbl();
    tkc_list_claims(&ev);
    tickclock_decide(&ev, &info);
  }
  // invariants of any decision
  if (info.source <= 0 || info.source >= TICKCLOCK_SOURCE_COUNT_) __builtin_trap();
  if (info.n_candidates > TICKCLOCK_MAX_CANDIDATES || info.n_freqs > TICKCLOCK_MAX_FREQS)
    __builtin_trap();
  if (memchr(info.why, 0, sizeof info.why) == NULL) __builtin_trap();
  if (info.source_name == NULL) __builtin_trap();
  return 0;
}
