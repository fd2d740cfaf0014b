// tickclock-probe validate: what an operator reads beside the verdict when
// the counter was not chosen on x86. Three things, each from what the host
// states rather than from what the library guessed:
//   why     the kernel's clocksource and the clocks it offers, the clock
//           words of its command line (tsc=unstable, clocksource=...), the
//           hypervisor signature CPUID shows -- and whether that signature
//           can be the kernel's own hypervisor at all (a nested guest sees
//           the outer one: PVM does not intercept CPUID from user mode);
//   cost    the OS clock's read against the TSC's, and the clock_gettime
//           system call that reads fall back to where the vDSO cannot be
//           used (PR_SET_TSC);
//   what    the operator may do, and when not to: hosts that snapshot,
//           restore or migrate their guests mark the TSC unstable on
//           purpose.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "src/probe/json.h"
#include "src/probe/util.h"
#include "src/probe/validate.h"

namespace tickclock_probe {
namespace {

// The kernel command line split as the kernel splits it (next_arg):
// whitespace ends a word except inside double quotes, so a quoted value
// ('dyndbg="file tsc=unstable +p"') is one word, not parameters of its own.
std::vector<std::string> cmdline_words(const std::string &cmdline) {
  std::vector<std::string> out;
  std::string w;
  bool quoted = false, any = false;
  for (char c : cmdline) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (any) out.push_back(w);
      w.clear();
      any = false;
      continue;
    }
    w += c;
    any = true;
  }
  if (any) out.push_back(w);
  return out;
}

// A word's parameter name, quotes dropped, '-' read as '_' (the kernel
// treats them alike in names).
std::string param_name(const std::string &w) {
  std::string n;
  for (char c : w.substr(0, w.find('='))) {
    if (c == '"') continue;
    n += c == '-' ? '_' : c;
  }
  return n;
}

// The words of the kernel command line that govern its clocks.
std::vector<std::string> clock_words(const std::string &cmdline) {
  static const char *const names[] = {"tsc",         "clocksource", "notsc",   "tsc_early_khz",
                                      "no_kvmclock", "nopv",        "hv_clock"};
  std::vector<std::string> out;
  for (const std::string &w : cmdline_words(cmdline)) {
    if (w == "--") break;  // what follows is init's, not the kernel's
    std::string n = param_name(w);
    for (const char *k : names)
      if (n == k) {
        out.push_back(w);
        break;
      }
  }
  return out;
}

std::string read_cmdline() {
  std::string s;
  if (FILE *f = std::fopen("/proc/cmdline", "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fclose(f);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The hypervisor a paravirtual clocksource belongs to: (a short name, the
// CPUID signatures that hypervisor shows), or empty.
struct Family {
  const char *name;
  const char *signatures[3];
};
const Family *family_of(const std::string &clocksource) {
  static const Family kvm = {"KVM (or a KVM-compatible one such as PVM)", {"KVMKVMKVM"}};
  static const Family hyperv = {"Hyper-V", {"Microsoft Hv"}};
  static const Family xen = {"Xen", {"XenVMMXenVMM"}};
  if (clocksource == "kvm-clock") return &kvm;
  if (clocksource.rfind("hyperv", 0) == 0) return &hyperv;
  if (clocksource == "xen") return &xen;
  return nullptr;
}

// The clock_gettime system call, median of 7 batches of 100: what every
// read costs once RDTSC is disabled and the vDSO may not be used.
double syscall_ns() {
  std::vector<double> v;
  for (int b = 0; b < 7; b++) {
    uint64_t t0 = tkt_os_now();
    for (int k = 0; k < 100; k++) {
      struct timespec ts;
      syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    }
    v.push_back((double)(tkt_os_now() - t0) / 100);
  }
  std::sort(v.begin(), v.end());
  return v[3];
}

#if defined(__x86_64__) || defined(__i386__)
// The signatures of the hypervisor leaves past 0x40000000 (0x40000100 to
// 0x40000f00), printable ones only: where a leaf is not implemented the
// CPU answers another leaf's data, which matches no known signature.
std::vector<std::string> further_signatures() {
  std::vector<std::string> out;
  for (unsigned leaf = 0x40000100u; leaf <= 0x40000f00u; leaf += 0x100u) {
    unsigned a, b, c, d;
    __cpuid(leaf, a, b, c, d);
    char sig[13] = {0};
    std::memcpy(sig, &b, 4);
    std::memcpy(sig + 4, &c, 4);
    std::memcpy(sig + 8, &d, 4);
    std::string s(sig);
    bool text = !s.empty();
    for (unsigned char ch : s) text = text && ch >= 0x20 && ch < 0x7f;
    if (text) out.push_back(s);
  }
  return out;
}
#endif

double read_ns_of(const tickclock_info *info, const char *name) {
  for (unsigned k = 0; k < info->n_candidates; k++)
    if (std::strcmp(info->candidates[k].name, name) == 0) return info->candidates[k].read_ns;
  return 0;
}

// A line for a terminal: a byte that is no printable ASCII (a control
// sequence on the command line, say) as \xNN.
std::string printable(const std::string &s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      o += (char)c;
    } else {
      char e[5];
      std::snprintf(e, sizeof e, "\\x%02x", c);
      o += e;
    }
  }
  return o;
}

}  // namespace

std::string clock_words_text(const std::string &cmdline, size_t max_len) {
  std::string s;
  for (const std::string &w : clock_words(cmdline)) {
    std::string word = esc(w);  // a fixture line is text: no control byte in it
    if (s.size() + (s.empty() ? 0 : 1) + word.size() > max_len) break;  // whole words only
    s += (s.empty() ? "" : " ") + word;
  }
  return s;
}

std::string kernel_clock_words(size_t max_len) { return clock_words_text(read_cmdline(), max_len); }

Advice advise(const AdviceFacts &f) {
  Advice a;
  a.applies = true;
  a.clocksource = f.clocksource;
  a.available = f.available;
  for (const std::string &w : clock_words(f.cmdline))
    a.cmdline += (a.cmdline.empty() ? "" : " ") + w;
  a.signature = f.signature;
  const Family *fam = family_of(a.clocksource);
  std::string own;           // the kernel's hypervisor's signature, where a further leaf shows it
  bool hyperv_face = false;  // 'Microsoft Hv' that KVM or Xen may show as well
  if (fam != nullptr) {
    a.kernel_hypervisor = fam->name;
    bool matches = false;
    for (const char *sig : fam->signatures) matches = matches || (sig && a.signature == sig);
    if (!matches && a.signature == "Microsoft Hv" && std::strcmp(fam->name, "Hyper-V") != 0) {
      for (const std::string &m : f.more_signatures)
        for (const char *sig : fam->signatures)
          if (sig && m == sig) own = m;
      hyperv_face = true;
    }
    a.outer = !a.signature.empty() && !matches && !hyperv_face;
  }
  a.system_ns = f.system_ns;
  a.tsc_ns = f.tsc_ns;
  a.syscall_ns = f.syscall_ns;

  std::string why = "the kernel's clocksource is " +
                    (a.clocksource.empty() ? std::string("unknown") : "'" + a.clocksource + "'") +
                    (a.available.empty() ? "" : " (it offers: " + a.available + ")");
  if (!a.cmdline.empty())
    why += "; its command line says " + a.cmdline +
           (a.cmdline.find("tsc=unstable") != std::string::npos
                ? ": the kernel was told not to trust the TSC"
                : "");
  if (!f.invariant_tsc) why += "; CPUID states no invariant TSC";
  a.lines.push_back("why: " + why + ". tickclock's reason: " + f.why);
  if (hyperv_face)
    a.lines.push_back(
        !own.empty()
            ? fmt("the CPUID signature 'Microsoft Hv' is the Hyper-V-compatible interface of %s, "
                  "whose own signature '%s' a further leaf shows and whose clock '%s' the kernel "
                  "uses",
                  fam->name, own.c_str(), a.clocksource.c_str())
            : fmt("the CPUID signature 'Microsoft Hv' may be the Hyper-V-compatible interface "
                  "that %s also offers, or an outer Hyper-V's (a nested guest); the kernel uses "
                  "%s's clock '%s'",
                  fam->name, fam->name, a.clocksource.c_str()));
  else if (!a.signature.empty() && fam != nullptr)
    a.lines.push_back(
        a.outer ? fmt("the CPUID signature '%s' is not %s's, whose clock '%s' the kernel uses: "
                      "the signature user space sees may belong to an outer hypervisor (a nested "
                      "guest; PVM does not intercept CPUID from user mode)",
                      a.signature.c_str(), fam->name, a.clocksource.c_str())
                : fmt("the CPUID signature '%s' is the hypervisor whose clock '%s' the kernel "
                      "uses",
                      a.signature.c_str(), a.clocksource.c_str()));
  a.lines.push_back(
      "the kernel's own words: `dmesg | grep -i -E 'tsc|clocksource'` (a line such as "
      "\"tsc: Marking TSC unstable due to ...\" states the cause)");
  std::string cost = a.system_ns > 0 && a.tsc_ns > 0
                         ? fmt("cost: the OS clock %.1f ns a read against the TSC's %.1f ns "
                               "(%.1fx)",
                               a.system_ns, a.tsc_ns, a.system_ns / a.tsc_ns)
                         : fmt("cost: the OS clock %.1f ns a read", a.system_ns);
  cost +=
      fmt("; where RDTSC is disabled (PR_SET_TSC) every read is the clock_gettime system "
          "call, %.2f us here",
          a.syscall_ns / 1e3);
  a.lines.push_back(cost);
  a.lines.push_back(
      "what you may do: if this guest is never snapshotted, restored or migrated, run "
      "`tickclock-probe validate --source tsc`; where it passes every check, "
      "TICKCLOCK_SOURCE=tsc puts a process on the TSC (the kernel keeps its own clock). "
      "Do not where the host restores snapshots or migrates guests: after a restore the TSC can "
      "jump, even backwards, and such hosts mark it unstable on purpose. Keeping the OS clock is "
      "always correct");
  for (std::string &l : a.lines) l = printable(l);
  return a;
}

Advice explain_refusal(const Run &r) {
#if defined(__x86_64__) || defined(__i386__)
  const tickclock_x86_facts &x = r.ev.x86;
  if (r.counter || r.info->forced || !x.tsc || !r.ev.os_linux) return Advice();
  AdviceFacts f;
  f.clocksource = r.ev.clocksource_known ? r.ev.clocksource : "";
  f.available = r.ev.available_known ? r.ev.available_clocksource : "";
  f.cmdline = read_cmdline();
  f.signature = x.hv_valid ? x.hv_signature : "";
  if (x.hv_valid) f.more_signatures = further_signatures();
  f.invariant_tsc = x.invariant_tsc != 0;
  f.why = r.info->why;
  f.system_ns = read_ns_of(r.info, "system");
  f.tsc_ns = read_ns_of(r.info, "tsc");
  f.syscall_ns = syscall_ns();
  return advise(f);
#else
  (void)r;
  return Advice();
#endif
}

std::string Advice::json() const {
  if (!applies) return "null";
  auto positive = [](double v) { return v > 0 ? json_num(v) : std::string("null"); };
  std::string list;
  for (const std::string &l : lines) list += (list.empty() ? "" : ",") + json_str(l);
  return "{\"clocksource\":" + json_str(clocksource) + ",\"available\":" + json_str(available) +
         ",\"cmdline_clock_words\":" + json_str(cmdline) +
         ",\"hypervisor_signature\":" + (signature.empty() ? "null" : json_str(signature)) +
         ",\"kernel_hypervisor\":" +
         (kernel_hypervisor.empty() ? "null" : json_str(kernel_hypervisor)) +
         ",\"outer_hypervisor\":" + (outer ? "true" : "false") +
         ",\"read_ns\":{\"system\":" + positive(system_ns) + ",\"tsc\":" + positive(tsc_ns) +
         ",\"syscall\":" + positive(syscall_ns) + "},\"advice\":[" + list + "]}";
}

}  // namespace tickclock_probe
