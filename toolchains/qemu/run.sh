#!/usr/bin/env bash
# Test runner for the cross targets: runs a target binary on this x86-64 host.
#
#   run_<arch> BINARY [ARGS...]     (as --run_under=//toolchains/qemu:run_<arch>)
#   run.sh <arch> BINARY [ARGS...]
#
# <arch>: aarch64 armv7 ppc64le s390x riscv64 mips64el (QEMU user mode) or
# i686 (native). binfmt_misc is not mounted here, so qemu-<arch> is always
# named explicitly. How a binary runs depends on how it was linked:
#
#   static                  qemu-<arch> BINARY           (i686: BINARY itself)
#   dynamic, every library  qemu-<arch> -L /usr/<triple> BINARY
#     found in the cross      (loader and libc of the cross sysroot, the one
#     sysroot or RUNPATH      the binary was linked against)
#   dynamic, needs a        qemu-<arch> BINARY, QEMU_LD_PREFIX unset: loader,
#     multiarch library       libc and libstdc++ all from Debian's multiarch
#     (libhwy from            packages (/lib/<multiarch>). Mixing the cross
#     libhwy-dev:<arch>)      sysroot's libc with multiarch libraries aborts
#                             with "stack smashing detected" (TOOLCHAIN.md).
#   i686, dynamic           /usr/i686-linux-gnu/lib/ld-linux.so.2
#                             --library-path /usr/i686-linux-gnu/lib BINARY
#                             (the x86-64 kernel runs i386 code natively;
#                             qemu-i386 hangs at thread creation).
#
# TICKCLOCK_RUNNER_VERBOSE=1 prints the chosen command on stderr.
# QEMU's own variables (QEMU_CPU=..., QEMU_STRACE=1) pass through; from Bazel
# use --test_env=QEMU_CPU=cortex-a53 and the like.
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
  aarch64)  qemu=qemu-aarch64;  triple=aarch64-linux-gnu;       multiarch=aarch64-linux-gnu ;;
  armv7)    qemu=qemu-arm;      triple=arm-linux-gnueabihf;     multiarch=arm-linux-gnueabihf ;;
  ppc64le)  qemu=qemu-ppc64le;  triple=powerpc64le-linux-gnu;   multiarch=powerpc64le-linux-gnu ;;
  s390x)    qemu=qemu-s390x;    triple=s390x-linux-gnu;         multiarch=s390x-linux-gnu ;;
  riscv64)  qemu=qemu-riscv64;  triple=riscv64-linux-gnu;       multiarch=riscv64-linux-gnu ;;
  mips64el) qemu=qemu-mips64el; triple=mips64el-linux-gnuabi64; multiarch=mips64el-linux-gnuabi64 ;;
  i686)     qemu=;              triple=i686-linux-gnu;          multiarch=i386-linux-gnu ;;
  *) die "unknown arch '$arch'" ;;
esac
sysroot=/usr/$triple

[ -f "$bin" ] || die "no such binary: $bin"
command -v readelf >/dev/null || die "readelf not found (binutils)"
if [ -n "$qemu" ]; then
  command -v "$qemu" >/dev/null || die "$qemu not found: run ci/deps-cross"
fi

# --- how was it linked? ------------------------------------------------------
interp=$(readelf -lW "$bin" 2>/dev/null |
  sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')

# Libraries the binary needs, transitively through its RUNPATH/RPATH (Bazel's
# _solib_<cpu> directories, $ORIGIN-relative), that are found neither there
# nor in the cross sysroot. Non-empty means: multiarch libraries are needed.
missing_from_sysroot() {
  local -a queue=("$1") seen=()
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
        for d in "$sysroot/lib" "$sysroot/lib64" "$sysroot/lib32"; do
          [ -e "$d/$lib" ] && { found=$d/$lib; break; }
        done
      fi
      [ -n "$found" ] || echo "$lib"
    done
  done
}

if [ -z "$interp" ]; then
  mode=static
else
  missing=$(missing_from_sysroot "$bin" | tr '\n' ' ')
  if [ -z "$missing" ]; then
    mode=sysroot
  else
    mode=multiarch
    for lib in $missing; do
      if [ ! -e "/usr/lib/$multiarch/$lib" ] && [ ! -e "/lib/$multiarch/$lib" ]; then
        die "$bin needs $lib, found neither in $sysroot nor in /usr/lib/$multiarch (run ci/deps-cross)"
      fi
    done
    [ -e "$interp" ] || die "$bin needs multiarch $missing but the $arch loader $interp is not installed (run ci/deps-cross)"
  fi
fi

# --- run it --------------------------------------------------------------------
cmd=()
if [ "$arch" = i686 ]; then
  case "$mode" in
    static) cmd=("$bin") ;;
    sysroot) cmd=("$sysroot/lib/ld-linux.so.2" --library-path "$sysroot/lib" "$bin") ;;
    multiarch) cmd=("$interp" --library-path "/lib/$multiarch:/usr/lib/$multiarch" "$bin") ;;
  esac
else
  case "$mode" in
    static|multiarch) unset QEMU_LD_PREFIX; cmd=("$qemu" "$bin") ;;
    sysroot) unset QEMU_LD_PREFIX; cmd=("$qemu" -L "$sysroot" "$bin") ;;
  esac
fi
if [ "${TICKCLOCK_RUNNER_VERBOSE:-0}" = 1 ]; then
  echo "run_$arch ($mode): ${cmd[*]} $*" >&2
fi
exec "${cmd[@]}" "$@"
