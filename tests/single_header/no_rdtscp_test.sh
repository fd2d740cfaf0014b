#!/usr/bin/env bash
# The promise "the library never executes RDTSCP", proven from the object
# code wherever it runs: a hypervisor may hide RDTSCP from CPUID while the
# CPU still executes it, so a trap test proves nothing there. Every program
# and library given is disassembled and no instruction may be RDTSCP
# (0F 01 F9); the control, a function built to hold one, must show it, so
# the scan is known to see the instruction at all.
# Usage: no_rdtscp_test.sh CONTROL BINARY...
set -uo pipefail
control=$1
shift
fail=0
# "function: address" for every RDTSCP in a file's disassembly.
rdtscp_sites() {
  objdump -d --no-show-raw-insn "$1" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; sub(/^</, "", fn); sub(/>:$/, "", fn) }
    $2 == "rdtscp" || $3 == "rdtscp" { sub(/:$/, "", $1); print fn ": " $1 }'
}
command -v objdump >/dev/null || { echo "FAIL: objdump not found (binutils)"; exit 1; }
ctl=$(rdtscp_sites "$control")
if [[ -z "$ctl" ]]; then
  echo "FAIL: the control $control holds an RDTSCP the scan did not find"
  fail=1
else
  echo "control: the scan finds $(echo "$ctl" | head -1)"
fi
for f in "$@"; do
  if [[ ! -r "$f" ]]; then
    echo "FAIL: $f: not readable"
    fail=1
    continue
  fi
  n=$(objdump -d "$f" | grep -c '^ *[0-9a-f]*:' || true)
  if [[ $n -lt 1000 ]]; then
    echo "FAIL: $f: only $n instructions (is the implementation compiled in?)"
    fail=1
    continue
  fi
  sites=$(rdtscp_sites "$f")
  if [[ -n "$sites" ]]; then
    echo "FAIL: $f executes RDTSCP at: $(echo $sites)"
    fail=1
  else
    echo "$f: $n instructions, no RDTSCP"
  fi
done
[[ $fail -eq 0 ]] && echo "PASS: no RDTSCP in the library's object code"
exit $fail
