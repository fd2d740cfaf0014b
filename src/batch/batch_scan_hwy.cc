// Highway versions of the scanning batch kernels (log2 histogram, first
// decrease), compiled once per target (foreach_target.h) and chosen at run
// time with HWY_DYNAMIC_DISPATCH. The conversions are in batch_hwy.cc.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/batch/batch_scan_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include "batch.h"

HWY_BEFORE_NAMESPACE();
namespace tickclock {
namespace batch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The histogram's cost is the scatter (++hist[b]), which no SIMD target
// here can vectorise without conflict detection; computing the buckets with
// a vector bit-width and storing them for the scatter measured slower than the
// per-element LZCNT/BSR this target's attributes allow (a 6-step binary
// search of shifts, compares and blends per vector, then a store and N
// scalar increments: 1.2-1.6 ns/element vs 0.5 for this loop, AVX2 and
// AVX3 alike). So: scalar bucket, four interleaved sub-histograms so that
// runs of one bucket do not serialise on a store-to-load dependency.
void Log2HistogramImpl(const uint64_t* in, size_t n, uint64_t* hist) {
  uint64_t sub[4][kHistBuckets] = {};
  size_t x = 0;
  for (; x + 4 <= n; x += 4) {
    ++sub[0][scalar::Bucket(in[x])];
    ++sub[1][scalar::Bucket(in[x + 1])];
    ++sub[2][scalar::Bucket(in[x + 2])];
    ++sub[3][scalar::Bucket(in[x + 3])];
  }
  for (; x < n; ++x) ++sub[0][scalar::Bucket(in[x])];
  for (int b = 0; b < kHistBuckets; ++b) hist[b] += sub[0][b] + sub[1][b] + sub[2][b] + sub[3][b];
}

size_t FirstDecreaseImpl(const uint64_t* a, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  // one lane: the plain loop
  return scalar::FirstDecrease(a, n);
#else
  const hn::ScalableTag<uint64_t> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N + 1 <= n; i += N) {  // compares a[i..i+N) with a[i+1..i+N+1)
    const auto m = hn::Lt(hn::LoadU(d, a + i + 1), hn::LoadU(d, a + i));
    if (!hn::AllFalse(d, m)) return i + (size_t)hn::FindFirstTrue(d, m);
  }
  for (; i + 1 < n; ++i)
    if (a[i + 1] < a[i]) return i;
  return n;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace batch
}  // namespace tickclock
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tickclock {
namespace batch {

HWY_EXPORT(Log2HistogramImpl);
HWY_EXPORT(FirstDecreaseImpl);

void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]) {
  HWY_DYNAMIC_DISPATCH(Log2HistogramImpl)(in, n, hist);
}
size_t FirstDecrease(const uint64_t* a, size_t n) {
  return HWY_DYNAMIC_DISPATCH(FirstDecreaseImpl)(a, n);
}

}  // namespace batch
}  // namespace tickclock
#endif  // HWY_ONCE
