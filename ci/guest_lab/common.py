"""What every part of the guest lab shares: where the checkout and the cache
are, the deadlines, the one way to run a command, log and fail."""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CACHE = os.path.join(ROOT, ".cache", "guest")

CHECKS_DEADLINE = 60      # s, one boot that runs the checks
EVENT_DEADLINE = 120      # s, one boot with a life event (its 5 s pause included)
SUITES_DEADLINE = 240     # s, one boot that runs the test suites (guest_table.py SUITES)
KVM_PROBE_DEADLINE = 20   # s, the one try of -accel kvm
VALIDATE_SECONDS = "1"    # tickclock-probe validate --seconds, inside a guest

TOOLS = ["cpio", "gzip", "dpkg-deb", "apt-get"]

# --json: the report is the one thing on stdout, the progress goes to stderr
JSON_MODE = False


def log(msg):
    print(msg, file=sys.stderr if JSON_MODE else sys.stdout, flush=True)


class Fail(Exception):
    pass


def sh(argv, cwd=None, timeout=600, env=None):
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout, env=env, errors="replace")
    return p.returncode, p.stdout
