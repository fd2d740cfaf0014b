// tickclock batch kernels: arrays of ticks -> ns, log2 duration
// histograms, monotonicity scans. C++17.
//
// With Highway (TICKCLOCK_HAVE_HWY=1, set by src/batch/BUILD) the kernels
// are compiled for every x86/Arm/POWER/... target Highway knows and chosen at
// run time (HWY_DYNAMIC_DISPATCH); without it, plain C++ loops. Either
// way the results are bit-identical to the scalar tickclock_conv_* functions
// in tickclock.h: the SIMD product t * (i + f/2^64) is built from 32x32->64
// partial products (Highway 1.0.3 has no 64-bit lane multiply) with the
// same truncation and saturation.
#ifndef TICKCLOCK_BATCH_H
#define TICKCLOCK_BATCH_H

#include <cstddef>
#include <cstdint>

#include "tickclock.h"

namespace tickclock {
namespace batch {

// Bucket b of a log2 histogram holds values v with bit width b:
// b = 0 for v = 0, else floor(log2(v)) + 1 (so 1 -> 1, 2..3 -> 2, ...).
constexpr int kHistBuckets = 65;

// out[k] = tickclock_conv_ticks_to_ns(&c, in[k]); out may equal in.
void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n);
// out[k] = tickclock_conv_delta_to_ns(&c, in[k]); out may equal in.
void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n);
// hist[bucket(in[k])] += 1 for every k (adds to what hist holds).
void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]);
// The first index i with a[i + 1] < a[i], or n if the sequence never
// decreases (n < 2 included).
size_t FirstDecrease(const uint64_t* a, size_t n);

// The implementation the dispatcher uses now ("AVX3", "AVX2", ..., or
// "scalar" without Highway).
const char* ActiveTarget();

// Plain C++ loops: the reference the tests compare against, the fallback
// without Highway, and the benchmark baseline.
namespace scalar {
void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n);
void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n);
void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]);
size_t FirstDecrease(const uint64_t* a, size_t n);
inline int Bucket(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }
}  // namespace scalar

}  // namespace batch
}  // namespace tickclock

#endif  // TICKCLOCK_BATCH_H
