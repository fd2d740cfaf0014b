// The native reader of the paravirtual clock page (platform_posix.c): its
// consistency loop raced against a writer that updates a page the way a
// host does (version odd while writing), and the finder on the machine at
// hand: it never raises a signal, whether the page is mapped or not, and
// leaves no descriptor behind.
#include <dirent.h>
#include <string.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "doctest/doctest.h"
#include "internal.h"

namespace {
// A page as the host writes it: version odd, the fields, version even.
// Every field follows from system_time, so a torn read shows.
struct alignas(64) Page {
  unsigned char b[64];
};
void put32(Page *p, int off, uint32_t v) {
  __atomic_store_n(reinterpret_cast<uint32_t *>(p->b + off), v, __ATOMIC_RELAXED);
}
void put64(Page *p, int off, uint64_t v) {
  __atomic_store_n(reinterpret_cast<uint64_t *>(p->b + off), v, __ATOMIC_RELAXED);
}

int open_fds() {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) n++;
  closedir(d);
  return n;
}
}  // namespace

TEST_CASE("the page reader never returns a torn read while the host writes") {
  static Page page;
  memset(&page, 0, sizeof page);
  std::atomic<bool> stop(false);
  std::atomic<uint64_t> writes(0);
  std::thread writer([&] {
    uint32_t version = 0;
    for (uint64_t k = 1; !stop.load(std::memory_order_relaxed); k++) {
      put32(&page, 0, ++version);  // odd: writing
      __atomic_thread_fence(__ATOMIC_RELEASE);
      put64(&page, 8, 3 * k);                   // tsc_timestamp
      put64(&page, 16, k);                      // system_time
      put32(&page, 24, (uint32_t)(k * 7 + 1));  // mul
      // shift and flags: atomic byte stores, as the reader's loads are
      __atomic_store_n(&page.b[28], (unsigned char)(int8_t)(k % 5 - 2), __ATOMIC_RELAXED);
      __atomic_store_n(&page.b[29], (unsigned char)(k & 1), __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_RELEASE);
      put32(&page, 0, ++version);  // even: done
      writes.fetch_add(1, std::memory_order_relaxed);
    }
  });
  long ok = 0, torn = 0, failed = 0;
  while (writes.load() < 1000) std::this_thread::yield();
  for (int i = 0; i < 200000; i++) {
    tickclock_pvclock_page pv;
    memset(&pv, 0, sizeof pv);
    if (!tkc_pv_read_at((uintptr_t)&page, TKC_PV_KVM, &pv)) {
      failed++;
      continue;
    }
    ok++;
    uint64_t k = pv.system_time;
    bool same = (pv.version & 1u) == 0 && pv.tsc_timestamp == 3 * k &&
                pv.mul == (uint32_t)(k * 7 + 1) && pv.shift == (int8_t)(k % 5 - 2) &&
                pv.flags == (k & 1);
    if (!same) torn++;
  }
  stop = true;
  writer.join();
  MESSAGE("reads " << ok << " consistent of " << ok + failed << ", " << writes.load()
                   << " writes meanwhile");
  CHECK(torn == 0);
  CHECK(ok > 0);
}

TEST_CASE("a page the host is always writing (odd version): no reading") {
  static Page page;
  memset(&page, 0, sizeof page);
  put32(&page, 0, 7);
  tickclock_pvclock_page pv;
  CHECK(tkc_pv_read_at((uintptr_t)&page, TKC_PV_KVM, &pv) == 0);
}

TEST_CASE("the native finder on this machine: no signal, no descriptor left, a verdict") {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool vclock = false, vvar = false;
  while (std::getline(maps, line)) {
    if (line.find("[vvar_vclock]") != std::string::npos) vclock = true;
    if (line.size() >= 6 && line.compare(line.size() - 6, 6, "[vvar]") == 0) vvar = true;
  }
  for (int kind : {TKC_PV_KVM, TKC_PV_HYPERV}) {
    CAPTURE(kind);
    int before = open_fds();
    tickclock_pvclock_page pv;
    tkc_native_pvclock(kind, &pv);  // a SIGBUS here would end the test
    CHECK(open_fds() == before);
    if (!vclock && !vvar) CHECK(pv.absent == TKC_PV_ABSENT_NO_MAPPING);
    if (pv.kind == TKC_PV_NONE) {
      CHECK(pv.absent != TKC_PV_ABSENT_NOT_TRIED);
      MESSAGE("kind " << kind << ": no page (absent " << pv.absent << ")");
      continue;
    }
    CHECK(pv.kind == kind);
    // a page read: a second read (the cached address, no system call) agrees
    tickclock_pvclock_page again;
    tkc_native_pvclock(kind, &again);
    CHECK(again.kind == kind);
    CHECK(tkc_pv_same(&pv, &again) == 1);
    tickclock_freq c;
    tkc_pv_claim(&pv, kind == TKC_PV_KVM ? "kvm-clock" : "hyperv_clocksource_tsc_page", &c);
    MESSAGE("kind " << kind << ": version " << pv.version << " flags " << (unsigned)pv.flags
                    << " mul " << pv.mul << " shift " << (int)pv.shift << ": "
                    << (c.ok ? "claims " + std::to_string((double)c.hz_num / (double)c.hz_den)
                             : "refused: " + std::string(c.why)));
  }
}
