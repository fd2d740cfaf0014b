/* tickclock — compiler and platform shims (internal).
 *
 * Everything here is in the common subset of C99 and C++11. Each shim is
 * chosen by feature detection (__has_builtin, __SIZEOF_INT128__, _MSC_VER),
 * never by compiler version numbers.
 */
#ifndef TICKCLOCK_PORT_H
#define TICKCLOCK_PORT_H

#include <stdint.h>
#include <stddef.h>

/* x86 (32 or 64 bit, any compiler): the one test for it. */
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define TKC_X86 1
#endif

#if defined(_MSC_VER) && !defined(__cplusplus)
#define TKC_INLINE static __inline
#else
#define TKC_INLINE static inline
#endif

#if defined(__has_builtin)
#define TKC_HAS_BUILTIN(x) __has_builtin(x)
#else
#define TKC_HAS_BUILTIN(x) 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TKC_LIKELY(x) __builtin_expect(!!(x), 1)
#define TKC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TKC_NOINLINE __attribute__((noinline))
#define TKC_EXTENSION __extension__
#else
#define TKC_LIKELY(x) (x)
#define TKC_UNLIKELY(x) (x)
#define TKC_NOINLINE __declspec(noinline)
#define TKC_EXTENSION
#endif

/* A value conversion that C++ users' -Wold-style-cast accepts: the header
 * part of the library is compiled in their translation units. */
#ifdef __cplusplus
#define TKC_CAST(type, v) (static_cast<type>(v))
#else
#define TKC_CAST(type, v) ((type)(v))
#endif

/* ---- linkage -------------------------------------------------------------
 * TICKCLOCK_API marks every function the library defines for its callers
 * (and the out-of-line halves of the inline read path):
 *  - TICKCLOCK_STATIC: static. For a program whose only users of the
 *    clock sit in the one file that defines TICKCLOCK_IMPLEMENTATION, or
 *    where every including file defines it: each gets a private copy
 *    (its own state and tick unit) and nothing is exported.
 *  - Windows: __declspec(dllexport) when TICKCLOCK_BUILD_DLL is defined
 *    (building a DLL), __declspec(dllimport) when TICKCLOCK_DLL is
 *    (using one), nothing otherwise.
 *  - gcc and clang elsewhere: visibility("default"), so a shared library
 *    compiled with -fvisibility=hidden still exports the API.
 * Define TICKCLOCK_API before the include to choose yourself.
 * TKC_INTERNAL marks the implementation's own cross-file functions:
 * static under TICKCLOCK_STATIC, ordinary otherwise. */
/* 8-byte alignment for the 64-bit word the hot path loads atomically: the
 * i386 ABI aligns uint64_t to 4 only, and a lock-free 8-byte load
 * (cmpxchg8b, ldrexd) needs 8. */
#if defined(__GNUC__) || defined(__clang__)
#define TKC_ALIGN8 __attribute__((aligned(8)))
#else
#define TKC_ALIGN8
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TKC_UNUSED __attribute__((unused))
#else
#define TKC_UNUSED
#endif

#ifndef TICKCLOCK_API
#if defined(TICKCLOCK_STATIC)
#define TICKCLOCK_API static TKC_UNUSED
#elif defined(_WIN32) || defined(__CYGWIN__)
#if defined(TICKCLOCK_BUILD_DLL)
#define TICKCLOCK_API __declspec(dllexport)
#elif defined(TICKCLOCK_DLL)
#define TICKCLOCK_API __declspec(dllimport)
#else
#define TICKCLOCK_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define TICKCLOCK_API __attribute__((visibility("default")))
#else
#define TICKCLOCK_API
#endif
#endif

/* Variables loaded by the inline read path (declarations). */
#define TKC_API_VAR extern TICKCLOCK_API

#if defined(TICKCLOCK_STATIC)
#define TKC_INTERNAL static TKC_UNUSED
#else
#define TKC_INTERNAL
#endif

/* ---- 64x64 -> 128-bit unsigned multiply ------------------------------
 * Three paths: the compiler's unsigned __int128 (gcc/clang on 64-bit
 * targets), MSVC's _umul128 on x64, and a portable 32-bit-halves product
 * for everything else (i686, armv7, mips o32, MSVC x86). Define
 * TICKCLOCK_NO_INT128 to force the portable path (the tests do, to check
 * that it gives identical results). */
#if defined(__SIZEOF_INT128__) && !defined(TICKCLOCK_NO_INT128)
#define TKC_HAVE_INT128 1
TKC_EXTENSION typedef unsigned __int128 tkc_u128;
#elif defined(_MSC_VER) && defined(_M_X64) && !defined(TICKCLOCK_NO_INT128)
#include <intrin.h>
#define TKC_HAVE_UMUL128 1
#endif

/* Returns the high 64 bits of a*b and stores the low 64 bits in *lo. */
TKC_INLINE uint64_t tkc_mul64(uint64_t a, uint64_t b, uint64_t *lo) {
#if defined(TKC_HAVE_INT128)
  tkc_u128 p = TKC_CAST(tkc_u128, a) * b;
  *lo = TKC_CAST(uint64_t, p);
  return TKC_CAST(uint64_t, p >> 64);
#elif defined(TKC_HAVE_UMUL128)
  uint64_t hi;
  *lo = _umul128(a, b, &hi);
  return hi;
#else
  uint64_t a_lo = TKC_CAST(uint32_t, a), a_hi = a >> 32;
  uint64_t b_lo = TKC_CAST(uint32_t, b), b_hi = b >> 32;
  uint64_t ll = a_lo * b_lo;
  uint64_t lh = a_lo * b_hi;
  uint64_t hl = a_hi * b_lo;
  uint64_t hh = a_hi * b_hi;
  /* middle column: three terms below 2^32 each, so no overflow */
  uint64_t mid = (ll >> 32) + TKC_CAST(uint32_t, lh) + TKC_CAST(uint32_t, hl);
  *lo = (mid << 32) | TKC_CAST(uint32_t, ll);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* ---- atomics -----------------------------------------------------------
 * The GNU __atomic builtins exist in gcc and clang in both C and C++ modes.
 * MSVC gets volatile accesses: on x86/x64 it compiles them with
 * acquire/release semantics (/volatile:ms, the default there). On ARM64
 * its default is /volatile:iso, where a volatile access is not ordered
 * with other memory accesses by the CPU: there an acquire load is the
 * load followed by DMB ISH, a release store DMB ISH then the store (the
 * ordering LDAR/STLR give), typed through _Generic in C (MSVC's C11 mode)
 * and a template in C++. TKC_FORCE_MSVC_ATOMICS selects this
 * branch under clang, so the matrix compiles it for an ARM64 Windows
 * target (clang-cl knows __dmb and the _Interlocked intrinsics). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(TKC_FORCE_MSVC_ATOMICS)
/* The read path loads 64-bit values (the re-validation deadline) and
 * init stores them. Where the compiler says 64-bit atomics are not always
 * lock-free (i486, mips32, ppc32, riscv32, armv5: __GCC_ATOMIC_LLONG_LOCK_FREE
 * below 2), __atomic_load_n on them becomes a libatomic call, which takes a
 * lock (not async-signal-safe) and needs -latomic: refused. i686 (CMPXCHG8B,
 * x87/SSE 64-bit moves) and armv7 (LDREXD/STREXD) have them lock-free.
 * clang in MSVC mode states the same fact as __CLANG_ATOMIC_LLONG_LOCK_FREE. */
#if defined(__GCC_ATOMIC_LLONG_LOCK_FREE)
#define TKC_U64_LOCK_FREE __GCC_ATOMIC_LLONG_LOCK_FREE
#elif defined(__CLANG_ATOMIC_LLONG_LOCK_FREE)
#define TKC_U64_LOCK_FREE __CLANG_ATOMIC_LLONG_LOCK_FREE
#endif
#if defined(TKC_U64_LOCK_FREE) && TKC_U64_LOCK_FREE < 2
#error \
    "tickclock: this target has no lock-free 64-bit atomics (__GCC_ATOMIC_LLONG_LOCK_FREE < 2), so the clock's 64-bit loads would be libatomic calls (a lock: not async-signal-safe; needs -latomic). Supported 32-bit targets: i686 and armv7. Build for one of them (e.g. -march=i686 or later on x86, -march=armv7-a on ARM) or for a 64-bit target."
#endif
#define TKC_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define TKC_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define TKC_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define TKC_CAS_INT(p, expected, desired) tkc_cas_int((p), (expected), (desired))
TKC_INLINE int tkc_cas_int(int *p, int expected, int desired) {
  return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#elif defined(_MSC_VER)
#include <intrin.h>
/* The shared globals are declared volatile (TKC_SHARED) under MSVC. */
#define TKC_SHARED volatile
#define TKC_LOAD_RELAXED(p) (*(p))
/* _InterlockedCompareExchange is a full barrier on every MSVC target. */
#define TKC_CAS_INT(p, expected, desired)                                                  \
  (_InterlockedCompareExchange((volatile long *)(p), (long)(desired), (long)(expected)) == \
   (long)(expected))
#if defined(_M_ARM64) || defined(_M_ARM64EC)
#define TKC_DMB_ISH() __dmb(0xB) /* _ARM64_BARRIER_ISH */
#if defined(__cplusplus)         /* port.h is included outside tickclock.h's extern "C" */
template <class T>
static inline T tkc_ld_acq(const volatile T *p) {
  T v = *p;
  TKC_DMB_ISH();
  return v;
}
template <class T, class U>
static inline void tkc_st_rel(volatile T *p, U v) {
  TKC_DMB_ISH();
  *p = v;
}
#define TKC_LOAD_ACQUIRE(p) tkc_ld_acq(p)
#define TKC_STORE_RELEASE(p, v) tkc_st_rel((p), (v))
#else
static __inline int tkc_ld_acq_int(const volatile int *p) {
  int v = *p;
  TKC_DMB_ISH();
  return v;
}
static __inline uint64_t tkc_ld_acq_u64(const volatile uint64_t *p) {
  uint64_t v = *p;
  TKC_DMB_ISH();
  return v;
}
static __inline void *tkc_ld_acq_ptr(void *const volatile *p) {
  void *v = *p;
  TKC_DMB_ISH();
  return v;
}
#define TKC_LOAD_ACQUIRE(p)                                                \
  _Generic((p),                                                            \
      volatile int *: tkc_ld_acq_int((const volatile int *)(p)),           \
      volatile uint64_t *: tkc_ld_acq_u64((const volatile uint64_t *)(p)), \
      default: tkc_ld_acq_ptr((void *const volatile *)(p)))
#define TKC_STORE_RELEASE(p, v) (TKC_DMB_ISH(), *(p) = (v))
#endif
#else /* x64: /volatile:ms orders volatile accesses */
#if !defined(_M_X64)
/* 32-bit MSVC: a volatile 64-bit access (the re-validation deadline) is two
 * 32-bit accesses there and tears; on ARM32 it is not ordered either. */
#error \
    "tickclock: 32-bit MSVC (_M_IX86, _M_ARM) is not supported: a 64-bit volatile load or store there is two 32-bit accesses and tears. Supported 32-bit targets: i686 and armv7, with gcc or clang (clang-cl on 32-bit Windows). Build with one of them, or for x64 or ARM64."
#endif
#define TKC_LOAD_ACQUIRE(p) (*(p))
#define TKC_STORE_RELEASE(p, v) (*(p) = (v))
#endif
#else
#error "tickclock: no atomic primitives for this compiler"
#endif

#ifndef TKC_SHARED
#define TKC_SHARED
#endif

#endif /* TICKCLOCK_PORT_H */
