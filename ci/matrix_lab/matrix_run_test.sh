#!/usr/bin/env bash
# ci/matrix running cells, with stand-ins for bazel and ci/guest on PATH:
#  - the report is written as cells finish (into OUT/current/), the previous
#    complete report stays in OUT/ until the new one is complete, and an
#    interrupted run leaves both (the partial one marked as such);
#  - the report records the git commit, the dirty state, start and end;
#  - --only without --out writes out/matrix-only/, never out/matrix/;
#  - every skipped test of a cell is listed with its reason (md, json, html):
#    a SKIPPED target (target_compatible_with, from its BUILD file) and a
#    PASSED one whose test.log has a TICKCLOCK_SKIPPED line.
set -uo pipefail
src=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
root=$tmp/root
rm -rf "$root"
mkdir -p "$root/ci" "$root/tests" "$tmp/bin"
mkdir -p "$root/ci/matrix_lab" "$root/ci/guest_lab"  # ROOT is two folders above the modules
cp "$(dirname "$src")"/*.py "$root/ci/matrix_lab/"  # the command line, cell table, runner, shards, report
cp "$(dirname "$src")"/../guest_lab/{__init__,guest_table}.py "$root/ci/guest_lab/"  # the guest table
cp "$TEST_SRCDIR/$TEST_WORKSPACE/tests/cpu_models.tsv" "$root/tests/"
fail=0
check() { # what, command...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
jq_() { # file, python expression over d (the report.json)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

# ci/guest stand-in: PASS; the gated item waits for $GUEST_GATE (30 s at most);
# the kernel it names carries $FAKE_RUN, so a report tells which run wrote it
# (its start time has whole seconds, and runs 1 to 3 fit in one)
cat > "$root/ci/guest" <<'SH'
#!/usr/bin/env bash
name=$2
if [[ -n "${GUEST_GATE:-}" && "$name" == aarch64-max ]]; then
  for _ in $(seq 300); do [[ -e "$GUEST_GATE" ]] && break; sleep 0.1; done
fi
echo "{\"items\": [{\"name\": \"$name\", \"status\": \"PASS\", \"kernel\": \"fake-kernel-${FAKE_RUN:-0}\"}]}"
SH
chmod +x "$root/ci/guest"

# a git checkout with one commit and a change on top
printf 'out/\n__pycache__/\n' > "$root/.gitignore"  # as in a real checkout
git -C "$root" init -q
git -C "$root" add -A
git -C "$root" -c user.name=t -c user.email=t@t commit -q -m base
head=$(git -C "$root" rev-parse HEAD)
echo "scratch" > "$root/scratch.txt"

m() { (cd "$tmp" && PATH="$tmp/bin:$PATH" python3 "$root/ci/matrix_lab/matrix_main.py" "$@"); }
guests='^guest (x86_64|aarch64)-max$'
out=$root/out/matrix

# --- a complete run: where it goes, what it records --------------------------
m --no-deps --only "$guests" --out "$out" > "$tmp/run1.txt" 2>&1
check "run 1 exits 0" test $? -eq 0
check "run 1: report in out/matrix" test -f "$out/report.json"
check "run 1: no current/ left behind" test ! -e "$out/current"
check "run 1: cell logs moved along" test -f "$out/logs/guest-x86_64-max.log"
check "json: complete, with start and end" jq_ "$out/report.json" \
  'd["complete"] is True and d["started"].endswith("UTC") and d["finished"].endswith("UTC")'
check "json: the commit tested" jq_ "$out/report.json" "d['git']['commit'] == '$head'"
check "json: dirty, with the changed file" jq_ "$out/report.json" \
  'd["git"]["dirty"] is True and "scratch.txt" in d["git"]["changed"]'
check "md: commit and dirty state" grep -qE "^- commit $head .*dirty: [0-9]+ changed or untracked file\(s\): .*scratch.txt" "$out/report.md"
check "html: commit" grep -qF "commit $head" "$out/report.html"
cp "$out/report.json" "$tmp/run1.json"

# --- --only without --out: elsewhere ---------------------------------------
m --no-deps --only '^guest x86_64-max$' > "$tmp/only.txt" 2>&1
check "--only exits 0" test $? -eq 0
check "--only: report in out/matrix-only" jq_ "$root/out/matrix-only/report.json" 'len(d["cells"]) == 1'
check "--only: out/matrix untouched" cmp -s "$out/report.json" "$tmp/run1.json"

# --- an interrupted run: partial report in current/, the previous stays -----
rm -f "$tmp/gate"
(cd "$tmp" && GUEST_GATE=$tmp/gate PATH="$tmp/bin:$PATH" exec python3 "$root/ci/matrix_lab/matrix_main.py" \
  --no-deps --only "$guests" --out "$out" > "$tmp/run2.txt" 2>&1) &
pid=$!
partial=no
for _ in $(seq 200); do
  if [[ -f "$out/current/report.json" ]] && jq_ "$out/current/report.json" \
    'd["complete"] is False and [c["status"] for c in d["cells"]][0] == "PASS"'; then
    partial=yes
    break
  fi
  sleep 0.1
done
check "while running: a partial report with the first cell done" test $partial = yes
check "while running: the second cell not finished in it" jq_ "$out/current/report.json" \
  'd["cells"][1]["status"] in ("PENDING", "RUNNING")'
check "while running: md says partial" grep -qF "Partial report: 1 of 2 cells finished" "$out/current/report.md"
check "while running: the previous complete report stays" cmp -s "$out/report.json" "$tmp/run1.json"
kill -INT $pid
wait $pid
rc=$?
touch "$tmp/gate"
check "interrupted: exit 130" test $rc -eq 130
check "interrupted: says where the partial report is" grep -qF "interrupted; the partial report is in" "$tmp/run2.txt"
check "interrupted: partial report marked interrupted" jq_ "$out/current/report.json" \
  'd.get("interrupted") is True and d["complete"] is False'
check "interrupted: the previous complete report is still there" cmp -s "$out/report.json" "$tmp/run1.json"
check "interrupted: and its logs" test -f "$out/logs/guest-aarch64-max.log"

# --- the next run replaces it only when complete ----------------------------
FAKE_RUN=3 m --no-deps --only "$guests" --out "$out" > "$tmp/run3.txt" 2>&1
check "run 3 exits 0" test $? -eq 0
check "run 3: says it removed the unfinished run" grep -qF "an earlier run that did not finish" "$tmp/run3.txt"
check "run 3: its report replaced the previous" jq_ "$out/report.json" \
  'd["complete"] is True and [c["version"] for c in d["cells"]] == ["fake-kernel-3"] * 2'
check "run 3: no current/ left behind" test ! -e "$out/current"
check "run 3: no temporary files left" test -z "$(find "$out" -name '*.tmp.*')"

# --- skipped tests, each with its reason -------------------------------------
printf 'build:aarch64 --platforms=//platforms:linux_aarch64\n' > "$root/.bazelrc"
mkdir -p "$root/tests/bench" "$root/platforms" "$tmp/testlogs/tests/reliability/security_test"
cat > "$root/tests/bench/BUILD" <<'EOF'
load("//platforms:defs.bzl", "HOST_ONLY_COMPATIBLE")

# Links libbenchmark, which only the host has.
cc_test(
    name = "bench_test",
    srcs = ["bench_test.cc"],
    target_compatible_with = HOST_ONLY_COMPATIBLE,
)

cc_test(
    name = "other_test",
    srcs = ["other_test.cc"],
    target_compatible_with = HOST_ONLY_COMPATIBLE,
)
EOF
cat > "$root/platforms/defs.bzl" <<'EOF'
# For anything that links a system library only the host has.
HOST_ONLY_COMPATIBLE = select({})
EOF
echo "TICKCLOCK_SKIPPED: secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)" \
  > "$tmp/testlogs/tests/reliability/security_test/test.log"
cat > "$tmp/bin/bazel" <<SH
#!/usr/bin/env bash
case "\$1" in
  test)
    echo "//tests:a_test                 PASSED in 0.1s"
    echo "//tests/bench:bench_test       SKIPPED"
    echo "//tests/bench:other_test       SKIPPED"
    echo "//tests/reliability:security_test   PASSED in 0.2s"
    echo "Executed 2 out of 4 tests: 2 tests pass and 2 were skipped." ;;
  info) echo "$tmp/testlogs" ;;
  run) echo '{"source": "cntvct", "hz": 62500000.0, "freq_method": "arch_register", "candidates": []}' ;;
esac
exit 0
SH
chmod +x "$tmp/bin/bazel"
x=$root/out/x
m --no-deps --only '^gcc-12 cross aarch64$' --out "$x" > "$tmp/run4.txt" 2>&1
check "cross cell (stand-in bazel) exits 0" test $? -eq 0
check "json: counts 1 passed, 3 skipped" jq_ "$x/report.json" \
  'd["cells"][0]["tests"] == {"passed": 1, "failed": 0, "skipped": 3}'
check "json: three skipped tests listed" jq_ "$x/report.json" 'len(d["cells"][0]["skipped_tests"]) == 3'
check "json: SKIPPED target: platform, constraint and the comment above it" jq_ "$x/report.json" \
  '[t["reason"] for t in d["cells"][0]["skipped_tests"] if t["target"] == "//tests/bench:bench_test"] == ["incompatible with aarch64 (target_compatible_with = HOST_ONLY_COMPATIBLE): Links libbenchmark, which only the host has."]'
check "json: without a comment, the constant's" jq_ "$x/report.json" \
  '[t["reason"] for t in d["cells"][0]["skipped_tests"] if t["target"] == "//tests/bench:other_test"] == ["incompatible with aarch64 (target_compatible_with = HOST_ONLY_COMPATIBLE): For anything that links a system library only the host has."]'
check "json: TICKCLOCK_SKIPPED reason" jq_ "$x/report.json" \
  '[t["reason"] for t in d["cells"][0]["skipped_tests"] if t["target"] == "//tests/reliability:security_test"] == ["secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)"]'
check "md: a list under the cell" grep -qF "### gcc-12 cross aarch64 (3 skipped)" "$x/report.md"
check "md: each skipped test with its reason" grep -qF -- '- `//tests/reliability:security_test`: secure_getenv under AT_SECURE: cannot make a setgid binary here (not root)' "$x/report.md"
check "html: an expandable list" grep -qF "<details><summary>3 skipped</summary>" "$x/report.html"
check "html: the reason in it" grep -qF "incompatible with aarch64 (target_compatible_with = HOST_ONLY_COMPATIBLE)" "$x/report.html"

echo
if [[ $fail -ne 0 ]]; then
  for f in "$tmp"/run*.txt "$tmp/only.txt"; do echo "--- $f"; tail -20 "$f"; done
  echo "--- $out/report.md"
  head -12 "$out/report.md"
  echo "matrix_run_test: FAILED"
  exit 1
fi
echo "matrix_run_test: all passed"
