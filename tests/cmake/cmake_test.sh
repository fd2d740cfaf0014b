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
#  6. ctest runs the core's doctest suites from that build, and fails when
#     it would run none (suites off; doctest missing);
#  7. tickclock.pc names the prefix installed to (`cmake --install --prefix
#     DIR` included) and works through a symlink; with
#     TICKCLOCK_PC_RELOCATABLE=ON the install is relocatable: the tree
#     moved, and the pkg-config and find_package consumers built against
#     the new place; the .pc and the CMake target carry the thread library
#     (static and shared builds);
#  8. tickclock-probe is built and installed with its man page (groff
#     without warnings) and bash completion, and every subcommand and flag
#     the built probe's --help lists is in both;
#  9. without bash (no single header) the library, its suites and a C
#     consumer still build, and the source headers are installed;
# 10. the minimum CMake version is at least 3.14 (FetchContent_MakeAvailable)
#     and the README's vendoring section says the same version;
# 11. .github/workflows/matrix.yml: the MSVC job gives CMake a doctest and
#     runs ctest with --no-tests=error; every Linux job that runs ci/deps
#     (Debian package names; also through ci/test and ci/matrix) runs in a
#     debian:bookworm container.
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
# Under Bazel the runfiles hold links into the checkout: build the
# checkout itself (tests/tickclock's sources are not runfiles here).
if [[ -L "$src/CMakeLists.txt" ]]; then
  src=$(dirname "$(readlink -f "$src/CMakeLists.txt")")
fi
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
  cmake -S "$src" -B "$work/lib" -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib &&
    cmake --build "$work/lib" -j 2 && cmake --install "$work/lib" &&
    test -f "$prefix/include/tickclock.h" &&
    test -f "$prefix/lib/cmake/tickclock/tickclockConfigVersion.cmake" &&
    test -f "$prefix/lib/pkgconfig/tickclock.pc" &&
    test -x "$prefix/bin/tickclock-probe" &&
    test -f "$prefix/share/man/man1/tickclock-probe.1" &&
    test -f "$prefix/share/bash-completion/completions/tickclock-probe"
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

# 6. ctest: the suites of the build above ran (at least the ones every
# platform builds), and ctest fails where none would.
ctest_runs() {
  local out n
  out=$(ctest --test-dir "$work/lib" --no-tests=error -j 2 --output-on-failure 2>&1)
  local rc=$?
  echo "$out" | tail -20
  [[ $rc -eq 0 ]] || return 1
  n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' <<<"$out")
  echo "ctest ran ${n:-no} tests"
  [[ -n "$n" && $n -ge 9 ]] || return 1
  for t in conv_test conv_noint128_test ratio_test decide_test init_race_test cxx_api_test \
           cxx11_api_test c_api_c99_test c_api_cxx11_test; do
    grep -q " $t \.*  *Passed" <<<"$out" || { echo "no passed $t"; return 1; }
  done
}
step ctest_runs_the_suites ctest_runs
no_tests_fails() {
  cmake -S "$src" -B "$work/notests" -DTICKCLOCK_BUILD_TESTS=OFF -DTICKCLOCK_BUILD_PROBE=OFF &&
    ! ctest --test-dir "$work/notests" --no-tests=error
}
step ctest_fails_with_no_suites no_tests_fails
no_doctest_fails() {
  mkdir -p "$work/empty" &&
    cmake -S "$src" -B "$work/nodoctest" -DTICKCLOCK_BUILD_PROBE=OFF \
      -DTICKCLOCK_DOCTEST_INCLUDE_DIR="$work/empty" &&
    ! ctest --test-dir "$work/nodoctest"
}
step ctest_fails_without_doctest no_doctest_fails

# 7. relocatable install, and the thread library.
pc_consumer() { # PCDIR LIBDIR
  local flags
  flags=$(PKG_CONFIG_PATH="$1" pkg-config --cflags --libs tickclock) || return 1
  echo "pkg-config flags: $flags"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror "$here/consumer/main.c" $flags -o "$work/pc_reloc" &&
    LD_LIBRARY_PATH="$2" "$work/pc_reloc"
}
# By default tickclock.pc names the prefix it was installed to (--prefix
# at install time wins over the configured one), so a .pc reached through a
# symlink (a folder of links on PKG_CONFIG_PATH) still gives the right
# include path; ${pcfiledir} would give the link's folder.
pc_symlinked() {
  local d="$work/pc-link-prefix" links="$work/pc-links"
  rm -rf "$d" "$links"
  cmake --install "$work/lib" --prefix "$d" || return 1
  echo "--- $d/lib/pkgconfig/tickclock.pc"; cat "$d/lib/pkgconfig/tickclock.pc"
  grep -qx "prefix=$d" "$d/lib/pkgconfig/tickclock.pc" || { echo "prefix is not $d"; return 1; }
  mkdir -p "$links" && ln -s "$d/lib/pkgconfig/tickclock.pc" "$links/tickclock.pc" || return 1
  [[ "$(PKG_CONFIG_PATH="$links" pkg-config --variable=includedir tickclock)" -ef "$d/include" ]] ||
    { echo "through the link, includedir is not $d/include"; return 1; }
  pc_consumer "$links" "$d/lib"
}
step pc_through_a_symlink pc_symlinked
# TICKCLOCK_PC_RELOCATABLE=ON: the prefix from the .pc's own place, for a
# tree that will be moved.
relocated() {
  local d="$work/reloc-a" moved="$work/reloc-b"
  rm -rf "$d" "$moved"
  cmake "$work/lib" -DTICKCLOCK_PC_RELOCATABLE=ON >/dev/null &&
    cmake --install "$work/lib" --prefix "$d" || return 1
  cmake "$work/lib" -DTICKCLOCK_PC_RELOCATABLE=OFF >/dev/null || return 1
  echo "--- $d/lib/pkgconfig/tickclock.pc"; cat "$d/lib/pkgconfig/tickclock.pc"
  if grep -n -e "$prefix" -e /usr/local "$d/lib/pkgconfig/tickclock.pc"; then
    echo "tickclock.pc names a fixed prefix"; return 1
  fi
  grep -q '^prefix=${pcfiledir}/../..$' "$d/lib/pkgconfig/tickclock.pc" || return 1
  mv "$d" "$moved" || return 1
  [[ "$(PKG_CONFIG_PATH="$moved/lib/pkgconfig" pkg-config --variable=includedir tickclock)" \
     -ef "$moved/include" ]] || { echo "includedir is not the moved tree's"; return 1; }
  pc_consumer "$moved/lib/pkgconfig" "$moved/lib" &&
    consumer package "$work/pkg-reloc" -DCMAKE_PREFIX_PATH="$moved" &&
    grep -q "tickclock_DIR:PATH=$moved/" "$work/pkg-reloc/CMakeCache.txt"
}
step install_prefix_relocatable relocated
threads() {
  local d="$work/static-prefix"
  grep -q '^Libs.private:.*-pthread' "$prefix/lib/pkgconfig/tickclock.pc" || {
    echo "shared: no -pthread in Libs.private"; return 1; }
  grep -q 'Threads::Threads' "$prefix/lib/cmake/tickclock/tickclockTargets.cmake" &&
    grep -q 'find_dependency(Threads)' "$prefix/lib/cmake/tickclock/tickclockConfig.cmake" || {
    echo "the CMake package does not carry Threads::Threads"; return 1; }
  cmake -S "$src" -B "$work/static" -DTICKCLOCK_BUILD_TESTS=OFF -DTICKCLOCK_BUILD_PROBE=OFF \
    -DCMAKE_INSTALL_LIBDIR=lib &&
    cmake --build "$work/static" -j 2 && cmake --install "$work/static" --prefix "$d" || return 1
  PKG_CONFIG_PATH="$d/lib/pkgconfig" pkg-config --libs tickclock | grep -q -- '-ltickclock -pthread' || {
    echo "static: pkg-config --libs lacks -pthread"; return 1; }
  grep -q 'Threads::Threads' "$d/lib/cmake/tickclock/tickclockTargets.cmake" || return 1
  pc_consumer "$d/lib/pkgconfig" "$d/lib" && consumer package "$work/pkg-static" -DCMAKE_PREFIX_PATH="$d"
}
step thread_library threads

# 8. the probe, its man page and its completion against the probe's --help.
probe_docs() {
  local probe="$prefix/bin/tickclock-probe" man="$prefix/share/man/man1/tickclock-probe.1"
  local comp="$prefix/share/bash-completion/completions/tickclock-probe"
  local help subs sub opts o text warn missing=0
  "$probe" --version && "$probe" --json >"$work/probe.json" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["source"]' "$work/probe.json" ||
    return 1
  # the JSON Schema the man page points to is installed where it says
  cmp "$prefix/share/tickclock-probe/tickclock-probe.schema.json" \
    "$src/src/probe/schema/tickclock-probe.schema.json" || { echo "schema not installed"; return 1; }
  grep -q 'share/tickclock\\-probe/' "$man" || { echo "the man page does not name the installed schema"; return 1; }
  warn=$(groff -man -ww -z "$man" 2>&1)
  [[ -z "$warn" ]] || { echo "groff warnings: $warn"; return 1; }
  text=$(MANWIDTH=400 man -l "$man" 2>/dev/null | col -b)
  [[ -n "$text" ]] || text=$(groff -man -Tascii "$man" | col -b)
  help=$("$probe" --help) || return 1
  subs=$(sed -n 's/^  tickclock-probe \([a-z][a-z0-9_-]*\).*/\1/p' <<<"$help")
  [[ -n "$subs" ]] || { echo "no subcommand in --help"; return 1; }
  complete_words() { # WORDS... (the last one is completed)
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
             _tickclock_probe; printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@"
  }
  local top
  top=$(complete_words tickclock-probe "")
  # the top level's own options: its usage lines that name no subcommand
  for o in $(grep '^  tickclock-probe ' <<<"$help" | grep -v '^  tickclock-probe [a-z]' |
             grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -qx -- "$o" <<<"$top" || { echo "completion lacks top-level $o"; missing=1; }
  done
  for sub in $subs; do
    grep -q -- "tickclock-probe $sub" <<<"$text" || { echo "man page lacks subcommand $sub"; missing=1; }
    grep -qx -- "$sub" <<<"$top" || { echo "completion lacks subcommand $sub"; missing=1; }
    if [[ $sub == help ]]; then # its argument is a subcommand's name
      local named
      named=$(complete_words tickclock-probe help "")
      for o in $subs; do
        [[ $o == help ]] || grep -qx -- "$o" <<<"$named" || { echo "completion lacks help $o"; missing=1; }
      done
      continue
    fi
    opts=$("$probe" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
    local offered
    offered=$(complete_words tickclock-probe "$sub" --)
    for o in $opts; do
      grep -q -- "$o" <<<"$text" || { echo "man page lacks $sub $o"; missing=1; }
      grep -qx -- "$o" <<<"$offered" || { echo "completion lacks $sub $o"; missing=1; }
    done
  done
  [[ $missing -eq 0 ]]
}
step probe_man_page_and_completion probe_docs

# 9. no bash: the source headers instead of the single header.
no_bash() {
  local d="$work/nobash-prefix"
  cmake -S "$src" -B "$work/nobash" -DTICKCLOCK_BASH="$work/no/such/bash" \
    -DTICKCLOCK_BUILD_PROBE=OFF -DCMAKE_INSTALL_LIBDIR=lib &&
    grep -q 'TICKCLOCK_SINGLE_HEADER_GEN:BOOL=OFF' "$work/nobash/CMakeCache.txt" &&
    cmake --build "$work/nobash" -j 2 &&
    ctest --test-dir "$work/nobash" --no-tests=error -j 2 &&
    cmake --install "$work/nobash" --prefix "$d" &&
    test -f "$d/include/tickclock.h" && test -f "$d/include/tickclock.hpp" &&
    test -f "$d/include/port.h" && pc_consumer "$d/lib/pkgconfig" "$d/lib"
}
step without_bash no_bash

# 10. the minimum CMake version.
cmake_minimum() {
  local min readme_min
  min=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\)).*/\1/p' "$src/CMakeLists.txt")
  echo "cmake_minimum_required: $min"
  [[ -n "$min" ]] && printf '3.14\n%s\n' "$min" | sort -V -C || return 1
  if [[ -f "$src/README.md" ]]; then
    readme_min=$(sed -n 's/.*\*\*CMake\*\* (\([0-9.]*\) or later.*/\1/p' "$src/README.md")
    echo "README: CMake $readme_min or later"
    [[ "$readme_min" == "$min" ]] || return 1
  fi
}
step cmake_minimum_version cmake_minimum

# 11. the workflow's CMake and container settings (read as text, job by job).
workflow() {
  local wf="$src/.github/workflows/matrix.yml"
  [[ -f "$wf" ]] || { echo "no $wf"; return 1; }
  awk '
    /^jobs:/ { in_jobs = 1; next }
    in_jobs && /^  [A-Za-z0-9_-]+:[ ]*$/ { job = $1; sub(":", "", job); jobs[job] = 1; next }
    in_jobs && job != "" {
      if ($0 ~ /runs-on: *ubuntu/) linux[job] = 1
      if ($0 ~ /container: *debian:bookworm/) container[job] = 1
      # the scripts that install with ci/deps (ci/matrix --merge does not)
      if ($0 ~ /(^|[ |])ci\/(deps|test)/ || ($0 ~ /(^|[ |])ci\/matrix/ && $0 !~ /--merge/)) ci[job] = 1
      if ($0 ~ /ctest .*--no-tests=error/ || $0 ~ /--no-tests=error/) notests[job] = 1
      if ($0 ~ /TICKCLOCK_DOCTEST_INCLUDE_DIR=/) doctest[job] = 1
      if ($0 ~ /runs-on: *windows/) windows[job] = 1
    }
    END {
      bad = 0
      for (j in jobs) {
        if (linux[j] && ci[j] && !container[j]) { print "job " j ": ci/ scripts on Ubuntu without container: debian:bookworm"; bad = 1 }
        if (windows[j] && !notests[j]) { print "job " j ": ctest without --no-tests=error"; bad = 1 }
        if (windows[j] && !doctest[j]) { print "job " j ": no TICKCLOCK_DOCTEST_INCLUDE_DIR for the suites"; bad = 1 }
        if (windows[j]) nwin++
      }
      if (!nwin) { print "no Windows job"; bad = 1 }
      exit bad
    }' "$wf"
}
step workflow_cmake_and_containers workflow

if [[ -n "$bazel_header" ]]; then
  step same_header_as_bazel cmp "$bazel_header" "$prefix/include/tickclock.h"
fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
