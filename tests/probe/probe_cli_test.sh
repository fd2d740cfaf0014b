#!/usr/bin/env bash
# tickclock-probe end to end: every command runs, its --json parses, has
# the documented keys and matches the JSON Schema (argument 3,
# src/probe/schema/tickclock-probe.schema.json, with python3-jsonschema),
# bad input gets one line on stderr and exit 2.
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

# ---- every --json output against the schema --------------------------------------
schema=${3:-}
schema_py=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import jsonschema' 2> /dev/null; then schema_py=$py; break; fi
done
n_schema=0
schema_ok() { # file: one JSON document that must match the schema
  n_schema=$((n_schema + 1))
  if [[ -z $schema || ! -f $schema ]]; then echo "no schema file given (argument 3: '$schema')" > "$tmp/why"; return 1; fi
  if [[ -z $schema_py ]]; then echo "no python3 with jsonschema (Debian: python3-jsonschema, in ci/deps host)" > "$tmp/why"; return 1; fi
  "$schema_py" - "$schema" "$1" > "$tmp/why" 2>&1 <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
if errors:
    # the deepest error of the branch that matched best names the key
    e = jsonschema.exceptions.best_match(errors)
    while e.context:
        e = jsonschema.exceptions.best_match(e.context)
    print("%s at /%s" % (e.message[:300], "/".join(str(p) for p in e.absolute_path)))
    sys.exit(1)
PY
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
check "report text: the duration bound of 1 ms and 1 s" grep -q "^  duration bound .* for 1 ms, .* for 1 s" "$tmp/report.txt"
check "report json: the duration bound grows with the interval" json_has "$tmp/report.json" \
  "0 < d['duration_bound_ns']['interval_1ms'] <= d['duration_bound_ns']['interval_1s']"
check "schema: report --json" schema_ok "$tmp/report.json"
# the kernel's list of clocksources, which the first use reads only where
# its decision does: the report has it wherever the file can be read
avail_file=/sys/devices/system/clocksource/clocksource0/available_clocksource
if [[ -r $avail_file ]]; then
  check "report json: the kernel's list of clocksources as the file states it" json_has "$tmp/report.json" \
    "d['available_clocksource'] == open('$avail_file').read().strip()"
fi
check "report json: envelope (schema_version, tool_version, command, host)" json_has "$tmp/report.json" \
  "d['schema_version'] == 2 and d['command'] == 'report' and set(d['host']) == {'kernel_release','cpu_model','hypervisor','clocksource'} and d['host']['kernel_release'] == __import__('os').uname().release"
# `report` is a subcommand (the same as none); `help` is --help
P report --json > "$tmp/report2.json"; rc=$?
check "report subcommand exits 0" test $rc -eq 0
check "schema: report subcommand --json" schema_ok "$tmp/report2.json"
check "report subcommand: the report's keys" json_has "$tmp/report2.json" \
  "list(d) == list(__import__('json').load(open('$tmp/report.json')))"
same_output() { # args-a -- args-b: both exit 0, identical stdout, empty stderr
  local a=() b=()
  while [[ $1 != -- ]]; do a+=("$1"); shift; done
  shift
  b=("$@")
  P "${a[@]}" > "$tmp/sa" 2> "$tmp/sae"; local ra=$?
  P "${b[@]}" > "$tmp/sb" 2> "$tmp/sbe"; local rb=$?
  if [[ $ra -eq 0 && $rb -eq 0 && ! -s $tmp/sae && ! -s $tmp/sbe && -s $tmp/sa ]] && cmp -s "$tmp/sa" "$tmp/sb"; then return 0; fi
  echo "'${a[*]}' exit $ra, '${b[*]}' exit $rb; stderr: $(head -c 200 "$tmp/sae" "$tmp/sbe" | tr '\n' '|')" > "$tmp/why"
  return 1
}
check "help = --help" same_output help -- --help
for c in timing validate warp cpuid; do
  check "help $c = $c --help" same_output help "$c" -- "$c" --help
done
check "help report = report --help" same_output help report -- report --help

# timing: short, one source and all
P timing --seconds 0.2 --source clock_gettime --json > "$tmp/timing.json"; rc=$?
check "timing exits 0 or 1" test $rc -le 1
check "timing json" json_has "$tmp/timing.json" \
  "d['sources'][0]['name']=='clock_gettime' and d['sources'][0]['loops']>0 and d['sources'][0]['loop_ns']>0 and sum(b['count'] for b in d['sources'][0]['histogram_log2'])>0"
check "timing json: each bucket's bound" json_has "$tmp/timing.json" \
  "all(b['bound_ns'] > 0 for b in d['sources'][0]['histogram_log2'])"
P timing --seconds 0.1 --svg "$tmp/h.svg" > "$tmp/timing.txt"; rc=$?
check "timing all sources" test $rc -le 1
check "timing svg written" grep -q "<svg" "$tmp/h.svg"
check "timing text has a histogram" grep -q "histogram of timing durations" "$tmp/timing.txt"
check "schema: timing --json" schema_ok "$tmp/timing.json"
# the text ends with a summary table: a header and one line per source
timing_summary() {
  local n
  n=$(sed -n '/^summary:$/,$p' "$tmp/timing.txt" | grep -cE '^  (tickclock_now|clock_gettime) ')
  if grep -q '^summary:$' "$tmp/timing.txt" && grep -q '^  source  *read ns  *loop ns' "$tmp/timing.txt" && [[ $n -ge 2 ]]; then return 0; fi
  echo "no summary table at the end (lines: $n): $(tail -3 "$tmp/timing.txt" | tr '\n' '|')" > "$tmp/why"
  return 1
}
check "timing text ends with a summary table" timing_summary

# validate and warp
P validate --seconds 0.5 --json --fixture-out "$tmp/fx.cpuid" > "$tmp/validate.json"; rc=$?
check "validate exit is its verdict" json_has "$tmp/validate.json" \
  "(d['verdict']=='PASS') == ($rc==0) and (d['verdict']=='FAIL') == ($rc==1) and (d['verdict']=='INCONCLUSIVE') == ($rc==4) and {c['name'] for c in d['checks']} >= {'cpuid','clocksource','frequency','drift','monotonic','warp','read_cost','pr_set_tsc'} and all(c['status'] in ('PASS','FAIL','SKIP','NOT_RUN') for c in d['checks']) and d['unfinished'] == []"
check "schema: validate --json" schema_ok "$tmp/validate.json"
# The verdict this host must give, from facts read here without the probe:
# natively, the source the library chose passes every check that applies
# (a FAIL is a regression of the library or of this host, never an accepted
# outcome), and where the kernel runs on the TSC and the CPU flags say it
# is constant and non-stop, that source is the TSC. Under emulation (a
# runner) the counter follows the host's NTP-slewed clock and the drift
# check may fail: no verdict is expected there, and the log says so.
cur_cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
want_verdict=PASS want_source=
if [[ -n ${TICKCLOCK_RUNNER:-} ]]; then
  want_verdict=
  echo "TICKCLOCK_SKIPPED: validate's expected verdict: under emulation ($TICKCLOCK_RUNNER) the counter follows the host's NTP-slewed CLOCK_MONOTONIC, so the drift check may rightly fail"
elif [[ $cur_cs == tsc && $cpu_flags == *" tsc "* && $cpu_flags == *" constant_tsc "* && $cpu_flags == *" nonstop_tsc "* ]]; then
  want_source=tsc
fi
echo "host facts: clocksource '${cur_cs:-unreadable}', CPU flags tsc/constant_tsc/nonstop_tsc: $(for f in tsc constant_tsc nonstop_tsc; do [[ $cpu_flags == *" $f "* ]] && printf 'y' || printf 'n'; done); expected verdict ${want_verdict:-none}, source ${want_source:-any}"
if [[ -n $want_verdict ]]; then
  check "validate's verdict is $want_verdict on this host (exit $rc)" json_has "$tmp/validate.json" \
    "d['verdict'] == '$want_verdict' and ('$want_source' == '' or d['source'] == '$want_source')"
fi
# Beside a verdict of the OS clock over an x86 TSC, the advice names this
# kernel's clocksource (what the host states); beside a counter, none.
# Under emulation /proc/cpuinfo describes the machine running the
# emulator, not the CPU the probe sees (an armv7 probe has no TSC however
# the host's flags read): not judged there.
if [[ -n ${TICKCLOCK_RUNNER:-} ]]; then
  echo "TICKCLOCK_SKIPPED: validate's refusal advice: under emulation ($TICKCLOCK_RUNNER) /proc/cpuinfo is the host's, not the emulated CPU's"
else
  check "validate's refusal advice follows its choice" json_has "$tmp/validate.json" \
    "(d['refusal'] is None) == (d['source'] != 'system' or d['forced'] or ' tsc ' not in '$cpu_flags') and (d['refusal'] is None or (d['refusal']['clocksource'] == '$cur_cs' and len(d['refusal']['advice']) >= 4))"
fi
check "validate wrote a fixture" grep -q "^# expect.source: " "$tmp/fx.cpuid"
# the fixture round-trips: `cpuid --file` decodes it as this CPU decodes live
P cpuid --json > "$tmp/live.json" 2> /dev/null
if json_has "$tmp/live.json" "bool(d['vendor'])"; then
  P cpuid --file "$tmp/fx.cpuid" --json > "$tmp/fxdec.json"
  check "schema: cpuid --json" schema_ok "$tmp/live.json"
  check "schema: cpuid --file --json" schema_ok "$tmp/fxdec.json"
  check "validate's fixture decodes through cpuid --file as the live CPU" json_has "$tmp/fxdec.json" \
    "all(d[k] == __import__('json').load(open('$tmp/live.json'))[k] for k in ('vendor', 'family', 'model', 'stepping', 'tsc', 'invariant_tsc', 'hypervisor_bit', 'leaf15', 'base_mhz', 'brand'))"
else
  echo "skip fixture round trip: no CPUID on this target (the fixture records none to decode)"
fi
check "validate's fixture records PR_SET_TSC as in its JSON" json_has "$tmp/validate.json" \
  "open('$tmp/fx.cpuid').read().count('# observed.pr_set_tsc_traps: ' + {True: 'yes', False: 'no', None: 'unknown'}[next(c for c in d['checks'] if c['name']=='pr_set_tsc')['enforced']] + chr(10)) == 1"
# A host already in tests/fixtures/hosts (same CPUID signature, hypervisor
# and clocksource) must behave as recorded: the same automatic source and
# the same PR_SET_TSC enforcement. A new host is named so it gets captured.
hosts_dir=${2:-}
if [[ -n $hosts_dir && -d $hosts_dir ]]; then
  python3 - "$tmp/fx.cpuid" "$tmp/validate.json" "$hosts_dir" > "$tmp/host.txt" <<'PY'
import glob, json, os, sys
def key(path):
    # a guest's fixture (marked '# emulated:', written by ci/guest under
    # QEMU system emulation) is that guest's: a user-mode run of the same
    # emulated CPU on this host's kernel is another host
    leaf1 = hv = cs = None
    emulated = False
    for line in open(path):
        if line.startswith('# clocksource:'): cs = line.split(':', 1)[1].strip()
        if line.startswith('# emulated:'): emulated = True
        f = line.split()
        if len(f) == 6 and not line.startswith('#'):
            if f[0] == '00000001' and f[1] == '00000000': leaf1 = f[2]
            if f[0] == '40000000' and f[1] == '00000000': hv = tuple(f[3:])
    return (leaf1, hv, cs, emulated)
def meta(path, k):
    for line in open(path):
        if line.startswith('# ' + k + ':'): return line.split(':', 1)[1].strip()
here = key(sys.argv[1])
v = json.load(open(sys.argv[2]))
pst = next(c for c in v['checks'] if c['name'] == 'pr_set_tsc')
for h in sorted(glob.glob(os.path.join(sys.argv[3], '*.cpuid'))):
    if key(h) != here: continue
    want_src, want_traps = meta(h, 'expect.source'), meta(h, 'observed.pr_set_tsc_traps')
    got_traps = {True: 'yes', False: 'no', None: 'unknown'}[pst.get('enforced')]
    print('known host', os.path.basename(h), 'source', v['source'], 'want', want_src, 'pr_set_tsc traps', got_traps, 'want', want_traps)
    # a sanitizer build cannot run the PR_SET_TSC children (its check says so)
    asan = pst['status'] == 'SKIP' and 'Sanitizer' in pst.get('detail', '')
    sys.exit(0 if (v['source'] == want_src and (want_traps == 'unknown' or asan or got_traps == want_traps)) else 1)
print('new host: not in', sys.argv[3], '- capture it: tickclock-probe validate --fixture-out tests/fixtures/hosts/NAME.cpuid')
sys.exit(3)
PY
  rc=$?
  cat "$tmp/host.txt"
  if [[ $rc -eq 3 ]]; then
    echo "TICKCLOCK_SKIPPED: known-host check: this host (its CPUID leaf 1, hypervisor signature and clocksource) has no fixture in $hosts_dir yet; capture it with tickclock-probe validate --fixture-out"
  else
    check "a known host chooses and traps as its fixture recorded" test $rc -eq 0
  fi
else
  echo "TICKCLOCK_SKIPPED: known-host check: no host fixture folder given (argument 2: '${hosts_dir}')"
fi
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
  # the source named in the environment is the run's, not the PR_SET_TSC
  # children's: they judge the automatic path and complain about nothing
  TICKCLOCK_SOURCE=$counter P validate --seconds 0.2 > /dev/null 2> "$tmp/env_err"
  check "TICKCLOCK_SOURCE=$counter: validate's fault children print no refusal" \
    bash -c "! grep -q 'is unusable' '$tmp/env_err'"
  check "validate --source $counter lists frequency sources" grep -q "\[.*\] frequency .* MHz" "$tmp/validate.txt"
  check "validate never lists a source at 0 MHz" bash -c "! grep -q ' 0\.000000 MHz' '$tmp/validate.txt'"
else
  echo "skip validate frequency list: no counter to force here (${counter:-none}: $(head -c 200 "$tmp/err"))"
fi
P warp --seconds 0.2 --json > "$tmp/warp.json"; rc=$?
check "warp json" json_has "$tmp/warp.json" "'pairs' in d and d['backward'] == sum(p['backward'] for p in d['pairs'])"
check "schema: warp --json" schema_ok "$tmp/warp.json"
check "warp exits 0 with no backward step, 1 with one" json_has "$tmp/warp.json" \
  "($rc == 0 and d['backward'] == 0) or ($rc == 1 and d['backward'] > 0)"

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
# the prefix every error line starts with: "tickclock-probe CMD: " for a
# subcommand, "tickclock-probe: " for the report and unknown subcommands
prefix_for() {
  case "$1" in
    timing|validate|warp|cpuid) echo "tickclock-probe $1: " ;;
    *) echo "tickclock-probe: " ;;
  esac
}
starts_with_prefix() { # cmd
  local pre
  pre=$(prefix_for "$1")
  if [[ "$(head -c ${#pre} "$tmp/err")" != "$pre" ]]; then
    echo "the error line does not start with '$pre': $(head -c 200 "$tmp/err")" > "$tmp/why"
    return 1
  fi
}
bad() { # args...
  P "$@" > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "tickclock-probe" && starts_with_prefix "$1"
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
  one_error_line $? "$where" && starts_with_prefix "$1"
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
for v in sundial TSCX " tsc" "tsc,system" "$(printf 'x%.0s' {1..100})"; do
  check "TICKCLOCK_SOURCE='${v:0:12}' report" bad_env_report "$v"
  check "TICKCLOCK_SOURCE='${v:0:12}' timing" bad_env_timing "$v"
done
check "TICKCLOCK_SOURCE=auto accepted" env_auto
# empty is the same as unset: accepted, nothing on stderr, not forced
env_empty() {
  TICKCLOCK_SOURCE= P --json > "$tmp/out" 2> "$tmp/err" || return 1
  [[ ! -s "$tmp/err" ]] && json_has "$tmp/out" "d['forced'] == False"
}
check "TICKCLOCK_SOURCE='' is unset" env_empty

# ---- echoed user input never carries raw control bytes ----------------------
no_raw_control() { # the stderr line has no byte < 0x20 but its final newline, and shows the escape
  python3 - "$tmp/err" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
ok = b.endswith(b'\n') and not any(c < 0x20 or c == 0x7f for c in b[:-1]) and b'\\x1b' in b
sys.exit(0 if ok else 1)
PY
}
esc_case() { # args...  (each contains a newline and ESC somewhere)
  P "$@" > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "tickclock-probe" && starts_with_prefix "$1" && no_raw_control
}
nl_esc=$'x\n\e[2Jy'
esc_env() {
  TICKCLOCK_SOURCE="bad${nl_esc}" P timing --seconds 0.1 > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "TICKCLOCK_SOURCE" && starts_with_prefix timing && no_raw_control
}
check "escaped: TICKCLOCK_SOURCE with a newline and ESC" esc_env
check "escaped: cpuid --file name" esc_case cpuid --file "$tmp/no${nl_esc}such.cpuid"
check "escaped: timing --svg path" esc_case timing --seconds 0.1 --svg "/nonexistent/a${nl_esc}.svg"
check "escaped: validate --fixture-out path" esc_case validate --seconds 0.1 --fixture-out "/nonexistent/a${nl_esc}.cpuid"
check "escaped: unknown subcommand" esc_case "frob${nl_esc}"
# a fixture whose metadata and register bytes carry ESC: the decoded text
# shows them escaped, never raw
esc_fixture() {
  printf '# clocksource: tsc\033[2J\n00000000 00000000 0000000d 756e6547 6c65741b 49656e69\n' > "$tmp/escfx.cpuid"
  P cpuid --file "$tmp/escfx.cpuid" > "$tmp/out" 2> "$tmp/err" || return 1
  if python3 -c "import sys; b=open(sys.argv[1],'rb').read(); sys.exit(0 if b'\x1b' not in b and b'\\\\x1b' in b else 1)" "$tmp/out"; then return 0; fi
  echo "raw ESC in, or escape missing from: $(head -c 300 "$tmp/out" | cat -v)" > "$tmp/why"
  return 1
}
check "escaped: cpuid --file text decoded from the file" esc_fixture

# ---- --help, -h, --version -----------------------------------------------------
helps() { # subcommand or "", flag
  if [[ -n $1 ]]; then P "$1" "$2" > "$tmp/out" 2> "$tmp/err"; else P "$2" > "$tmp/out" 2> "$tmp/err"; fi
  local rc=$?
  if [[ $rc -eq 0 && ! -s "$tmp/err" ]] && head -1 "$tmp/out" | grep -q "^usage: tickclock-probe ${1:+$1 }"; then return 0; fi
  echo "exit $rc, stderr '$(head -c 200 "$tmp/err")', stdout '$(head -c 200 "$tmp/out")'" > "$tmp/why"
  return 1
}
for c in "" timing validate warp cpuid; do
  for h in --help -h; do check "${c:-report} $h: usage on stdout, exit 0" helps "$c" "$h"; done
done
version() {
  P --version > "$tmp/out" 2> "$tmp/err" && [[ ! -s "$tmp/err" ]] &&
    grep -Eq '^tickclock-probe [0-9]+\.[0-9]+\.[0-9]+ \(tickclock [0-9]+\.[0-9]+\.[0-9]+\)$' "$tmp/out"
}
check "--version" version
vocabulary="a source (auto, system, tsc, cntvct, timebase, tod, rdtime, qpc) or a read (tickclock_now, tickclock_now_ordered, rdtsc, "
check "validate --source nope lists the valid names" bad_at "expected $vocabulary" validate --source nope
check "warp --source nope lists the valid names" bad_at "expected $vocabulary" warp --source nope
check "timing --source nope lists the valid names" bad_at "expected all, $vocabulary" timing --source nope

# ---- one --source vocabulary: a source's name and a read's name everywhere ------------
# timing --source system times clock_gettime's reads; validate --source
# clock_gettime forces the OS clock, as --source system does
timing_family() { # NAME, the reads it must time (JSON names, in order)
  local name=$1
  shift
  P timing --seconds 0.1 --source "$name" --json > "$tmp/out" 2> "$tmp/err" || {
    echo "exit $?: $(head -c 300 "$tmp/err")" > "$tmp/why"; return 1; }
  local got
  got=$(python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(open(sys.argv[1]))["sources"]))' "$tmp/out")
  [[ $got == "$*" ]] || { echo "timed '$got', want '$*'" > "$tmp/why"; return 1; }
}
check "timing --source system: clock_gettime's reads" timing_family system clock_gettime clock_gettime_raw clock_gettime_coarse
check "timing --source SYSTEM (any case, as validate takes it)" timing_family SYSTEM clock_gettime clock_gettime_raw clock_gettime_coarse
check "timing --source auto: tickclock's reads" timing_family auto tickclock_now tickclock_now_ordered
check "timing --source clock_gettime_raw: that read only" timing_family clock_gettime_raw clock_gettime_raw
validate_read_name() {
  P validate --seconds 0.1 --source clock_gettime --json > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [[ $rc -eq 0 || $rc -eq 1 || $rc -eq 4 ]] || { echo "exit $rc: $(head -c 300 "$tmp/err")" > "$tmp/why"; return 1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["source"] == "system" else 1)' "$tmp/out" ||
    { echo "validate --source clock_gettime did not validate the OS clock" > "$tmp/why"; return 1; }
}
check "validate --source clock_gettime forces the OS clock" validate_read_name
case "$(uname -m)" in
  x86_64 | i?86)
    tsc_everywhere() { # timing --source tsc is the TSC's reads, or says why not
      P timing --seconds 0.1 --source tsc --json > "$tmp/out" 2> "$tmp/err"
      local rc=$?
      if [[ $rc -eq 2 ]]; then one_error_line $rc "--source tsc: not usable here: "; return; fi
      [[ $rc -eq 0 ]] || { echo "exit $rc: $(head -c 300 "$tmp/err")" > "$tmp/why"; return 1; }
      python3 -c 'import json,sys; n=[s["name"] for s in json.load(open(sys.argv[1]))["sources"]]; sys.exit(0 if n[:2] == ["rdtsc", "lfence_rdtsc"] and set(n) <= {"rdtsc", "lfence_rdtsc", "rdtscp"} else 1)' "$tmp/out" ||
        { echo "timed something other than the TSC's reads" > "$tmp/why"; return 1; }
    }
    check "timing --source tsc: the TSC's reads, as validate --source tsc takes it" tsc_everywhere
    ;;
esac

# ---- JSON frequencies are exact --------------------------------------------------
check "report: frequency hz is num/den to the last bit" json_has "$tmp/report.json" \
  "d['frequency']['num'] > 0 and d['frequency']['den'] > 0 and d['frequency']['hz'] == d['frequency']['num'] / d['frequency']['den']"
check "report: each frequency source has num/den and hz == num/den" json_has "$tmp/report.json" \
  "all((f['hz'] is None and f['num'] is None) or (f['num'] > 0 and f['hz'] == f['num'] / f['den']) for f in d['frequency_sources'])"
check "report text: hz not rounded to 6 digits in JSON" bash -c "grep -q '\"hz\":[0-9]\{7,\}' '$tmp/report.json'"

# ---- output paths are checked before anything is measured ------------------------
fast_fail() { # seconds-limit, args...   (a run that would measure for 30 s must fail at once)
  local lim=$1 start end
  shift
  start=$(date +%s%N)
  P "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  end=$(date +%s%N)
  one_error_line $rc "tickclock-probe" || return 1
  if (( (end - start) / 1000000 > lim * 1000 )); then
    echo "took $(( (end - start) / 1000000 )) ms: measured before checking the path" > "$tmp/why"
    return 1
  fi
}
check "timing --svg bad path fails before measuring" fast_fail 5 timing --seconds 30 --svg /nonexistent-dir/h.svg
check "validate --fixture-out bad path fails before measuring" fast_fail 5 validate --seconds 30 --fixture-out /nonexistent-dir/x.cpuid
check "validate --fixture-out a directory" bad_at "$tmp" validate --seconds 30 --fixture-out "$tmp"
rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
check "validate --fixture-out a FIFO without reader fails at once" fast_fail 5 validate --seconds 30 --fixture-out "$tmp/fifo"
check "cpuid --file a FIFO is refused at once" fast_fail 5 cpuid --file "$tmp/fifo"
check "cpuid --file a directory" bad_at "not a regular file" cpuid --file "$tmp"

# ---- a write error on stdout is an error -------------------------------------------
full() { # args...
  P "$@" > /dev/full 2> "$tmp/err"
  local rc=$? n
  n=$(wc -l < "$tmp/err")
  if [[ $rc -ne 0 && $rc -ne 1 && $rc -ne 2 && $n -eq 1 ]] && grep -q "cannot write the output" "$tmp/err"; then return 0; fi
  echo "exit $rc, $n stderr line(s): $(head -c 200 "$tmp/err")" > "$tmp/why"
  return 1
}
if [[ -w /dev/full ]]; then
  check "report > /dev/full exits non-zero" full --json
  check "cpuid --help > /dev/full exits non-zero" full cpuid --help
  check "timing > /dev/full exits non-zero" full timing --seconds 0.1 --source clock_gettime
else
  echo "skip /dev/full checks: no /dev/full here"
fi

# ---- a reader that has gone: exit 3 and one line, not a silent SIGPIPE ------------------
# stdout is a pipe whose read end is closed before the probe starts (as
# `tickclock-probe ... | head -c1` once head has exited); SIGPIPE at its
# default, as a shell leaves it
closed_pipe() { # args...
  python3 - "$tmp/err" "${runner[@]}" "$probe_bin" "$@" > "$tmp/why" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
with open(sys.argv[1], "w") as err:
    rc = subprocess.call(sys.argv[2:], stdout=w, stderr=err, restore_signals=True)
lines = open(sys.argv[1]).read().splitlines()
ok = rc == 3 and len(lines) == 1 and lines[0].endswith("cannot write the output: Broken pipe")
if not ok:
    print("exit %d, stderr: %s" % (rc, " | ".join(lines)[:300]))
sys.exit(0 if ok else 1)
PY
}
check "report --json into a closed pipe: exit 3, Broken pipe" closed_pipe --json
check "--help into a closed pipe: exit 3" closed_pipe --help
check "cpuid --help into a closed pipe: exit 3" closed_pipe cpuid --help
check "timing into a closed pipe: exit 3" closed_pipe timing --seconds 0.1 --source clock_gettime
check "warp into a closed pipe: exit 3" closed_pipe warp --seconds 0.1 --source system

# ---- timing --seconds is the whole run ------------------------------------------------
timing_total() {
  local start end ms
  start=$(date +%s%N)
  P timing --seconds 1 --json > "$tmp/tt.json" 2> "$tmp/err" || [[ $? -eq 1 ]] || return 1
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
  # the budget split over the sources, and the measured time far from what a
  # per-source budget would take (8 sources: 8 s); not tighter, because a
  # loaded machine overshoots the last batch (1.13 s was seen here)
  json_has "$tmp/tt.json" "d['seconds'] == 1 and d['measured_seconds'] <= 2 and len(d['sources']) >= 2 and abs(d['seconds_per_source'] * sum(1 for x in d['sources'] if x['usable']) - 1) < 1e-5" || {
    echo "timing JSON: $(head -c 300 "$tmp/tt.json")" > "$tmp/why"; return 1; }
  if (( ms > 4000 )); then echo "timing --seconds 1 took $ms ms" > "$tmp/why"; return 1; fi
}
check "timing --seconds 1 takes about 1 s in all" timing_total

# ---- an interrupted run is INCOMPLETE, lists what it did not finish, exits 130 ----------
interrupt() { # out-file, args...: SIGINT at 1 s, again every 3 s while it runs.
  # Run directly, the probe gets SIGINT's default action (bash gives "( exec ... ) &"
  # the default back; it ignores SIGINT only in a background job it runs itself), so
  # a probe that installed its handler later than 1 s after its start dies with 130
  # and no report, and the check fails, as the promise "installed before anything
  # else runs" wants. Under a runner the run starts with SIGINT ignored instead: on a
  # loaded machine the runner, QEMU and the probe can take longer than 1 s to start,
  # and a first signal that landed before the probe's handler was installed ended
  # the run with 130 and no report (the cpu max,-rdtscp cell met this in CI); there
  # the later signals catch a run whose first was lost that way. One that lands
  # while an interrupted run writes its report only sets the flag again.
  local out=$1
  shift
  (
    if [[ ${#runner[@]} -gt 0 ]]; then trap '' INT; fi
    exec "${runner[@]}" "$probe_bin" "$@" > "$out" 2> "$tmp/int.err"
  ) &
  local pid=$! k
  sleep 1
  for k in $(seq 1 10); do
    kill -INT "$pid" 2> /dev/null || break
    for _ in 1 2 3 4 5 6; do kill -0 "$pid" 2> /dev/null || break 2; sleep 0.5; done
  done
  wait "$pid"
}
int_why() { # rc, out-file: what an interrupted run left, for the check's FAIL line
  echo "exit $1, $(if [[ -f $2 ]]; then echo "$(wc -c < "$2") bytes of output"; else echo "no output file"; fi), stderr: $(tail -2 "$tmp/int.err" 2> /dev/null | tr '\n' '|')" > "$tmp/why"
  return 1
}
int_validate() {
  rm -f "$tmp/int.cpuid"
  interrupt "$tmp/int.txt" validate --seconds 20 --fixture-out "$tmp/int.cpuid"
  local rc=$?
  if [[ $rc -eq 130 ]] && grep -q "^verdict: INCOMPLETE: interrupted by SIGINT; not finished: " "$tmp/int.txt" &&
     grep -Eq "not finished: .*(drift|monotonic|warp|read_cost|pr_set_tsc)" "$tmp/int.txt" &&
     grep -q "INCOMPLETE" "$tmp/int.err" && [[ ! -e "$tmp/int.cpuid" ]] && ! grep -q "verdict: PASS" "$tmp/int.txt"; then
    return 0
  fi
  echo "exit $rc, fixture $([[ -e $tmp/int.cpuid ]] && echo kept || echo removed), stdout: $(tail -3 "$tmp/int.txt" | tr '\n' '|')" > "$tmp/why"
  return 1
}
int_validate_json() {
  interrupt "$tmp/int-validate.json" validate --seconds 20 --json
  local rc=$?
  [[ $rc -eq 130 ]] && json_has "$tmp/int-validate.json" \
    "d['verdict'] == 'INCOMPLETE' and d['interrupted'] and len(d['unfinished']) >= 1 and all(c['status'] == 'INCOMPLETE' for c in d['checks'] if c['name'] in [u['check'] for u in d['unfinished']])" ||
    int_why $rc "$tmp/int-validate.json"
}
int_timing() {
  interrupt "$tmp/int-timing.json" timing --seconds 20 --json
  local rc=$?
  [[ $rc -eq 130 ]] && json_has "$tmp/int-timing.json" "d['interrupted'] and not d['complete'] and len(d['unfinished']) >= 1" ||
    int_why $rc "$tmp/int-timing.json"
}
int_warp_json() {
  interrupt "$tmp/int-warp.json" warp --seconds 20 --json
  local rc=$?
  [[ $rc -eq 130 ]] && json_has "$tmp/int-warp.json" "d['interrupted'] and d['verdict'] == 'INCOMPLETE' and len(d['unfinished']) >= 1" ||
    int_why $rc "$tmp/int-warp.json"
}
# --fixture-out over an existing file: an interrupted run leaves it as it
# was (the fixture is written to a temporary file, renamed at the end), and
# leaves no temporary behind
int_fixture_kept() {
  mkdir -p "$tmp/fxdir"
  rm -f "$tmp/fxdir/"* "$tmp/fxdir/".??* 2> /dev/null
  printf '# a fixture from an earlier run\n00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n' > "$tmp/fxdir/old.cpuid"
  cp "$tmp/fxdir/old.cpuid" "$tmp/old.copy"
  interrupt "$tmp/int-fx.txt" validate --seconds 20 --fixture-out "$tmp/fxdir/old.cpuid"
  local rc=$? left
  left=$(ls -A "$tmp/fxdir" | grep -vx old.cpuid | tr '\n' ' ')
  if [[ $rc -eq 130 ]] && cmp -s "$tmp/fxdir/old.cpuid" "$tmp/old.copy" && [[ -z $left ]]; then return 0; fi
  echo "exit $rc, the file $(if [[ ! -e $tmp/fxdir/old.cpuid ]]; then echo deleted; elif cmp -s "$tmp/fxdir/old.cpuid" "$tmp/old.copy"; then echo kept; else echo changed; fi), left behind: '${left}'" > "$tmp/why"
  return 1
}
int_warp() {
  interrupt "$tmp/int.txt" warp --seconds 20
  local rc=$?
  [[ $rc -eq 130 ]] && grep -q "^INCOMPLETE: interrupted by SIGINT; not finished: " "$tmp/int.txt" && ! grep -q "no warp observed" "$tmp/int.txt" ||
    int_why $rc "$tmp/int.txt"
}
check "validate interrupted: INCOMPLETE, unfinished listed, no fixture, exit 130" int_validate
check "validate --json interrupted: verdict INCOMPLETE, exit 130" int_validate_json
check "timing interrupted: incomplete, exit 130" int_timing
check "warp interrupted: INCOMPLETE, exit 130" int_warp
check "validate --fixture-out F interrupted: the existing F is unchanged" int_fixture_kept
check "schema: validate --json interrupted" schema_ok "$tmp/int-validate.json"
check "schema: timing --json interrupted" schema_ok "$tmp/int-timing.json"
check "warp --json interrupted: INCOMPLETE, exit 130" int_warp_json
check "schema: warp --json interrupted" schema_ok "$tmp/int-warp.json"

# ---- pinned to one CPU: per-CPU offsets cannot be checked: INCONCLUSIVE, exit 4 ------
online=$(getconf _NPROCESSORS_ONLN 2> /dev/null || echo 1)
cpu0=$(python3 -c "import os; print(min(os.sched_getaffinity(0)))" 2> /dev/null || echo 0)
if ! command -v taskset > /dev/null; then
  echo "TICKCLOCK_SKIPPED: pinned validate: no taskset (util-linux) here"
elif [[ $online -lt 2 ]]; then
  echo "TICKCLOCK_SKIPPED: pinned validate: one CPU online, the warp check does not apply"
else
  TP() { taskset -c "$cpu0" "${runner[@]}" "$probe_bin" "$@"; }
  # Natively nothing else fails here: INCONCLUSIVE, exit 4. Under emulation
  # the drift check may rightly fail (see above): then FAIL, exit 1, and the
  # verdict still names warp as NOT run. Never PASS.
  if [[ -n ${TICKCLOCK_RUNNER:-} ]]; then pin_rc='(1|4)' pin_v='(INCONCLUSIVE|FAIL)'; else pin_rc=4 pin_v=INCONCLUSIVE; fi
  pinned_validate() {
    printf 'an earlier fixture\n' > "$tmp/pinned.cpuid"
    TP validate --seconds 0.3 --fixture-out "$tmp/pinned.cpuid" > "$tmp/pinned.txt" 2> "$tmp/pinned.err"
    local rc=$?
    if [[ $rc =~ ^${pin_rc}$ ]] && grep -Eq "^verdict: ${pin_v}: " "$tmp/pinned.txt" &&
       grep -Eq '^verdict: .*(warp was NOT run|NOT run: warp).* >= 2 CPUs' "$tmp/pinned.txt" &&
       grep -q '^  \[NOT_RUN\] warp ' "$tmp/pinned.txt" && ! grep -q 'PASS' <(grep '^verdict' "$tmp/pinned.txt") &&
       grep -Eqi "^# validate.verdict: ${pin_v}$" "$tmp/pinned.cpuid"; then
      return 0
    fi
    echo "exit $rc, $(grep -E '^verdict|warp' "$tmp/pinned.txt" | tr '\n' '|' | head -c 400) $(head -c 200 "$tmp/pinned.err")" > "$tmp/why"
    return 1
  }
  pinned_validate_json() {
    TP validate --seconds 0.3 --json > "$tmp/pinned.json" 2> "$tmp/pinned.err"
    local rc=$?
    json_has "$tmp/pinned.json" \
      "(($rc == 4 and d['verdict'] == 'INCONCLUSIVE' and d['failed'] == []) or ('${TICKCLOCK_RUNNER:-}' != '' and $rc == 1 and d['verdict'] == 'FAIL' and d['failed'] != [])) and d['summary'].startswith(d['verdict']) and d['cpus'] == 1 and [n['check'] for n in d['not_run']] == ['warp'] and '>= 2 CPUs' in d['not_run'][0]['reason'] and next(c for c in d['checks'] if c['name'] == 'warp')['status'] == 'NOT_RUN' and next(c for c in d['checks'] if c['name'] == 'warp')['essential']" ||
      { echo "exit $rc: $(head -c 400 "$tmp/pinned.json")" > "$tmp/why"; return 1; }
  }
  pinned_warp() {
    TP warp --seconds 0.2 --json > "$tmp/pinned-warp.json" 2> "$tmp/pinned.err"
    local rc=$?
    json_has "$tmp/pinned-warp.json" "$rc == 4 and d['verdict'] == 'INCONCLUSIVE' and d['pairs'] == [] and '>= 2 CPUs' in d['summary']" ||
      { echo "exit $rc: $(head -c 300 "$tmp/pinned-warp.json")" > "$tmp/why"; return 1; }
  }
  check "taskset -c $cpu0 validate: $pin_v naming warp, exit $pin_rc, never PASS" pinned_validate
  check "taskset -c $cpu0 validate --json: $pin_v, not_run [warp], exit $pin_rc" pinned_validate_json
  check "schema: validate --json pinned" schema_ok "$tmp/pinned.json"
  check "taskset -c $cpu0 warp --json: INCONCLUSIVE, exit 4" pinned_warp
  check "schema: warp --json pinned" schema_ok "$tmp/pinned-warp.json"
fi

# ---- --help lists every exit status; validate --help names the essential checks -----
help_exit_codes() {
  P --help > "$tmp/help.txt" 2>&1 || return 1
  local c
  for c in 0 1 2 3 4 130 143; do
    grep -Eq "^  $c +[A-Za-z]" "$tmp/help.txt" || { echo "exit status $c not listed" > "$tmp/why"; return 1; }
  done
  grep -q "INCONCLUSIVE" "$tmp/help.txt" && grep -q "report" "$tmp/help.txt" && grep -q "help \[SUBCOMMAND\]" "$tmp/help.txt"
}
check "--help lists exit statuses 0 1 2 3 4 130 143" help_exit_codes
validate_help() {
  P validate --help > "$tmp/vhelp.txt" 2>&1 || return 1
  grep -q "Essential checks: cpuid, clocksource, frequency, drift, monotonic, warp" "$tmp/vhelp.txt" &&
    grep -Eq "^  4 +INCONCLUSIVE" "$tmp/vhelp.txt" && grep -Eq "^  1 +FAIL" "$tmp/vhelp.txt" && grep -Eq "^  0 +PASS" "$tmp/vhelp.txt"
}
check "validate --help names the essential checks and the verdicts" validate_help

# ---- a source that cannot be forced is refused with its own reason ---------------------
other=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
have = {c['source'] for c in d['candidates']}
print(next(s for s in ('cntvct', 'tsc', 'timebase', 'tod', 'rdtime') if s not in have and s != d['source']))" "$tmp/report.json")
own_reason() {
  P validate --seconds 0.1 --source "$other" > "$tmp/out" 2> "$tmp/err"
  one_error_line $? "--source $other: not usable here: " || return 1
  python3 - "$tmp/err" "$tmp/report.json" > "$tmp/why" <<'PY'
import json, sys
err = open(sys.argv[1]).read()
d = json.load(open(sys.argv[2]))
import re
chosen = next(c for c in d['candidates'] if c['chosen'])
# the reason of the source in use is not the reason of the one asked for;
# compared up to its first figure (read costs and MHz differ between runs)
given = err.split('not usable here: ', 1)[-1]
for r in (d['why'], chosen['reason']):
    stem = re.split(r'[0-9]', r, 1)[0]
    if len(stem) >= 8 and stem in given or given.startswith(d['source'] + ':'):
        print("the error gives the chosen source's reason: " + err.strip()[:300]); sys.exit(1)
PY
}
check "validate --source $other: the reason of $other itself, not of the chosen source" own_reason

# ---- progress: on a terminal only ------------------------------------------------------
if command -v script > /dev/null && script -qec true /dev/null > /dev/null 2>&1; then
  progress_tty() { # a pty (script): a progress line on stderr, rewritten with \r
    script -qec "$(printf '%q ' "${runner[@]}" "$probe_bin") timing --seconds 0.3 --source clock_gettime 2>&1 >/dev/null" /dev/null > "$tmp/tty.txt" 2>&1
    python3 -c "
import sys
b = open(sys.argv[1], 'rb').read()
sys.exit(0 if b'\r' in b and b'timing [1/1] clock_gettime' in b else 1)" "$tmp/tty.txt" ||
      { echo "no progress line on the terminal: $(head -c 200 "$tmp/tty.txt" | cat -v)" > "$tmp/why"; return 1; }
  }
  progress_tty_validate() {
    script -qec "$(printf '%q ' "${runner[@]}" "$probe_bin") validate --seconds 0.3 2>&1 >/dev/null" /dev/null > "$tmp/tty2.txt" 2>&1
    grep -aq "validate \[6/8\] warp" "$tmp/tty2.txt" ||
      { echo "no validate progress: $(head -c 300 "$tmp/tty2.txt" | cat -v)" > "$tmp/why"; return 1; }
  }
  progress_tty_json() { # --json on a terminal: no progress line
    script -qec "$(printf '%q ' "${runner[@]}" "$probe_bin") timing --json --seconds 0.2 --source clock_gettime 2>&1 >/dev/null" /dev/null > "$tmp/tty3.txt" 2>&1
    [[ ! -s $tmp/tty3.txt ]] || { echo "stderr: $(head -c 200 "$tmp/tty3.txt" | cat -v)" > "$tmp/why"; return 1; }
  }
  check "timing on a terminal shows a progress line (stderr, \\r)" progress_tty
  check "validate on a terminal shows which check runs" progress_tty_validate
  check "timing --json on a terminal: no progress" progress_tty_json
else
  echo "TICKCLOCK_SKIPPED: progress on a terminal: no working script(1) here"
fi
progress_pipe() { # a pipe or a file: nothing on stderr at all
  P timing --seconds 0.2 --source clock_gettime > /dev/null 2> "$tmp/pipe.err"
  P validate --seconds 0.3 2>&1 > /dev/null | cat > "$tmp/pipe2.err"
  [[ ! -s $tmp/pipe.err && ! -s $tmp/pipe2.err ]] || { echo "stderr: $(head -c 200 "$tmp/pipe.err" "$tmp/pipe2.err" | cat -v)" > "$tmp/why"; return 1; }
}
check "no progress in a pipe" progress_pipe

# ---- a recorded host decodes to the schema too (every architecture) --------------------
if [[ -n $hosts_dir && -d $hosts_dir ]]; then
  for h in "$hosts_dir"/*.cpuid; do
    P cpuid --file "$h" --json > "$tmp/hostfx.json" 2> "$tmp/err"
    check "schema: cpuid --file $(basename "$h") --json" schema_ok "$tmp/hostfx.json"
    break
  done
fi

echo
echo "schema: $n_schema --json outputs validated against ${schema##*/}"
if [[ $fail -ne 0 ]]; then echo "probe_cli_test: FAILED"; exit 1; fi
echo "probe_cli_test: all passed"
