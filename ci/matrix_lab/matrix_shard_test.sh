#!/usr/bin/env bash
# ci/matrix --shard and --merge without running a cell: the split is
# deterministic and covers every selected cell exactly once for N = 1..5,
# it balances by the seconds of a previous report, a merge of shard
# reports holds every cell once and names the machine of each shard, and a
# missing or duplicated cell, or a bad --shard, gets one line and exit 2.
set -uo pipefail
src=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
root=$tmp/root
mkdir -p "$root/ci"
mkdir -p "$root/ci/matrix_lab" "$root/ci/guest_lab"  # ROOT is two folders above the modules
cp "$(dirname "$src")"/*.py "$root/ci/matrix_lab/"  # the command line, cell table, runner, shards, report
cp "$(dirname "$src")"/../guest_lab/{__init__,guest_table}.py "$root/ci/guest_lab/"  # the guest table
mkdir -p "$root/tests"  # the CPU-model table it reads
cp "$TEST_SRCDIR/$TEST_WORKSPACE/tests/cpu_models.tsv" "$root/tests/"
m() { (cd "$tmp" && python3 "$root/ci/matrix_lab/matrix_main.py" "$@"); }
fail=0
check() { # what, command...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
cells_of() { grep -vE '^(shard [0-9]+/[0-9]+: |split by |[0-9]+ cells)' "$1"; }

# --- the split: every cell exactly once, the same every time ---------------
for sel in "--quick" "" "--only clang-19"; do
  # shellcheck disable=SC2086
  m --list $sel > "$tmp/all.txt"
  cells_of "$tmp/all.txt" | sort > "$tmp/all.sorted"
  total=$(wc -l < "$tmp/all.sorted")
  for n in 1 2 3 5; do
    : > "$tmp/union"
    for ((k = 1; k <= n; k++)); do
      # shellcheck disable=SC2086
      m --list $sel --shard "$k/$n" > "$tmp/s$k.txt"
      # shellcheck disable=SC2086
      m --list $sel --shard "$k/$n" > "$tmp/s$k.again"
      check "${sel:-full}: shard $k/$n is the same twice" cmp -s "$tmp/s$k.txt" "$tmp/s$k.again"
      cells_of "$tmp/s$k.txt" >> "$tmp/union"
    done
    sort "$tmp/union" > "$tmp/union.sorted"
    check "${sel:-full} ($total cells) in $n shards: each cell exactly once" cmp -s "$tmp/all.sorted" "$tmp/union.sorted"
  done
done
m --list --quick --shard 2/3 > "$tmp/s.txt"
check "the listed shard is marked" grep -qE '^shard 2/3: .*<- listed$' "$tmp/s.txt"
check "the split says what it is balanced by" grep -qF "split by static estimate per kind" "$tmp/s.txt"

# --- balanced by a previous report's seconds --------------------------------
# gcc-11's Bazel cell took 600 s last time, clang-19's 100 s and the
# sanitizer 90 s: with two shards the long one goes alone.
cat > "$tmp/last.json" <<'JSON'
{"cells": [
 {"name": "gcc-11 bazel x86_64", "status": "PASS", "seconds": 600},
 {"name": "clang-19 bazel x86_64", "status": "PASS", "seconds": 100},
 {"name": "clang-19 asan+ubsan", "status": "FAIL", "seconds": 90},
 {"name": "gcc-12 cross aarch64", "status": "PASS", "seconds": 80},
 {"name": "cpu max,-rdtscp", "status": "SKIPPED", "seconds": 0}]}
JSON
m --list --only '^(gcc-11|clang-19) bazel x86_64$|asan|cross aarch64|max,-rdtscp' --shard 1/2 --timings "$tmp/last.json" > "$tmp/t1.txt"
m --list --only '^(gcc-11|clang-19) bazel x86_64$|asan|cross aarch64|max,-rdtscp' --shard 2/2 --timings "$tmp/last.json" > "$tmp/t2.txt"
check "longest cell alone on shard 1" test "$(cells_of "$tmp/t1.txt")" = "gcc-11 bazel x86_64"
check "shard 1 estimated at 10m (600 s)" grep -qE '^shard 1/2: 1 cells, Bazel lane 10m' "$tmp/t1.txt"
check "the rest on shard 2 (SKIPPED cell at its static estimate)" test "$(cells_of "$tmp/t2.txt" | wc -l)" -eq 4
check "split names the timings file" grep -qF "last.json (static estimate for" "$tmp/t2.txt"
# without timings the same selection splits differently (static estimate)
m --list --only '^(gcc-11|clang-19) bazel x86_64$|asan|cross aarch64|max,-rdtscp' --shard 1/2 > "$tmp/st1.txt"
check "timings change the split" test "$(cells_of "$tmp/st1.txt")" != "gcc-11 bazel x86_64"
# The report already in --out balances the split, unless it is one shard's:
# shard 2 run into the same --out after shard 1 must split as shard 1 did.
mkdir -p "$tmp/o"
cp "$tmp/last.json" "$tmp/o/report.json"
m --list --only '^(gcc-11|clang-19) bazel x86_64$|asan|cross aarch64|max,-rdtscp' --shard 1/2 --out "$tmp/o" > "$tmp/o1.txt"
check "a whole report in --out balances the split" test "$(cells_of "$tmp/o1.txt")" = "gcc-11 bazel x86_64"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["shard"] = {"spec": "1/2"}; json.dump(d, open(sys.argv[1], "w"))' "$tmp/o/report.json"
m --list --only '^(gcc-11|clang-19) bazel x86_64$|asan|cross aarch64|max,-rdtscp' --shard 1/2 --out "$tmp/o" > "$tmp/o2.txt"
check "one shard's report in --out does not" cmp -s <(cells_of "$tmp/o2.txt") <(cells_of "$tmp/st1.txt")

# --- merge ------------------------------------------------------------------
# Shard reports as ci/matrix writes them, with the cells of the real split.
mkreport() { # dir, K/N, cpu, listfile[, split id]
  python3 - "$@" <<'PY'
import json, os, sys
d, spec, cpu, lst = sys.argv[1:5]
split = sys.argv[5] if len(sys.argv) > 5 else None
names = [l.strip() for l in open(lst) if l.strip()]
sel = [l.strip() for l in open(os.path.join(os.path.dirname(lst), "sel.txt")) if l.strip()]
os.makedirs(os.path.join(d, "logs"), exist_ok=True)
cells = []
for n in names:
    log = "logs/%s.log" % n.replace(" ", "-")
    open(os.path.join(d, log), "w").write("log of %s\n" % n)
    cells.append({"name": n, "kind": "x", "status": "PASS", "seconds": 5.0,
                  "tests": {"passed": 1, "failed": 0, "skipped": 0}, "version": "v", "flags": "",
                  "log": log, "reason": None, "errors": None, "notes": None, "source": "tsc",
                  "frequency_hz": 2e9, "frequency_method": "cpuid", "uncertainty_ppm": 0,
                  "now_read_ns": 7.0, "why": "", "compiled_by": "cc", "candidates": [],
                  "remote_cache": {"hits": 3, "processes": 5, "internal": 1, "key": "k"}})
json.dump({"quick": True, "args": " --shard " + spec, "finished": "2026-11-30 10:00 UTC",
           "elapsed_s": 60.0, "host": "h", "jobs": 2,
           "machine": {"hostname": "runner-" + spec[0], "arch": "x86_64", "cpu": cpu, "cpus": 4,
                       "kernel": "Linux 6.8.0-test", "clocksource": "tsc"},
           "shard": dict({"spec": spec, "timings": "static estimate per kind"}, **({"split": split} if split else {})),
           "selection": sel,
           "remote_cache": {"url": "http://127.0.0.1:1", "hits": 3 * len(cells), "processes": 5 * len(cells),
                            "internal": len(cells), "bazel_runs": 2},
           "cells": cells}, open(os.path.join(d, "report.json"), "w"))
PY
}
sel=(--only '(gcc-11|clang-19).*(bazel|single-header c\+\+17)')
m --list "${sel[@]}" > "$tmp/all.txt"
cells_of "$tmp/all.txt" > "$tmp/sel.txt"
for k in 1 2; do
  m --list "${sel[@]}" --shard $k/2 > "$tmp/s$k.txt"
  cells_of "$tmp/s$k.txt" > "$tmp/c$k.txt"
  mkreport "$tmp/r$k" "$k/2" "Test CPU $k @ 3.0GHz" "$tmp/c$k.txt"
done
m --merge "$tmp/r2" "$tmp/r1" --out "$tmp/merged" > "$tmp/stdout" 2> "$tmp/stderr"
check "merge exits 0" test $? -eq 0
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = [c["name"] for c in d["cells"]]
sel = [l.strip() for l in open(sys.argv[2]) if l.strip()]
sys.exit(0 if names == sel and len(set(names)) == len(names) else 1)' "$tmp/merged/report.json" "$tmp/sel.txt"
check "merged cells == the unsharded selection, in matrix order" test $? -eq 0
md=$tmp/merged/report.md
check "md: shard 1 with its machine" grep -qE "shard 1/2 .*runner-1 \(Test CPU 1 @ 3.0GHz, x86_64, 4 CPUs\), kernel Linux 6.8.0-test, clocksource tsc" "$md"
check "md: shard 2 with its machine" grep -qF "Test CPU 2 @ 3.0GHz" "$md"
check "html: shards in the header" grep -qF "shard 2/2" "$tmp/merged/report.html"
check "md: summed remote cache hits" grep -qE "remote cache http://127.0.0.1:1: $((3 * $(wc -l < "$tmp/sel.txt"))) remote cache hit" "$md"
check "logs copied" test -f "$tmp/merged/logs/gcc-11-bazel-x86_64.log"
check "last line is the plain summary" test "$(tail -1 "$tmp/stdout")" = "$(wc -l < "$tmp/sel.txt") passed, 0 failed, 0 skipped"
(cd "$tmp/merged" && python3 "$root/ci/matrix_lab/matrix_main.py" --rerender --out . > /dev/null 2>&1)
check "a merged report rerenders with its shard lines" grep -qF "Test CPU 1 @ 3.0GHz" "$md"

one_error_line() { # what, pattern, args...
  local what=$1 pat=$2 rc n
  shift 2
  m "$@" > "$tmp/stdout" 2> "$tmp/stderr"
  rc=$?
  n=$(wc -l < "$tmp/stderr")
  if [[ $rc -eq 2 && $n -eq 1 ]] && grep -qE -- "$pat" "$tmp/stderr"; then
    echo "ok   $what: $(cat "$tmp/stderr")"
  else
    echo "FAIL $what: exit $rc, $n stderr line(s): $(head -c 300 "$tmp/stderr")"
    fail=1
  fi
}
one_error_line "merge: a shard missing" "cell '.*' is missing" --merge "$tmp/r1" --out "$tmp/m2"
one_error_line "merge: a shard twice" "duplicate" --merge "$tmp/r1" "$tmp/r2" "$tmp/r1" --out "$tmp/m2"
cp -r "$tmp/r2" "$tmp/r2b"
python3 - "$tmp/r2b/report.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["shard"]["spec"] = "3/3"  # another run's shard holding the same cells
json.dump(d, open(sys.argv[1], "w"))
PY
one_error_line "merge: a cell in two reports" "cell '.*' is in both .* \(duplicate\)" --merge "$tmp/r1" "$tmp/r2" "$tmp/r2b" --out "$tmp/m2"
mkreport "$tmp/x1" 1/2 "cpu" "$tmp/c1.txt" aaaa
mkreport "$tmp/x2" 2/2 "cpu" "$tmp/c2.txt" bbbb
one_error_line "merge: shards split differently" "shard 1/2 .* and shard 2/2 .* were split differently" \
  --merge "$tmp/x1" "$tmp/x2" --out "$tmp/m2"
one_error_line "merge: no report there" "cannot read a report" --merge "$tmp/r1" "$tmp/nowhere" --out "$tmp/m2"
one_error_line "merge: into one of its inputs" "is one of the reports to merge" --merge "$tmp/r1" "$tmp/r2" --out "$tmp/r1"
one_error_line "merge: with --shard" "does not take --shard" --merge "$tmp/r1" --shard 1/2
for bad in 0/2 3/2 1/0 x 1/2/3 ""; do
  one_error_line "--shard '$bad'" "--shard '$bad': expected K/N" --list --shard "$bad"
done
one_error_line "--timings missing" "no such file" --list --shard 1/2 --timings "$tmp/none.json"
echo '{"cells": 3}' > "$tmp/bad.json"
one_error_line "--timings not a report" "not a ci/matrix report.json" --list --shard 1/2 --timings "$tmp/bad.json"
one_error_line "--remote-cache not a URL" "expected a URL" --list --remote-cache 127.0.0.1:8980
one_error_line "unknown option" "unrecognized arguments" --list --shards 1/2

echo
if [[ $fail -ne 0 ]]; then echo "matrix_shard_test: FAILED"; exit 1; fi
echo "matrix_shard_test: all passed"
