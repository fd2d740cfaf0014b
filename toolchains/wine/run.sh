#!/usr/bin/env bash
# Runs a Windows (PE) test binary under wine64; other files (sh_test
# scripts) run directly. The Wine prefix is created once and reused
# (creating one takes ~30 s): $TICKCLOCK_WINEPREFIX, default
# /var/tmp/tickclock-wine-$(id -u). Wine's own chatter is silenced;
# the test's stdout/stderr and exit status pass through.
set -uo pipefail
bin=$1
shift
if ! head -c 2 "$bin" 2>/dev/null | grep -q "MZ"; then
  exec "$bin" "$@"
fi
WINE=${TICKCLOCK_WINE:-}
for w in /usr/lib/wine/wine64 /usr/bin/wine64 /usr/bin/wine; do
  [[ -z "$WINE" && -x "$w" ]] && WINE=$w
done
if [[ -z "$WINE" ]]; then
  echo "toolchains/wine/run.sh: wine64 not installed (ci/deps windows)" >&2
  exit 127
fi
export WINEPREFIX=${TICKCLOCK_WINEPREFIX:-/var/tmp/tickclock-wine-$(id -u)}
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="  # no Mono/Gecko install prompts
if [[ ! -f "$WINEPREFIX/system.reg" ]]; then
  mkdir -p "$WINEPREFIX"
  (
    flock 9
    [[ -f "$WINEPREFIX/system.reg" ]] || "$WINE" wineboot --init >/dev/null 2>&1
  ) 9>"$WINEPREFIX.lock"
fi
exec "$WINE" "$bin" "$@"
