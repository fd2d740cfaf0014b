#!/usr/bin/env bash
# tickclock through CMake and pkg-config, as a user's project gets it:
#  1. add_subdirectory() of the checkout (static library);
#  2. FetchContent of the checkout;
#  3. cmake --install of tickclock (shared library, -fvisibility=hidden),
#     then find_package(tickclock 0.1) in the consumer; a request for an
#     incompatible version (1.0) must fail;
#  4. pkg-config --cflags --libs tickclock from that install compiles and
#     links a C program, and --modversion is tickclock.h's version.
#  5. the installed single header is byte-identical to Bazel's
#     //:single_header when that is given (one generator, one result).
# Every program built is run.
# Usage: cmake_test.sh [--source TICKCLOCK_CHECKOUT] [--same-as BAZEL_SINGLE_HEADER]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../.."
bazel_header=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --source) src=$2; shift 2 ;;
    --same-as) bazel_header=$2; shift 2 ;;
    *) echo "usage: cmake_test.sh [--source DIR] [--same-as HEADER]" >&2; exit 2 ;;
  esac
done
src=$(cd "$src" && pwd)
[[ -z "$bazel_header" || "$bazel_header" == /* ]] || bazel_header="$PWD/$bazel_header"
work=${TEST_TMPDIR:-$(mktemp -d)}/cmake_test
rm -rf "$work"
mkdir -p "$work"
pass=0
fail=0
step() { # NAME CMD...
  local name=$1
  shift
  if "$@" >"$work/$name.log" 2>&1; then
    echo "PASS $name"
    pass=$((pass + 1))
  else
    echo "FAIL $name (log follows)"
    tail -30 "$work/$name.log"
    fail=$((fail + 1))
  fi
}

cmake --version | head -1
consumer() { # HOW BUILD_DIR [cmake args...]
  local how=$1 b=$2
  shift 2
  cmake -S "$here/consumer" -B "$b" -DTICKCLOCK_HOW="$how" -DTICKCLOCK_SOURCE="$src" "$@" &&
    cmake --build "$b" -j 2 && "$b/consumer_c" && "$b/consumer_cxx"
}

step subdirectory consumer subdirectory "$work/sub"
step fetchcontent consumer fetchcontent "$work/fetch"

prefix="$work/prefix"
install_tickclock() {
  cmake -S "$src" -B "$work/lib" -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$prefix" &&
    cmake --build "$work/lib" -j 2 && cmake --install "$work/lib" &&
    test -f "$prefix/include/tickclock.h" &&
    test -f "$prefix/lib/cmake/tickclock/tickclockConfigVersion.cmake" &&
    test -f "$prefix/lib/pkgconfig/tickclock.pc"
}
step install install_tickclock
step find_package consumer package "$work/pkg" -DCMAKE_PREFIX_PATH="$prefix"

wrong_version() {
  mkdir -p "$work/wrong" &&
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(w NONE)\nfind_package(tickclock 1.0 REQUIRED CONFIG)\n' \
      >"$work/wrong/CMakeLists.txt" &&
    ! cmake -S "$work/wrong" -B "$work/wrong/b" -DCMAKE_PREFIX_PATH="$prefix"
}
step find_package_rejects_1.0 wrong_version

pkgconfig() {
  local want flags
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  want=$(for p in MAJOR MINOR PATCH; do
           sed -n "s/^#define TICKCLOCK_VERSION_$p \([0-9]*\).*/\1/p" "$src/src/tickclock/tickclock.h"
         done | paste -sd.)
  [[ "$(pkg-config --modversion tickclock)" == "$want" ]] || { echo "modversion != $want"; return 1; }
  flags=$(pkg-config --cflags --libs tickclock) || return 1
  echo "pkg-config flags: $flags"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror "$here/consumer/main.c" $flags -o "$work/pc_main" &&
    LD_LIBRARY_PATH="$prefix/lib" "$work/pc_main"
}
step pkg-config pkgconfig

if [[ -n "$bazel_header" ]]; then
  step same_header_as_bazel cmp "$bazel_header" "$prefix/include/tickclock.h"
fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
