#!/usr/bin/env bash
# tickclock-probe cpuid: exit 0 and well-formed JSON with the documented keys on
# every curated fixture and every dump of the shared corpus (when present);
# exit 2 and a one-line error naming file:line on bad input.
set -uo pipefail
probe=$1
fixtures=$2
# Under a cross config (--config=aarch64 ...) the probe is a target binary
# and this script a host one: the QEMU runner sets TICKCLOCK_RUNNER, and
# every probe command goes through it (unset on the host: run directly).
# Decoding a recorded dump is pure, so it must work on every architecture.
read -r -a runner <<< "${TICKCLOCK_RUNNER:-}"
run() { "${runner[@]}" "$@"; }
# The runner resolves the QEMU command with a dozen readelf calls; do that
# once for the JSON loop below (TICKCLOCK_RUNNER_PRINT) rather than per file.
probe_cmd=$probe
if [[ ${#runner[@]} -gt 0 ]]; then
  probe_cmd=$(TICKCLOCK_RUNNER_PRINT=1 "${runner[@]}" "$probe") || probe_cmd=
  [[ -n $probe_cmd ]] || { echo "FAIL the runner could not resolve $probe"; exit 1; }
fi
export TICKCLOCK_PROBE_CMD=$probe_cmd
fail=0
tmp=${TEST_TMPDIR:-$(mktemp -d)}

corpus=${TICKCLOCK_CORPUS:-}
# Under emulation every probe run is a QEMU start (~0.5-1 s on a loaded host):
# the shared corpus (700+ dumps, decoded by the same pure code the host run
# checks) would take over 10 minutes, so only the curated fixtures are
# replayed there unless TICKCLOCK_CORPUS names a corpus explicitly.
if [[ -z "$corpus" && ${#runner[@]} -gt 0 ]]; then
  echo "note: under ${runner[0]##*/}: curated fixtures only (set TICKCLOCK_CORPUS for the shared corpus)"
  corpus=none
fi
if [[ -z "$corpus" ]]; then
  root=$(dirname "$(dirname "$(dirname "$(realpath "$fixtures/SOURCES.tsv")")")")
  for c in "$root/shared/cpuid-corpus/dumps" "$root/../shared/cpuid-corpus/dumps" \
           /work/shared/cpuid-corpus/dumps; do
    if [[ -d "$c" ]]; then corpus=$c; break; fi
  done
fi
dirs=("$fixtures")
if [[ -n "$corpus" && -d "$corpus" ]]; then dirs+=("$corpus"); elif [[ "$corpus" != none ]]; then
  echo "note: no shared corpus found (set TICKCLOCK_CORPUS); checking the curated fixtures only"
fi

python3 - "$probe" "${dirs[@]}" <<'PY' || fail=1
import json, os, shlex, subprocess, sys
probe, dirs = sys.argv[1], sys.argv[2:]
cmd = shlex.split(os.environ["TICKCLOCK_PROBE_CMD"])
keys = ["schema_version", "tool_version", "command", "host", "vendor", "family", "model", "stepping", "tsc", "rdtscp", "invariant_tsc",
        "hypervisor_bit", "leaf15", "base_mhz", "hypervisor", "brand", "tsc_hz",
        "tsc_hz_linux", "crystal_table"]
n = bad = 0
for d in dirs:
    for f in sorted(os.listdir(d)):
        if not f.endswith(".cpuid"):
            continue
        p = os.path.join(d, f)
        n += 1
        r = subprocess.run(cmd + ["cpuid", "--json", "--file", p], capture_output=True, text=True)
        try:
            assert r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr.strip())
            j = json.loads(r.stdout)
            assert list(j.keys()) == keys, "keys %s" % list(j.keys())
            assert isinstance(j["vendor"], str)
            for k in ("tsc", "rdtscp", "invariant_tsc", "hypervisor_bit"):
                assert j[k] is None or isinstance(j[k], bool), k
            if j["leaf15"] is not None:
                assert set(j["leaf15"]) == {"denominator", "numerator", "crystal_hz"}
            if j["hypervisor"] is not None:
                assert set(j["hypervisor"]) == {"signature", "max_leaf", "tsc_khz"}
                assert j["hypervisor_bit"] is True
            assert set(j["tsc_hz"]) == {"value", "method"}
            assert (j["tsc_hz"]["value"] is None) == (j["tsc_hz"]["method"] is None)
            assert (j["tsc_hz_linux"]["value"] is None) == (j["tsc_hz_linux"]["method"] is None)
            assert set(j["crystal_table"]) == {"crystal_hz", "tsc_hz", "fits_base", "ppm_vs_linux", "parts",
                                               "evidence", "left_out"}
            # a fixture's own expectations (# expect.KEY: VALUE), as the probe reports them
            meta = {}
            for line in open(p, errors="replace"):
                if line.startswith("# expect.") and ":" in line:
                    k, v = line[len("# expect."):].split(":", 1)
                    meta[k.strip()] = v.strip()
            def want(k, got):
                if k in meta:
                    assert got == meta[k], "expect.%s: %r, the probe says %r" % (k, meta[k], got)
            want("vendor", j["vendor"].rstrip())  # a 12-byte vendor may end in blanks
            if "family" in meta:
                want("family", None if j["family"] is None else "0x%x" % j["family"])
            if "model" in meta:
                want("model", None if j["model"] is None else "0x%x" % j["model"])
            if "stepping" in meta:
                want("stepping", None if j["stepping"] is None else str(j["stepping"]))
            if "invariant_tsc" in meta:
                want("invariant_tsc", {True: "1", False: "0", None: "unknown"}[j["invariant_tsc"]])
            if "tsc_hz" in meta:
                v = j["tsc_hz"]["value"]
                want("tsc_hz", "none" if v is None else str(v))
        except Exception as e:
            bad += 1
            print("FAIL %s: %s" % (p, e))
print("probe cpuid --json: %d files, %d bad" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
PY

expect_exit2() {  # what, pattern, command...
  local what=$1 pat=$2
  shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 ]]; then echo "FAIL $what: exit $rc, want 2"; fail=1; return; fi
  if [[ $(printf '%s\n' "$out" | wc -l) -ne 1 ]]; then echo "FAIL $what: not one line: $out"; fail=1; return; fi
  if [[ ! "$out" =~ $pat ]]; then echo "FAIL $what: '$out' !~ $pat"; fail=1; return; fi
  echo "ok $what: $out"
}
printf '00000000 00000000 0000000d 756e6547 6c65746e 49656e69\n# fine\n00000001 00000000 zz\n' > "$tmp/bad.cpuid"
expect_exit2 "malformed fixture" "bad.cpuid:3: " run "$probe" cpuid --json --file "$tmp/bad.cpuid"
expect_exit2 "missing file" "nonexistent.cpuid:0: cannot open" run "$probe" cpuid --file "$tmp/nonexistent.cpuid"
expect_exit2 "unknown flag" "tickclock-probe cpuid: unknown option '--bogus' .expected --file FILE, --dump, --json." run "$probe" cpuid --bogus
expect_exit2 "--file without a path" "tickclock-probe cpuid: --file needs a value" run "$probe" cpuid --file
expect_exit2 "unknown subcommand" "unknown subcommand 'nope'" run "$probe" nope

# --dump of a fixture reproduces its leaves; a native --dump parses back
run "$probe" cpuid --dump --file "$fixtures/fuchsia__amd-ryzen-9-3950x-vmware.cpuid" > "$tmp/re.cpuid" || fail=1
if ! diff <(grep -v '^#' "$fixtures/fuchsia__amd-ryzen-9-3950x-vmware.cpuid") "$tmp/re.cpuid" >/dev/null; then
  echo "FAIL --dump --file does not reproduce the leaves"; fail=1
fi
# This CPU: only where the probe is an x86 binary (the host, i686 under
# qemu-i386, x86_64 under qemu-x86_64 CPU models), whatever runs this script.
case $(readelf -hW "$probe" 2>/dev/null | sed -n 's/^ *Machine: *//p') in
  *X86-64*|*80386*)
    run "$probe" cpuid --dump > "$tmp/native.cpuid" || fail=1
    run "$probe" cpuid --json --file "$tmp/native.cpuid" > "$tmp/a.json" || fail=1
    run "$probe" cpuid --json > "$tmp/b.json" || fail=1
    if ! cmp -s "$tmp/a.json" "$tmp/b.json"; then
      echo "FAIL decoding this CPU differs from decoding its --dump"; cat "$tmp/a.json" "$tmp/b.json"; fail=1
    fi ;;
esac

if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
