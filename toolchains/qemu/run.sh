#!/usr/bin/env bash
# Test runner for the cross targets: runs a target binary on this x86-64 host.
#
#   run_<arch> BINARY [ARGS...]     (as --run_under=//toolchains/qemu:run_<arch>)
#   run.sh <arch> BINARY [ARGS...]
#
# <arch>: aarch64 armv7 ppc64le s390x riscv64 mips64el i686, and x86_64 (host
# binaries under qemu-x86_64, for CPU models via QEMU_CPU). binfmt_misc is
# not mounted here, so qemu-<arch> is always named explicitly. Which C runtime
# (loader, libc, libstdc++) the binary gets at run time depends on what is
# installed for its architecture:
#
#   static                  qemu-<arch> BINARY
#   dynamic, "native"       qemu-<arch> BINARY, QEMU_LD_PREFIX unset: the
#     runtime: the loader     loader, libc, libstdc++ and libhwy all come from
#     the binary names        Debian's own packages for that architecture
#     (PT_INTERP) exists      (multiarch libc6:arm64/ppc64el/s390x pulled in by
#     on this host for its    libhwy-dev:<arch>; for i686 libc6-i386 and
#     machine                 lib32stdc++6 in /lib32; x86_64: the host's own).
#                             aarch64 ppc64le s390x i686 x86_64.
#   dynamic, otherwise      qemu-<arch> -L /usr/<triple> BINARY: loader and libs
#                             of the cross sysroot. armv7 riscv64 mips64el.
#
# Why not -L /usr/<triple> everywhere (measured, see toolchains/README.md):
# once libc6:<arch> is installed as multiarch, the host's /etc/ld.so.cache
# lists /lib/<multiarch>/ and the sysroot loader (glibc 2.36-8cross1) then
# loads the multiarch libc/libstdc++ (2.36-9+deb12u14): ppc64le and s390x abort
# with "*** stack smashing detected ***" even for binaries without Highway.
# i686: this host cannot execute 32-bit x86 code natively (Exec format error,
# even for static binaries), and under qemu-i386 the cross sysroot's libc hangs
# at the first pthread_create; with Debian's /lib32 runtime threads work.
#
# A file that is not an ELF binary (an sh_test script) or is a host x86-64
# binary is run directly, with TICKCLOCK_RUNNER set to this runner so that the
# script can run target binaries as  $TICKCLOCK_RUNNER BINARY ARGS.
#
# TICKCLOCK_RUNNER_VERBOSE=1 prints the chosen command on stderr (from Bazel:
# --test_env=TICKCLOCK_RUNNER_VERBOSE=1). QEMU's own variables pass through
# (QEMU_CPU=cortex-a53, QEMU_STRACE=1; from Bazel --test_env=QEMU_CPU=...).
set -euo pipefail

die() { echo "run.sh: $*" >&2; exit 2; }

self=$(basename "$0")
case "$self" in
  run_*) arch=${self#run_}; arch=${arch%.sh} ;;
  *) [ $# -ge 1 ] || die "usage: run.sh <arch> BINARY [ARGS...]"; arch=$1; shift ;;
esac
[ $# -ge 1 ] || die "usage: $self BINARY [ARGS...]"
bin=$1; shift

case "$arch" in
  aarch64)  qemu="qemu-aarch64";  triple=aarch64-linux-gnu;       multiarch=aarch64-linux-gnu ;;
  armv7)    qemu="qemu-arm";      triple=arm-linux-gnueabihf;     multiarch=arm-linux-gnueabihf ;;
  ppc64le)  qemu="qemu-ppc64le";  triple=powerpc64le-linux-gnu;   multiarch=powerpc64le-linux-gnu ;;
  s390x)    qemu="qemu-s390x";    triple=s390x-linux-gnu;         multiarch=s390x-linux-gnu ;;
  riscv64)  qemu="qemu-riscv64";  triple=riscv64-linux-gnu;       multiarch=riscv64-linux-gnu ;;
  mips64el) qemu="qemu-mips64el"; triple=mips64el-linux-gnuabi64; multiarch=mips64el-linux-gnuabi64 ;;
  i686)     qemu="qemu-i386";     triple=i686-linux-gnu;          multiarch=i386-linux-gnu ;;
  # Host binaries under an emulated x86-64 CPU model (QEMU_CPU=Nehalem, ...).
  x86_64)   qemu="qemu-x86_64";   triple=x86_64-linux-gnu;        multiarch=x86_64-linux-gnu ;;
  *) die "unknown arch '$arch'" ;;
esac
sysroot=/usr/$triple

[ -f "$bin" ] || die "no such binary: $bin"
command -v readelf >/dev/null || die "readelf not found (binutils)"
command -v "$qemu" >/dev/null || die "$qemu not found: run ci/deps-cross"

# --- how was it linked? ------------------------------------------------------
# ELF machine of a file, as readelf prints it ("AArch64", "Intel 80386", ...).
machine() { { readelf -hW "$1" 2>/dev/null || true; } | sed -n 's/^ *Machine: *//p'; }

# NEEDED libraries of $1, transitively through RUNPATH/RPATH (Bazel's
# $ORIGIN-relative _solib_<cpu> directories), found neither there nor in
# the directories given after $1.
unresolved() {
  local top=$1; shift
  local -a queue=("$top") seen=()
  local f dir rp d lib found
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    dir=$(dirname "$f")
    rp=$(readelf -dW "$f" 2>/dev/null |
      sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p' | tr ':' ' ')
    for lib in $(readelf -dW "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
      case " ${seen[*]-} " in *" $lib "*) continue ;; esac
      seen+=("$lib")
      found=
      for d in $rp; do
        d=${d//\$ORIGIN/$dir}; d=${d//\$\{ORIGIN\}/$dir}
        if [ -e "$d/$lib" ]; then found=$d/$lib; queue+=("$found"); break; fi
      done
      if [ -z "$found" ]; then
        for d in "$@"; do [ -e "$d/$lib" ] && { found=$d/$lib; break; }; done
      fi
      [ -n "$found" ] || echo "$lib"
    done
  done
}

# Not a target binary: a script (sh_test) or a host executable. Run it as it
# is; it can run target binaries itself through "$TICKCLOCK_RUNNER" BINARY.
host_machine=$(machine /proc/self/exe)
bin_machine=$(machine "$bin")
if [ -z "$bin_machine" ] || { [ "$arch" != x86_64 ] && [ "$bin_machine" = "$host_machine" ]; }; then
  TICKCLOCK_RUNNER=$(cd "$(dirname "$0")" && pwd)/$self
  if [ "$self" = run.sh ]; then TICKCLOCK_RUNNER="$TICKCLOCK_RUNNER $arch"; fi
  export TICKCLOCK_RUNNER
  if [ "${TICKCLOCK_RUNNER_VERBOSE:-0}" = 1 ]; then
    echo "run_$arch (not a $arch binary, run directly; TICKCLOCK_RUNNER=$TICKCLOCK_RUNNER): $bin $*" >&2
  fi
  [ -x "$bin" ] || die "$bin is neither a $arch ELF binary nor executable"
  exec "$bin" "$@"
fi

interp=$(readelf -lW "$bin" 2>/dev/null |
  sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
if [ -z "$interp" ]; then
  mode=static
elif [ -e "$interp" ] && [ "$(machine "$interp")" = "$(machine "$bin")" ]; then
  mode=native
  if [ "$arch" = i686 ]; then
    libdirs=(/lib32 /usr/lib32 /lib/i386-linux-gnu /usr/lib/i386-linux-gnu)
  else
    libdirs=("/lib/$multiarch" "/usr/lib/$multiarch")
  fi
  missing=$(unresolved "$bin" "${libdirs[@]}" | tr '\n' ' ')
  [ -z "$missing" ] || die "$bin needs $missing, not installed for $arch in ${libdirs[*]} (run ci/deps-cross)"
else
  mode=sysroot
  missing=$(unresolved "$bin" "$sysroot/lib" "$sysroot/lib64" "$sysroot/lib32" | tr '\n' ' ')
  [ -z "$missing" ] || die "$bin needs $missing: not in $sysroot and no $arch runtime ($interp) installed (run ci/deps-cross)"
fi

# --- run it --------------------------------------------------------------------
unset QEMU_LD_PREFIX
case "$mode" in
  static|native) cmd=("$qemu" "$bin") ;;
  sysroot) cmd=("$qemu" -L "$sysroot" "$bin") ;;
esac
# x86-64 CPU models (QEMU_CPU=Haswell, EPYC, ...): a named model lists some
# features that QEMU's TCG cannot emulate (Haswell: pcid, x2apic, hle, rtm...;
# EPYC: sha-ni, topoext, nrip-save...). qemu-x86_64 leaves them out of the
# guest's CPUID anyway, but says so on stderr at every start ("warning: TCG
# doesn't support requested feature: CPUID.01H:ECX.pcid [bit 17]"), where a
# test of the program's own stderr (one line on bad input) sees it. Name the
# dropped features explicitly (Haswell -> Haswell,-pcid,...): the guest gets
# the same CPUID leaves (compared with tickclock-probe cpuid --dump for
# Haswell, Skylake-Client and EPYC on QEMU 7.2) and QEMU stays quiet.
if [ "$arch" = x86_64 ] && [ -n "${QEMU_CPU:-}" ]; then
  dropped=$({ "$qemu" -cpu "$QEMU_CPU" /bin/true 2>&1 >/dev/null || true; } |
    sed -n "s/.*TCG doesn't support requested feature: CPUID[^ ]*[.]\([^ .]*\) \[bit [0-9]*\]\$/-\1/p" |
    paste -sd, -)
  cpu_spec=$QEMU_CPU${dropped:+,$dropped}
  cmd=("$qemu" -cpu "$cpu_spec" "${cmd[@]:1}")
fi
if [ "${TICKCLOCK_RUNNER_VERBOSE:-0}" = 1 ]; then
  echo "run_$arch ($mode): ${cmd[*]} $*" >&2
fi
# TICKCLOCK_RUNNER_PRINT=1: print the resolved command (shell-quoted) and
# exit, so a script that runs one binary many times resolves it once.
if [ "${TICKCLOCK_RUNNER_PRINT:-0}" = 1 ]; then
  printf '%q ' env -u QEMU_LD_PREFIX "${cmd[@]}"; echo
  exit 0
fi
# The program runs under the emulator: a test that judges the counter's own
# rate against the host's clock reads this (QEMU's counter for another ISA
# is its own emulation of one, not a CPU's).
export TICKCLOCK_EMULATED="qemu-$arch"
exec "${cmd[@]}" "$@"
