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

// Upper 32 bits of each u64 lane moved to the lower half, for MulEven,
// which reads only the lower half: on x86 a dword shuffle, which runs on a
// port the multiplies and shifts do not use (the shift competes with them).
HWY_INLINE VU HighHalf(DU d, VU a) {
#if HWY_ARCH_X86
  const hn::Repartition<uint32_t, DU> d32;
  return hn::BitCast(d, hn::Shuffle2301(hn::BitCast(d32, a)));
#else
  (void)d;
  return hn::ShiftRight<32>(a);
#endif
}

// 32x32 -> 64 product of the lower halves of the lanes of a and b.
HWY_INLINE VU Mul32(DU d, VU a, VU b) {
  const hn::Repartition<uint32_t, DU> d32;
  (void)d;
  return hn::MulEven(hn::BitCast(d32, a), hn::BitCast(d32, b));
}

// High 64 bits of a*b per lane from four 32x32 products; a_hi and b_hi
// carry the upper halves in their lower halves (b_hi is loop-invariant).
// The columns are summed as t1 = hl + (ll >> 32), t2 = lh + lo32(t1):
// neither can overflow (each is below 2^64 - 2^32 + 2^32).
HWY_INLINE VU MulHigh(DU d, VU a, VU a_hi, VU b, VU b_hi) {
  const VU mask32 = hn::Set(d, 0xFFFFFFFFull);
  const VU ll = Mul32(d, a, b);
  const VU lh = Mul32(d, a, b_hi);
  const VU hl = Mul32(d, a_hi, b);
  const VU hh = Mul32(d, a_hi, b_hi);
  const VU t1 = hn::Add(hl, hn::ShiftRight<32>(ll));
  const VU t2 = hn::Add(lh, hn::And(t1, mask32));
  return hn::Add(hn::Add(hh, hn::ShiftRight<32>(t1)), hn::ShiftRight<32>(t2));
}

// The integer part's form, chosen once per call.
enum class IntForm { kZero, kSmall, kWide };

// t * (i + f/2^64) modulo 2^64. Exact wherever the true value is below
// 2^64 (the callers saturate the other lanes by comparing t with a
// per-call threshold), so no carry or high integer product is needed:
// kZero: t*f/2^64 < t, nothing to add; kSmall (i < 2^32): t*i mod 2^64 =
// t_lo*i + (t_hi*i << 32); kWide: t*i mod 2^64 = ll + ((lh + hl) << 32).
// Loop-invariant vectors are passed one by one: SVE/RVV vectors are
// sizeless and cannot be struct members.
template <IntForm kForm>
HWY_INLINE VU ScaleWrapped(DU d, VU t, VU f, VU f_hi, VU i, VU i_hi) {
  const VU t_hi = HighHalf(d, t);
  const VU frac_hi = MulHigh(d, t, t_hi, f, f_hi);
  if constexpr (kForm == IntForm::kZero) {
    (void)i, (void)i_hi;
    return frac_hi;
  } else if constexpr (kForm == IntForm::kSmall) {
    (void)i_hi;
    const VU int_lo = hn::Add(Mul32(d, t, i), hn::ShiftLeft<32>(Mul32(d, t_hi, i)));
    return hn::Add(frac_hi, int_lo);
  } else {
    const VU cross = hn::Add(Mul32(d, t, i_hi), Mul32(d, t_hi, i));
    const VU int_lo = hn::Add(Mul32(d, t, i), hn::ShiftLeft<32>(cross));
    return hn::Add(frac_hi, int_lo);
  }
}

// The largest t with ticks_to_ns(t) < limit (UINT64_MAX when even
// UINT64_MAX converts below it; limit > 0). ticks_to_ns
// never decreases in t, so every larger t converts to limit or more, and
// every t up to it converts exactly in ScaleWrapped's modular arithmetic.
// A division gives the estimate where the compiler has 128-bit integers;
// the bisection confirms it (two conversions) or finds the value alone.
uint64_t LastBelow(const tickclock_conv& c, uint64_t limit) {
  if (tickclock_conv_ticks_to_ns(&c, UINT64_MAX) < limit) return UINT64_MAX;
  uint64_t lo = 0, hi = UINT64_MAX;  // conv(lo) < limit <= conv(hi)
#if defined(__SIZEOF_INT128__)
  {
    // t * (i*2^64 + f) < limit * 2^64  <=>  t <= (limit*2^64 - 1) / M
    using u128 = unsigned __int128;
    const u128 m = ((u128)c.ns_int << 64) | c.ns_frac;
    if (m != 0) {
      const u128 e = (((u128)limit << 64) - 1) / m;
      if (e < UINT64_MAX) {
        const uint64_t est = (uint64_t)e;
        if (tickclock_conv_ticks_to_ns(&c, est) < limit) lo = est;
        if (tickclock_conv_ticks_to_ns(&c, est + 1) >= limit) hi = est + 1;
      }
    }
  }
#endif
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (tickclock_conv_ticks_to_ns(&c, mid) < limit ? lo : hi) = mid;
  }
  return lo;
}

// Unsigned t > limit per lane, with limit already XORed with the sign
// bit: the signed compare every x86 target has (AVX2 has no unsigned one).
HWY_INLINE VU Above(DU d, VU t, VU limit_flipped) {
  const hn::RebindToSigned<DU> di;
  const VU msb = hn::Set(d, 1ull << 63);
  return hn::VecFromMask(d, hn::RebindMask(d, hn::Gt(hn::BitCast(di, hn::Xor(t, msb)),
                                                     hn::BitCast(di, limit_flipped))));
}

template <IntForm kForm>
HWY_NOINLINE void TicksLoop(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  const DU d;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  const VU i = hn::Set(d, c.ns_int), i_hi = hn::Set(d, c.ns_int >> 32);
  size_t x = 0;
  if constexpr (kForm == IntForm::kZero) {
    // t*f/2^64 < t: never saturates
    for (; x + 2 * N <= n; x += 2 * N) {
      const VU a = hn::LoadU(d, in + x), b = hn::LoadU(d, in + x + N);
      hn::StoreU(ScaleWrapped<kForm>(d, a, f, f_hi, i, i_hi), d, out + x);
      hn::StoreU(ScaleWrapped<kForm>(d, b, f, f_hi, i, i_hi), d, out + x + N);
    }
    for (; x + N <= n; x += N)
      hn::StoreU(ScaleWrapped<kForm>(d, hn::LoadU(d, in + x), f, f_hi, i, i_hi), d, out + x);
  } else {
    // one compare per vector: lanes above the last unsaturated t -> all-ones
    const VU last = hn::Set(d, LastBelow(c, UINT64_MAX) ^ (1ull << 63));
    for (; x + N <= n; x += N) {
      const VU t = hn::LoadU(d, in + x);
      hn::StoreU(hn::Or(ScaleWrapped<kForm>(d, t, f, f_hi, i, i_hi), Above(d, t, last)), d,
                 out + x);
    }
  }
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
  // |d| <= 2^63. Without an integer part |d|*f/2^64 < 2^63 fits int64;
  // otherwise both signs saturate exactly where the magnitude converts
  // to 2^63 or more (-2^63 is INT64_MIN itself): one threshold.
  const VU last =
      hn::Set(d, (kForm == IntForm::kZero ? UINT64_MAX : LastBelow(c, 1ull << 63)) ^ (1ull << 63));
  size_t x = 0;
  for (; x + N <= n; x += N) {
    const auto v = hn::LoadU(di, in + x);
    const VU s = hn::BitCast(d, hn::BroadcastSignBit(v));      // all-ones if negative
    const VU mag = hn::Sub(hn::Xor(hn::BitCast(d, v), s), s);  // |v|, 2^63 for INT64_MIN
    VU r = ScaleWrapped<kForm>(d, mag, f, f_hi, i, i_hi);
    if constexpr (kForm != IntForm::kZero) {
      // saturated lanes: 2^63 - 1, or 2^63 where negative (negated below)
      r = hn::IfThenElse(hn::MaskFromVec(Above(d, mag, last)), hn::Xor(int64_max, s), r);
    }
    hn::StoreU(hn::BitCast(di, hn::Sub(hn::Xor(r, s), s)), di, out + x);
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
