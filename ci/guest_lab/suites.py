"""The suites boot: every suite of the guest's architecture in one boot,
each a check with its own verdict."""

import re
import time

from .build import suites_for
from .common import SUITES_DEADLINE
from .console import Console, qemu_argv, sections, tail
from .guest_table import SUITE_TCG_EXCLUDE


def doctest_counts(text):
    """{passed, failed, skipped} test cases from doctest's summary line, or None."""
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped",
                  text or "")
    return dict(zip(("cases", "passed", "failed", "filtered"), map(int, m.groups()))) if m else None


def run_suites(item, kernel, initrd, out, logf):
    """One boot that runs arch's SUITES; each suite a check (exit 0, doctest's
    summary, its TICKCLOCK_SKIPPED lines). A suite that did not finish before
    the deadline says so (too slow under TCG, or hung)."""
    g = item.guest
    want = [n for n, _, _, _ in suites_for(g["arch"])]
    con = Console(qemu_argv(g, kernel, initrd, "suites"), logf)
    deadline = con.t0 + SUITES_DEADLINE
    booted = con.until(lambda l: "==TKC-BOOTED==" in l, deadline)
    if booted:
        item.boot_s = round(time.time() - con.t0, 1)
    done = con.until(lambda l: "==TKC-DONE==" in l, deadline) if booted else None
    t_done = time.time()
    end = con.finish(deadline) if done else (con.kill() or "timeout")
    if done:  # wall seconds: QEMU start to init, init to the last suite, power-off
        item.result["wall_s"] = {"boot": item.boot_s, "suites": round(t_done - con.t0 - item.boot_s, 1),
                                 "poweroff": round(time.time() - t_done, 1)}
    sec = sections(con.lines)
    # how long each suite ran: the guest's uptime after each, from the boot's
    up = {}
    for l in con.lines:
        m = re.search(r"==TKC-(BOOTED)== (\S+)|==TKC-UPTIME suite:(\S+) (\S+)==", l)
        if m:
            up[m.group(3) or "boot"] = float(m.group(2) or m.group(4))
    suites, bad = [], []
    prev = up.get("boot")
    for n in want:
        s = {"name": n}
        if "suite:" + n in sec:
            rc, text = sec["suite:" + n]
            s["rc"] = rc
            s["status"] = "PASS" if rc == 0 else "FAIL"
            s["counts"] = doctest_counts(text)
            ex = SUITE_TCG_EXCLUDE.get(n, [])
            if ex:
                s["excluded"] = ["%s: %s" % (case, why) for case, why in ex]
            if n in up and prev is not None:
                s["seconds"] = round(up[n] - prev, 1)
                prev = up[n]
            s["skipped"] = [l[len("TICKCLOCK_SKIPPED: "):] for l in text.splitlines()
                            if l.startswith("TICKCLOCK_SKIPPED: ")]
            if rc != 0:
                s["tail"] = [l for l in text.splitlines() if "ERROR" in l or "FAIL" in l][-6:]
                bad.append("%s exited %d" % (n, rc))
        else:
            s["status"] = "FAIL"
            s["rc"] = None
            s["reason"] = ("did not run: no init within %ds" % SUITES_DEADLINE if not booted else
                           "did not finish within %ds under %s (killed)" % (SUITES_DEADLINE, g["accel"].upper())
                           if end == "timeout" else "did not run: QEMU exited first")
            bad.append("%s %s" % (n, s["reason"]))
        suites.append(s)
    item.result["suites"] = suites
    if not booted or (not done and end != "timeout"):
        item.result["tail"] = tail(con.lines)
    item.status = "FAIL" if bad else "PASS"
    item.reason = "; ".join(bad)
