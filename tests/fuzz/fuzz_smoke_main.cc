// A fixed, deterministic run of a libFuzzer target without libFuzzer, so
// that every `bazel test //...` (ci/test) exercises the fuzz harnesses:
// each curated fixture as is, then FUZZ_SMOKE_ITERS (default 100000)
// mutants of them (bit flips, byte insertions and deletions, truncation,
// splices of two fixtures, random bytes) from a fixed seed. A harness
// whose invariant breaks traps, and the test fails. ci/checks/fuzz runs the same
// targets under libFuzzer with sanitizers for as long as asked.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/fixture_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {
struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t operator()() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  }
};

void run(const std::string &in) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(in.data()), in.size());
}
}  // namespace

int main() {
  std::string dir = tctest::runfiles_root() + "/tests/fixtures/cpuid";
  std::vector<std::string> seeds;
  for (const std::string &p : tctest::list_cpuid(dir)) {
    std::string t;
    if (tctest::read_file(p, &t)) seeds.push_back(t);
  }
  if (seeds.size() < 10) {
    std::fprintf(stderr, "fuzz smoke: only %zu seeds found in %s\n", seeds.size(), dir.c_str());
    return 1;
  }
  long iters = 100000;
  if (const char *e = std::getenv("FUZZ_SMOKE_ITERS")) iters = std::atol(e);
  for (const std::string &s : seeds) run(s);
  run("");
  Rng rng;
  for (long i = 0; i < iters; i++) {
    std::string t = seeds[rng() % seeds.size()];
    int edits = 1 + (int)(rng() % 8);
    for (int e = 0; e < edits; e++) {
      size_t pos = t.empty() ? 0 : (size_t)(rng() % t.size());
      switch (rng() % 6) {
        case 0:
          if (!t.empty()) t[pos] = (char)(t[pos] ^ (1 << (rng() % 8)));
          break;
        case 1:
          t.insert(t.begin() + (long)pos, (char)(rng() & 0xff));
          break;
        case 2:
          if (!t.empty()) t.erase(pos, 1 + rng() % 16);
          break;
        case 3:
          t.resize(pos);
          break;
        case 4: {
          const std::string &o = seeds[rng() % seeds.size()];
          size_t from = o.empty() ? 0 : (size_t)(rng() % o.size());
          t = t.substr(0, pos) + o.substr(from, (size_t)(rng() % 512));
          break;
        }
        default:
          if (!t.empty()) t[pos] = "0123456789abcdefABCDEF# :\n\r\t\0xg"[rng() % 32];
          break;
      }
    }
    run(t);
  }
  std::printf("fuzz smoke: %zu seeds, %ld mutants, no invariant broken\n", seeds.size(), iters);
  return 0;
}
