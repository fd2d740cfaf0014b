#!/usr/bin/env bash
# ci/deps on a machine where nothing is installed yet, without touching the
# real package database: stand-ins for dpkg-query, apt-cache, apt-get and
# sudo on PATH. The stand-ins answer like the real tools do on a fresh
# Debian 12 machine (dpkg-query: "no packages found", exit 1; apt-cache
# policy: the Candidate line near the top, then a version table long enough
# that a reader which stops early makes it die of SIGPIPE) and record every
# apt-get call. The test asserts what ci/deps would install.
#   ci/deps_test.sh PATH/TO/ci/deps
set -uo pipefail
deps=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fake=$tmp/fakebin
mkdir -p "$fake"
fail=0

# INSTALLED: packages dpkg-query reports as installed (space separated);
# NO_CANDIDATE: packages apt-cache knows with "Candidate: (none)";
# UNKNOWN: packages apt-cache prints nothing for (not in any list).
# dpkg-query -W -f=FORMAT PKG: one package's status; without a package,
# every package's state (db:Status-Status), one line each: the installed
# ones, "half-configured" while $FAKE_HALF exists, and FAKE_STATES (states
# that dpkg --configure -a does not finish, such as config-files).
cat > "$fake/dpkg-query" <<'EOF'
#!/usr/bin/env bash
p=${!#}
if [[ "$p" == -f=* ]]; then
  for q in ${FAKE_INSTALLED:-}; do echo installed; done
  [[ -e "$FAKE_HALF" ]] && echo half-configured
  for q in ${FAKE_STATES:-}; do echo "$q"; done
  exit 0
fi
if [[ " ${FAKE_INSTALLED:-} " == *" $p "* ]]; then
  printf 'install ok installed'
  exit 0
fi
echo "dpkg-query: no packages found matching $p" >&2
exit 1
EOF
cat > "$fake/apt-cache" <<'EOF'
#!/usr/bin/env bash
[[ $1 == policy ]] || { echo "apt-cache stand-in: unexpected '$*'" >&2; exit 100; }
p=$2
[[ " ${FAKE_UNKNOWN:-} " == *" $p "* ]] && exit 0
cand="1:2.4.9-1"
[[ " ${FAKE_NO_CANDIDATE:-} " == *" $p "* ]] && cand="(none)"
echo "$p:"
echo "  Installed: (none)"
echo "  Candidate: $cand"
echo "  Version table:"
# The real version table of a package with many versions and mirrors; long
# enough (about 200 KB, written line by line) to outlast a pipe buffer.
for i in $(seq 1 3000); do
  echo "     1:2.4.$i-$i 500"
  echo "        500 http://deb.debian.org/debian bookworm/main amd64 Packages"
done
exit 0
EOF
cat > "$fake/apt-get" <<'EOF'
#!/usr/bin/env bash
echo "apt-get $*" >> "$FAKE_LOG"
exit 0
EOF
# dpkg --configure -a (logged) finishes the journal and the half-configured
# package; it fails when FAKE_CONFIGURE_FAILS is set, and answers as a
# locked dpkg does while the count in $FAKE_LOCKED is above 0 (one less a
# call). The real dpkg is never reached: the test must not read or repair
# this machine's database.
cat > "$fake/dpkg" <<'EOF'
#!/usr/bin/env bash
case "$*" in
  "--configure -a")
    echo "dpkg $*" >> "$FAKE_LOG"
    n=$(cat "$FAKE_LOCKED" 2>/dev/null || echo 0)
    if (( n > 0 )); then
      echo $((n - 1)) > "$FAKE_LOCKED"
      echo "dpkg: error: dpkg frontend lock was locked by another process with pid 4242" >&2
      exit 2
    fi
    if [[ -n "${FAKE_CONFIGURE_FAILS:-}" ]]; then
      [[ "$FAKE_CONFIGURE_FAILS" == 1 ]] && FAKE_CONFIGURE_FAILS="dpkg: error processing package man-db (--configure)"
      echo "$FAKE_CONFIGURE_FAILS" >&2; exit 1
    fi
    rm -f "$DPKG_ADMINDIR"/updates/[0-9]* "$FAKE_HALF"
    exit 0 ;;
esac
echo "dpkg stand-in: unexpected '$*'" >&2
exit 2
EOF
cat > "$fake/sudo" <<'EOF'
#!/usr/bin/env bash
exec "$@"
EOF
chmod +x "$fake"/*

# dpkg's database folder: updates/ holds the journal of an interrupted run
export DPKG_LOCK_RETRY=1 DPKG_ADMINDIR=$tmp/dpkg FAKE_HALF=$tmp/dpkg/half-configured FAKE_LOCKED=$tmp/dpkg/locked
mkdir -p "$DPKG_ADMINDIR/updates"

run_deps() { # what..., with FAKE_* set by the caller; output in $tmp/out, log in $tmp/apt.log
  : > "$tmp/apt.log"
  FAKE_LOG=$tmp/apt.log PATH="$fake:$PATH" "$deps" "$@" > "$tmp/out" 2>&1
}

# the packages of the last "apt-get install" call, sorted, one line
installed_pkgs() {
  grep '^apt-get install' "$tmp/apt.log" | tail -1 | tr ' ' '\n' | grep -v -e '^-' -e '^apt-get$' -e '^install$' | sort | tr '\n' ' '
}

expect() { # description, got, want
  if [[ "$2" == "$3" ]]; then
    echo "ok   $1"
  else
    echo "FAIL $1: got '$2', want '$3'"
    echo "---- ci/deps said:"; cat "$tmp/out"; echo "---- apt-get calls:"; cat "$tmp/apt.log"; echo "----"
    fail=1
  fi
}

sorted() { tr ' ' '\n' <<< "$*" | grep -v '^$' | sort | tr '\n' ' '; }
HOST="bazel-bootstrap doctest-dev libhwy-dev libbenchmark-dev libabsl-dev cpuid clang-19 clang-format-19 cmake pkgconf patch g++ gcc python3 python3-jsonschema"

# 1. a fresh machine: nothing installed, everything has a candidate
export FAKE_INSTALLED="" FAKE_NO_CANDIDATE="" FAKE_UNKNOWN=""
run_deps host; rc=$?
expect "fresh machine: exit 0" "$rc" 0
expect "fresh machine: installs every host package" "$(installed_pkgs)" "$(sorted $HOST)"
expect "fresh machine: apt-get update once" "$(grep -c '^apt-get update' "$tmp/apt.log")" 1
expect "fresh machine: no 'no install candidate'" "$(grep -c 'no install candidate' "$tmp/out")" 0

# 2. everything installed: no apt-get call at all
export FAKE_INSTALLED="$HOST"
run_deps host; rc=$?
expect "provisioned machine: exit 0" "$rc" 0
expect "provisioned machine: no apt-get call" "$(wc -l < "$tmp/apt.log" | tr -d ' ')" 0

# 3. one package removed (what the CI's real run does with cpuid)
export FAKE_INSTALLED="${HOST/cpuid /}"
run_deps host; rc=$?
expect "cpuid removed: exit 0" "$rc" 0
expect "cpuid removed: installs only cpuid" "$(installed_pkgs)" "cpuid "

# 4. a required package without a candidate: the others still install, exit 1
export FAKE_INSTALLED="" FAKE_NO_CANDIDATE="libhwy-dev"
run_deps host; rc=$?
expect "no candidate: exit 1" "$rc" 1
expect "no candidate: named" "$(grep -c '^ci/deps: no install candidate: libhwy-dev$' "$tmp/out")" 1
expect "no candidate: the others install" "$(installed_pkgs)" "$(sorted ${HOST/libhwy-dev /})"

# 5. matrix compilers: clang-13's optional runtime package is not in
# Debian 12 (apt-cache prints nothing for it): skipped, not an error
export FAKE_INSTALLED="$HOST" FAKE_NO_CANDIDATE="" FAKE_UNKNOWN="libclang-rt-13-dev"
run_deps matrix clang-13 clang-16; rc=$?
expect "matrix clang-13 clang-16: exit 0" "$rc" 0
expect "matrix clang-13 clang-16: packages" "$(installed_pkgs)" "$(sorted clang-13 clang-16 libclang-rt-16-dev)"
expect "matrix: optional package skipped" "$(grep -c 'optional package not in apt, skipped: libclang-rt-13-dev' "$tmp/out")" 1

# 6. ci/postgres/pg-vendor's group: the host packages are there, its own are not
export FAKE_INSTALLED="$HOST" FAKE_NO_CANDIDATE="" FAKE_UNKNOWN=""
run_deps pg-vendor; rc=$?
expect "pg-vendor: exit 0" "$rc" 0
expect "pg-vendor: packages" "$(installed_pkgs)" "$(sorted dpkg-dev make perl)"

# 7. bad argument: one line, exit 2
run_deps bogus; rc=$?
expect "unknown argument: exit 2" "$rc" 2
expect "unknown argument: one line" "$(wc -l < "$tmp/out" | tr -d ' ')" 1

# 8. a run killed during a remove left dpkg's journal (all-digit names;
# dpkg's own temporary file tmp.i does not count): dpkg --configure -a
# first, then the install, exit 0
export FAKE_INSTALLED="${HOST/cpuid /}" FAKE_NO_CANDIDATE="" FAKE_UNKNOWN=""
touch "$DPKG_ADMINDIR/updates/0000" "$DPKG_ADMINDIR/updates/tmp.i"
run_deps host; rc=$?
expect "interrupted journal: exit 0" "$rc" 0
expect "interrupted journal: dpkg --configure -a, then apt" "$(grep -v '^apt-get update' "$tmp/apt.log" | cut -d' ' -f1-2 | tr '\n' ' ')" "dpkg --configure apt-get install "
expect "interrupted journal: said so" "$(grep -c '^ci/deps: dpkg was left interrupted' "$tmp/out")" 1
expect "interrupted journal: cpuid installed" "$(installed_pkgs)" "cpuid "
expect "interrupted journal: finished" "$(ls "$DPKG_ADMINDIR/updates" | tr '\n' ' ')" "tmp.i "

# 9. a half-configured package with nothing missing: still finished, since
# the jobs' later apt-get calls would refuse; no apt-get call
export FAKE_INSTALLED="$HOST"
touch "$FAKE_HALF"
run_deps host; rc=$?
expect "half-configured: exit 0" "$rc" 0
expect "half-configured: only dpkg --configure -a" "$(cat "$tmp/apt.log")" "dpkg --configure -a"
expect "half-configured: finished" "$([[ -e "$FAKE_HALF" ]] && echo left || echo gone)" gone

# 10. dpkg --configure -a fails: exit 1, says where to look, no apt-get call
export FAKE_INSTALLED="${HOST/cpuid /}" FAKE_CONFIGURE_FAILS=1
touch "$DPKG_ADMINDIR/updates/0001"
run_deps host; rc=$?
expect "resume fails: exit 1" "$rc" 1
expect "resume fails: named" "$(grep -c 'dpkg --configure -a failed (exit 1: dpkg: error processing package man-db (--configure)); fix dpkg by hand (dpkg --audit' "$tmp/out")" 1
expect "resume fails: no apt-get call" "$(grep -c '^apt-get' "$tmp/apt.log")" 0

# 11. dpkg's lock held by another package operation, twice: waited for
# (DPKG_LOCK_RETRY s a try, 1 here), then finished; held for longer than DPKG_LOCK_WAIT: failed,
# saying so
export FAKE_INSTALLED="$HOST" FAKE_CONFIGURE_FAILS=""
touch "$DPKG_ADMINDIR/updates/0002"
echo 2 > "$FAKE_LOCKED"
run_deps dpkg-resume; rc=$?
expect "locked twice: exit 0" "$rc" 0
expect "locked twice: three tries" "$(grep -c '^dpkg --configure -a' "$tmp/apt.log")" 3
expect "locked twice: said it waited" "$(grep -c "^ci/deps: another package operation holds dpkg's lock; waiting" "$tmp/out")" 1
expect "locked twice: finished" "$(ls "$DPKG_ADMINDIR/updates" | tr '\n' ' ')" "tmp.i "
touch "$DPKG_ADMINDIR/updates/0003"
echo 100 > "$FAKE_LOCKED"
DPKG_LOCK_WAIT=3 run_deps dpkg-resume; rc=$?
expect "locked for good: exit 1" "$rc" 1
expect "locked for good: named" "$(grep -c 'dpkg --configure -a failed (exit 2: dpkg: error: dpkg frontend lock was locked' "$tmp/out")" 1
echo 0 > "$FAKE_LOCKED"
rm -f "$DPKG_ADMINDIR/updates/0003"

# a failure whose words hold "lock" but are no held lock (a package named
# tickclock-probe): failed at once, not waited for
touch "$DPKG_ADMINDIR/updates/0004"
export FAKE_CONFIGURE_FAILS="dpkg: error processing package tickclock-probe (--configure)"
DPKG_LOCK_WAIT=600 run_deps dpkg-resume; rc=$?
expect "tickclock-probe fails: exit 1" "$rc" 1
expect "tickclock-probe fails: one try, no wait" "$(grep -c '^dpkg --configure -a' "$tmp/apt.log") $(grep -c 'waiting' "$tmp/out")" "1 0"
export FAKE_CONFIGURE_FAILS=""
rm -f "$DPKG_ADMINDIR/updates/0004"
DPKG_LOCK_RETRY=0 run_deps dpkg-resume; rc=$?
expect "DPKG_LOCK_RETRY=0: refused, exit 2" "$rc $(grep -c 'DPKG_LOCK_RETRY 1..9999' "$tmp/out")" "2 1"

# 12. states dpkg --configure -a does not finish (config-files,
# not-installed) are no interruption: no call, exit 0
export FAKE_STATES="config-files not-installed"
run_deps host; rc=$?
expect "config-files only: exit 0" "$rc" 0
expect "config-files only: no call" "$(cat "$tmp/apt.log")" ""
export FAKE_STATES=""

# 13. ci/deps dpkg-resume alone, nothing interrupted: no call, no output
export FAKE_CONFIGURE_FAILS=""
rm -f "$DPKG_ADMINDIR/updates/0001"
run_deps dpkg-resume; rc=$?
expect "dpkg-resume, nothing interrupted: exit 0" "$rc" 0
expect "dpkg-resume, nothing interrupted: no call, no output" "$(cat "$tmp/apt.log" "$tmp/out")" ""

echo
if [[ $fail -ne 0 ]]; then echo "deps_test: FAILED"; exit 1; fi
echo "deps_test: all passed"
