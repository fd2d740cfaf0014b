#!/usr/bin/env bash
# Linkage of the single header, read from the symbol tables:
#  - a TICKCLOCK_STATIC program defines tickclock symbols (tickclock_*, and
#    tkc_* internal ones), none of them global;
#  - a shared library of the implementation compiled with -fvisibility=hidden
#    exports exactly what tickclock.h (with tickclock_inline.h, its inline
#    machinery) declares with TICKCLOCK_API /
#    TKC_API_VAR, no internal function;
#  - the test-only entry point (platform injection) is not compiled into
#    either unless TICKCLOCK_TEST_API is defined, and the tools library's
#    functions (fixture parser, the CPUID rules only the probe reports) are
#    not in the header at all.
# Usage: symbols_test.sh STATIC_BINARY SHARED_LIBRARY TICKCLOCK_H [HEADER...]
set -uo pipefail
static_bin=$1
shared_lib=$2
header=$3
shift 3
headers=("$header" "$@")  # tickclock.h and the headers it includes for callers
fail=0
err() { echo "FAIL: $*"; fail=1; }

all_static=$(nm --defined-only "$static_bin" | awk '{print $NF}' | grep -E 'tickclock|tkc_' || true)
global_static=$(nm --defined-only --extern-only "$static_bin" | awk '{print $NF}' | grep -E 'tickclock|tkc_' |
                grep -v '^__odr_asan' || true)
[[ -n "$all_static" ]] || err "$static_bin: no tickclock symbol at all (was the implementation compiled in?)"
[[ -z "$global_static" ]] || err "TICKCLOCK_STATIC program exports: $(echo $global_static)"

# What the header declares for callers (functions and variables).
declared=$( (sed -n 's/^TICKCLOCK_API .*[ *]\([A-Za-z_0-9]*\)(.*/\1/p' "${headers[@]}"
             sed -n 's/^TKC_API_VAR .*[ *]\([A-Za-z_0-9]*\);.*/\1/p' "${headers[@]}") | sort -u)
[[ $(echo "$declared" | wc -l) -ge 10 ]] || err "found only $(echo "$declared" | wc -l) API declarations in $header"
# (a sanitizer build adds its own per-global symbols, e.g. ASan's
# __odr_asan_gen_<name>: instrumentation, not the library's exports)
exported=$(nm -D --defined-only "$shared_lib" | awk '{print $NF}' | grep -E 'tickclock|tkc_' |
           grep -v '^__odr_asan' | sort -u || true)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
[[ -z "$missing" ]] || err "declared with TICKCLOCK_API but not exported: $(echo $missing)"
[[ -z "$extra" ]] || err "exported but not API: $(echo $extra)"

for f in "$static_bin" "$shared_lib"; do
  test_only=$(nm --defined-only "$f" | awk '{print $NF}' |
              grep -E '^(tickclock_fixture_|tickclock_x86_freq_cpuid$|tickclock_x86_freq_leaf15_linux$|tkc_set_platform$)' ||
              true)
  [[ -z "$test_only" ]] || err "$f contains test-only or tools functions: $(echo $test_only)"
done

echo "exported by the -fvisibility=hidden library: $(echo $exported)"
echo "TICKCLOCK_STATIC program: $(echo "$all_static" | wc -l) tickclock symbols, all local"
if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
