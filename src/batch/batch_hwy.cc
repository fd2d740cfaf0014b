// Highway versions of the conversion kernels (the scans are in
// batch_scan_hwy.cc), compiled once per target
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

#include <type_traits>
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
// kExact sums the middle column as t1 = hl + (ll >> 32), t2 = lh +
// lo32(t1): neither can overflow (each is below 2^64 - 2^32 + 2^32), so it
// is exact for every a. kBounded sums it in one 64-bit lane,
// s = hl + lh + (ll >> 32), and returns hh + (s >> 32): three operations
// fewer, exact only where s < 2^64, which the callers establish with
// BoundedLimit (below) before they choose it. kNone: b == 0 (a whole
// number of ns per tick, e.g. 1 GHz), no product at all.
enum class Column { kExact, kBounded, kNone };

template <Column kCol>
HWY_INLINE VU MulHigh(DU d, VU a, VU a_hi, VU b, VU b_hi) {
  if constexpr (kCol == Column::kNone) {
    (void)a, (void)a_hi, (void)b, (void)b_hi;
    return hn::Zero(d);
  }
  const VU ll = Mul32(d, a, b);
  const VU lh = Mul32(d, a, b_hi);
  const VU hl = Mul32(d, a_hi, b);
  const VU hh = Mul32(d, a_hi, b_hi);
  if constexpr (kCol == Column::kBounded) {
    const VU s = hn::Add(hn::Add(hl, lh), hn::ShiftRight<32>(ll));
    return hn::Add(hh, hn::ShiftRight<32>(s));
  } else {
    const VU mask32 = hn::Set(d, 0xFFFFFFFFull);
    const VU t1 = hn::Add(hl, hn::ShiftRight<32>(ll));
    const VU t2 = hn::Add(lh, hn::And(t1, mask32));
    return hn::Add(hn::Add(hh, hn::ShiftRight<32>(t1)), hn::ShiftRight<32>(t2));
  }
}

// The integer part's form, chosen once per call.
enum class IntForm { kZero, kSmall, kWide };

// t * (i + f/2^64) modulo 2^64. Exact wherever the true value is below
// 2^64 (the callers saturate the other lanes by comparing t with a
// per-call threshold), so no carry or high integer product is needed:
// kZero: t*f/2^64 < t, nothing to add; kSmall (i < 2^32): t*i mod 2^64 =
// t_lo*i + (t_hi*i << 32); kWide: t*i mod 2^64 = ll + ((lh + hl) << 32).
// With kBounded the fraction's product is exact only for t up to
// BoundedLimit(f); lanes beyond it must be saturated ones (their value is
// replaced) or the caller must not choose kBounded.
// Loop-invariant vectors are passed one by one: SVE/RVV vectors are
// sizeless and cannot be struct members.
template <IntForm kForm, Column kCol>
HWY_INLINE VU ScaleWrapped(DU d, VU t, VU f, VU f_hi, VU i, VU i_hi) {
  const VU t_hi = HighHalf(d, t);
  const VU frac_hi = MulHigh<kCol>(d, t, t_hi, f, f_hi);
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

// The largest t for which MulHigh<kBounded>(t, f) is exact: its column
// s = t_hi*f_lo + t_lo*f_hi + (t_lo*f_lo >> 32) must stay below 2^64. s
// grows with t_hi and with t_lo, so the worst t_lo is 2^32 - 1 whatever
// t_hi is: with w = (2^32-1)*f_hi + ((2^32-1)*f_lo >> 32) (below 2^64 - 2^32
// + 2^32), every t_hi <= (2^64 - 1 - w) / f_lo is safe, and so is every
// t below (that t_hi + 1) * 2^32. f > 2^63 ties it to 1 - f/2^64 of the
// range (t_hi*f_lo + t_lo*f_hi reaches about t*f/2^32); below 2^63 it is
// at least half of it.
uint64_t BoundedLimit(uint64_t f) {
  const uint64_t f_lo = f & 0xFFFFFFFFull, f_hi = f >> 32, m = 0xFFFFFFFFull;
  const uint64_t w = m * f_hi + ((m * f_lo) >> 32);
  const uint64_t t_hi = f_lo == 0 ? m : (UINT64_MAX - w) / f_lo;
  return t_hi >= m ? UINT64_MAX : (t_hi << 32) | m;
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

// The largest magnitude a delta kernel keeps (larger ones saturate):
// every magnitude (<= 2^63) without an integer part, since |d|*f/2^64 <
// 2^63; otherwise the last one that converts below 2^63.
uint64_t DeltaLast(const tickclock_conv& c) {
  return c.ns_int == 0 ? 1ull << 63 : LastBelow(c, 1ull << 63);
}

// The bits a block's OR of values must not have for every value in it to
// be at most limit: those at and above the largest power of two not above
// limit + 1 (none when limit is UINT64_MAX).
uint64_t BitsAbove(uint64_t limit) {
  return limit == UINT64_MAX ? 0 : ~((1ull << (63 - __builtin_clzll(limit + 1))) - 1);
}

// Whole vectors of in[x, end) without an integer part (never saturates:
// t*f/2^64 < t), two at a time.
template <Column kCol>
HWY_INLINE void ZeroRun(DU d, const uint64_t* in, uint64_t* out, size_t x, size_t end, VU f,
                        VU f_hi) {
  const size_t N = hn::Lanes(d);
  for (; x + 2 * N <= end; x += 2 * N) {
    const VU a = hn::LoadU(d, in + x), b = hn::LoadU(d, in + x + N);
    hn::StoreU(MulHigh<kCol>(d, a, HighHalf(d, a), f, f_hi), d, out + x);
    hn::StoreU(MulHigh<kCol>(d, b, HighHalf(d, b), f, f_hi), d, out + x + N);
  }
  for (; x + N <= end; x += N) {
    const VU a = hn::LoadU(d, in + x);
    hn::StoreU(MulHigh<kCol>(d, a, HighHalf(d, a), f, f_hi), d, out + x);
  }
}

HWY_INLINE void StoreBounded(DU d, VU t, VU f, VU f_hi, uint64_t* out) {
  hn::StoreU(MulHigh<Column::kBounded>(d, t, HighHalf(d, t), f, f_hi), d, out);
}

// Ticks without an integer part (f > 1 GHz): t*f/2^64 < t never saturates.
HWY_NOINLINE void TicksZero(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  const DU d;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  size_t x = 0;
  const uint64_t lim = BoundedLimit(c.ns_frac);
  const size_t whole = n - n % N;
  // t < 2^k with 2^k <= lim + 1 is within the limit: a block whose OR
  // has no bit at or above k takes the bounded column (lim + 1 is a
  // multiple of 2^32, so k >= 32). Every t is within UINT64_MAX: no bit
  // to check (the blocks are kept: measured faster than a plain loop).
  const VU high = hn::Set(d, BitsAbove(lim));
  // eight vectors at a time, held in registers: checked, then converted
  // from the registers (nothing is stored before the check, so out ==
  // in is safe); a block that fails takes the exact column
  for (; x + 8 * N <= whole; x += 8 * N) {
    const VU v0 = hn::LoadU(d, in + x), v1 = hn::LoadU(d, in + x + N);
    const VU v2 = hn::LoadU(d, in + x + 2 * N), v3 = hn::LoadU(d, in + x + 3 * N);
    const VU v4 = hn::LoadU(d, in + x + 4 * N), v5 = hn::LoadU(d, in + x + 5 * N);
    const VU v6 = hn::LoadU(d, in + x + 6 * N), v7 = hn::LoadU(d, in + x + 7 * N);
    const VU any =
        hn::Or(hn::Or(hn::Or(v0, v1), hn::Or(v2, v3)), hn::Or(hn::Or(v4, v5), hn::Or(v6, v7)));
    if (HWY_LIKELY(hn::AllTrue(d, hn::Eq(hn::And(any, high), hn::Zero(d))))) {
      StoreBounded(d, v0, f, f_hi, out + x);
      StoreBounded(d, v1, f, f_hi, out + x + N);
      StoreBounded(d, v2, f, f_hi, out + x + 2 * N);
      StoreBounded(d, v3, f, f_hi, out + x + 3 * N);
      StoreBounded(d, v4, f, f_hi, out + x + 4 * N);
      StoreBounded(d, v5, f, f_hi, out + x + 5 * N);
      StoreBounded(d, v6, f, f_hi, out + x + 6 * N);
      StoreBounded(d, v7, f, f_hi, out + x + 7 * N);
    } else {
      ZeroRun<Column::kExact>(d, in, out, x, x + 8 * N, f, f_hi);
    }
  }
  ZeroRun<Column::kExact>(d, in, out, x, whole, f, f_hi);
  x = whole;
  for (; x < n; ++x) out[x] = tickclock_conv_ticks_to_ns(&c, in[x]);
}

// Ticks with an integer part (f <= 1 GHz): one compare per vector sets
// the lanes above the last unsaturated t to all-ones, whatever the column
// made of them.
template <IntForm kForm, Column kCol>
HWY_NOINLINE void TicksLoop(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n,
                            uint64_t last_kept) {
  const DU d;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  const VU i = hn::Set(d, c.ns_int), i_hi = hn::Set(d, c.ns_int >> 32);
  const VU last = hn::Set(d, last_kept ^ (1ull << 63));
  size_t x = 0;
  for (; x + N <= n; x += N) {
    const VU t = hn::LoadU(d, in + x);
    hn::StoreU(hn::Or(ScaleWrapped<kForm, kCol>(d, t, f, f_hi, i, i_hi), Above(d, t, last)), d,
               out + x);
  }
  for (; x < n; ++x) out[x] = tickclock_conv_ticks_to_ns(&c, in[x]);
}

// All-ones in the lanes of a negative int64 (as u64 bits), zero elsewhere.
HWY_INLINE VU SignMask(DU d, VU v) {
  const hn::RebindToSigned<DU> di;
  return hn::BitCast(d, hn::BroadcastSignBit(hn::BitCast(di, v)));
}

// |v| of an int64 lane (as u64 bits) from its sign mask s: flip and add one
// where negative; INT64_MIN's magnitude is 2^63, which u64 holds.
HWY_INLINE VU Magnitude(VU v, VU s) { return hn::Sub(hn::Xor(v, s), s); }

// One vector of deltas from its magnitudes (|INT64_MIN| = 2^63) and sign
// masks: the magnitude converted, the sign put back. kSat: lanes whose
// magnitude is above last become INT64_MAX / INT64_MIN (kept lanes convert
// below 2^63, so the mask leaves them alone; a negative saturated lane
// skips the +1 of the negation, which makes ~(2^63 - 1) = INT64_MIN).
// Without kSat every lane must be one that is kept.
template <IntForm kForm, Column kCol, bool kSat>
HWY_INLINE VU DeltaFromMagnitude(DU d, VU mag, VU s, VU f, VU f_hi, VU i, VU i_hi, VU last,
                                 VU int64_max) {
  VU r = ScaleWrapped<kForm, kCol>(d, mag, f, f_hi, i, i_hi);
  VU plus_one = s;  // the +1 of the two's-complement negation, negative lanes
  if constexpr (kSat) {
    const VU sat = Above(d, mag, last);
    r = hn::And(hn::Or(r, sat), int64_max);
    plus_one = hn::AndNot(sat, s);
  } else {
    (void)last, (void)int64_max;
  }
  return hn::Sub(hn::Xor(r, s), plus_one);
}

template <IntForm kForm, Column kCol, bool kSat>
HWY_INLINE void StoreDelta(DU d, int64_t* o, VU mag, VU s, VU f, VU f_hi, VU i, VU i_hi, VU last,
                           VU int64_max) {
  const hn::RebindToSigned<DU> di;
  hn::StoreU(hn::BitCast(di, DeltaFromMagnitude<kForm, kCol, kSat>(d, mag, s, f, f_hi, i, i_hi,
                                                                   last, int64_max)),
             di, o);
}

template <IntForm kForm, Column kCol>
HWY_NOINLINE void DeltasLoop(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n,
                             uint64_t last_kept) {
  const DU d;
  const hn::RebindToSigned<DU> di;
  const size_t N = hn::Lanes(d);
  const VU f = hn::Set(d, c.ns_frac), f_hi = hn::Set(d, c.ns_frac >> 32);
  const VU i = hn::Set(d, c.ns_int), i_hi = hn::Set(d, c.ns_int >> 32);
  const VU int64_max = hn::Set(d, 0x7FFFFFFFFFFFFFFFull);
  // |d| <= 2^63. Without an integer part |d|*f/2^64 < 2^63 fits int64 and
  // nothing saturates; otherwise both signs saturate exactly where the
  // magnitude converts to 2^63 or more (-2^63 is INT64_MIN itself): one
  // threshold. Compared per lane, that is five operations a vector; a
  // block of four vectors whose magnitudes' OR has no bit of BitsAbove
  // (durations in practice: 2^57 ticks at 24 MHz are 190 years) skips it
  // for one OR a vector and a test a block.
  constexpr bool kCanSaturate = kForm != IntForm::kZero;
  const VU last = hn::Set(d, last_kept ^ (1ull << 63));
  const VU high = hn::Set(d, kCanSaturate ? BitsAbove(last_kept) : 0);
  size_t x = 0;
  for (; x + 4 * N <= n; x += 4 * N) {
    // all four loaded before anything is stored: out == in is safe
    const VU v0 = hn::BitCast(d, hn::LoadU(di, in + x));
    const VU v1 = hn::BitCast(d, hn::LoadU(di, in + x + N));
    const VU v2 = hn::BitCast(d, hn::LoadU(di, in + x + 2 * N));
    const VU v3 = hn::BitCast(d, hn::LoadU(di, in + x + 3 * N));
    const VU s0 = SignMask(d, v0), s1 = SignMask(d, v1), s2 = SignMask(d, v2), s3 = SignMask(d, v3);
    const VU m0 = Magnitude(v0, s0), m1 = Magnitude(v1, s1);
    const VU m2 = Magnitude(v2, s2), m3 = Magnitude(v3, s3);
    int64_t* o = out + x;
    if (!kCanSaturate ||
        HWY_LIKELY(hn::AllTrue(
            d, hn::Eq(hn::And(hn::Or(hn::Or(m0, m1), hn::Or(m2, m3)), high), hn::Zero(d))))) {
      StoreDelta<kForm, kCol, false>(d, o, m0, s0, f, f_hi, i, i_hi, last, int64_max);
      StoreDelta<kForm, kCol, false>(d, o + N, m1, s1, f, f_hi, i, i_hi, last, int64_max);
      StoreDelta<kForm, kCol, false>(d, o + 2 * N, m2, s2, f, f_hi, i, i_hi, last, int64_max);
      StoreDelta<kForm, kCol, false>(d, o + 3 * N, m3, s3, f, f_hi, i, i_hi, last, int64_max);
    } else {
      StoreDelta<kForm, kCol, kCanSaturate>(d, o, m0, s0, f, f_hi, i, i_hi, last, int64_max);
      StoreDelta<kForm, kCol, kCanSaturate>(d, o + N, m1, s1, f, f_hi, i, i_hi, last, int64_max);
      StoreDelta<kForm, kCol, kCanSaturate>(d, o + 2 * N, m2, s2, f, f_hi, i, i_hi, last,
                                            int64_max);
      StoreDelta<kForm, kCol, kCanSaturate>(d, o + 3 * N, m3, s3, f, f_hi, i, i_hi, last,
                                            int64_max);
    }
  }
  for (; x + N <= n; x += N) {
    const VU v = hn::BitCast(d, hn::LoadU(di, in + x));
    const VU s = SignMask(d, v);
    const VU mag = Magnitude(v, s);
    StoreDelta<kForm, kCol, kCanSaturate>(d, out + x, mag, s, f, f_hi, i, i_hi, last, int64_max);
  }
  for (; x < n; ++x) out[x] = tickclock_conv_delta_to_ns(&c, in[x]);
}

// The column for a call: none without a fraction; the bounded one when
// every lane whose value is kept is within BoundedLimit (lanes above the
// saturation threshold are replaced, so that threshold is the bound); the
// exact one otherwise. Ticks without an integer part never saturate:
// TicksZero checks them block by block instead.
template <typename Loop>
void WithColumn(const tickclock_conv& c, uint64_t last_kept, Loop loop) {
  if (c.ns_frac == 0) return loop(std::integral_constant<Column, Column::kNone>());
  if (last_kept <= BoundedLimit(c.ns_frac))
    return loop(std::integral_constant<Column, Column::kBounded>());
  return loop(std::integral_constant<Column, Column::kExact>());
}

template <IntForm kForm>
void TicksForm(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  const uint64_t last = LastBelow(c, UINT64_MAX);
  WithColumn(c, last,
             [&](auto col) { TicksLoop<kForm, decltype(col)::value>(c, in, out, n, last); });
}

template <IntForm kForm>
void DeltasForm(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  const uint64_t last = DeltaLast(c);
  WithColumn(c, last,
             [&](auto col) { DeltasLoop<kForm, decltype(col)::value>(c, in, out, n, last); });
}

void TicksToNsImpl(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  if (c.ns_int == 0) return TicksZero(c, in, out, n);
  if ((c.ns_int >> 32) == 0) return TicksForm<IntForm::kSmall>(c, in, out, n);
  return TicksForm<IntForm::kWide>(c, in, out, n);
}

void DeltasToNsImpl(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  if (c.ns_int == 0) return DeltasForm<IntForm::kZero>(c, in, out, n);
  if ((c.ns_int >> 32) == 0) return DeltasForm<IntForm::kSmall>(c, in, out, n);
  return DeltasForm<IntForm::kWide>(c, in, out, n);
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
HWY_EXPORT(TargetNameImpl);

void TicksToNs(const tickclock_conv& c, const uint64_t* in, uint64_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(TicksToNsImpl)(c, in, out, n);
}
void DeltasToNs(const tickclock_conv& c, const int64_t* in, int64_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(DeltasToNsImpl)(c, in, out, n);
}
const char* ActiveTarget() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

}  // namespace batch
}  // namespace tickclock
#endif  // HWY_ONCE
