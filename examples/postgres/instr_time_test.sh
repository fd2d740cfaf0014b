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
#   instr_time_test.sh PATCH ORIG_INSTR_TIME_H SINGLE_HEADER TEST_C C_H_STANDIN PG_VENDOR PG_VENDOR_MEASURE
set -uo pipefail
[[ $# -eq 7 ]] || { echo "usage: instr_time_test.sh PATCH ORIG_INSTR_TIME_H SINGLE_HEADER TEST_C C_H_STANDIN PG_VENDOR PG_VENDOR_MEASURE" >&2; exit 2; }
patch_file=$1 orig=$2 header=$3 test_c=$4 standin=$5 pg_vendor=$6 pg_measure=$7
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
# sampled call (InstrStartSampled in instrument.c; ExecProcNodeSampled and
# ExecProcNodeSampledCall in execProcnode.c) never read the count
# themselves.  InstrSampleBeforeTimed is called only where the sampler says
# the next call is timed (the line before tests tickclock_sampler_next_timed),
# by ExecProcNodeSampled only after an untimed call's return, and it reads
# the count only for a node whose last exact or timed call took at least
# INSTR_SAMPLE_PREREAD_NS; InstrStopSampledAt's own read before a timed
# call has the same test.  A timed call of the fast path and the check's
# other calls run one copy of code (ExecProcNodeSampledCall, no argument to
# specialise it on) whose only line between its ordered start read and its
# end read is the node's call.  InstrStopSampled's first test is whether
# the check mode is on, whose end read comes before any branch on how the
# call was timed.
starts=$(awk '
  /^diff --git / { file = $3; next }
  /^\+(InstrStartSampled|ExecProcNodeSampledCall|ExecProcNodeSampled|InstrSampleBeforeTimed|InstrStopSampled|InstrStopSampledAt)\(/ {
    fn = substr($1, 2); sub(/\(.*/, "", fn); args = $0; sub(/^[^(]*\(/, "", args); sub(/\).*/, "", args)
    body = 1; n = reads = ordered = before = real = gated = timed = unguarded = nt = ntgated = 0
    o = e = 0; between = ""; firstif = ""; afterif = ""; next }
  body && /^\+}/ { body = 0; gsub(/[ \t]/, "", firstif); gsub(/[ \t]/, "", afterif)
    print file, fn, reads, ordered, before, real, timed, gated, (e - o - 1), (between ~ /ExecProcNodeReal\(/), unguarded, nt - ntgated, (args ~ /,/), firstif afterif; next }
  body { n++ }
  body && firstif != "" && afterif == "" && !/^\+[ \t]*$/ { afterif = substr($0, 2) }
  body && firstif == "" && /[ \t]if \(/ { firstif = substr($0, 2) }
  body && /instr_preemptions\(/ { reads++; if (prev ~ /sample_last_ns >= INSTR_SAMPLE_PREREAD_NS\)/) gated++ }
  body && /tickclock_now_ordered\(\)/ { ordered++; o = n }
  body && o && !e && n > o && /INSTR_TIME_SET_CURRENT\(/ { e = n }
  body && o && !e && n > o { between = between $0 }
  body && /InstrSampleBeforeTimed\(/ { before = n; if (prev !~ /tickclock_sampler_next_timed\(/) unguarded++ }
  body && pnt && /INSTR_SAMPLE_PREREAD_NS/ { ntgated++ }
  body { pnt = 0 }
  body && /tickclock_sampler_next_timed\(/ && !/InstrSampleBeforeTimed/ { nt++; pnt = 1; if (/INSTR_SAMPLE_PREREAD_NS|\)\)$/) { if (/INSTR_SAMPLE_PREREAD_NS/) ntgated++ } }
  body && /ExecProcNodeReal\(/ && !real { real = n }
  body && /sample_call = INSTR_SAMPLE_TIMED;/ { timed = n }
  body { prev = $0 }
' "$patch_file")
row() { grep " $1 " <<<"$starts"; }
for fn in InstrStartSampled ExecProcNodeSampledCall ExecProcNodeSampled; do
  if [[ -z "$(row $fn)" ]]; then
    bad "patch adds $fn"
  elif [[ $(row $fn | awk '{ print $3 }') -ne 0 ]]; then
    bad "patch's $fn reads the preemption count (a system call before a sampled call's start)"
  else
    ok "patch's $fn reads no preemption count"
  fi
done
for fn in InstrStartSampled ExecProcNodeSampledCall; do
  [[ $(row $fn | awk '{ print $4 }') -ge 1 ]] 2>/dev/null \
    && ok "patch's $fn takes an ordered start read" || bad "patch's $fn takes an ordered start read"
  [[ $(row $fn | awk '{ print $5 }') -eq 0 ]] 2>/dev/null \
    && ok "patch's $fn does not call InstrSampleBeforeTimed" || bad "patch's $fn does not call InstrSampleBeforeTimed"
done
read -r _ _ _ _ _ _ _ _ lines node_call _ _ has_args _ <<<"$(row ExecProcNodeSampledCall)"
[[ "${lines:-}" == 1 && "${node_call:-}" == 1 && "${has_args:-}" == 0 ]] \
  && ok "patch's ExecProcNodeSampledCall(node): the node's call is the one line between its reads" \
  || bad "patch's ExecProcNodeSampledCall(node): the node's call is the one line between its reads (${lines:-?} lines, more arguments: ${has_args:-?})"
# ExecProcNodeSampled: after the untimed call (its first ExecProcNodeReal), before the timed call
read -r _ _ _ _ before real timed _ <<<"$(row ExecProcNodeSampled)"
[[ ${before:-0} -gt ${real:-0} && ${real:-0} -gt 0 && ${before:-0} -lt ${timed:-0} ]] \
  && ok "patch's ExecProcNodeSampled calls InstrSampleBeforeTimed after an untimed call only" \
  || bad "patch's ExecProcNodeSampled calls InstrSampleBeforeTimed after an untimed call only (lines $before, $real, $timed)"
unguarded=$(awk '{ s += $11 } END { print s + 0 }' <<<"$starts")
[[ $unguarded -eq 0 ]] && ok "patch calls InstrSampleBeforeTimed only when the next call is timed" \
  || bad "patch calls InstrSampleBeforeTimed only when the next call is timed ($unguarded calls without tickclock_sampler_next_timed on the line before)"
read -r _ _ reads _ _ _ _ gated _ <<<"$(row InstrSampleBeforeTimed)"
[[ ${reads:-0} -ge 1 && ${reads:-0} -eq ${gated:-0} ]] \
  && ok "patch's InstrSampleBeforeTimed reads the count only for a node of long calls" \
  || bad "patch's InstrSampleBeforeTimed reads the count only for a node of long calls ($reads reads, $gated gated)"
read -r _ _ _ _ _ _ _ _ _ _ _ ungated _ <<<"$(row InstrStopSampledAt)"
[[ -n "$(row InstrStopSampledAt)" && ${ungated:-1} -eq 0 ]] \
  && ok "patch's InstrStopSampledAt reads the count before a timed call only for a node of long calls" \
  || bad "patch's InstrStopSampledAt reads the count before a timed call only for a node of long calls"
first=$(row InstrStopSampled | awk '{ print $NF }')
[[ "$first" == "if(instr->sample_check)INSTR_TIME_SET_CURRENT(endtime);" ]] \
  && ok "patch's InstrStopSampled: the check mode's end read comes first" \
  || bad "patch's InstrStopSampled: the check mode's end read comes first (got: $first)"

# A sampled-part call that reached a block (a scan's call that moves to a
# new page) is counted, on both paths, outside the timed window; only a
# timed call that was kept counts as timed; every reader of a node's
# estimate goes through instr_node_sum, whose flag tests both counts.
sec() { awk -v f="a/$1" '/^diff --git / { keep = ($3 == f) } keep' "$patch_file"; }
body() { sec "$1" | awk -v fn="$2" '!done && $0 ~ "^\\+" fn "\\(" { b = 1; next } b && /^\+}/ { b = 0; done = 1 } b'; }
# ok when the added function's body, blanks removed, holds TEXT (literally)
body_has() { # FILE FUNCTION TEXT MESSAGE
  if body "$1" "$2" | sed 's/^+//' | tr -d ' \t\n' | grep -F -- "$3" > /dev/null; then ok "$4"; else bad "$4"; fi
}
E=src/backend/executor/execProcnode.c I=src/backend/executor/instrument.c H=src/include/executor/instrument.h
body $E ExecProcNodeSampled | awk '
  /reached = InstrBlocksReached\(\);/ && !pre { pre = NR }
  /ExecProcNodeReal\(/ && !r { r = NR }
  /sample_pages\.calls \+= InstrBlocksReached\(\) != reached;/ { post = NR }
  END { exit !(pre && r && post && pre < r && r < post) }' \
  && ok "patch's ExecProcNodeSampled counts an untimed call that reached a block" \
  || bad "patch's ExecProcNodeSampled counts an untimed call that reached a block"
body $E ExecProcNodeSampledCall | awk '
  /tickclock_now_ordered\(\)/ { o = NR } /INSTR_TIME_SET_CURRENT\(end\)/ { e = NR }
  /InstrBlocksReached\(\)/ { if (!o) b++; else if (!e) in_++; else a++ }
  /InstrStopSampledAt\(.*InstrBlocksReached\(\) != reached\)/ { pass = 1 }
  END { exit !(b == 1 && a == 1 && in_ == 0 && pass) }' \
  && ok "patch's ExecProcNodeSampledCall counts blocks outside its timed window and passes it on" \
  || bad "patch's ExecProcNodeSampledCall counts blocks outside its timed window and passes it on"
body $I InstrStartSampled | awk '
  /sample_reached = InstrBlocksReached\(\);/ { r++ }
  /tickclock_now_ordered\(\)/ && !r { early = 1 }
  END { exit !(r == 3 && !early) }' \
  && ok "patch's InstrStartSampled takes the block count before its start reads (exact, untimed, timed)" \
  || bad "patch's InstrStartSampled takes the block count before its start reads (exact, untimed, timed)"
[[ $(body $I InstrStopSampled | grep -c 'InstrBlocksReached() != instr->sample_reached') -eq 2 ]] \
  && ok "patch's InstrStopSampled counts the slow path's block calls, untimed and timed" \
  || bad "patch's InstrStopSampled counts the slow path's block calls, untimed and timed"
body $I InstrStopSampledAt | awk '
  /if \(instr->sample_call == INSTR_SAMPLE_TIMED && !preempted\)/ { g = 1; next }
  g && /^\+\t}/ { g = 0 }
  /sample_pages\.timed \+= page;/ { n++; good += g }
  /sample_pages\.calls \+= page;/ { c++ }
  g && /\(page \? instr_sample_page_extra\(&instr->sample_pages\) : 0\.0\)\);/ { less++ }
  END { exit !(n == 1 && good == 1 && c == 1 && less == 1) }' \
  && ok "patch's InstrStopSampledAt counts block calls once, timed ones only when kept, each less b" \
  || bad "patch's InstrStopSampledAt counts block calls once, timed ones only when kept, each less b"
n=$(sec $I | grep -c '^+.*instr_sample_sum_of(')
m=$(sec $I | grep -c '^+.*instr_node_sum(\(instr\|add\), &')
[[ $n -eq 1 && $m -ge 5 ]] && ok "patch reads a node's estimate only through instr_node_sum ($m callers)" \
  || bad "patch reads a node's estimate only through instr_node_sum ($n direct uses, $m callers)"
body_has $I instr_node_sum 'instr_sample_sum_of(&instr->sampler,&instr->sample_pages,out);' \
  "patch's instr_node_sum gives the estimate its block calls (b, the flag)"
# b's calls: the exact part's, not a loop's first (sample_reached -1), not
# past the first part, counted after the end read; one of
# INSTR_SAMPLE_LONG_NS or more only when the preemption count did not move.
body_has $I InstrStartSampled 'instr->sample_call=INSTR_SAMPLE_EXACT;instr->sample_reached=-1;if(instr->running&&instr->sample_calls<=instr->sample_exact_limit)instr->sample_reached=InstrBlocksReached();' \
  "patch's InstrStartSampled counts the first part's calls for b, not the loops' first"
body $I InstrStopSampled | awk '
  /sample_call == INSTR_SAMPLE_EXACT\)/ { x = 1 }
  x && /sample_last_ns = / { l = NR }
  x && /if \(instr->sample_reached >= 0\)/ { g = NR }
  x && g && NR == g + 1 && /InstrCountExact\(instr\);/ { c = NR }
  END { exit !(l && g > l && c) }' \
  && ok "patch's InstrStopSampled counts an exact call for b after its end read" \
  || bad "patch's InstrStopSampled counts an exact call for b after its end read"
body_has $I InstrCountExact 'boolpage=InstrBlocksReached()!=instr->sample_reached;if(instr->sample_last_ns>=INSTR_SAMPLE_LONG_NS){longnow=instr_preemptions();boolpreempted=now!=instr->sample_preempt;instr->sample_preempt=now;if(preempted)return;}instr_sample_count_exact(&instr->sample_pages,instr->sample_last_ns,page);' \
  "patch's InstrCountExact leaves a long exact call out of b only when it was preempted"
# b is fixed before the sampled part: the exact part's calls are counted
# for it in InstrCountExact alone.
n=$(sec $I | grep -c '^+.*instr_sample_count_exact(')
m=$(body $I InstrCountExact | grep -c 'instr_sample_count_exact(')
[[ $n -eq 1 && $m -eq 1 ]] && ok "patch counts calls for b in InstrCountExact only" \
  || bad "patch counts calls for b in InstrCountExact only ($n uses, $m in InstrCountExact)"
# One counter of blocks reached, bumped beside each of PostgreSQL 15's
# eight counts of a buffer hit or read (shared, local: ReadRecentBuffer
# and ReadBuffer_common) or a temporary block read or written (BufFile),
# each count's statement replaced by InstrCountBlock on that same count,
# which bumps both; nothing else changes the counter.
reached=$(sec $H | awk '/^\+InstrBlocksReached\(void\)/ { b = 1 } b { s = s $0 } b && /^\+}/ { b = 0 } END { print s }' | tr -d ' \t+')
countblock=$(body $H InstrCountBlock | sed 's/^+//' | tr -d ' \t\n')
pairs=$( (sec src/backend/storage/buffer/bufmgr.c; sec src/backend/storage/file/buffile.c) | awk '
  match($0, /^-.*pgBufferUsage\.[a-z_]+\+\+;/) { f = $0; sub(/.*pgBufferUsage\./, "", f); sub(/\+\+;.*/, "", f); want = f; next }
  want != "" && /^\+/ { g = $0; if (g ~ /InstrCountBlock\(&pgBufferUsage\.[a-z_]+\);/) { sub(/.*InstrCountBlock\(&pgBufferUsage\./, "", g); sub(/\);.*/, "", g); n[want] += (g == want) } want = ""; next }
  { want = "" }
  END { printf "shared_blks_hit=%d shared_blks_read=%d local_blks_hit=%d local_blks_read=%d temp_blks_read=%d temp_blks_written=%d", n["shared_blks_hit"], n["shared_blks_read"], n["local_blks_hit"], n["local_blks_read"], n["temp_blks_read"], n["temp_blks_written"] }')
changes=$(grep -c '^+.*pgBlocksReached[ \t]*\(++\|+=\|-=\|=[^=]\)' "$patch_file")
[[ "$reached" == *"{returnpgBlocksReached;}"* && "$countblock" == "{(*count)++;pgBlocksReached++;" && $changes -eq 1 \
   && "$pairs" == "shared_blks_hit=2 shared_blks_read=1 local_blks_hit=2 local_blks_read=1 temp_blks_read=1 temp_blks_written=1" ]] \
  && ok "patch's InstrBlocksReached counts buffer hits and reads and temporary blocks, at each of their counts" \
  || bad "patch's InstrBlocksReached counts buffer hits and reads and temporary blocks, at each of their counts ($pairs; InstrCountBlock: $countblock; $changes changes of the counter)"

# Branch by branch: the slow path's block count is taken right where a
# sampled-part call is decided, before the ordered start read; the
# pre-read's test is the whole expression; both InstrStopSampled branches
# that end a call before a timed one (untimed, exact) make the pre-read,
# and both stops keep the last call's raw duration.
body $I InstrStartSampled | awk '
  /sample_call = INSTR_SAMPLE_(SKIPPED|TIMED);/ { want = 1; branch++; set = 0; next }
  want && !/^\+[ \t]*$/ { if (/sample_reached = InstrBlocksReached\(\);/) { ok_++; set = 1 } want = 0 }
  /sample_call = INSTR_SAMPLE_EXACT;/ { branch = 0; set = 0 }
  /tickclock_now_ordered\(\)/ && !set { early++ }
  END { exit !(ok_ == 2 && branch == 2 && !early) }' \
  && ok "patch's InstrStartSampled: the block count first in the untimed and timed branches, before any start read" \
  || bad "patch's InstrStartSampled: the block count first in the untimed and timed branches, before any start read"
body_has $I InstrStopSampledAt '||(tickclock_sampler_next_timed(&instr->sampler)&&instr->sample_last_ns>=INSTR_SAMPLE_PREREAD_NS))' \
  "patch's InstrStopSampledAt: the read before a timed call needs both the next call timed and a long last call"
pairs=$(body $I InstrStopSampled | awk '/tickclock_sampler_next_timed\(/ { nt = 1; next } nt && /InstrSampleBeforeTimed\(instr\);/ { n++ } { nt = 0 } END { print n + 0 }')
[[ $pairs -eq 2 ]] && ok "patch's InstrStopSampled reads before a timed call after an untimed call and after an exact one" \
  || bad "patch's InstrStopSampled reads before a timed call after an untimed call and after an exact one ($pairs of 2)"
last=0
for fn in InstrStopSampled InstrStopSampledAt; do
  body $I $fn | grep 'sample_last_ns = ' > /dev/null && last=$((last + 1))
done
[[ $last -eq 2 ]] && ok "patch keeps the last exact and the last timed call's duration (sample_last_ns)" \
  || bad "patch keeps the last exact and the last timed call's duration (sample_last_ns) ($last of 2 stops)"

# A node timed in full pays for sampling nothing but its own test: a sampled
# node has need_timer false (InstrInitSampling clears it), InstrStartNode and
# InstrStopNode test need_timer first as stock does and sample_timing only in
# its else branch, and sample_timing sits beside need_timer in the struct, in
# the cache line stock's test already reads (before, the fully timed path
# tested first a flag 0x170 bytes in, in another cache line).
new_side() { sec "$1" | sed -n '/^[ +]/s/^.//p'; }   # the patched file's lines the patch shows
new_side $I | awk '
  /^InstrStartNode\(Instrumentation \*instr\)/ { f = 1; next }
  f && /save buffer usage totals/ { f = 0; done = 1 }
  f && !done { t = t $0 }
  END { gsub(/[ \t]/, "", t)
        exit t != "{if(instr->need_timer){if(!INSTR_TIME_SET_CURRENT_LAZY(instr->starttime))elog(ERROR,\"InstrStartNodecalledtwiceinarow\");}elseif(instr->sample_timing)InstrStartSampled(instr);" }' \
  && ok "patch's InstrStartNode: need_timer first, as stock; sample_timing only in its else branch" \
  || bad "patch's InstrStartNode: need_timer first, as stock; sample_timing only in its else branch"
sec $I | awk '
  /^-\tif \(instr->need_timer\)$/ { removed = 1 }
  /^ \t\tINSTR_TIME_SET_ZERO\(instr->starttime\);$/ { z = NR }
  z && NR == z + 1 && /^ \t}$/ { c = NR }
  c && NR == c + 1 && /^\+\telse if \(instr->sample_timing\)$/ { e = NR }
  e && NR == e + 1 && /^\+\t\tInstrStopSampled\(instr\);$/ { ok = 1 }
  END { exit !(ok && !removed) }' \
  && ok "patch's InstrStopNode: stock's need_timer block unchanged, sample_timing only after it" \
  || bad "patch's InstrStopNode: stock's need_timer block unchanged, sample_timing only after it"
body_has $I InstrInitSampling 'instr->sample_timing=true;instr->need_timer=false;' \
  "patch's InstrInitSampling: a sampled node has need_timer false"
# and explain.c's cap: a parent whose calls were all timed caps its sampled
# children whether it was timed in full (need_timer) or sampled and never left a
# call to the sampler (sample_timing, need_timer false)
new_side src/backend/commands/explain.c | tr -d ' \t\n' |
  grep -F 'elseif(planstate->instrument&&(planstate->instrument->need_timer||planstate->instrument->sample_timing)&&planstate->instrument->nloops>0&&!InstrTimeSampled(planstate->instrument))explain_sample_cap=planstate->instrument->total;' > /dev/null \
  && ok "patch's ExplainNode caps children under a parent timed in full or sampled with every call timed" \
  || bad "patch's ExplainNode caps children under a parent timed in full or sampled with every call timed"
new_side $H | awk '/bool[ \t]+async_mode;/ { a = NR } /bool[ \t]+sample_timing;/ { s = NR; n++ } END { exit !(a && s == a + 1 && n == 1) }' \
  && ok "patch puts sample_timing beside need_timer (after async_mode)" \
  || bad "patch puts sample_timing beside need_timer (after async_mode)"

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
rejects() { # TEXT ARG...: pg-vendor ARG... says one line holding TEXT and exits 2
  local text=$1 out rc; shift
  out=$("$pg_vendor" "$@" 2>&1); rc=$?
  [[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 && "$out" == *"$text"* ]] && ok "ci/postgres/pg-vendor $*: one line, exit 2" \
    || bad "ci/postgres/pg-vendor $*: one line, exit 2 (got exit $rc: $out)"
}
rejects "" --rounds zero
rejects "" --sample-rate 1.5
rejects "--pairs needs" --pairs 0
rejects "--pairs needs" --pairs 99999999999999999999
rejects "--r-pairs needs" --r-pairs -1
rejects "--r-pairs needs" --r-pairs 20
rejects "--r-pairs needs" --r-pairs 1001
rejects "" --bogus

# pg-vendor's paired figures: the median and its distribution-free 95 %
# interval, order statistics j and n + 1 - j with j the largest rank where
# 2 P(B < j) <= 0.05, B binomial(n, 1/2): 14 and 28 of 41, 1 and 6 of 6,
# none of 5; no median when a value is missing or not a number; each
# group's R (tickclock's ON - OFF over stock's, +inf when stock's came out
# <= 0); and the groups themselves, from a stand-in explain_ms that
# answers each variant and setting with its own CPU time. The functions
# are the script's own text.
eval "$(awk '/^(median_ci|group_r|r_groups_of)\(\) \{/, /^}$/' "$pg_measure")"
got41=$(median_ci 41 $(seq -20 20))
got6=$(median_ci 6 3 1 2 6 5 4)
got5=$(median_ci 5 1 2 3 4 5)
[[ "$got41" == "0.000 -7.000 7.000" && "$got6" == "3.500 1.000 6.000" && "$got5" == "3.000 n/a n/a" ]] \
  && ok "pg-vendor's paired figures: the median and its 95 % interval (14th and 28th of 41; 1st and 6th of 6; none of 5)" \
  || bad "pg-vendor's paired figures: the median and its 95 % interval (got '$got41', '$got6', '$got5')"
short=$(median_ci 7 1 2 3 4 5 6 2>&1); rc_short=$?
nan=$(median_ci 6 1 2 nan 4 5 6 2>&1); rc_nan=$?
[[ $rc_short -ne 0 && "$short" == *"6 values where 7 were measured"* && $rc_nan -ne 0 && "$nan" == *"not a number"* ]] \
  && ok "pg-vendor's paired figures: no median of what is left when a figure is lost or not a number" \
  || bad "pg-vendor's paired figures with a figure lost (got $rc_short '$short', $rc_nan '$nan')"
gotr=$(group_r 500/900/600/900 500/500/600/700 | tr '\n' ' ')
gotinf=$(median_ci 6 inf inf 1 inf inf inf)
[[ "$gotr" == "0.75000 inf " && "$gotinf" == "inf 1.000 inf" ]] \
  && ok "pg-vendor's R of a group: tickclock's ON - OFF over stock's, +inf for a stock overhead <= 0" \
  || bad "pg-vendor's R of a group (got '$gotr', '$gotinf')"
calls=$(mktemp)
explain_ms() { # variant mode -> "wall cpu": stock OFF 500, ON 900, tickclock OFF 600, ON 900 (+ the call's number)
  local n; n=$(( $(wc -l < "$calls") + 1 )); echo "$1.$2" >> "$calls"
  case "$1.$2" in stock.OFF) echo "1 $((500 + n))" ;; stock.ON) echo "1 $((900 + n))" ;;
    tickclock.OFF) echo "1 $((600 + n))" ;; tickclock.ON) echo "1 $((900 + n))" ;; *) return 1 ;; esac
}
groups=$(r_groups_of 2 | tr '\n' ' ')
order=$(tr '\n' ' ' < "$calls")
[[ "$groups" == "501/902/603/904 508/907/606/905 " && \
   "$order" == "stock.OFF stock.ON tickclock.OFF tickclock.ON tickclock.ON tickclock.OFF stock.ON stock.OFF " && \
   "$(group_r $groups | tr "\n" " ")" == "0.75062 0.74937 " ]] \
  && ok "pg-vendor's groups: stock OFF, ON, tickclock OFF, ON, reversed every other group, each figure in its place" \
  || bad "pg-vendor's groups (got '$groups', order '$order')"
explain_ms() { [[ "$1.$2" != tickclock.OFF ]] && echo "1 700"; }
failed=$(r_groups_of 1); rc_failed=$?
[[ $rc_failed -ne 0 && "$(tail -1 <<<"$failed")" == "tickclock, TIMING OFF, group 1" ]] \
  && ok "pg-vendor's groups: a failed execution stops them and is named" \
  || bad "pg-vendor's groups with a failed execution (got $rc_failed '$failed')"
rm -f "$calls"

# pg-vendor's R verdict, the script's own block run on set figures: on the
# counter the median at most 0.4; on the OS clock the groups' interval not
# wholly above 1.0 (1.046 in 0.994 .. 1.089 passes, 1.2 in 1.1 .. 1.3
# fails); with --r-pairs 0 the best of the rounds within 0.7 .. 1.3.
verdict_block=$(awk '/^R_best=\$R$/, /^\[\[ "\$verdict" == PASS \]\] \|\| ok=0$/' "$pg_measure")
verdict_of() { # clock_source best_R "median lo hi"|"" -> verdict
  local log; log() { :; }
  local clock_source=$1 R=$2 clock_line="x: y" r_pairs=101 ok=1 RP RP_LO RP_HI verdict
  read -r RP RP_LO RP_HI <<<"$3"
  RP=${RP:-} RP_LO=${RP_LO:-} RP_HI=${RP_HI:-}
  eval "$verdict_block"
  echo "$verdict/$ok"
}
got=$(for a in "tsc 0.50 0.39 0.35 0.45" "tsc 0.35 0.46 0.44 0.50" "tsc 0.35 " "system 1.13 1.046 0.994 1.089" \
               "system 0.90 1.2 1.1 1.3" "system 1.13 " "system 1.35 "; do
        read -r cs best rest <<<"$a"; verdict_of "$cs" "$best" "$rest"; done | tr '\n' ' ')
[[ "$verdict_block" == *'verdict'* && "$got" == "PASS/1 FAIL/0 PASS/1 PASS/1 FAIL/0 PASS/1 FAIL/0 " ]] \
  && ok "pg-vendor's R verdict: the counter's median <= 0.4; the OS clock fails only when the interval lies above 1.0; the rounds' best with --r-pairs 0" \
  || bad "pg-vendor's R verdict (got '$got')"

if [[ $fail -ne 0 ]]; then echo "instr_time_test: FAILED"; exit 1; fi
echo "instr_time_test: all passed"
