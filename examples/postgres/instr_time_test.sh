#!/usr/bin/env bash
# The cheap CI half of ci/postgres/pg-vendor, with no PostgreSQL download: the
# instr_time.h and src/port/tickclock.c parts of tickclock-pg15.patch apply
# cleanly to PostgreSQL 15's instr_time.h (kept in pg15/), and the patched
# header compiles against the current single header under PostgreSQL's
# warning flags (as errors), links with the implementation file the patch
# adds, and its macros give the right intervals, and sampled timing's
# arithmetic (the estimate's scaling, its error, the "+/-" text) is right
# (instr_time_test.c); no sampled call starts straight out of a system call. Also:
# ci/postgres/pg-vendor rejects a bad argument with one line and exit status 2.
#   instr_time_test.sh PATCH ORIG_INSTR_TIME_H SINGLE_HEADER TEST_C C_H_STANDIN PG_VENDOR
set -uo pipefail
[[ $# -eq 6 ]] || { echo "usage: instr_time_test.sh PATCH ORIG_INSTR_TIME_H SINGLE_HEADER TEST_C C_H_STANDIN PG_VENDOR" >&2; exit 2; }
patch_file=$1 orig=$2 header=$3 test_c=$4 standin=$5 pg_vendor=$6
tmp=${TEST_TMPDIR:-$(mktemp -d)}/pg
rm -rf "$tmp"
mkdir -p "$tmp/tree/src/include/portability" "$tmp/tree/src/port"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# The patch's sections for these two files (the others touch files of the
# full source tree: ci/postgres/pg-vendor applies those).
awk '
  /^diff --git / { keep = ($3 == "a/src/include/portability/instr_time.h" || $3 == "a/src/port/tickclock.c") }
  keep
' "$patch_file" > "$tmp/part.patch"
n=$(grep -c '^diff --git ' "$tmp/part.patch")
[[ "$n" -eq 2 ]] && ok "patch has instr_time.h and src/port/tickclock.c sections" \
  || bad "patch has instr_time.h and src/port/tickclock.c sections (found $n)"

cp "$orig" "$tmp/tree/src/include/portability/instr_time.h"
chmod u+w "$tmp/tree/src/include/portability/instr_time.h"
if out=$(patch -d "$tmp/tree" -p1 --dry-run < "$tmp/part.patch" 2>&1) && [[ "$out" != *fuzz* && "$out" != *Offset* ]]; then
  patch -d "$tmp/tree" -p1 -s < "$tmp/part.patch" && ok "patch applies exactly to PostgreSQL 15's instr_time.h" \
    || bad "patch applies to PostgreSQL 15's instr_time.h"
else
  bad "patch applies exactly to PostgreSQL 15's instr_time.h: $out"
fi
cp "$header" "$tmp/tree/src/include/portability/tickclock.h"
grep -q 'tickclock_now()' "$tmp/tree/src/include/portability/instr_time.h" \
  && ok "patched instr_time.h reads tickclock_now()" || bad "patched instr_time.h reads tickclock_now()"

# Sampled timing's other parts: the setting registered, the executor
# sampling, EXPLAIN printing the interval.
for want in 'a/src/backend/utils/misc/guc.c:"explain_timing_sample_rate", PGC_USERSET' \
            'a/src/backend/executor/instrument.c:tickclock_sampler_should_time(&instr->sampler)' \
            'a/src/backend/executor/execProcnode.c:node->ExecProcNode = ExecProcNodeSampled;' \
            'a/src/backend/commands/explain.c:instr_format_error(buf, len'; do
  file=${want%%:*} text=${want#*:}
  if awk -v f="$file" '/^diff --git / { keep = ($3 == f) } keep' "$patch_file" | grep -q "^+.*$(sed 's/[][\.*^$&]/\\&/g' <<<"$text")"; then
    ok "patch adds to ${file#a/}: $text"
  else
    bad "patch adds to ${file#a/}: $text"
  fi
done

# No system call falls between a sampled call's start read and its end,
# and none right before a timed call of a node of short calls: the thread's
# preemption count is read after a call's end.  The functions that start a
# sampled call (InstrStartSampled, InstrStartSampledTimed, both new in
# instrument.c, and ExecProcNodeSampled in execProcnode.c) take an ordered
# start read and never read the count themselves; ExecProcNodeSampled
# calls InstrSampleBeforeTimed only after an untimed call's return, and
# that reads the count only for a node whose timed calls average at least
# INSTR_SAMPLE_PREREAD_NS.
starts=$(awk '
  /^diff --git / { file = $3; next }
  /^\+(InstrStartSampled|InstrStartSampledTimed|ExecProcNodeSampled|InstrSampleBeforeTimed)\(/ {
    fn = substr($1, 2); sub(/\(.*/, "", fn); body = 1; n = reads = ordered = before = real = gated = timed = 0; next }
  body && /^\+}/ { body = 0; print file, fn, reads, ordered, before, real, timed, gated; next }
  body { n++ }
  body && /instr_preemptions\(/ { reads++; if (prev ~ /mean_ns >= INSTR_SAMPLE_PREREAD_NS\)/) gated++ }
  body && /tickclock_now_ordered\(\)/ { ordered++ }
  body && /InstrSampleBeforeTimed\(/ { before = n }
  body && /ExecProcNodeReal\(/ && !real { real = n }
  body && /InstrStartSampledTimed\(/ { timed = n }
  body { prev = $0 }
' "$patch_file")
for fn in InstrStartSampled InstrStartSampledTimed ExecProcNodeSampled; do
  row=$(grep " $fn " <<<"$starts")
  if [[ -z "$row" ]]; then
    bad "patch adds $fn"
  elif [[ $(awk '{ print $3 }' <<<"$row") -ne 0 ]]; then
    bad "patch's $fn reads the preemption count (a system call before a sampled call's start)"
  else
    ok "patch's $fn reads no preemption count"
  fi
done
for fn in InstrStartSampled InstrStartSampledTimed; do
  [[ $(grep " $fn " <<<"$starts" | awk '{ print $4 }') -ge 1 ]] 2>/dev/null \
    && ok "patch's $fn takes an ordered start read" || bad "patch's $fn takes an ordered start read"
  [[ $(grep " $fn " <<<"$starts" | awk '{ print $5 }') -eq 0 ]] 2>/dev/null \
    && ok "patch's $fn does not call InstrSampleBeforeTimed" || bad "patch's $fn does not call InstrSampleBeforeTimed"
done
# ExecProcNodeSampled: after the untimed call (its first ExecProcNodeReal), before the timed start
read -r _ _ _ _ before real timed _ <<<"$(grep " ExecProcNodeSampled " <<<"$starts")"
[[ ${before:-0} -gt ${real:-0} && ${real:-0} -gt 0 && ${before:-0} -lt ${timed:-0} ]] \
  && ok "patch's ExecProcNodeSampled calls InstrSampleBeforeTimed after an untimed call only" \
  || bad "patch's ExecProcNodeSampled calls InstrSampleBeforeTimed after an untimed call only (lines $before, $real, $timed)"
read -r _ _ reads _ _ _ _ gated <<<"$(grep " InstrSampleBeforeTimed " <<<"$starts")"
[[ ${reads:-0} -ge 1 && ${reads:-0} -eq ${gated:-0} ]] \
  && ok "patch's InstrSampleBeforeTimed reads the count only for a node of long calls" \
  || bad "patch's InstrSampleBeforeTimed reads the count only for a node of long calls ($reads reads, $gated gated)"

# PostgreSQL 15's warning flags (configure with gcc), as errors.
PGFLAGS=(-O2 -Wall -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement
  -Werror=vla -Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3
  -Wcast-function-type -Wformat-security -fno-strict-aliasing -fwrapv -fexcess-precision=standard
  -D_GNU_SOURCE -Werror)
cc=${CC:-gcc}
cp "$test_c" "$standin" "$tmp/"
if "$cc" "${PGFLAGS[@]}" -I"$tmp/tree/src/include" -I"$tmp" -c "$tmp/tree/src/port/tickclock.c" -o "$tmp/tickclock.o" > "$tmp/cc1.log" 2>&1 \
   && "$cc" "${PGFLAGS[@]}" -Wno-missing-prototypes -I"$tmp/tree/src/include" -I"$tmp" -c "$tmp/instr_time_test.c" -o "$tmp/t.o" > "$tmp/cc2.log" 2>&1 \
   && "$cc" -o "$tmp/instr_time_test" "$tmp/t.o" "$tmp/tickclock.o" -pthread -lm > "$tmp/ld.log" 2>&1; then
  ok "patched instr_time.h and src/port/tickclock.c compile with PostgreSQL's warning flags"
  if "$tmp/instr_time_test"; then ok "instr_time macros on tickclock"; else bad "instr_time macros on tickclock"; fi
else
  cat "$tmp"/cc1.log "$tmp"/cc2.log "$tmp"/ld.log 2>/dev/null | head -30
  bad "patched instr_time.h and src/port/tickclock.c compile with PostgreSQL's warning flags"
fi

# ci/postgres/pg-vendor's argument check runs before anything is fetched or built.
out=$("$pg_vendor" --rounds zero 2>&1); rc=$?
[[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] && ok "ci/postgres/pg-vendor --rounds zero: one line, exit 2" \
  || bad "ci/postgres/pg-vendor --rounds zero: one line, exit 2 (got exit $rc: $out)"
out=$("$pg_vendor" --sample-rate 1.5 2>&1); rc=$?
[[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] && ok "ci/postgres/pg-vendor --sample-rate 1.5: one line, exit 2" \
  || bad "ci/postgres/pg-vendor --sample-rate 1.5: one line, exit 2 (got exit $rc: $out)"
out=$("$pg_vendor" --bogus 2>&1); rc=$?
[[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] && ok "ci/postgres/pg-vendor --bogus: one line, exit 2" \
  || bad "ci/postgres/pg-vendor --bogus: one line, exit 2 (got exit $rc: $out)"

if [[ $fail -ne 0 ]]; then echo "instr_time_test: FAILED"; exit 1; fi
echo "instr_time_test: all passed"
