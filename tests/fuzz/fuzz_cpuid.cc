// libFuzzer target: the CPUID decoder and the frequency rules over a
// CPU whose every leaf answers with fuzz bytes (leaves past any maximum
// included: the decoder must gate on the maxima, never index by them).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "tickclock_tools.h"

namespace {
struct Bytes {
  const uint8_t *p;
  size_t n;
};

uint32_t word_at(const Bytes *b, uint64_t k) {
  if (b->n == 0) return 0;
  uint32_t w = 0;
  for (int i = 0; i < 4; i++) w = (w << 8) | b->p[(k * 4 + (uint64_t)i) % b->n];
  return w;
}

int fuzz_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, tickclock_cpuid_regs *out) {
  const Bytes *b = static_cast<const Bytes *>(ctx);
  // a stable mix of (leaf, subleaf) -> position in the input
  uint64_t k = ((uint64_t)leaf * 0x9E3779B1u) ^ ((uint64_t)subleaf * 0x85EBCA77u);
  k ^= k >> 13;
  out->eax = word_at(b, k);
  out->ebx = word_at(b, k + 1);
  out->ecx = word_at(b, k + 2);
  out->edx = word_at(b, k + 3);
  return 1;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes b = {data, size};
  tickclock_x86_facts f;
  tickclock_freq q;
  memset(&f, 0xA5, sizeof f);  // the decoder must write every field it reports
  tickclock_x86_decode(fuzz_cpuid, &b, &f);
  if (f.vendor[12] != '\0' || f.brand[48] != '\0' || f.hv_signature[12] != '\0') __builtin_trap();
  tickclock_x86_freq_leaf15(&f, &q);
  tickclock_x86_freq_leaf16(&f, &q);
  tickclock_x86_freq_hypervisor(&f, &q);
  if (tickclock_x86_freq_cpuid(&f, &q) && (q.hz_den == 0 || q.hz_num == 0)) __builtin_trap();
  return 0;
}
