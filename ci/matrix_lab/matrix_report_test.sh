#!/usr/bin/env bash
# ci/matrix's report writer, without running a cell: --rerender turns a
# recorded report.json into report.md and report.html (test counts as
# "N passed, N skipped", a FAIL cell's error lines, a SKIPPED cell's
# reason, each skipped test with its reason, the commit tested, the HTML
# legend), and a report.json it cannot read gets one line and exit 2.
set -uo pipefail
src=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
root=$tmp/root
mkdir -p "$root/ci" "$root/out/matrix"
mkdir -p "$root/ci/matrix_lab" "$root/ci/guest_lab"  # ROOT is two folders above the modules
cp "$(dirname "$src")"/*.py "$root/ci/matrix_lab/"  # the command line, cell table, runner, shards, report
cp "$(dirname "$src")"/../guest_lab/{__init__,guest_table}.py "$root/ci/guest_lab/"  # the guest table
mkdir -p "$root/tests"  # the CPU-model table it reads
cp "$TEST_SRCDIR/$TEST_WORKSPACE/tests/cpu_models.tsv" "$root/tests/"
out=$root/out/matrix
fail=0
check() { # what, command...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

cat > "$out/report.json" <<'JSON'
{"quick": false, "args": "", "finished": "2026-11-29 23:15:02 UTC", "elapsed_s": 2453.0,
 "started": "2026-11-29 22:34:09 UTC", "complete": true,
 "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "branch": "main", "dirty": true,
         "changed_count": 1, "changed": ["ci/matrix_lab/matrix_main.py"]},
 "host": "test host", "jobs": 2, "cells": [
 {"name": "gcc-12 cross aarch64", "kind": "arch", "status": "PASS", "seconds": 107.3,
  "tests": {"passed": 24, "failed": 0, "skipped": 14}, "version": "gcc-12", "flags": "--config=aarch64",
  "skipped_tests": [{"target": "//tests/bench:bench_test", "reason": "incompatible with aarch64 (target_compatible_with = HOST_ONLY_COMPATIBLE)"},
                    {"target": "//tests/reliability:security_test", "reason": "secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)"}],
  "log": "logs/gcc-12-cross-aarch64.log", "reason": null, "errors": null, "notes": null,
  "source": "cntvct", "frequency_hz": 62500000.0, "frequency_method": "arch_register",
  "uncertainty_ppm": 0, "now_read_ns": 40.0, "why": "cntvct", "compiled_by": "gcc 12",
  "candidates": [{"source": "cntvct", "chosen": true, "read_ns": 43.3}]},
 {"name": "cpu Haswell", "kind": "cpu", "status": "FAIL", "seconds": 63.7,
  "tests": {"passed": 34, "failed": 2, "skipped": 0}, "version": "gcc-12", "flags": "",
  "log": "logs/cpu-Haswell.log", "reason": null,
  "errors": ["FAIL unknown subcommand: got exit 2, 2 stderr line(s)"], "notes": null,
  "source": null},
 {"name": "clang-13 bazel x86_64", "kind": "bazel", "status": "SKIPPED", "seconds": 0,
  "tests": {"passed": 0, "failed": 0, "skipped": 0}, "version": "", "flags": "",
  "log": "logs/clang-13-bazel-x86_64.log", "reason": "/usr/bin/clang-13 not installed",
  "errors": null, "notes": null, "source": null}]}
JSON
python3 "$root/ci/matrix_lab/matrix_main.py" --rerender > "$tmp/stdout" 2> "$tmp/stderr"
check "rerender exits 0" test $? -eq 0
md=$out/report.md
check "md: pass with skips" grep -qF "PASS (24 passed, 14 skipped)" "$md"
check "md: fail with counts" grep -qF "FAIL (34 passed, 2 failed)" "$md"
check "md: the failure's error line" grep -qF "FAIL unknown subcommand: got exit 2" "$md"
check "md: the skip reason" grep -qF "clang-13 bazel x86_64: /usr/bin/clang-13 not installed" "$md"
check "md: cell totals" grep -qF "1 passed, 1 failed, 1 skipped" "$md"
check "md: source and frequency" grep -qF "62.500 MHz" "$md"
check "html written" grep -qF "24 passed, 14 skipped" "$out/report.html"
check "md: the commit and dirty state" grep -qF "commit 0123456789abcdef0123456789abcdef01234567 (main), dirty: 1 changed or untracked file(s): ci/matrix_lab/matrix_main.py" "$md"
check "md: start and end" grep -qF "started 2026-11-29 22:34:09 UTC, finished 2026-11-29 23:15:02 UTC" "$md"
check "md: each skipped test of a cell, with its reason" grep -qF -- '- `//tests/reliability:security_test`: secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)' "$md"
check "html: skipped tests in an expandable row" grep -qF "<details><summary>2 skipped</summary>" "$out/report.html"
check "html: the legend is shown" grep -qF "<div class='legend'>Legend: <span class='PASS'>PASS</span>" "$out/report.html"
check "html: the commit" grep -qF "commit 0123456789abcdef0123456789abcdef01234567" "$out/report.html"

one_error_line() { # what, json text (none: no report.json at all)
  if [[ $# -gt 1 ]]; then printf '%s' "$2" > "$out/report.json"; else rm -f "$out/report.json"; fi
  python3 "$root/ci/matrix_lab/matrix_main.py" --rerender > "$tmp/stdout" 2> "$tmp/stderr"
  local rc=$? n
  n=$(wc -l < "$tmp/stderr")
  if [[ $rc -eq 2 && $n -eq 1 ]] && grep -qF "report.json" "$tmp/stderr"; then
    echo "ok   $1: $(cat "$tmp/stderr")"
  else
    echo "FAIL $1: exit $rc, $n stderr line(s): $(head -c 300 "$tmp/stderr")"
    fail=1
  fi
}
one_error_line "truncated json" '{"cells": [{"name": "x"}'
one_error_line "no cells" '{"quick": false}'
one_error_line "not an object" '[1, 2]'
one_error_line "unknown cell" '{"cells": [{"name": "sundial bazel"}]}'
one_error_line "cell without a status" '{"cells": [{"name": "cpu Haswell"}]}'
one_error_line "missing file"

echo
if [[ $fail -ne 0 ]]; then echo "matrix_report_test: FAILED"; exit 1; fi
echo "matrix_report_test: all passed"
