// tickclock-probe cpuid [--file F] [--dump] [--json]
//
// Decodes this CPU (or a recorded dump, --file) with the core's pure
// decoder and frequency rules. --dump prints the leaves in the fixture
// format (src/tickclock/README.md), so a user on a new CPU or hypervisor can
// contribute one; --json prints the keys the schema lists
// (src/probe/schema/tickclock-probe.schema.json; absent data is null).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "tickclock_tools.h"
#include "src/probe/commands.h"
#include "src/probe/cpuid_dump.h"
#include "src/probe/json.h"
#include "src/probe/util.h"

namespace tickclock_probe {
namespace {

std::string hz_text(const tickclock_freq &f) {
  char b[64];
  if (f.hz_den == 1)
    std::snprintf(b, sizeof b, "%llu", (unsigned long long)f.hz_num);
  else
    std::snprintf(b, sizeof b, "%.3f", (double)f.hz_num / (double)f.hz_den);
  return b;
}

// The crystal table's answer for this model: the entry (or why the model is
// left out), and the TSC it gives with leaf 0x15's ratio when ECX is 0.
struct TableAnswer {
  const tickclock_x86_crystal *entry = nullptr;
  const char *excluded = nullptr;
  int fits_base = -1;    // crystal x ratio within 1 % of leaf 0x16's base (-1: no base)
  bool applies = false;  // ratio present, ECX 0, fits: the table gives the frequency
  uint64_t num = 0, den = 1;
};

TableAnswer table_answer(const tickclock_x86_facts &x) {
  TableAnswer a;
  a.entry = tickclock_x86_crystal_lookup(&x);
  a.excluded = tickclock_x86_crystal_excluded(&x);
  a.fits_base = a.entry ? tickclock_x86_crystal_fits_base(&x, a.entry) : -1;
  if (a.entry && x.leaf15_valid && x.leaf15_num && x.leaf15_den && x.leaf15_crystal_hz == 0 &&
      a.fits_base != 0) {
    a.applies = true;
    a.num = (uint64_t)a.entry->hz * x.leaf15_num;
    a.den = x.leaf15_den;
    tkt_reduce(&a.num, &a.den);
  }
  return a;
}

std::string crystal_table_json(const tickclock_x86_facts &x, const tickclock_freq *linux_rule) {
  TableAnswer a = table_answer(x);
  tickclock_freq t;
  std::memset(&t, 0, sizeof t);
  t.hz_num = a.num;
  t.hz_den = a.den;
  std::string o =
      "{\"crystal_hz\": " + (a.entry ? json_u(a.entry->hz) : std::string("null")) +
      ", \"tsc_hz\": " + (a.applies ? hz_text(t) : std::string("null")) +
      ", \"fits_base\": " + (a.fits_base < 0 ? std::string("null") : json_b(a.fits_base)) +
      ", \"ppm_vs_linux\": ";
  if (a.applies && linux_rule)
    o += json_num(tkt_ppm(a.num, a.den, linux_rule->hz_num, linux_rule->hz_den));
  else
    o += "null";
  o += ", \"parts\": " + (a.entry ? json_str(a.entry->parts) : std::string("null")) +
       ", \"evidence\": " + (a.entry ? json_str(a.entry->evidence) : std::string("null")) +
       ", \"left_out\": " + (a.excluded ? json_str(a.excluded) : std::string("null")) + "}";
  return o;
}

void print_json(const tickclock_x86_facts &x) {
  tickclock_freq f;
  int have_f = tickclock_x86_freq_cpuid(&x, &f);
  std::string o = json_envelope("cpuid");
  auto key = [&](const char *k) { o += ", " + json_str(k) + ": "; };
  key("vendor");
  o += x.have_cpuid ? json_str(x.vendor) : "null";
  key("family");
  o += x.max_leaf >= 1 ? json_u(x.family) : "null";
  key("model");
  o += x.max_leaf >= 1 ? json_u(x.model) : "null";
  key("stepping");
  o += x.max_leaf >= 1 ? json_u(x.stepping) : "null";
  key("tsc");
  o += x.max_leaf >= 1 ? json_b(x.tsc) : "null";
  key("rdtscp");
  o += x.max_ext_leaf >= 0x80000001u ? json_b(x.rdtscp) : "null";
  key("invariant_tsc");
  o += x.invariant_known ? json_b(x.invariant_tsc) : "null";
  key("hypervisor_bit");
  o += x.max_leaf >= 1 ? json_b(x.hypervisor) : "null";
  key("leaf15");
  if (x.leaf15_valid) {
    o += "{\"denominator\": " + json_u(x.leaf15_den) + ", \"numerator\": " + json_u(x.leaf15_num) +
         ", \"crystal_hz\": " +
         (x.leaf15_crystal_hz ? json_u(x.leaf15_crystal_hz) : std::string("null")) + "}";
  } else {
    o += "null";
  }
  key("base_mhz");
  o += x.leaf16_valid && x.base_mhz ? json_u(x.base_mhz) : "null";
  key("hypervisor");
  if (x.hv_valid) {
    std::string khz = "null";
    if (x.timing_leaf_valid && x.timing_tsc_khz)
      khz = json_u(x.timing_tsc_khz);
    else if (x.xen_leaf3_valid && x.xen_tsc_khz)
      khz = json_u(x.xen_tsc_khz);
    o += "{\"signature\": " + json_str(x.hv_signature) +
         ", \"max_leaf\": " + json_u(x.hv_max_leaf) + ", \"tsc_khz\": " + khz + "}";
  } else {
    o += "null";
  }
  key("brand");
  o += x.brand[0] ? json_str(x.brand) : "null";
  key("tsc_hz");
  if (have_f)
    o += "{\"value\": " + hz_text(f) + ", \"method\": " + json_str(f.name) + "}";
  else
    o += "{\"value\": null, \"method\": null}";
  // leaf 0x15 by Linux's present rule and by the crystal table, side by side
  tickclock_freq lx;
  int have_lx = tickclock_x86_freq_leaf15_linux(&x, &lx);
  key("tsc_hz_linux");
  if (have_lx)
    o += "{\"value\": " + hz_text(lx) + ", \"method\": " + json_str(lx.name) + "}";
  else
    o += "{\"value\": null, \"method\": null}";
  key("crystal_table");
  o += crystal_table_json(x, have_lx ? &lx : nullptr);
  o += "}";
  std::printf("%s\n", o.c_str());
}

const char *yn(int v) { return v ? "yes" : "no"; }

void print_human(const tickclock_x86_facts &x, const char *what) {
  tickclock_freq f;
  std::printf("CPUID of %s\n", what);
  if (!x.have_cpuid) {
    std::printf("  no CPUID\n");
    return;
  }
  // register bytes from a file can be anything: printed escaped
  std::printf("  vendor        %s (max basic leaf 0x%x, max extended leaf 0x%x)\n",
              esc(x.vendor).c_str(), (unsigned)x.max_leaf, (unsigned)x.max_ext_leaf);
  std::printf("  brand         %s\n", x.brand[0] ? esc(x.brand).c_str() : "(none)");
  std::printf("  family/model  0x%x / 0x%x, stepping %u\n", (unsigned)x.family, (unsigned)x.model,
              (unsigned)x.stepping);
  std::printf("  TSC %s, RDTSCP %s, invariant TSC %s, TSC_ADJUST %s, hypervisor bit %s\n",
              yn(x.tsc), yn(x.rdtscp), x.invariant_known ? yn(x.invariant_tsc) : "unknown",
              yn(x.tsc_adjust), yn(x.hypervisor));
  if (x.leaf15_valid)
    std::printf("  leaf 0x15     ratio %u/%u, crystal %u Hz\n", (unsigned)x.leaf15_num,
                (unsigned)x.leaf15_den, (unsigned)x.leaf15_crystal_hz);
  if (x.leaf16_valid)
    std::printf("  leaf 0x16     base %u MHz, max %u MHz, bus %u MHz\n", (unsigned)x.base_mhz,
                (unsigned)x.max_mhz, (unsigned)x.bus_mhz);
  if (x.hv_valid) {
    std::printf("  hypervisor    '%s', max leaf 0x%08x\n", esc(x.hv_signature).c_str(),
                (unsigned)x.hv_max_leaf);
    if (x.kvm_base)
      std::printf("  KVM           base 0x%08x, features 0x%08x, hints 0x%08x\n",
                  (unsigned)x.kvm_base, (unsigned)x.kvm_features, (unsigned)x.kvm_hints);
    if (x.xen_base)
      std::printf("  Xen           base 0x%08x, max 0x%08x%s\n", (unsigned)x.xen_base,
                  (unsigned)x.xen_max_leaf, x.xen_leaf3_valid ? "" : ", no TSC leaf");
    if (x.xen_leaf3_valid)
      std::printf("  Xen TSC       flags 0x%x (vtsc %s), tsc_mode %u, %u kHz\n",
                  (unsigned)x.xen_tsc_flags, yn(x.xen_tsc_flags & TICKCLOCK_XEN_TSC_VTSC),
                  (unsigned)x.xen_tsc_mode, (unsigned)x.xen_tsc_khz);
    if (x.hyperv_valid)
      std::printf(
          "  Hyper-V       features 0x%08x misc 0x%08x: frequency MSRs %s, TSC invariant %s\n",
          (unsigned)x.hyperv_features, (unsigned)x.hyperv_misc, yn(x.hyperv_freq_msrs),
          yn(x.hyperv_tsc_invariant));
    if (x.timing_leaf_valid)
      std::printf("  timing leaf   TSC %u kHz, bus %u kHz\n", (unsigned)x.timing_tsc_khz,
                  (unsigned)x.timing_bus_khz);
  } else if (x.hypervisor) {
    std::printf("  hypervisor    bit set, but no valid range at 0x40000000\n");
  }
  if (tickclock_x86_freq_cpuid(&x, &f))
    std::printf("  TSC frequency %s Hz (%s)\n", hz_text(f).c_str(), f.name);
  else
    std::printf("  TSC frequency not stated by CPUID (calibration needed)\n");
  TableAnswer a = table_answer(x);
  tickclock_freq lx;
  if (tickclock_x86_freq_leaf15_linux(&x, &lx))
    std::printf("  Linux's rule  %s Hz (%s)\n", hz_text(lx).c_str(), lx.name);
  if (a.entry)
    std::printf("  crystal table %.1f MHz for %s%s: %s\n", a.entry->hz / 1e6, a.entry->parts,
                a.applies          ? ""
                : a.fits_base == 0 ? " (NOT applied: crystal x ratio is over 1 % off the base MHz)"
                                   : " (not needed: ECX states the crystal, or no ratio)",
                a.entry->evidence);
  else if (a.excluded)
    std::printf("  crystal table left out: %s\n", a.excluded);
}

// What the decider makes of a recorded machine, given the kernel verdict in
// its metadata (# clocksource:, # available_clocksource:, # calibration_hz:).
void print_fixture_decision(const tickclock_fixture &fx) {
  tickclock_evidence ev;
  tickclock_fixture_evidence(&fx, &ev);
  std::unique_ptr<tickclock_info> info(new tickclock_info);
  // metadata values come from the file: printed escaped
  std::printf("Decision (clocksource '%s', available '%s'):\n",
              ev.clocksource_known ? esc(ev.clocksource).c_str() : "not stated",
              ev.available_known ? esc(ev.available_clocksource).c_str() : "not stated");
  if (tkt_decide(&ev, info.get()) != 0) {
    std::printf(
        "  the TSC would be used, after a calibration (add '# calibration_hz: HZ' to "
        "see the frequency choice)\n");
    return;
  }
  std::printf("  %s\n", esc(info->why).c_str());
  for (unsigned i = 0; i < info->n_freqs; i++) {
    const tickclock_freq_candidate &c = info->freqs[i];
    std::printf("  frequency %-24s %s\n", c.name, esc(c.reason).c_str());
  }
}

}  // namespace

int cmd_cpuid(int argc, char **argv) {
  std::string file;
  bool have_file = false, dump = false, json = false;
  parse_options(argc, argv, "--file FILE, --dump, --json", [&](const Option &o) {
    if (o.name == "--file") {
      file = o.value();
      have_file = true;
    } else if (o.is_flag("--dump")) {
      dump = true;
    } else if (o.is_flag("--json")) {
      json = true;
    } else {
      return false;
    }
    return true;
  });
  if (dump && json) throw UsageError{"--dump and --json are exclusive"};
  tickclock_x86_facts x;
  if (have_file) {
    // O_NONBLOCK: a FIFO is refused at once instead of waiting for a writer
    int fd = open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw UsageError{file + ":0: cannot open: " + std::strerror(errno)};
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      throw UsageError{
          file + ":0: not a regular file (expected a fixture: LEAF SUBLEAF EAX EBX ECX EDX lines)"};
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
      close(fd);
      throw UsageError{file + ":0: cannot open: " + std::strerror(errno)};
    }
    std::string buf;
    char chunk[65536];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
      buf.append(chunk, n);
      if (buf.size() > (size_t)16 << 20) break;
    }
    bool bad = std::ferror(f) != 0;
    int e = errno;
    std::fclose(f);
    if (bad) throw UsageError{file + ":0: cannot read: " + std::strerror(e)};
    std::unique_ptr<tickclock_fixture> fx(new tickclock_fixture);
    char err[512];
    if (tickclock_fixture_parse(buf.data(), buf.size(), file.c_str(), fx.get(), err, sizeof err) !=
        0)
      throw UsageError{err};
    if (dump) {
      std::vector<Leaf> leaves;
      for (unsigned i = 0; i < fx->n_leaves; i++)
        leaves.push_back(Leaf{fx->leaves[i].leaf, fx->leaves[i].subleaf, fx->leaves[i].r});
      print_dump(leaves, false);
      return 0;
    }
    tickclock_x86_decode(tickclock_fixture_cpuid, fx.get(), &x);
    if (json) {
      print_json(x);
      return 0;
    }
    print_human(x, esc(file).c_str());
    print_fixture_decision(*fx);
    return 0;
  }
#if defined(__x86_64__) || defined(__i386__)
  if (dump) {
    print_dump(enumerate_native(), true);
    return 0;
  }
  tickclock_x86_decode(tickclock_cpuid_native, nullptr, &x);
  if (json)
    print_json(x);
  else
    print_human(x, "this CPU");
  return 0;
#else
  throw UsageError{"this CPU is not x86; use --file"};
#endif
}

}  // namespace tickclock_probe
