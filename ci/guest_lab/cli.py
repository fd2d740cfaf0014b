"""ci/guest — the guest lab: tickclock under Debian's own kernels in QEMU system emulation.

    ci/guest [--quick] [--only PATTERN] [--list] [--json] [--no-deps] [--probes-only]
             [--save-fixtures] [--out DIR]

Each guest (ci/guest_lab/guest_table.py, the one table) boots a Debian 12
kernel under qemu-system-<arch> with an initramfs holding busybox, a static
tickclock-probe and a static tests/guest/life_events.c; its init runs
`tickclock-probe --json`, `tickclock-probe validate` (on x86 with
--fixture-out, and `tickclock-probe cpuid --dump`) and prints the results
between markers on the serial console. A guest passes when the source and
frequency method tickclock chose match the guest's expectation and
validate's exit status is the expected one. A guest with suites=True also
gets the item GUEST:suites: one boot that runs the test suites of SUITES
(doctest binaries linked statically by the same cross compilers: the fake
platform's suites of tests/reliability and tests/tickclock/transitions_test),
each a check; the item passes when every suite exits 0. Life events (VM pause, S3,
snapshot/restore, a clocksource change, PR_SET_TSC) boot the guest again and
run tkc-events across the event, driven from here over QMP.

  --quick          the quick pair (one x86-64 and one aarch64 guest; no suites, no events)
  --only PATTERN   items named exactly PATTERN (a guest's checks: `x86_64-max`;
                   an event: `x86_64-max:pause`), else those whose name matches the
                   regular expression (case-insensitive search)
  --list           print the selected items, run nothing
  --json           print the report as one JSON line before the summary line
  --no-deps        do not run ci/deps guest when a tool is missing
  --probes-only    only build the static probes of every architecture
  --save-fixtures  copy the x86 guests' fixtures into tests/fixtures/hosts/
  --out DIR        report, logs, probes, fixtures (default out/guest)

Kernels and busybox come from the Debian archive (`apt-get download`,
`dpkg-deb`), cached in .cache/guest/: a second run downloads nothing and needs
no root. Every boot has a hard deadline (QEMU is killed; a hang fails).
The last line is `N passed, N failed, N skipped`; exit status 0 iff none failed.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import common
from .build import build, build_suites, publish_probes, suites_for
from .probe_checks import run_checks
from .common import ROOT, TOOLS, Fail, log, sh
from .events import run_event
from .fetch import fetch
from .guest_table import ARCHES, PROBE_TARGETS
from .initramfs import initramfs
from .items import select, slug
from .kvm import kvm_probe
from .suites import run_suites


def deps_missing(items):
    need = set(TOOLS)
    for i in items:
        a = ARCHES[i.guest["arch"]]
        if a.get("kernel_pkg"):
            need.update([a["qemu"], a["cc"], a["cxx"]])
    gone = sorted(t for t in need if not shutil.which(t))
    # apt-get download NAME:ARCH needs the foreign architecture in apt's lists
    foreign = sh(["dpkg", "--print-foreign-architectures"])[1].split() if shutil.which("dpkg") else []
    for i in items:
        a = ARCHES[i.guest["arch"]]
        if a.get("kernel_pkg") and a["debarch"] != "amd64" and a["debarch"] not in foreign:
            gone.append("dpkg --add-architecture %s" % a["debarch"])
    return sorted(set(gone))


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="ci/guest", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", metavar="PATTERN")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-deps", action="store_true")
    ap.add_argument("--probes-only", action="store_true")
    ap.add_argument("--save-fixtures", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "guest"))
    return ap.parse_args(argv)


def print_list(items):
    for i in items:
        g = i.guest
        exp = " %d suites" % len(suites_for(g["arch"])) if i.event == "suites" else "" if i.event else \
            " expect %s/%s validate=%d" % (
            g["expect"]["source"], g["expect"].get("method"), g["expect"]["validate_rc"])
        print("%-34s %-8s %-5s -cpu %s -smp %d%s%s" % (i.name, g["arch"], g["accel"], g["cpu"], g["smp"],
                                                        " '%s'" % g["append"] if g["append"] else "", exp))
    print("%d items" % len(items))


def prepare(arch, items, missing):
    """(kernel, initrd, kernel version) for arch, or the Fail text."""
    a = ARCHES[arch]
    try:
        if missing:
            raise Fail("not installed: %s (ci/deps guest)" % " ".join(missing))
        f = fetch(arch)
        b = build(arch, a["cc"], a["cxx"])
        if any(x.guest["arch"] == arch and x.event == "suites" for x in items):
            b = dict(b, suites=build_suites(arch, a["cc"], a["cxx"]))
        return (f["kernel"], initramfs(arch, f, b), f["kernel_version"])
    except (Fail, subprocess.TimeoutExpired) as e:
        return str(e)


class Run(object):
    """One run over the selected items: the architectures prepared once, the
    KVM probe tried once, each item booted with its own log."""

    def __init__(self, items, missing, out, tmpdir, meta):
        self.items, self.missing, self.out, self.tmpdir, self.meta = items, missing, out, tmpdir, meta
        self.prepared = {}  # arch -> (kernel, initrd, version) or Fail text
        self.kvm = None

    def item(self, it, logf):
        g = it.guest
        if ARCHES[g["arch"]].get("no_kernel"):
            it.status, it.reason = "SKIPPED", ARCHES[g["arch"]]["no_kernel"]
            return
        if g["arch"] not in self.prepared:
            self.prepared[g["arch"]] = prepare(g["arch"], self.items, self.missing)
        p = self.prepared[g["arch"]]
        if isinstance(p, str):
            it.status, it.reason = "FAIL", p.splitlines()[0]
            logf.write(p + "\n")
            return
        if g["accel"] == "kvm":
            if self.kvm is None:
                x86 = self.prepared.get("x86_64")
                kp = x86 if isinstance(x86, tuple) else p
                self.kvm = kvm_probe(kp[0], kp[1], logf)
                log("ci/guest: KVM: %s" % self.kvm[1])
                self.meta["kvm"] = self.kvm[1]
            if not self.kvm[0]:
                it.status, it.reason = "SKIPPED", "no KVM guest boots here (the KVM line above)"
                return
        kernel, initrd, kver = p
        it.result["kernel"] = kver
        if it.event == "suites":
            run_suites(it, kernel, initrd, self.out, logf)
        elif it.event:
            run_event(it, kernel, initrd, self.out, logf, self.tmpdir)
        else:
            run_checks(it, kernel, initrd, self.out, logf)


def describe(it):
    """The item's line after its status: what it measured."""
    r = it.result
    if it.status != "SKIPPED" and not it.event and r.get("source"):
        return " %s %.3f MHz %s, validate rc=%s" % (r["source"], (r.get("frequency_hz") or 0) / 1e6,
                                                   r.get("frequency_method"), r.get("validate_rc"))
    if it.event == "suites" and r.get("suites"):
        return " " + ", ".join("%s %s%s" % (s["name"], s["status"], " %.0fs" % s["seconds"] if "seconds" in s
                                            else "") for s in r["suites"])
    if it.event and "backward_steps" in r:
        return " backward=%d worst_interval=%.0fns rate=%+.2fppm" % (
            r["backward_steps"], r["worst_interval_error_ns"], r["rate_error_ppm"])
    return ""


def main(argv):
    args = parse_args(argv)
    common.JSON_MODE = args.json
    if args.only:
        try:
            re.compile(args.only)
        except re.error as e:
            print("ci/guest: --only '%s': not a regular expression (%s)" % (args.only, e), file=sys.stderr)
            return 2
    items = select(args.quick, args.only)
    if args.list:
        print_list(items)
        return 0
    full = not args.quick and not args.only
    t_start = time.time()
    out = os.path.abspath(args.out)
    shutil.rmtree(os.path.join(out, "logs"), ignore_errors=True)
    shutil.rmtree(os.path.join(out, "fixtures"), ignore_errors=True)
    os.makedirs(os.path.join(out, "logs"))
    # QMP sockets and snapshots: a short path (a unix socket's is limited to
    # 107 bytes, a checkout's may be long), removed at the end
    tmpdir = tempfile.mkdtemp(prefix="ci-guest-")

    missing = deps_missing(items if not args.probes_only else [])
    if missing and not args.no_deps:
        log("ci/guest: missing %s: running ci/deps guest" % " ".join(missing))
        rc, o = sh([os.path.join(ROOT, "ci/deps"), "guest"], timeout=1800)
        with open(os.path.join(out, "logs", "deps.log"), "w") as f:
            f.write(o)
        missing = deps_missing(items)
    meta = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t_start)), "args": " ".join(argv)}
    probe_fail = []
    if full or args.probes_only:
        probe_fail = publish_probes(out)
        meta["probes"] = {"dir": os.path.relpath(os.path.join(out, "probes"), ROOT),
                          "failed": ["%s: %s" % p for p in probe_fail]}
        if args.probes_only:
            n = len(PROBE_TARGETS)
            print("%d passed, %d failed, 0 skipped" % (n - len(probe_fail), len(probe_fail)))
            return 1 if probe_fail else 0

    run = Run(items, missing, out, tmpdir, meta)
    for it in items:
        t0 = time.time()
        with open(os.path.join(out, "logs", slug(it.name) + ".log"), "w") as logf:
            run.item(it, logf)
            logf.write("\nresult: %s %s\n" % (it.status, it.reason))
        it.seconds = time.time() - t0
        log("ci/guest: %-30s %s %.1fs%s%s%s" % (it.name, it.status, it.seconds,
                                                " (boot %.1fs)" % it.boot_s if it.boot_s else "", describe(it),
                                                " -- " + it.reason if it.reason else ""))
    shutil.rmtree(tmpdir, ignore_errors=True)
    if args.save_fixtures:
        hosts = os.path.join(ROOT, "tests", "fixtures", "hosts")
        for p in sorted(glob.glob(os.path.join(out, "fixtures", "*.cpuid"))):
            shutil.copy(p, hosts)
            log("ci/guest: saved %s" % os.path.relpath(os.path.join(hosts, os.path.basename(p)), ROOT))
    n = {"PASS": 0, "FAIL": 0, "SKIPPED": 0}
    for it in items:
        n[it.status] = n.get(it.status, 0) + 1
    n["FAIL"] += len(probe_fail)
    meta["elapsed_s"] = round(time.time() - t_start, 1)
    doc = dict(meta, counts=n, items=[i.to_json() for i in items])
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(doc, f, indent=1)
    log("ci/guest: %d items in %.0fs; report: %s/report.json" % (len(items), meta["elapsed_s"],
                                                                os.path.relpath(out, ROOT)))
    if args.json:
        print(json.dumps(doc))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIPPED"]))
    return 1 if n["FAIL"] else 0
