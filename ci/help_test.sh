#!/usr/bin/env bash
# `ci/test --help`, `ci/matrix --help` and `ci/guest --help` print their usage and exit 0
# without side effects: with stand-in apt-get, apt-cache, dpkg-query, sudo
# and bazel first on PATH (and CI=true, which makes ci/test remove a
# package on a root runner), none of them is called; ci/matrix's help says
# the run time, the requirements and what it installs.
set -uo pipefail
ci_test=$1
ci_matrix=$2
ci_guest=$3
tmp=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$tmp/bin"
calls=$tmp/calls
: > "$calls"
for tool in apt-get apt-cache dpkg-query sudo bazel qemu-system-x86_64; do
  printf '#!/bin/sh\necho "%s $*" >> "%s"\necho "install ok installed"\nexit 0\n' "$tool" "$calls" > "$tmp/bin/$tool"
  chmod +x "$tmp/bin/$tool"
done
fail=0
check() { # what, command...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

for opt in --help -h; do
  CI=true PATH="$tmp/bin:$PATH" "$ci_test" $opt > "$tmp/out" 2> "$tmp/err"
  check "ci/test $opt exits 0" test $? -eq 0
  check "ci/test $opt prints usage" grep -q '^usage: ci/test' "$tmp/out"
  check "ci/test $opt calls nothing ($(tr '\n' ';' < "$calls"))" test ! -s "$calls"
done
CI=true PATH="$tmp/bin:$PATH" "$ci_test" --remote-cache http://127.0.0.1:1 --help > "$tmp/out" 2>&1
check "ci/test --help after other arguments: usage, nothing called" \
  bash -c "grep -q '^usage: ci/test' '$tmp/out' && test ! -s '$calls'"

PATH="$tmp/bin:$PATH" "$ci_matrix" --help > "$tmp/out" 2> "$tmp/err"
check "ci/matrix --help exits 0" test $? -eq 0
check "ci/matrix --help prints usage" grep -q '^usage: ci/matrix' "$tmp/out"
check "ci/matrix --help: run time (warm and cold)" grep -qE 'about 30 minutes with warm Bazel' "$tmp/out"
check "ci/matrix --help: cold run time" grep -qE 'about 45 minutes cold' "$tmp/out"
check "ci/matrix --help: requirements" grep -q '^requirements:' "$tmp/out"
check "ci/matrix --help: apt side effects" grep -q 'apt-get update' "$tmp/out"
check "ci/matrix --help: --only goes elsewhere" grep -q 'out/matrix-only' "$tmp/out"
check "ci/matrix --help calls nothing ($(tr '\n' ';' < "$calls"))" test ! -s "$calls"

# ci/guest, a thin entry over ci/guest_lab/: its usage and --list, no QEMU,
# no download, no build
for opt in --help -h; do
  PATH="$tmp/bin:$PATH" "$ci_guest" $opt > "$tmp/out" 2> "$tmp/err"
  check "ci/guest $opt exits 0" test $? -eq 0
  check "ci/guest $opt prints usage" grep -q '^usage: ci/guest' "$tmp/out"
  check "ci/guest $opt names --only and --quick" bash -c "grep -q -- '--only PATTERN' '$tmp/out' && grep -q -- '--quick' '$tmp/out'"
done
PATH="$tmp/bin:$PATH" "$ci_guest" --list > "$tmp/out" 2> "$tmp/err"
check "ci/guest --list exits 0" test $? -eq 0
check "ci/guest --list: the guests and a count" bash -c "grep -q '^x86_64-max ' '$tmp/out' && grep -qE '^[0-9]+ items$' '$tmp/out'"
check "ci/guest --help and --list call nothing ($(tr '\n' ';' < "$calls"))" test ! -s "$calls"

echo
if [[ $fail -ne 0 ]]; then echo "help_test: FAILED"; exit 1; fi
echo "help_test: all passed"
