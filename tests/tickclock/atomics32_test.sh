#!/usr/bin/env bash
# 32-bit targets and the 64-bit atomics of port.h. The read path loads a
# 64-bit value (the re-validation deadline) and init stores it; they must
# be lock-free single accesses, never a libatomic call (a lock: not
# async-signal-safe, and it needs -latomic) nor two 32-bit halves.
#  1. Targets whose compiler says 64-bit atomics are not always lock-free
#     (__GCC_ATOMIC_LLONG_LOCK_FREE < 2: i486, mips32, ppc32, riscv32) are
#     refused at compile time with the message below, the header and every
#     core file alike.
#  2. i686 and armv7 compile (header, and every core file where the cross
#     C library headers are installed) with no __atomic_* call; with the
#     cross gcc installed, the core links into a program without -latomic.
#  3. 32-bit MSVC (the MSVC branch, forced under clang as in
#     msvc_arm64_test.sh) is refused; MSVC x64 still compiles, and clang-cl
#     for 32-bit Windows (the GNU branch) compiles without __atomic_* calls.
# clang-19 (ci/deps) is required; the cross gcc and C library parts run
# where `ci/deps cross` installed them and say so when they do not.
set -uo pipefail
hdr_dir=$(cd "$(dirname "$1")" && pwd)
cc=clang-19
command -v "$cc" >/dev/null || { echo "FAIL: $cc not installed (ci/deps installs it)"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/use.c" <<'SRC'
#include "tickclock.h"
int use(void) {
  uint64_t a = tickclock_now();
  const tickclock_info *i = tickclock_info_get();
  return (int)(tickclock_to_ns(a) + (uint64_t)tickclock_delta_ns(a, tickclock_now_ordered())) +
         i->source;
}
SRC
cat >"$tmp/main.c" <<'SRC'
#include <stdio.h>
#include "tickclock.h"
int main(void) {
  uint64_t a = tickclock_now();
  printf("%llu\n", (unsigned long long)tickclock_delta_ns(a, tickclock_now()));
  return 0;
}
SRC
refusal_gnu="no lock-free 64-bit atomics"
refusal_msvc="32-bit MSVC (_M_IX86, _M_ARM) is not supported"
supported="Supported 32-bit targets: i686 and armv7"
pass=0 fail=0 skipped=()
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# expect_refused WHAT MESSAGE COMPILER ARGS...: the compile fails with MESSAGE
# and names the supported targets.
expect_refused() {
  local what=$1 msg=$2 out
  shift 2
  if out=$("$@" 2>&1); then
    bad "$what: compiled; expected the refusal \"$msg\""
  elif [[ "$out" != *"$msg"* || "$out" != *"$supported"* ]]; then
    bad "$what: failed, but not with the refusal \"$msg ... $supported\":"$'\n'"$(head -5 <<<"$out")"
  else
    ok
  fi
}
# expect_lock_free WHAT COMPILER ARGS...: compiles to assembly on stdout
# with no call into libatomic.
expect_lock_free() {
  local what=$1 out
  shift
  if ! out=$("$@" -S -o - 2>&1); then
    bad "$what: does not compile:"$'\n'"$(head -5 <<<"$out")"
  elif grep -q '__atomic_' <<<"$out"; then
    bad "$what: calls libatomic: $(grep -o '__atomic_[a-z_0-9]*' <<<"$out" | sort -u | tr '\n' ' ')"
  else
    ok
  fi
}
# cross C library headers (Debian's libc6-dev-*-cross), for the core files
libc_inc() {
  case $1 in
    i*86-*) echo /usr/i686-linux-gnu/include ;;
    arm*) echo /usr/arm-linux-gnueabihf/include ;;
  esac
}
core_c=("$hdr_dir"/*.c)
[[ ${#core_c[@]} -gt 5 ]] || { echo "FAIL: no core sources next to $1"; echo "0 passed, 1 failed"; exit 1; }
strict=(-Wall -Wextra -Werror)

# ---- 1. no lock-free 64-bit atomics: refused --------------------------------
for t in "i386-linux-gnu -march=i486" "mips-linux-gnu" "powerpc-linux-gnu" "riscv32-linux-gnu"; do
  # shellcheck disable=SC2086
  for mode in "c -std=c99" "c++ -std=c++11"; do
    expect_refused "clang $t ($mode), header" "$refusal_gnu" \
      "$cc" --target=$t -ffreestanding -I"$hdr_dir" "${strict[@]}" -x $mode -fsyntax-only "$tmp/use.c"
  done
done
inc=$(libc_inc i386-linux-gnu)
if [[ -d $inc ]]; then
  for f in "${core_c[@]}"; do
    expect_refused "clang i486, core $(basename "$f")" "$refusal_gnu" \
      "$cc" --target=i386-linux-gnu -march=i486 -isystem "$inc" -D_GNU_SOURCE -std=c99 \
      -I"$hdr_dir" -fsyntax-only "$f"
  done
else
  skipped+=("core files for i486 (no $inc: ci/deps cross)")
fi
if command -v i686-linux-gnu-gcc >/dev/null; then
  expect_refused "i686-linux-gnu-gcc -march=i486, header" "$refusal_gnu" \
    i686-linux-gnu-gcc -march=i486 -I"$hdr_dir" -std=c99 -fsyntax-only "$tmp/use.c"
else
  skipped+=("i686-linux-gnu-gcc -march=i486 (not installed: ci/deps cross)")
fi

# ---- 2. i686 and armv7: lock-free, no libatomic ------------------------------
for t in i686-linux-gnu armv7a-linux-gnueabihf; do
  for opt in -O0 -O2; do
    # shellcheck disable=SC2086
    for mode in "c -std=c99" "c++ -std=c++11"; do
      expect_lock_free "clang $t $opt ($mode), header" \
        "$cc" --target=$t -ffreestanding -I"$hdr_dir" "${strict[@]}" $opt -x $mode "$tmp/use.c"
    done
  done
  inc=$(libc_inc $t)
  if [[ -d $inc ]]; then
    for f in "${core_c[@]}"; do
      expect_lock_free "clang $t, core $(basename "$f")" \
        "$cc" --target=$t -isystem "$inc" -D_GNU_SOURCE -std=c99 -pedantic "${strict[@]}" -O1 \
        -I"$hdr_dir" "$f"
    done
  else
    skipped+=("core files for $t (no $inc: ci/deps cross)")
  fi
done
for gcc in i686-linux-gnu-gcc arm-linux-gnueabihf-gcc; do
  if command -v $gcc >/dev/null; then
    # the whole core and a main, linked without -latomic
    if out=$($gcc -std=c99 -D_GNU_SOURCE -O2 -I"$hdr_dir" "${core_c[@]}" "$tmp/main.c" \
             -pthread -o "$tmp/prog" 2>&1); then
      if nm "$tmp/prog" | grep -q '__atomic_'; then
        bad "$gcc: the linked program references $(nm "$tmp/prog" | grep -o '__atomic_[a-z_0-9]*' | sort -u | tr '\n' ' ')"
      else
        ok
      fi
    else
      bad "$gcc: the core does not link without -latomic:"$'\n'"$(head -5 <<<"$out")"
    fi
  else
    skipped+=("$gcc link (not installed: ci/deps cross)")
  fi
done

# ---- 3. MSVC: 32-bit refused, x64 kept; clang-cl for 32-bit Windows ---------
msvc=(-fms-extensions -fms-compatibility -fms-compatibility-version=19.30 -ffreestanding
      -I"$hdr_dir")
for mode in "c -std=c11" "c++ -std=c++17"; do
  # shellcheck disable=SC2086
  for t in i686-pc-windows-msvc thumbv7-pc-windows-msvc; do
    expect_refused "MSVC branch $t ($mode)" "$refusal_msvc" \
      "$cc" --target=$t "${msvc[@]}" -DTKC_FORCE_MSVC_ATOMICS -x $mode -fsyntax-only "$tmp/use.c"
  done
  # shellcheck disable=SC2086
  if out=$("$cc" --target=x86_64-pc-windows-msvc "${msvc[@]}" -DTKC_FORCE_MSVC_ATOMICS \
           "${strict[@]}" -x $mode -fsyntax-only "$tmp/use.c" 2>&1); then
    ok
  else
    bad "MSVC branch x86_64-pc-windows-msvc ($mode) no longer compiles:"$'\n'"$(head -5 <<<"$out")"
  fi
  # shellcheck disable=SC2086
  expect_lock_free "clang-cl style i686-pc-windows-msvc ($mode)" \
    "$cc" --target=i686-pc-windows-msvc "${msvc[@]}" "${strict[@]}" -O2 -x $mode "$tmp/use.c"
done

for s in "${skipped[@]}"; do echo "skipped: $s"; done
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
