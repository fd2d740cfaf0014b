#!/usr/bin/env bash
# tickclock-probe is built on the public API (tickclock.h, tickclock.hpp)
# and the tools library (tickclock_tools.h, json_text.h) only: no source of
# src/probe includes one of the core's internal headers, and none names an
# internal symbol (tkc_* / TKC_*) -- what the probe needs from inside the
# core goes through the tools library's small window (tkt_*).
# Usage: probe_includes_test.sh FILE...
set -uo pipefail
fail=0
n=0
allowed='^(tickclock\.h|tickclock\.hpp|tickclock_tools\.h|json_text\.h|src/probe/[a-z_]+\.h)$'
for f in "$@"; do
  n=$((n + 1))
  while IFS= read -r inc; do
    if ! [[ "$inc" =~ $allowed ]]; then
      echo "FAIL: $f includes \"$inc\" (only the public API, the tools library and the probe's own headers)"
      fail=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  if grep -nE '\b(tkc|TKC)_[A-Za-z0-9_]+' "$f"; then
    echo "FAIL: $f names the core's internal symbols above (use tickclock_tools.h)"
    fail=1
  fi
done
[[ $n -ge 10 ]] || { echo "FAIL: only $n files given"; fail=1; }
echo "$n probe sources: public API and tools library only"
if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
