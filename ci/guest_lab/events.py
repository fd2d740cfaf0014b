"""A life event: tkc-events runs inside the guest across a VM pause, an
ACPI S3, a snapshot and restore (migrate to a file), a clocksource change
or PR_SET_TSC, which the host drives over QMP."""

import os
import re
import time

from .common import EVENT_DEADLINE, Fail
from .console import Console, json_in, qemu_argv, sections, tail
from .items import slug
from .qmp import QMP

PAUSE_S = 5.0
S3_SLEEP_S = 3.0
RATE_PPM = 50.0           # the rate after an event, 200 ms against CLOCK_MONOTONIC_RAW


def run_event(item, kernel, initrd, out, logf, tmpdir):
    """One boot of item's guest with tkc-events across item's event; the
    item's verdict from tkc-events' TKC-RESULT line."""
    ev = Event(item, kernel, initrd, logf, tmpdir)
    try:
        ev.boot()
        t_ev = time.time()
        result_deadline = HOST_SIDE[ev.kind](ev) if ev.kind in HOST_SIDE else ev.deadline
        item.result["host_event_s"] = round(time.time() - t_ev, 1)
        ev.result(result_deadline)
    except Fail as e:
        item.status = "FAIL"
        item.reason = str(e)
        item.result.setdefault("tail", tail(ev.con.lines, 10))
    finally:
        ev.close()


class Event(object):
    """The guest booted with tkc.run=ev:EVENT and QMP on a Unix socket; what
    the host did, in notes."""

    def __init__(self, item, kernel, initrd, logf, tmpdir):
        self.item, self.logf, self.tmpdir = item, logf, tmpdir
        self.qsock = os.path.join(tmpdir, "qmp-%s.sock" % slug(item.name))
        if os.path.exists(self.qsock):
            os.unlink(self.qsock)
        self.argv = qemu_argv(item.guest, kernel, initrd, "ev:" + item.event, qmp=self.qsock)
        self.kind = item.event.split("@")[0]
        self.con = Console(self.argv, logf)
        self.deadline = self.con.t0 + EVENT_DEADLINE
        self.qmp = None
        self.notes = []

    def boot(self):
        """QMP connected, init reached, tkc-events at its event."""
        self.qmp = QMP(self.qsock, self.deadline)
        if not self.con.until(lambda l: "==TKC-BOOTED==" in l, self.deadline):
            raise Fail("no init within %ds" % EVENT_DEADLINE)
        self.item.boot_s = round(time.time() - self.con.t0, 1)
        if not self.con.until(lambda l: "TKC-EVENT " in l, self.deadline):
            raise Fail("tkc-events did not reach the event")

    def result(self, result_deadline):
        """Reads TKC-RESULT and judges it (or SKIPPED: a known limit of the machine)."""
        item, con, notes = self.item, self.con, self.notes
        got = con.until(lambda l: "TKC-RESULT " in l or "==TKC-END event" in l,
                        min(self.deadline, result_deadline))
        if got is None and result_deadline < self.deadline:
            known = item.guest.get("event_limits", {}).get(self.kind)
            if known:
                item.status = "SKIPPED"
                item.reason = "%s (measured: %s)" % (known, notes[-1])
                return
            raise Fail("the guest did not resume: " + notes[-1])
        res = json_in(got.split("TKC-RESULT ", 1)[1]) if got and "TKC-RESULT " in got else None
        if res is None:
            item.result["tail"] = tail(con.lines, 10)
            raise Fail("no TKC-RESULT from tkc-events (%s)" % (got or "deadline"))
        endl = con.until(lambda l: "==TKC-END event" in l, self.deadline)
        rc = int(re.search(r"rc=(\d+)", endl).group(1)) if endl else None
        con.until(lambda l: "==TKC-DONE==" in l, self.deadline)
        item.result.update(res)
        item.result["exit"] = rc
        bad = verdict(self.kind, res, rc, notes)
        item.status = "FAIL" if bad else "PASS"
        item.reason = "; ".join(bad)

    def close(self):
        item = self.item
        item.result["host"] = "; ".join(self.notes)
        if self.qmp:
            self.qmp.close()
        if item.status != "PASS":
            self.con.kill()  # a failed or impossible event leaves the guest where it is
        elif self.con.finish(max(time.time() + 1, min(self.deadline, time.time() + 15))) == "timeout":
            item.result.setdefault("notes", []).append("killed at the deadline")


def verdict(kind, res, rc, notes):
    """[] when tkc-events' result holds, else what does not."""
    bad = []
    if res["backward_steps"] != 0:
        bad.append("%d backward steps" % res["backward_steps"])
    if not res["event_ok"]:
        bad.append("the event did not happen: %s" % res["detail"])
    if abs(res["rate_error_ppm"]) > RATE_PPM:
        bad.append("rate after the event %+.1f ppm (bound %g)" % (res["rate_error_ppm"], RATE_PPM))
    if kind == "s3" and any("never reached" in n for n in notes):
        bad.append(notes[-1])
    if rc not in (0, 1):
        bad.append("tkc-events exited %s" % rc)
    return bad


# What the host does for an event, while tkc-events runs across it: each
# returns the deadline for tkc-events' result. The guest does the rest
# (clocksource, pr_set_tsc).
def host_pause(ev):
    ev.qmp.cmd("stop")
    ev.notes.append("status after stop: %s" % ev.qmp.status())
    time.sleep(PAUSE_S)
    ev.qmp.cmd("cont")
    ev.notes.append("host: stop, %.0f s, cont" % PAUSE_S)
    return ev.deadline


def host_s3(ev):
    st = None
    t_end = time.time() + 6
    while time.time() < t_end:
        st = ev.qmp.status()
        if st == "suspended":
            break
        time.sleep(0.2)
    if st != "suspended":
        power = sections(ev.con.lines).get("power", (0, ""))[1].replace("\n", "; ")
        r = ev.qmp.cmd("system_wakeup")
        ev.notes.append("the VM never reached QMP status 'suspended' within 6 s (last: %s; the guest "
                        "offers %s), so ACPI S3 was not entered; system_wakeup -> %s" % (
                            st, power, "ok" if "return" in r else r.get("error", {}).get("desc")))
        return time.time() + 5
    time.sleep(S3_SLEEP_S)
    r = ev.qmp.cmd("system_wakeup")
    ev.notes.append("host: suspended, %.0f s, system_wakeup -> %s" % (
        S3_SLEEP_S, "ok" if "return" in r else r.get("error", {}).get("desc")))
    return ev.deadline


def host_migrate(ev):
    """Stop, migrate to a file, quit; the same machine again, restored from it."""
    snap = os.path.join(ev.tmpdir, "snapshot-%s" % slug(ev.item.name))
    ev.qmp.cmd("stop")
    r = ev.qmp.cmd("migrate", uri="exec:cat > %s" % snap)
    if "error" in r:
        raise Fail("migrate: %s" % r["error"].get("desc"))
    st = {}
    t_end = time.time() + 60
    while time.time() < t_end:
        st = ev.qmp.cmd("query-migrate").get("return", {})
        if st.get("status") in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.1)
    if st.get("status") != "completed":
        raise Fail("migrate to a file: %s %s" % (st.get("status"), st.get("error-desc", "")))
    size = os.path.getsize(snap)
    ev.qmp.cmd("quit")
    ev.qmp.close()
    ev.qmp = None
    ev.con.finish(time.time() + 10)
    if os.path.exists(ev.qsock):
        os.unlink(ev.qsock)
    ev.logf.write("\n---- restore ----\n")
    t_restore = time.time()
    ev.con = Console(ev.argv + ["-incoming", "exec:cat %s" % snap], ev.logf)
    ev.qmp = QMP(ev.qsock, ev.deadline)
    t_end = time.time() + 60
    while time.time() < t_end:
        s = ev.qmp.status()
        if s in ("paused", "postmigrate", "running"):
            break
        time.sleep(0.1)
    ev.qmp.cmd("cont")
    ev.notes.append("host: stop, migrate to a %.1f MB file, second QEMU -incoming from it (%.1f s), cont"
                    % (size / 1e6, time.time() - t_restore))
    os.unlink(snap)
    return ev.deadline


HOST_SIDE = {"pause": host_pause, "s3": host_s3, "migrate": host_migrate}
