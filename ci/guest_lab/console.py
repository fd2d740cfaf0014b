"""QEMU's command line for a guest, its serial console read line by line
with deadlines, and what the guest's init prints between its markers."""

import json
import queue
import re
import subprocess
import threading
import time

from .guest_table import ARCHES


class Console(object):
    """QEMU with its serial console on stdout, read line by line with deadlines."""

    def __init__(self, argv, logf):
        self.argv = argv
        self.log = logf
        self.q = queue.Queue()
        self.lines = []
        logf.write("$ %s\n" % " ".join(argv))
        logf.flush()
        self.t0 = time.time()
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.p.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").replace("\r", "").rstrip("\n")
            self.q.put(line)
        self.q.put(None)

    def until(self, pred, deadline):
        """Lines until pred(line) or the end of output; None on deadline/exit."""
        while True:
            left = deadline - time.time()
            if left <= 0:
                return None
            try:
                line = self.q.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                self.q.put(None)
                return None
            self.lines.append(line)
            self.log.write(line + "\n")
            if pred(line):
                return line

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.log.flush()

    def finish(self, deadline):
        """Waits for the guest to power off (or kills it at deadline): 'ok' or 'timeout'."""
        self.until(lambda l: False, deadline)
        try:
            self.p.wait(timeout=max(0.1, min(5, deadline - time.time())))
            return "ok"
        except subprocess.TimeoutExpired:
            self.kill()
            return "timeout"


def qemu_argv(g, kernel, initrd, run, qmp=None, incoming=None):
    a = ARCHES[g["arch"]]
    append = "console=%s panic=-1 quiet loglevel=1 tkc.run=%s %s" % (a["console"], run, g["append"])
    argv = [a["qemu"]] + a["machine"] + ["-accel", g["accel"], "-m", str(a["mem"]), "-smp", str(g["smp"])]
    if g["cpu"]:
        argv += ["-cpu", g["cpu"]]
    # -nic none: no network, so no NIC option ROM is needed (ipxe-qemu is only
    # a recommendation of qemu-system-arm)
    argv += ["-kernel", kernel, "-initrd", initrd, "-append", append.strip(), "-nographic", "-no-reboot",
             "-nic", "none"]
    argv += g["qemu_args"]
    if g["arch"] == "x86_64":
        argv += ["-global", "PIIX4_PM.disable_s3=0"]  # S3 on offer for the s3 event
    if qmp:
        argv += ["-qmp", "unix:%s,server,nowait" % qmp]
    if incoming:
        argv += ["-incoming", incoming]
    return argv


def sections(lines):
    """{name: (rc, text)} from ==TKC-BEGIN name== ... ==TKC-END name rc=N==."""
    out, cur, buf = {}, None, []
    for l in lines:
        m = re.search(r"==TKC-BEGIN (\S+)==$", l)
        if m:
            cur, buf = m.group(1), []
            continue
        m = re.search(r"==TKC-END (\S+) rc=(\d+)==$", l)
        if m and cur == m.group(1):
            out[cur] = (int(m.group(2)), "\n".join(buf).strip("\n"))
            cur = None
            continue
        if cur:
            buf.append(l)
    return out


def json_in(text):
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        i = line.find("{")
        if i >= 0 and line.endswith("}"):
            try:
                return json.loads(line[i:])
            except ValueError:
                continue
    return None


def tail(lines, n=6):
    return [l for l in lines if l.strip()][-n:]
