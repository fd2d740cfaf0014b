#!/usr/bin/env bash
# The MSVC ARM64 atomics of port.h (LDAR/STLR ordering: DMB ISH after an
# acquire load, before a release store; plain volatile is not ordered there
# under /volatile:iso) compiled for aarch64-pc-windows-msvc by clang-19 in
# MSVC-compatibility mode, as C11 and C++17, syntax only: the inline read
# path of tickclock.h with TKC_FORCE_MSVC_ATOMICS (so clang takes the
# MSVC branch). The implementation files need the Windows SDK, which is not
# on this machine: only the header is checked.
set -uo pipefail
hdr_dir=$(dirname "$1")
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
flags=(--target=aarch64-pc-windows-msvc -fms-extensions -fms-compatibility
       -fms-compatibility-version=19.30 -ffreestanding -DTKC_FORCE_MSVC_ATOMICS
       -I"$hdr_dir" -Wall -Wextra -Werror)
pass=0 fail=0
for mode in "c -std=c11" "c++ -std=c++17"; do
  # shellcheck disable=SC2086
  if out=$("$cc" "${flags[@]}" -x $mode -fsyntax-only "$tmp/use.c" 2>&1); then
    pass=$((pass + 1))
  else
    echo "FAIL ($mode): $out"; fail=$((fail + 1))
  fi
  # and the branch really is the ARM64 one: the acquire helper and DMB ISH
  # shellcheck disable=SC2086
  pre=$("$cc" "${flags[@]}" -x $mode -E "$tmp/use.c" 2>&1)
  if [[ "$pre" == *tkc_ld_acq* && "$pre" == *"__dmb(0xB)"* ]]; then
    pass=$((pass + 1))
  else
    echo "FAIL ($mode): the MSVC ARM64 acquire/release helpers are not what the header uses"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
