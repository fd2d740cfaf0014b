// Checks that a test binary really is built for, and runs on, the
// architecture Bazel resolved from --platforms (TICKCLOCK_TARGET_ARCH comes
// from //platforms:defs.bzl TARGET_ARCH_DEFINES): the compiler's predefined
// macros, type sizes, byte order, and the machine the running kernel (or
// QEMU user mode) reports. Catches a wrong toolchain being picked for a
// --config=<arch> (e.g. the host gcc) and a runner that does not emulate.
#include <sys/utsname.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "doctest/doctest.h"

#ifndef TICKCLOCK_TARGET_ARCH
#error "TICKCLOCK_TARGET_ARCH must be set by the BUILD file (TARGET_ARCH_DEFINES)"
#endif

namespace {

// The architecture the compiler targets, from its predefined macros only.
const char *compiler_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "i686";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "armv7";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__mips64) && defined(__MIPSEL__)
  return "mips64el";
#else
  return "unknown";
#endif
}

bool runtime_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

bool starts_with(const std::string &s, const char *prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

}  // namespace

TEST_CASE("compiler targets the platform Bazel selected") {
  const std::string target = TICKCLOCK_TARGET_ARCH;
  MESSAGE("bazel platform arch: " << target << ", compiler arch: " << std::string(compiler_arch())
                                  << ", compiler: " << std::string(__VERSION__));
  CHECK(target == compiler_arch());
}

TEST_CASE("predefined macros and type sizes of the target") {
  const std::string target = TICKCLOCK_TARGET_ARCH;
  const bool is32 = target == "i686" || target == "armv7";
  CHECK(sizeof(void *) == (is32 ? 4u : 8u));
  CHECK(sizeof(long) == sizeof(void *));
  CHECK(sizeof(long long) == 8u);
#if defined(__SIZEOF_INT128__)
  const bool has_int128 = true;
#else
  const bool has_int128 = false;
#endif
  // The conversion code needs a no-__int128 path exactly for the 32-bit targets.
  CHECK(has_int128 == !is32);

  const bool big = target == "s390x";
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  CHECK(big);
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  CHECK(!big);
#else
  FAIL("__BYTE_ORDER__ not defined");
#endif
  CHECK(runtime_little_endian() == !big);

#if defined(__i386__)
  // i686, not i386: the toolchain must target a CPU with RDTSC and CMOV.
  CHECK(target == "i686");
#if !defined(__i686__) && !defined(__pentiumpro__)
  FAIL("i686 toolchain does not target i686");
#endif
#endif
#if defined(__arm__)
  CHECK(__ARM_ARCH == 7);
#if !defined(__ARM_PCS_VFP)
  FAIL("armv7 build is not hard-float (armhf)");
#endif
#endif
#if defined(__mips64)
  CHECK(_MIPS_SIM == _ABI64);
#endif
#if defined(__powerpc64__)
  CHECK(_CALL_ELF == 2);  // ELFv2 ABI (ppc64le)
#endif
#if defined(__riscv)
  CHECK(__riscv_xlen == 64);
#endif
}

TEST_CASE("the running machine is the target (native or QEMU user mode)") {
  struct utsname u;
  REQUIRE(uname(&u) == 0);
  const std::string machine = u.machine;
  const std::string target = TICKCLOCK_TARGET_ARCH;
  MESSAGE("uname -m: " << machine);
  // Kernel / QEMU names: qemu-arm reports armv7l (or armv8l for a v8 CPU
  // model), qemu-mips64el reports mips64, qemu-i386 reports i686.
  if (target == "armv7") {
    CHECK(starts_with(machine, "armv"));
  } else if (target == "mips64el") {
    CHECK(starts_with(machine, "mips64"));
  } else if (target == "i686") {
    CHECK((machine == "i686" || machine == "i386" || machine == "i586"));
  } else {
    CHECK(machine == target);
  }
}
