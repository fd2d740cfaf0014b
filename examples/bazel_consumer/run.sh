#!/usr/bin/env bash
# Builds and runs this example workspace's tests with its own Bazel server
# (shut down afterwards), so that depending on tickclock from another
# workspace stays tested. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")"
bazel --max_idle_secs=60 test //... --color=no --curses=no "$@" 2>&1 | tee /tmp/tickclock-bazel-consumer.log
rc=${PIPESTATUS[0]}
bazel shutdown >/dev/null 2>&1 || true
if [[ $rc -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$rc"
