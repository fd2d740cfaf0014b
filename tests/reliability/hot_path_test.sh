#!/usr/bin/env bash
# The fast path of tickclock_now() (x86-64, -O2): the instructions of
# tickclock_hot_path_now up to its first ret must be a load of
# tkc_g_source, a compare, a branch and RDTSC (plus the shift/or
# that joins EDX:EAX) — no call, no other memory load (the re-validation
# deadline is on tickclock_to_ns, never here). And the test tickclock_to_ns
# and tickclock_delta_ns make before converting (tickclock_hot_path_due):
# one window compare tells a due tick from both a recent reading and a
# tick far ahead, so the function has two conditional branches in all (the
# window, then the near ticks seen ahead), not a second one for far ticks.
set -uo pipefail
asm=$1
body=$(awk '/^tickclock_hot_path_now:/{on=1;next} on&&/^[ \t]*ret/{print;exit} on&&/^[ \t]+[a-z]/{print}' "$asm")
echo "$body"
fail=0
grep -q rdtsc <<<"$body" || { echo "FAIL: no rdtsc on the fast path"; fail=1; }
grep -q call <<<"$body" && { echo "FAIL: a call before the first ret"; fail=1; }
loads=$(grep -cE '\(%rip\)' <<<"$body")
[[ $loads -eq 1 ]] || { echo "FAIL: $loads rip-relative loads (expected 1: tkc_g_source)"; fail=1; }
grep -q tkc_g_source <<<"$body" || { echo "FAIL: the load is not tkc_g_source"; fail=1; }
n=$(grep -c . <<<"$body")
[[ $n -le 9 ]] || { echo "FAIL: $n instructions (expected <= 9)"; fail=1; }
due=$(awk '/^tickclock_hot_path_due:/{on=1;next} on&&/^[ \t]*\.(size|cfi_endproc)/{exit} on&&/^[ \t]+[a-z]/{print}' "$asm")
echo "$due"
[[ -n $due ]] || { echo "FAIL: tickclock_hot_path_due not found"; fail=1; }
jcc=$(grep -cE '^[[:space:]]+j[a-z]+[[:space:]]' <<<"$due" | tr -d ' ')
jmp=$(grep -cE '^[[:space:]]+jmp[[:space:]]' <<<"$due" | tr -d ' ')
[[ $((jcc - jmp)) -le 2 ]] || { echo "FAIL: $((jcc - jmp)) conditional branches in the due test (expected <= 2)"; fail=1; }
first=$(awk '/^[ \t]+j[a-z]+[ \t]/{exit} {print}' <<<"$due")
grep -q tkc_g_due_span <<<"$first" || { echo "FAIL: the first branch does not see the window's span"; fail=1; }
if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
