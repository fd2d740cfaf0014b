#!/usr/bin/env bash
# tickclock-probe end to end: every command runs, its --json parses and has
# the keys DESIGN.md fixes, bad input gets one line on stderr and exit 2.
set -uo pipefail
# Under --config=<arch> the probe is a target binary and this script a host
# one: the QEMU runner sets TICKCLOCK_RUNNER (toolchains/qemu/run.sh).
read -r -a runner <<< "${TICKCLOCK_RUNNER:-}"
probe_bin=$1
P() { "${runner[@]}" "$probe_bin" "$@"; }
fail=0
tmp=${TEST_TMPDIR:-$(mktemp -d)}

check() { # description, command... (a command may say why it failed in $tmp/why)
  local what=$1
  shift
  rm -f "$tmp/why"
  if "$@"; then
    echo "ok   $what"
  else
    echo "FAIL $what$([[ -s $tmp/why ]] && echo ": $(cat "$tmp/why")")"
    fail=1
  fi
}

json_has() { # file, python expression over d
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2], {"d": d})
sys.exit(0 if ok else 1)
PY
}

# the report
P --json > "$tmp/report.json"; rc=$?
check "report exits 0" test $rc -eq 0
check "report json keys" json_has "$tmp/report.json" \
  "d['source'] in ('tsc','system','cntvct','timebase','tod','rdtime','qpc') and set(d['frequency']) >= {'hz','num','den','method','uncertainty_ppm'} and all(set(c) >= {'source','usable','read_ns','reason'} for c in d['candidates']) and len(d['candidates']) >= 1"
# a frequency source that gave nothing says so: available false and hz null,
# never a number (0 would read as a frequency of 0 Hz). Listed whenever the
# target has a counter (mips64el and armv7 builds may have none: empty list).
check "report frequency sources: hz null iff unavailable" json_has "$tmp/report.json" \
  "(len(d['frequency_sources']) >= 1 or not any(c['source'] not in ('system','qpc') for c in d['candidates'])) and all(set(f) >= {'name','available','hz','reason'} and (f['hz'] is None) == (not f['available']) and (f['hz'] is None or f['hz'] > 0) for f in d['frequency_sources'])"
P > "$tmp/report.txt"
check "report text names the source" grep -q "^  source " "$tmp/report.txt"

# timing: short, one source and all
P timing --seconds 0.2 --source clock_gettime --json > "$tmp/timing.json"; rc=$?
check "timing exits 0 or 1" test $rc -le 1
check "timing json" json_has "$tmp/timing.json" \
  "d['sources'][0]['name']=='clock_gettime' and d['sources'][0]['loops']>0 and d['sources'][0]['loop_ns']>0 and sum(b['count'] for b in d['sources'][0]['histogram_log2'])>0"
P timing --seconds 0.1 --svg "$tmp/h.svg" > "$tmp/timing.txt"; rc=$?
check "timing all sources" test $rc -le 1
check "timing svg written" grep -q "<svg" "$tmp/h.svg"
check "timing text has a histogram" grep -q "histogram of timing durations" "$tmp/timing.txt"

# validate and warp
P validate --seconds 0.5 --json --fixture-out "$tmp/fx.cpuid" > "$tmp/validate.json"; rc=$?
check "validate exit is its verdict" json_has "$tmp/validate.json" \
  "(d['verdict']=='PASS') == ($rc==0) and {c['name'] for c in d['checks']} >= {'cpuid','clocksource','frequency','drift','monotonic','warp','read_cost'} and all(c['status'] in ('PASS','FAIL','SKIP') for c in d['checks'])"
check "validate wrote a fixture" grep -q "^# expect.source: " "$tmp/fx.cpuid"
# the frequency check lists every source; one that gave nothing reads
# "none", not "0.000000 MHz". Needs the counter in use: force it.
counter=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(next((c['source'] for c in d['candidates'] if c['source'] not in ('system','qpc')), ''))" "$tmp/report.json")
rc=2
: > "$tmp/err"
if [[ -n $counter ]]; then
  P validate --seconds 0.3 --source "$counter" > "$tmp/validate.txt" 2> "$tmp/err"
  rc=$?  # 0 PASS, 1 FAIL verdict, 2 the counter cannot be forced here
fi
if [[ $rc -le 1 ]]; then
  check "validate --source $counter lists frequency sources" grep -q "\[.*\] frequency .* MHz" "$tmp/validate.txt"
  check "validate never lists a source at 0 MHz" bash -c "! grep -q ' 0\.000000 MHz' '$tmp/validate.txt'"
else
  echo "skip validate frequency list: no counter to force here (${counter:-none}: $(head -c 200 "$tmp/err"))"
fi
P warp --seconds 0.2 --json > "$tmp/warp.json"; rc=$?
check "warp json" json_has "$tmp/warp.json" "'pairs' in d and d['backward'] == sum(p['backward'] for p in d['pairs'])"

# bad input: one line on stderr, exit 2, nothing on stdout
one_error_line() { # rc, pattern (grep -F) the line must contain; reads $tmp/out, $tmp/err
  local rc=$1 pat=$2 n
  n=$(wc -l < "$tmp/err")
  if [[ $rc -eq 2 && $n -eq 1 && ! -s "$tmp/out" ]] && grep -qF -- "$pat" "$tmp/err"; then
    return 0
  fi
  # say what came instead, so the failure names its cause
  echo "got exit $rc, $n stderr line(s), $(wc -c < "$tmp/out") bytes on stdout; want exit 2, one line with '$pat'; stderr: $(head -c 300 "$tmp/err" | tr '\n' '|')" > "$tmp/why"
  return 1
}
bad() { # args...
  P "$@" > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "tickclock-probe"
}
check "unknown subcommand" bad frobnicate
check "unknown flag" bad timing --bogus
check "bad seconds" bad timing --seconds -1
check "non-numeric seconds" bad warp --seconds abc
check "too many seconds" bad validate --seconds 100000
check "unknown timing source" bad timing --source sundial
check "missing option value" bad timing --seconds
check "unwritable fixture" bad validate --seconds 0.1 --fixture-out /nonexistent-dir/x.cpuid
check "unknown validate source" bad validate --source sundial
check "report flag" bad --frobnicate

# bad fixture files: one line naming FILE:LINE, exit 2, nothing on stdout
bad_at() { # where, args...
  local where=$1
  shift
  P "$@" > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "$where"
}
printf '00000000 00000000 0000000d 756e6547 6c65746e 49656e69\nnot a leaf line\n' > "$tmp/bad1.cpuid"
check "cpuid --file malformed line" bad_at "bad1.cpuid:2:" cpuid --file "$tmp/bad1.cpuid"
printf '00000000 00000000 0000000d 756e6547 6c65746e\n' > "$tmp/bad2.cpuid"
check "cpuid --file short line" bad_at "bad2.cpuid:1:" cpuid --file "$tmp/bad2.cpuid"
printf '00000000 00000000 0000000d 756e6547 6c65746e 49656e6g\n' > "$tmp/bad3.cpuid"
check "cpuid --file non-hex" bad_at "bad3.cpuid:1:" cpuid --file "$tmp/bad3.cpuid" --json
head -c 3000 /dev/urandom > "$tmp/bad4.cpuid"
check "cpuid --file binary junk" bad_at "bad4.cpuid:" cpuid --file "$tmp/bad4.cpuid"
check "cpuid --file missing" bad_at "/nonexistent/x.cpuid" cpuid --file /nonexistent/x.cpuid
check "cpuid --file without value" bad cpuid --file

# bad environment: TICKCLOCK_SOURCE not a source name
bad_env_report() {
  TICKCLOCK_SOURCE="$1" P > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "TICKCLOCK_SOURCE"
}
bad_env_timing() {
  TICKCLOCK_SOURCE="$1" P timing --seconds 0.1 > /dev/null 2> "$tmp/err"
  [[ $? -eq 2 ]] && grep -q "TICKCLOCK_SOURCE" "$tmp/err"
}
env_auto() { TICKCLOCK_SOURCE=auto P --json > "$tmp/out"; }
for v in sundial TSC " tsc" "" "tsc,system" "$(printf 'x%.0s' {1..100})"; do
  check "TICKCLOCK_SOURCE='${v:0:12}' report" bad_env_report "$v"
  check "TICKCLOCK_SOURCE='${v:0:12}' timing" bad_env_timing "$v"
done
check "TICKCLOCK_SOURCE=auto accepted" env_auto

echo
if [[ $fail -ne 0 ]]; then echo "probe_cli_test: FAILED"; exit 1; fi
echo "probe_cli_test: all passed"
