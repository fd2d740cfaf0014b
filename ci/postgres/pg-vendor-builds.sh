# Sourced by ci/postgres/pg-vendor after the source is fetched: both builds,
# the regression suites on both, pg_test_timing on both. Its variables are
# the caller's (work, logs, version, pristine, PATCH, HEADER, ...).

# ------------------------------------------------------------- the builds
stamp_of() { # variant -> what its build depends on
  { echo "$version"; echo "${CONFIGURE_FLAGS[*]}"; echo "$1"
    if [[ "$1" == tickclock ]]; then sha256sum < "$PATCH"; sha256sum < "$HEADER"; fi
  } | sha256sum | cut -d' ' -f1
}
patch_files() { # patch file -> the paths it changes, one a line
  sed -nE 's|^diff --git a/([^ ]+) b/.*|\1|p' "$1"
}
incremental() { # tree prefix: the tickclock tree brought to the current patch by
  # copying in the files whose patched content changed; fails (status 1)
  # when that is not enough (a header changed, or no record of the patch
  # the tree was built with)
  local tree=$1 prefix=$2 stage f changed=() gone=()
  [[ -f "$tree/.pg-vendor-patch" && -f "$tree/.pg-vendor-base" && -x "$prefix/bin/postgres" ]] || return 1
  [[ "$(cat "$tree/.pg-vendor-base")" == "$(stamp_of stock)" ]] || return 1
  cmp -s "$HEADER" "$tree/src/include/portability/tickclock.h" || return 1
  stage=$(mktemp -d)
  while read -r f; do
    if [[ -f "$pristine/$f" ]]; then mkdir -p "$stage/$(dirname "$f")"; cp -p "$pristine/$f" "$stage/$f"; fi
  done < <(patch_files "$PATCH")
  if ! patch -d "$stage" -p1 --no-backup-if-mismatch < "$PATCH" > "$logs/patch.log" 2>&1; then
    rm -rf "$stage"
    fail "examples/postgres/tickclock-pg15.patch does not apply to PostgreSQL $version" "$logs/patch.log"
  fi
  while read -r f; do
    if [[ -f "$stage/$f" ]]; then
      cmp -s "$stage/$f" "$tree/$f" || changed+=("$f")
    elif [[ -f "$pristine/$f" ]]; then
      cmp -s "$pristine/$f" "$tree/$f" || changed+=("$f")   # no longer patched
    else
      gone+=("$f")
    fi
  done < <(sort -u <(patch_files "$PATCH") <(patch_files "$tree/.pg-vendor-patch"))
  for f in "${changed[@]}" "${gone[@]}"; do
    [[ "$f" == *.c || "$f" == *.sample ]] || { rm -rf "$stage"; log "tickclock build: $f changed, a full build follows"; return 1; }
  done
  for f in "${changed[@]}"; do
    if [[ -f "$stage/$f" ]]; then cp "$stage/$f" "$tree/$f"; else cp "$pristine/$f" "$tree/$f"; fi
  done
  for f in "${gone[@]}"; do rm -f "$tree/$f"; done
  rm -rf "$stage"
  log "tickclock build: incremental, ${#changed[@]} file(s) changed: ${changed[*]:-none}"
  (cd "$tree" && make -j2 -s && make -s install) > "$logs/make-tickclock.log" 2>&1 \
    || fail "make (tickclock, incremental)" "$logs/make-tickclock.log"
  cp "$PATCH" "$tree/.pg-vendor-patch"
}
build() { # variant
  local v=$1 tree=$work/build/$1 prefix=$work/install/$1 stamp t0
  stamp=$(stamp_of "$v")
  if [[ $rebuild -eq 0 && -f "$tree/.pg-vendor-stamp" && "$(cat "$tree/.pg-vendor-stamp")" == "$stamp" \
        && -x "$prefix/bin/postgres" ]]; then
    log "$v build: up to date (reused; --rebuild forces it)"
    return 0
  fi
  t0=$(date +%s)
  if [[ "$v" == tickclock && $rebuild -eq 0 ]] && incremental "$tree" "$prefix"; then
    echo "$stamp" > "$tree/.pg-vendor-stamp"
    build_s[$v]=$(( $(date +%s) - t0 ))
    log "$v build: ${build_s[$v]} s (incremental, make -j2)"
    return 0
  fi
  rm -rf "$tree" "$prefix"
  mkdir -p "$work/build"
  cp -a "$pristine" "$tree"
  if [[ "$v" == tickclock ]]; then
    install -m 0644 "$HEADER" "$tree/src/include/portability/tickclock.h"
    patch -d "$tree" -p1 --no-backup-if-mismatch < "$PATCH" > "$logs/patch.log" 2>&1 \
      || fail "examples/postgres/tickclock-pg15.patch does not apply to PostgreSQL $version" "$logs/patch.log"
  fi
  (cd "$tree" && ./configure --prefix="$prefix" "${CONFIGURE_FLAGS[@]}") > "$logs/configure-$v.log" 2>&1 \
    || fail "configure ($v)" "$logs/configure-$v.log"
  (cd "$tree" && make -j2 -s && make -s install) > "$logs/make-$v.log" 2>&1 \
    || fail "make ($v)" "$logs/make-$v.log"
  echo "$stamp" > "$tree/.pg-vendor-stamp"
  stamp_of stock > "$tree/.pg-vendor-base"
  [[ "$v" == tickclock ]] && cp "$PATCH" "$tree/.pg-vendor-patch"
  build_s[$v]=$(( $(date +%s) - t0 ))
  log "$v build: ${build_s[$v]} s (make -j2)"
}
declare -A build_s=([stock]=reused [tickclock]=reused)
build stock
build tickclock
grep -q 'tickclock_now' "$work/build/tickclock/src/include/portability/instr_time.h" \
  || fail "the tickclock build's instr_time.h does not use tickclock_now()"

# ------------------------------------------------- the regression suites
declare -A reg_pass reg_fail
regress() { # variant [name PGOPTIONS]: make check as the unprivileged user; per-test results to a file
  local v=${2:-$1} tree=$work/build/$1 out=$logs/check-${2:-$1}.log t0
  chown -R "$PGUSER_NAME" "$tree" 2>/dev/null || true
  t0=$(date +%s)
  if [[ -n "${3:-}" ]]; then
    as_user env PGOPTIONS="$3" make -C "$tree" check > "$out" 2>&1
  else
    as_user make -C "$tree" check > "$out" 2>&1
  fi
  # "test name ... ok 12 ms", "     name ... FAILED 40 ms", "name ... failed (ignored)"
  sed -nE 's/^(test +| +)([A-Za-z0-9_.-]+) +\.\.\. +(ok|FAILED|failed \(ignored\)).*/\2 \3/p' "$out" \
    | sed -E 's/ failed \(ignored\)$/ ignored/' > "$logs/check-$v.results"
  reg_pass[$v]=$(awk '$2 == "ok" || $2 == "ignored"' "$logs/check-$v.results" | wc -l)
  reg_fail[$v]=$(awk '$2 == "FAILED"' "$logs/check-$v.results" | wc -l)
  log "$v make check: ${reg_pass[$v]} passed, ${reg_fail[$v]} failed ($(( $(date +%s) - t0 )) s; $(grep -E 'tests (passed|failed)' "$out" | head -1 | sed -E 's/^ +//'))"
  if [[ $((reg_pass[$v] + reg_fail[$v])) -eq 0 ]]; then
    fail "make check ($v) ran no test" "$out"
  fi
}
regress stock
regress tickclock
# sampled timing on in every session of the suite (pg_regress adds its own
# PGOPTIONS to what it finds)
regress tickclock tickclock-sampled "-c explain_timing_sample_rate=$sample_rate"
regressed=$(awk 'NR == FNR { if ($2 != "FAILED") ok[$1] = 1; next } $2 == "FAILED" && ($1 in ok) { print $1 }' \
  "$logs/check-stock.results" "$logs/check-tickclock.results")
missing_tests=$(awk 'NR == FNR { seen[$1] = 1; next } !($1 in seen) { print $1 }' \
  "$logs/check-tickclock.results" "$logs/check-stock.results")
regressed_sampled=$(awk 'NR == FNR { if ($2 != "FAILED") ok[$1] = 1; next } $2 == "FAILED" && ($1 in ok) { print $1 }' \
  "$logs/check-stock.results" "$logs/check-tickclock-sampled.results")
missing_sampled=$(awk 'NR == FNR { seen[$1] = 1; next } !($1 in seen) { print $1 }' \
  "$logs/check-tickclock-sampled.results" "$logs/check-stock.results")

# ------------------------------------------------------- pg_test_timing
declare -A ptt
for v in stock tickclock; do ptt[$v]=""; done
for ((i = 0; i < 3; i++)); do
  for v in stock tickclock; do
    "$work/install/$v/bin/pg_test_timing" -d 1 > "$logs/pg_test_timing-$v.log" 2>&1 \
      || fail "pg_test_timing ($v)" "$logs/pg_test_timing-$v.log"
    ptt[$v]+=" $(sed -nE 's/^Per loop time including overhead: ([0-9.]+) ns/\1/p' "$logs/pg_test_timing-$v.log")"
  done
done
clock_line=$(sed -nE 's/^Clock: tickclock (.*)/\1/p' "$logs/pg_test_timing-tickclock.log")
[[ -n "$clock_line" ]] || fail "the tickclock build's pg_test_timing printed no 'Clock:' line" "$logs/pg_test_timing-tickclock.log"
clock_source=${clock_line%%,*}
