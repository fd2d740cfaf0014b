#!/usr/bin/env bash
# The promise "the library never executes RDTSCP", proven from the object
# code wherever it runs: a hypervisor may hide RDTSCP from CPUID while the
# CPU still executes it, so a trap test proves nothing there. Every program
# and library given is searched two ways: its disassembly for an RDTSCP
# mnemonic (after any prefixes), and the raw bytes of every executable
# section for 0F 01 F9 at any offset, since a jump may land inside what a
# disassembler's linear sweep decoded as another instruction. The controls,
# built to hold one in each form, must show all three, so the scan is known
# to see each.
# Usage: no_rdtscp_test.sh CONTROL BINARY...
set -uo pipefail
control=$1
shift
fail=0
# "function: address" for every RDTSCP mnemonic in a file's disassembly,
# whatever prefixes stand before it.
rdtscp_sites() {
  objdump -d --no-show-raw-insn "$1" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; sub(/^</, "", fn); sub(/>:$/, "", fn); next }
    /^ *[0-9a-f]+:/ { for (k = 2; k <= NF; k++) if ($k == "rdtscp") { sub(/:$/, "", $1); print fn ": " $1; break } }'
}
# "section+offset" for every 0F 01 F9 in an executable section, whether or
# not an instruction starts there.
rdtscp_bytes() {
  local f=$1 sec tmp
  tmp=$(mktemp)
  for sec in $(objdump -h "$f" | awk '/ CODE/ { print prev } { prev = $2 }'); do
    if ! objcopy -O binary --only-section="$sec" "$f" "$tmp"; then
      echo "unreadable:$sec"
      continue
    fi
    od -An -v -tx1 "$tmp" | tr -d ' \n' | awk -v s="$sec" '{
      t = $0; base = 0
      while ((i = index(t, "0f01f9")) > 0) {
        if ((base + i - 1) % 2 == 0) printf "%s+0x%x\n", s, (base + i - 1) / 2
        base += i; t = substr(t, i + 1)
      }}'
  done
  rm -f "$tmp"
}
for tool in objdump objcopy od; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found"; exit 1; }
done
ctl=$(rdtscp_sites "$control")
ctl_bytes=$(rdtscp_bytes "$control" | grep -c . || true)
for fn in tkc_control_rdtscp tkc_control_rdtscp_prefixed; do
  if ! grep -q "^$fn: " <<<"$ctl"; then
    echo "FAIL: the control $fn holds an RDTSCP the disassembly scan did not find"
    fail=1
  fi
done
if [[ $ctl_bytes -lt 3 ]]; then
  echo "FAIL: the byte scan found $ctl_bytes of the controls' 3 RDTSCP (one hidden from the disassembly)"
  fail=1
fi
[[ $fail -eq 0 ]] && echo "controls: the scans find $(echo $ctl) and $ctl_bytes by their bytes"
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
  bytes=$(rdtscp_bytes "$f")
  if [[ -n "$sites" || -n "$bytes" ]]; then
    echo "FAIL: $f executes RDTSCP at: $(echo $sites) bytes 0F 01 F9 at: $(echo $bytes)"
    fail=1
  else
    echo "$f: $n instructions, no RDTSCP, no 0F 01 F9 in its code"
  fi
done
[[ $fail -eq 0 ]] && echo "PASS: no RDTSCP in the library's object code"
exit $fail
