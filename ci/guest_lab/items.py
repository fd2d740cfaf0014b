"""What a run is made of: each guest's checks, its suites (suites=True) and
each of its life events, one item each, selected by --quick and --only."""

import re

from .guest_table import GUESTS


class Item(object):
    def __init__(self, guest, event=None):
        self.guest = guest
        self.event = event
        self.name = guest["name"] + (":" + event if event else "")
        self.status = "PENDING"
        self.reason = ""
        self.seconds = 0.0
        self.boot_s = None
        self.result = {}

    def to_json(self):
        g = self.guest
        d = {"name": self.name, "guest": g["name"], "arch": g["arch"], "accel": g["accel"], "cpu": g["cpu"],
             "smp": g["smp"], "append": g["append"], "event": self.event, "status": self.status,
             "reason": self.reason or None, "seconds": round(self.seconds, 1), "boot_s": self.boot_s,
             "expect": None if self.event else g["expect"], "log": "logs/%s.log" % slug(self.name)}
        d.update(self.result)
        return d


def slug(s):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-")


def items_all():
    out = []
    for g in GUESTS:
        out.append(Item(g))
        if g.get("suites"):
            out.append(Item(g, "suites"))
        for e in g["events"]:
            out.append(Item(g, e))
    return out


def select(quick, only):
    items = items_all()
    if quick:
        items = [i for i in items if i.guest["quick"] and i.event is None]
    if only:
        exact = [i for i in items if i.name == only]
        if exact:
            return exact
        rx = re.compile(only, re.I)
        items = [i for i in items if rx.search(i.name)]
    return items
