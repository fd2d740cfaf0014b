// Highway versions of the batch kernels, compiled once per target
// (foreach_target.h) and chosen at run time with HWY_DYNAMIC_DISPATCH.
//
// Bit identity with tickclock_conv_ticks_to_ns (tickclock.h):
//   frac_hi:frac_lo = t * f,  int_hi:int_lo = t * i  (64x64 -> 128)
//   sum = int_lo + frac_hi;  result = (int_hi != 0 || carry) ? UINT64_MAX : sum
// Highway 1.0.3 has no 64-bit lane multiply, so each 128-bit product is
// assembled from four 32x32 -> 64 products (MulEven on the u32 halves),
// exactly as port.h's portable path does. The integer part i is the same
// for every lane, so the kernel picks, once per call, the cheapest exact
// form: i == 0 (f > 1 GHz: no integer product, no overflow possible),
// i < 2^32 (two partial products) or the general four.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/batch/batch_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <vector>

#include "batch.h"

HWY_BEFORE_NAMESPACE();
namespace tickclock {
namespace batch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The 32-bit halves come from BitCast + MulEven, which takes the low half
// of each u64 lane only on little-endian layouts; Highway 1.0.3 has no
// big-endian SIMD target, but a later one (s390x Z14) would: guard it.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TICKCLOCK_BATCH_PLAIN 1
#else
#define TICKCLOCK_BATCH_PLAIN 0
#endif

#if HWY_TARGET == HWY_SCALAR || TICKCLOCK_BATCH_PLAIN
// Highway's single-lane target cannot split a u64 lane into u32 halves
// (and big-endian lanes would pair the wrong halves): the plain loop.
void TicksToNsImpl(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  scalar::TicksToNs(c, in, out, n);
}
void DeltasToNsImpl(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  scalar::DeltasToNs(c, in, out, n);
}
void Log2HistogramImpl(const uint64_t* in, size_t n, uint64_t* hist) {
  scalar::Log2Histogram(in, n, hist);
}
size_t FirstDecreaseImpl(const uint64_t* a, size_t n) { return scalar::FirstDecrease(a, n); }
#else
using DU = hn::ScalableTag<uint64_t>;
using VU = hn::Vec<DU>;

// High 64 bits of a*b per lane, a and b split into 32-bit halves;
// b_hi = b >> 32 is passed in (it is loop-invariant here).
HWY_INLINE VU MulHigh(DU d, VU a, VU b, VU b_hi) {
  const hn::Repartition<uint32_t, DU> d32;
  const VU mask32 = hn::Set(d, 0xFFFFFFFFull);
  const VU a_hi = hn::ShiftRight<32>(a);
  const VU ll = hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b));
  const VU lh = hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b_hi));
  const VU hl = hn::MulEven(hn::BitCast(d32, a_hi), hn::BitCast(d32, b));
  const VU hh = hn::MulEven(hn::BitCast(d32, a_hi), hn::BitCast(d32, b_hi));
  // middle column: three terms below 2^32 each, no overflow
  const VU mid = hn::Add(hn::Add(hn::ShiftRight<32>(ll), hn::And(lh, mask32)), hn::And(hl, mask32));
  return hn::Add(hn::Add(hh, hn::ShiftRight<32>(lh)),
                 hn::Add(hn::ShiftRight<32>(hl), hn::ShiftRight<32>(mid)));
}

// Low 64 bits of a*b per lane (same split).
HWY_INLINE VU MulLow(DU d, VU a, VU b, VU b_hi) {
  const hn::Repartition<uint32_t, DU> d32;
  (void)d;
  const VU a_hi = hn::ShiftRight<32>(a);
  const VU ll = hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b));
  const VU lh = hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b_hi));
  const VU hl = hn::MulEven(hn::BitCast(d32, a_hi), hn::BitCast(d32, b));
  return hn::Add(ll, hn::ShiftLeft<32>(hn::Add(lh, hl)));
}

// The integer part's form, chosen once per call.
enum class IntForm { kZero, kSmall, kWide };

// Loop-invariant vectors are passed one by one: SVE/RVV vectors are
// sizeless and cannot be struct members.
template <IntForm kForm>
HWY_INLINE VU Scale(DU d, VU t, VU f, VU f_hi, VU i, VU i_hi) {
  const VU frac_hi = MulHigh(d, t, f, f_hi);
  if constexpr (kForm == IntForm::kZero) {
    return frac_hi;  // t * f / 2^64 < t: no overflow, no carry
  } else {
    VU int_hi, int_lo;
    if constexpr (kForm == IntForm::kSmall) {
      // i < 2^32: t*i = t_lo*i + (t_hi*i << 32); both partial products < 2^64
      const hn::Repartition<uint32_t, DU> d32;
      const VU p0 = hn::MulEven(hn::BitCast(d32, t), hn::BitCast(d32, i));
      const VU p1 = hn::MulEven(hn::BitCast(d32, hn::ShiftRight<32>(t)), hn::BitCast(d32, i));
      const VU mid = hn::Add(p1, hn::ShiftRight<32>(p0));
      int_hi = hn::ShiftRight<32>(mid);
      int_lo = hn::Or(hn::ShiftLeft<32>(mid), hn::And(p0, hn::Set(d, 0xFFFFFFFFull)));
    } else {
      int_hi = MulHigh(d, t, i, i_hi);
      int_lo = MulLow(d, t, i, i_hi);
    }
    const VU sum = hn::Add(int_lo, frac_hi);
    // carry out of int_lo + frac_hi, in bit 63
    const VU carry = hn::Or(hn::And(int_lo, frac_hi), hn::AndNot(sum, hn::Or(int_lo, frac_hi)));
    const VU ovf = hn::Or(int_hi, hn::ShiftRight<63>(carry));
    return hn::Or(sum, hn::VecFromMask(d, hn::Ne(ovf, hn::Zero(d))));  // saturate to all-ones
  }
}

template <IntForm kForm>
HWY_NOINLINE void TicksLoop(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  const DU d;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  const VU i = hn::Set(d, c.ns_int), i_hi = hn::Set(d, c.ns_int >> 32);
  size_t x = 0;
  for (; x + N <= n; x += N)
    hn::StoreU(Scale<kForm>(d, hn::LoadU(d, in + x), f, f_hi, i, i_hi), d, out + x);
  for (; x < n; ++x) out[x] = tickclock_conv_ticks_to_ns(&c, in[x]);
}

template <IntForm kForm>
HWY_NOINLINE void DeltasLoop(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  const DU d;
  const hn::RebindToSigned<DU> di;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  const VU i = hn::Set(d, c.ns_int), i_hi = hn::Set(d, c.ns_int >> 32);
  const VU int64_max = hn::Set(d, 0x7FFFFFFFFFFFFFFFull);
  size_t x = 0;
  for (; x + N <= n; x += N) {
    const auto v = hn::LoadU(di, in + x);
    const VU s = hn::BitCast(d, hn::BroadcastSignBit(v));      // all-ones if negative
    const VU mag = hn::Sub(hn::Xor(hn::BitCast(d, v), s), s);  // |v|, 2^63 for INT64_MIN
    const VU r = Scale<kForm>(d, mag, f, f_hi, i, i_hi);
    // clamp to 2^63 - 1 (positive) or 2^63 (negative), then negate if negative
    const VU lim = hn::Sub(int64_max, s);
    const VU m = hn::Min(r, lim);
    hn::StoreU(hn::BitCast(di, hn::Sub(hn::Xor(m, s), s)), di, out + x);
  }
  for (; x < n; ++x) out[x] = tickclock_conv_delta_to_ns(&c, in[x]);
}

void TicksToNsImpl(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  if (c.ns_int == 0) return TicksLoop<IntForm::kZero>(c, in, out, n);
  if ((c.ns_int >> 32) == 0) return TicksLoop<IntForm::kSmall>(c, in, out, n);
  return TicksLoop<IntForm::kWide>(c, in, out, n);
}

void DeltasToNsImpl(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  if (c.ns_int == 0) return DeltasLoop<IntForm::kZero>(c, in, out, n);
  if ((c.ns_int >> 32) == 0) return DeltasLoop<IntForm::kSmall>(c, in, out, n);
  return DeltasLoop<IntForm::kWide>(c, in, out, n);
}

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
  const DU d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N + 1 <= n; i += N) {  // compares a[i..i+N) with a[i+1..i+N+1)
    const auto m = hn::Lt(hn::LoadU(d, a + i + 1), hn::LoadU(d, a + i));
    if (!hn::AllFalse(d, m)) return i + (size_t)hn::FindFirstTrue(d, m);
  }
  for (; i + 1 < n; ++i)
    if (a[i + 1] < a[i]) return i;
  return n;
}

#endif  // HWY_TARGET == HWY_SCALAR || TICKCLOCK_BATCH_PLAIN

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace batch
}  // namespace tickclock
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tickclock {
namespace batch {

HWY_EXPORT(TicksToNsImpl);
HWY_EXPORT(DeltasToNsImpl);
HWY_EXPORT(Log2HistogramImpl);
HWY_EXPORT(FirstDecreaseImpl);
HWY_EXPORT(TargetNameImpl);

void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(TicksToNsImpl)(c, in, out, n);
}
void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(DeltasToNsImpl)(c, in, out, n);
}
void Log2Histogram(const uint64_t* in, size_t n, uint64_t hist[kHistBuckets]) {
  HWY_DYNAMIC_DISPATCH(Log2HistogramImpl)(in, n, hist);
}
size_t FirstDecrease(const uint64_t* a, size_t n) {
  return HWY_DYNAMIC_DISPATCH(FirstDecreaseImpl)(a, n);
}
const char* ActiveTarget() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

}  // namespace batch
}  // namespace tickclock
#endif  // HWY_ONCE
