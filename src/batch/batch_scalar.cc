// Plain C++ versions of the batch kernels (reference and fallback).
#include "batch.h"

namespace tickclock {
namespace batch {
namespace scalar {

void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  for (size_t k = 0; k < n; ++k) out[k] = tickclock_conv_ticks_to_ns(&c, in[k]);
}

void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  for (size_t k = 0; k < n; ++k) out[k] = tickclock_conv_delta_to_ns(&c, in[k]);
}

void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]) {
  for (size_t k = 0; k < n; ++k) ++hist[Bucket(in[k])];
}

size_t FirstDecrease(const uint64_t* a, size_t n) {
  for (size_t i = 0; i + 1 < n; ++i)
    if (a[i + 1] < a[i]) return i;
  return n;
}

}  // namespace scalar

#if !TICKCLOCK_HAVE_HWY
void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  scalar::TicksToNs(c, in, out, n);
}
void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  scalar::DeltasToNs(c, in, out, n);
}
void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]) {
  scalar::Log2Histogram(in, n, hist);
}
size_t FirstDecrease(const uint64_t* a, size_t n) { return scalar::FirstDecrease(a, n); }
const char* ActiveTarget() { return "scalar"; }
#endif

}  // namespace batch
}  // namespace tickclock
