"""A QMP client: the greeting, qmp_capabilities, then one command at a time.
QEMU sends asynchronous events ({"event": ...}) between the replies; cmd()
skips them and returns the command's {"return": ...} or {"error": ...}.
Whatever goes wrong on the wire (closed, silent past the timeout, not JSON)
is a Fail, so a life event that loses QEMU fails that item only."""

import json
import socket
import time

from .common import Fail


def connect(path, deadline):
    """A stream socket connected to the Unix socket at path, tried until
    deadline (QEMU creates it a moment after it starts)."""
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.time() > deadline:
                raise Fail("QMP socket %s did not come up" % path)
            time.sleep(0.05)


class QMP(object):
    def __init__(self, path, deadline, timeout=30.0):
        """Connects to QEMU's QMP socket at path (tried until deadline)."""
        self.path = path
        self._start(connect(path, deadline), timeout)

    @classmethod
    def on_socket(cls, sock, timeout=30.0):
        """A client over a socket already connected (a socketpair's end)."""
        q = cls.__new__(cls)
        q.path = None
        q._start(sock, timeout)
        return q

    def _start(self, sock, timeout):
        sock.settimeout(timeout)
        self.s = sock
        self.f = sock.makefile("rw")
        greeting = self._read("the greeting")
        if "QMP" not in greeting:
            raise Fail("QMP: no greeting, got %s" % json.dumps(greeting)[:200])
        r = self.cmd("qmp_capabilities")
        if "error" in r:
            raise Fail("QMP qmp_capabilities: %s" % r["error"].get("desc"))

    def _read(self, what):
        """The next JSON object from QEMU."""
        try:
            line = self.f.readline()
        except OSError as e:  # socket.timeout included
            raise Fail("QMP %s: %s" % (what, e or "timed out"))
        if not line:
            raise Fail("QMP %s: connection closed" % what)
        try:
            return json.loads(line)
        except ValueError:
            raise Fail("QMP %s: not JSON: %r" % (what, line[:200]))

    def cmd(self, name, **args):
        """Sends one command, returns its reply (events before it skipped)."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        try:
            self.f.write(json.dumps(msg) + "\n")
            self.f.flush()
        except OSError as e:
            raise Fail("QMP %s: %s" % (name, e))
        while True:
            r = self._read(name)
            if "return" in r or "error" in r:
                return r

    def status(self):
        return self.cmd("query-status").get("return", {}).get("status")

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass
