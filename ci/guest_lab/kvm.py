"""Whether a KVM guest boots here at all: one try with a short deadline."""

import os
import time

from .common import KVM_PROBE_DEADLINE
from .console import Console, qemu_argv, tail
from .guest_table import GUESTS


def kvm_probe(kernel, initrd, logf):
    """(True, '') if a KVM guest reaches init within KVM_PROBE_DEADLINE s, else (False, why)."""
    if not os.path.exists("/dev/kvm"):
        return False, "no /dev/kvm here"
    g = dict(GUESTS[0], accel="kvm", cpu="qemu64", smp=1, append="", qemu_args=[])
    con = Console(qemu_argv(g, kernel, initrd, "probe"), logf)
    ok = con.until(lambda l: "==TKC-BOOTED==" in l, con.t0 + KVM_PROBE_DEADLINE)
    t = time.time() - con.t0
    con.kill()
    if ok:
        return True, "booted to init in %.1fs" % t
    last = tail(con.lines, 1)
    return False, "/dev/kvm is present but a KVM guest (-accel kvm -cpu qemu64) did not reach init within " \
        "%ds%s; KVM personalities skipped, TCG only" % (KVM_PROBE_DEADLINE,
                                                        " (last output: %s)" % last[0][:80] if last else
                                                        " (no output: nested KVM hangs at kernel entry)")
