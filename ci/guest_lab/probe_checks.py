"""The checks boot: tickclock's choice, validate's exit status, against the
guest's expectation; on x86 the fixture validate wrote."""

import os
import re
import time

from .common import CHECKS_DEADLINE, VALIDATE_SECONDS, sh
from .console import Console, json_in, qemu_argv, sections, tail
from .guest_table import ARCHES


def check_expect(g, report, vrc):
    """[] when the verdict is the expectation, else what differs."""
    e = g["expect"]
    bad = []
    src = report.get("source")
    fr = report.get("frequency") or {}
    if src != e["source"]:
        bad.append("source %s, expected %s" % (src, e["source"]))
    if e.get("method") and fr.get("method") != e["method"]:
        bad.append("frequency method %s, expected %s" % (fr.get("method"), e["method"]))
    if e.get("hz") and (not fr.get("hz") or abs(fr["hz"] / e["hz"] - 1) > 1e-3):
        bad.append("frequency %s Hz, expected %s Hz" % (fr.get("hz"), e["hz"]))
    if vrc != e["validate_rc"]:
        bad.append("validate exited %s, expected %d" % (vrc, e["validate_rc"]))
    return bad


def run_checks(item, kernel, initrd, out, logf):
    g = item.guest
    con = Console(qemu_argv(g, kernel, initrd, "checks"), logf)
    deadline = con.t0 + CHECKS_DEADLINE
    booted = con.until(lambda l: "==TKC-BOOTED==" in l, deadline)
    if booted:
        item.boot_s = round(time.time() - con.t0, 1)
    done = con.until(lambda l: "==TKC-DONE==" in l, deadline) if booted else None
    end = con.finish(deadline) if done else (con.kill() or "timeout")
    if not booted or not done:
        item.status = "FAIL"
        item.reason = ("no init within %ds (killed)" % CHECKS_DEADLINE if not booted else
                       "checks did not finish within %ds (killed)" % CHECKS_DEADLINE) \
            if end == "timeout" else "QEMU exited before the checks finished"
        item.result["tail"] = tail(con.lines)
        return
    sec = sections(con.lines)
    report = json_in(sec.get("report", (None, ""))[1])
    vrc, vtext = sec.get("validate", (None, ""))
    validate = json_in(vtext)
    if not report:
        item.status, item.reason = "FAIL", "no JSON from tickclock-probe --json"
        item.result["tail"] = tail(con.lines)
        return
    fr = report.get("frequency") or {}
    item.result.update({
        "source": report.get("source"), "frequency_hz": fr.get("hz"), "frequency_method": fr.get("method"),
        "uncertainty_ppm": fr.get("uncertainty_ppm"), "why": report.get("why"),
        "uname": sec.get("uname", (0, ""))[1],
        "clocksource": sec.get("clocksource", (0, ""))[1].replace("\n", " | "),
        "validate_rc": vrc, "validate": validate.get("summary") if validate else None,
        "validate_failed": [c["name"] + ": " + c.get("detail", "") for c in (validate or {}).get("checks", [])
                            if c.get("status") == "FAIL"],
        "candidates": [(c.get("source"), c.get("usable"), c.get("reason")) for c in report.get("candidates", [])],
    })
    if "fixture" in sec and sec["fixture"][0] == 0:
        fx = fixture_text(g, sec["fixture"][1], item.result["uname"])
        fd = os.path.join(out, "fixtures")
        os.makedirs(fd, exist_ok=True)
        p = os.path.join(fd, fixture_name(g))
        with open(p, "w") as f:
            f.write(fx)
        item.result["fixture"] = os.path.relpath(p, out)
    bad = check_expect(g, report, vrc)
    item.status = "FAIL" if bad else "PASS"
    item.reason = "; ".join(bad)


def fixture_name(g):
    return "qemu-%s-%s.cpuid" % (g["accel"], g["name"])


def fixture_text(g, body, uname):
    qv = sh([ARCHES[g["arch"]]["qemu"], "--version"])[1].splitlines()[0]
    m = re.search(r"version (\S+)", qv)
    kern = uname.split()[2] if len(uname.split()) > 2 else "?"
    head = [
        "# host: QEMU %s %s x86-64 guest, -cpu %s, %d vCPU, kernel %s%s (emulated)" % (
            m.group(1) if m else "?", g["accel"].upper(), g["cpu"], g["smp"], kern,
            ", " + g["append"] if g["append"] else ""),
        "# emulated: qemu-system-x86_64 -accel %s -cpu %s -smp %d%s; not real hardware" % (
            g["accel"], g["cpu"], g["smp"], " -append '%s'" % g["append"] if g["append"] else ""),
        "# origin: ci/guest, guest %s (tickclock-probe validate --seconds %s --fixture-out inside it); "
        "everything from the \"# tickclock fixture\" line on is its output, unedited" % (g["name"], VALIDATE_SECONDS),
        "# guest.expect.source: %s" % g["expect"]["source"],
    ]
    return "\n".join(head) + "\n" + body.strip("\n") + "\n"
