#!/usr/bin/env bash
# ci/matrix_lab/summarize and ci/matrix_lab/bazel_results.py (the counting both ci/matrix_lab/summarize and
# ci/matrix use; the cell verdict) on made-up Bazel logs and test logs:
# FLAKY is a failure, never a pass; a PASSED target whose test.log says
# TICKCLOCK_SKIPPED is a skip (sharded targets too); SKIPPED is a skip; a
# build that failed before any test ran is one failure; the summary is the
# only line on stdout; bad arguments get one line and exit 2.
#   summarize_test.sh SUMMARIZE BAZEL_RESULTS_PY
set -uo pipefail
summarize=$1
results=$2
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fail=0
check() { # what, expected, actual
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}

logs=$tmp/testlogs
mkdir -p "$logs/tests/a_test" "$logs/tests/b_test" "$logs/tests/sub/c_test" \
  "$logs/tests/sharded_test/shard_1_of_2" "$logs/tests/sharded_test/shard_2_of_2" \
  "$logs/tests/clean_sharded_test/shard_1_of_2"
printf 'doctest output\n[doctest] Status: SUCCESS!\n' > "$logs/tests/a_test/test.log"
printf 'TICKCLOCK_SKIPPED: needs a setgid binary\n' > "$logs/tests/b_test/test.log"
printf 'x\nTICKCLOCK_SKIPPED: QEMU_CPU is unset\n' > "$logs/tests/sub/c_test/test.log"
printf 'ok\n' > "$logs/tests/sharded_test/shard_1_of_2/test.log"
printf 'TICKCLOCK_SKIPPED: shard 2 could not run\n' > "$logs/tests/sharded_test/shard_2_of_2/test.log"
printf 'ok\n' > "$logs/tests/clean_sharded_test/shard_1_of_2/test.log"
# a marker that does not start the line is not a skip
mkdir -p "$logs/tests/d_test"
printf 'said: TICKCLOCK_SKIPPED: not at line start\n' > "$logs/tests/d_test/test.log"

cat > "$tmp/bazel.log" <<'LOG'
INFO: Build completed, 3 tests FAILED, 14 total actions
//tests:a_test                                                           PASSED in 0.1s
//tests:b_test                                                  (cached) PASSED in 0.2s
//tests/sub:c_test                                                       PASSED in 0.1s
//tests:d_test                                                           PASSED in 0.1s
//tests:sharded_test                                                     PASSED in 1.0s
//tests:clean_sharded_test                                               PASSED in 1.0s
//tests:flaky_test                                                        FLAKY, failed in 1 out of 2 in 0.5s
//tests:hwy_test                                                         SKIPPED
//tests:bad_test                                                         FAILED in 0.3s
//tests:slow_test                                                        TIMEOUT in 120.0s
//tests:lost_test                                                      NO STATUS
  //tests:not_a_status_line PASSED
Executed 10 out of 11 tests: 5 tests pass, 1 was skipped.
LOG

out=$("$summarize" "$tmp/bazel.log" 3 "$logs" 2>"$tmp/stderr")
check "counts" "3 passed, 4 failed, 4 skipped" "$out"
check "one line on stdout" "1" "$(printf '%s\n' "$out" | wc -l | tr -d ' ')"
grep -q 'skipped //tests:b_test: needs a setgid binary' "$tmp/stderr"
check "skip reason on stderr" "0" "$?"
grep -q 'flaky (counted as failed) //tests:flaky_test' "$tmp/stderr"
check "flaky named on stderr" "0" "$?"

# the same log without test logs: nothing can be recognised as skipped inside
out=$("$summarize" "$tmp/bazel.log" 3 "$tmp/no-such-dir" 2>/dev/null)
check "no test logs" "6 passed, 4 failed, 1 skipped" "$out"

# only FLAKY: bazel exits 0, but it is no pass
printf '//tests:flaky_test   FLAKY, failed in 1 out of 2 in 0.5s\n' > "$tmp/flaky.log"
check "flaky alone" "0 passed, 1 failed, 0 skipped" "$("$summarize" "$tmp/flaky.log" 0 "$logs" 2>/dev/null)"

# a build failure before any test: one failure
printf 'ERROR: foo.cc:1: error\nFAILED: Build did NOT complete successfully\n' > "$tmp/broken.log"
check "build failure" "0 passed, 1 failed, 0 skipped" "$("$summarize" "$tmp/broken.log" 1 "$logs" 2>/dev/null)"
check "build failure, rc 3" "0 passed, 0 failed, 0 skipped" "$("$summarize" "$tmp/broken.log" 3 "$logs" 2>/dev/null)"
check "empty log, rc 0" "0 passed, 0 failed, 0 skipped" "$("$summarize" "$tmp/broken.log" 0 "$logs" 2>/dev/null)"

# bad arguments: one line on stderr, exit 2, nothing on stdout
"$summarize" > "$tmp/out" 2> "$tmp/err"
check "no argument: exit 2" "2" "$?"
check "no argument: one line on stderr, none on stdout" "1 0" "$(wc -l < "$tmp/err" | tr -d ' ') $(wc -c < "$tmp/out" | tr -d ' ')"
"$summarize" "$tmp/bazel.log" x > "$tmp/out" 2> "$tmp/err"
check "exit code not a number: exit 2" "2" "$?"
check "exit code not a number: the error" "ci/matrix_lab/summarize: BAZEL_EXIT_CODE 'x': expected a number" "$(cat "$tmp/err")"

# the module ci/matrix counts each Bazel cell with: the same counts, the
# list of skipped targets agrees with them, and the cell verdict
cp "$(dirname "$results")"/*.py "$tmp/"  # bazel_results.py, and matrix_runner.py with what it imports
py=$(cd "$tmp" && python3 - "$tmp/bazel.log" "$logs" <<'PY'
import sys
import bazel_results as m
text = open(sys.argv[1]).read()
print(m.summarize(text, 3, sys.argv[2]))
print(m.summarize(text, 3))
print(m.summarize("//t:f   FLAKY, failed in 1 out of 2 in 0.5s\n", 0))
print(m.summarize("ERROR: x\n", 1))
res = m.results(text, sys.argv[2])
skipped = m.skipped_tests(res, "/nonexistent", "x86_64")
print("%d skipped: %s" % (len(skipped), " ".join(s["target"] for s in skipped)))
print([s["reason"] for s in skipped if s["target"] == "//tests:sharded_test"][0])
for rc, t in [(0, {"passed": 3, "failed": 0, "skipped": 1}),
              (0, {"passed": 3, "failed": 1, "skipped": 0}),
              (3, {"passed": 3, "failed": 1, "skipped": 0}),
              (1, {"passed": 0, "failed": 1, "skipped": 0}),
              (0, {"passed": 0, "failed": 0, "skipped": 5})]:
    ok, why = m.cell_verdict(rc, t)
    print("%s|%s" % ("PASS" if ok else "FAIL", why))
PY
)
expected="3 passed, 4 failed, 4 skipped
6 passed, 4 failed, 1 skipped
0 passed, 1 failed, 0 skipped
0 passed, 1 failed, 0 skipped
4 skipped: //tests:b_test //tests/sub:c_test //tests:sharded_test //tests:hwy_test
shard 2 could not run
PASS|None
FAIL|1 failed
FAIL|bazel test exited 3
FAIL|bazel test exited 1
FAIL|no test passed"
check "bazel_results: counts, skipped targets and cell_verdict" "$expected" "$py"

# a FAIL cell's first error lines: not a skip the test reported (its reason
# names ThreadSanitizer), but the sanitizer's report and the failed check
errs=$(cd "$tmp" && python3 - <<'PY'
import matrix_runner as m
text = """TICKCLOCK_SKIPPED: fork racing first use: ThreadSanitizer reports the parent's threads as leaked
./tests/support/skip.h:59: MESSAGE: SKIPPED: a raw fork under ThreadSanitizer: its runtime's own state
WARNING: ThreadSanitizer: thread leak (pid=40)
child: tests/x.cc:524: EXPECT(st == 0) failed
"""
print(m.first_errors(text)[0])
PY
)
check "first error line is not a reported skip" "WARNING: ThreadSanitizer: thread leak (pid=40)" "$errs"

[[ $fail -eq 0 ]] && echo "summarize_test: all checks passed"
exit $fail
