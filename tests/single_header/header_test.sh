#!/usr/bin/env bash
# The generated single header as it is vendored: every expanded file is
# named relative to the repository (no build or sandbox path), the banner
# carries the SPDX line, the version of tickclock.h and the licence text,
# and nothing of the tools library.
# Usage: header_test.sh GENERATED_HEADER LICENSE SOURCE_TICKCLOCK_H
set -uo pipefail
gen=$1
license=$2
src=$3
fail=0
err() { echo "FAIL: $*"; fail=1; }

markers=$(grep -c '^/\* ==== ' "$gen")
[[ "$markers" -ge 10 ]] || err "only $markers file markers in $gen"
bad=$(grep '^/\* ==== ' "$gen" | grep -Ev '^/\* ==== src/tickclock/[A-Za-z0-9_/]+\.(h|hpp|c) ==== \*/$' || true)
[[ -z "$bad" ]] || err "file markers not relative to the repository: $bad"
# Any absolute path from a build: the sandbox, the output base, a home or work directory.
abs=$(grep -nE '(/execroot/|/sandbox/|/bazel-out/|_bazel_|/home/|/root/|/work/|/tmp/)' "$gen" || true)
[[ -z "$abs" ]] || err "build paths in $gen: $abs"

head -3 "$gen" | grep -q '^ \* SPDX-License-Identifier: MIT$' || err "no SPDX line in the first lines"
ver=$(for p in MAJOR MINOR PATCH; do sed -n "s/^#define TICKCLOCK_VERSION_$p \([0-9]*\).*/\1/p" "$src"; done | paste -sd.)
[[ "$ver" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || err "cannot read the version from $src ($ver)"
head -1 "$gen" | grep -qF "tickclock $ver:" || err "banner does not name version $ver: $(head -1 "$gen")"
# The licence, line by line, in the banner (before the first file marker).
banner=$(sed -n '1,/^\/\* ==== /p' "$gen" | sed -e 's/^ \* \{0,1\}//')
while IFS= read -r line; do
  [[ -z "$line" ]] && continue
  grep -qxF -- "$line" <<<"$banner" || err "licence line missing from the banner: $line"
done < "$license"
grep -q '^#if defined(__cplusplus) && !defined(TICKCLOCK_NO_CXX_API)$' "$gen" || err "no C++ API section"
grep -q 'class stopwatch' "$gen" || err "tickclock::stopwatch is not in the header"
# Only what users need: the tools library (src/tools: the fixture parser,
# the CPUID rules only the probe reports, the RDTSCP read) stays out.
tools=$(grep -nE 'tickclock_fixture|tickclock_x86_freq_cpuid|tickclock_x86_freq_leaf15_linux|"rdtscp"|tkt_' "$gen" || true)
[[ -z "$tools" ]] || err "tools-library code in $gen: $tools"

echo "version $ver, $markers files, $(wc -c <"$gen") bytes, licence and SPDX present, no build paths, no tools"
if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
