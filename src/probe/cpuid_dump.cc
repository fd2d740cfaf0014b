// tickclock-probe: this CPU's CPUID leaves in the fixture format.
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "tickclock_tools.h"
#include "src/probe/commands.h"
#include "src/probe/cpuid_dump.h"
#include "src/probe/util.h"

namespace tickclock_probe {
namespace {

std::string hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

// The first line of a /sys file, as the core's evidence gathering reads it.
std::string read_line(const char *path) {
  char buf[256];
  return tkt_read_line(path, buf, sizeof buf) ? std::string(buf) : std::string();
}

}  // namespace

std::vector<Leaf> enumerate_native() {
  std::vector<Leaf> out;
  auto get = [&](uint32_t leaf, uint32_t sub) {
    Leaf l{leaf, sub, {0, 0, 0, 0}};
    tickclock_cpuid_native(nullptr, leaf, sub, &l.r);
    return l;
  };
  auto nonzero = [](const Leaf &l) { return l.r.eax | l.r.ebx | l.r.ecx | l.r.edx; };
  Leaf l0 = get(0, 0);
  if (!tickclock_cpuid_native(nullptr, 0, 0, &l0.r)) return out;
  uint32_t max = l0.r.eax > 0x7f ? 0x7f : l0.r.eax;
  bool hv = false;
  for (uint32_t leaf = 0; leaf <= max; leaf++) {
    Leaf s0 = get(leaf, 0);
    out.push_back(s0);
    if (leaf == 1) hv = (s0.r.ecx >> 31) & 1;
    if (leaf == 4) {
      for (uint32_t s = 1; s < 16; s++) {
        Leaf l = get(leaf, s);
        if ((l.r.eax & 0x1f) == 0) break;
        out.push_back(l);
      }
    } else if (leaf == 0xb || leaf == 0x1f) {
      for (uint32_t s = 1; s < 8; s++) {
        Leaf l = get(leaf, s);
        if (((l.r.ecx >> 8) & 0xff) == 0) break;
        out.push_back(l);
      }
    } else if (leaf == 0xd) {
      for (uint32_t s = 1; s < 64; s++) {
        Leaf l = get(leaf, s);
        if (nonzero(l)) out.push_back(l);
      }
    } else if (leaf == 0xf || leaf == 0x10 || leaf == 0x12) {
      for (uint32_t s = 1; s < 4; s++) {
        Leaf l = get(leaf, s);
        if (nonzero(l)) out.push_back(l);
      }
    } else if (leaf == 7 || leaf == 0x14 || leaf == 0x17 || leaf == 0x18 || leaf == 0x1d ||
               leaf == 0x20 || leaf == 0x23) {
      uint32_t n = s0.r.eax > 15 ? 15 : s0.r.eax;
      for (uint32_t s = 1; s <= n; s++) out.push_back(get(leaf, s));
    }
  }
  if (hv) {
    for (uint32_t base = 0x40000000u; base < 0x40010000u; base += 0x100u) {
      Leaf b = get(base, 0);
      if (b.r.eax < base || b.r.eax > base + 0xff) continue;
      out.push_back(b);
      for (uint32_t leaf = base + 1; leaf <= b.r.eax; leaf++) {
        out.push_back(get(leaf, 0));
        if (leaf == base + 3) {  // Xen's TSC leaf has subleaves 1 and 2
          char sig[13];
          std::memcpy(sig, &b.r.ebx, 4);
          std::memcpy(sig + 4, &b.r.ecx, 4);
          std::memcpy(sig + 8, &b.r.edx, 4);
          if (std::memcmp(sig, "XenVMMXenVMM", 12) == 0)
            for (uint32_t s = 1; s < 3; s++) out.push_back(get(leaf, s));
        }
      }
    }
  }
  Leaf e = get(0x80000000u, 0);
  if (e.r.eax >= 0x80000000u && e.r.eax <= 0x8000ffffu) {
    uint32_t emax = e.r.eax > 0x8000007fu ? 0x8000007fu : e.r.eax;
    for (uint32_t leaf = 0x80000000u; leaf <= emax; leaf++) {
      out.push_back(get(leaf, 0));
      if (leaf == 0x8000001du)
        for (uint32_t s = 1; s < 8; s++) {
          Leaf l = get(leaf, s);
          if ((l.r.eax & 0x1f) == 0) break;
          out.push_back(l);
        }
    }
  }
  if (out.size() > TICKCLOCK_FIXTURE_MAX_LEAVES) out.resize(TICKCLOCK_FIXTURE_MAX_LEAVES);
  return out;
}

void print_dump(const std::vector<Leaf> &leaves, bool native, FILE *out) {
  if (native) {
    struct utsname u;
    std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::fprintf(out, "# source: tickclock-probe cpuid --dump\n");
    std::fprintf(out, "# date: %s\n", date);
    if (uname(&u) == 0) std::fprintf(out, "# kernel: %s %s %s\n", u.sysname, u.release, u.machine);
    std::string cs = read_line(TKT_SYSFS_CURRENT_CLOCKSOURCE);
    std::string av = read_line(TKT_SYSFS_AVAILABLE_CLOCKSOURCE);
    if (!cs.empty()) std::fprintf(out, "# clocksource: %s\n", cs.c_str());
    if (!av.empty()) std::fprintf(out, "# available_clocksource: %s\n", av.c_str());
  }
  for (const Leaf &l : leaves)
    std::fprintf(out, "%s %s %s %s %s %s\n", hex8(l.leaf).c_str(), hex8(l.subleaf).c_str(),
                 hex8(l.r.eax).c_str(), hex8(l.r.ebx).c_str(), hex8(l.r.ecx).c_str(),
                 hex8(l.r.edx).c_str());
}

void write_cpuid_dump(FILE *f) { print_dump(enumerate_native(), true, f); }

}  // namespace tickclock_probe
