#!/usr/bin/env bash
# The guest lab's unit tests (no QEMU): the QMP client against a fake QEMU
# on a Unix socket and a socketpair, and the parts that read the console,
# list the suites, select items and judge them.
set -uo pipefail
# under Bazel the modules are in the runfiles, beside it otherwise
if [[ -n "${TEST_SRCDIR:-}" ]]; then
  cd "$TEST_SRCDIR/$TEST_WORKSPACE/ci" || exit 1
else
  cd "$(dirname "$0")/.." || exit 1
fi
exec python3 -m unittest -v guest_lab.qmp_test guest_lab.lab_test
