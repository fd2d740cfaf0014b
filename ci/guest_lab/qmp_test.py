"""The QMP client against a fake QEMU: a thread that speaks QMP on a Unix
socket this test creates (or on one end of a socketpair). No QEMU runs.

    cd ci && python3 -m unittest guest_lab.qmp_test
"""

import json
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

from .common import Fail
from .qmp import QMP

GREETING = {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0}}, "capabilities": []}}


class FakeQEMU(object):
    """Serves one connection: the greeting, then for each command the lines
    reply(msg) returns (dicts sent as JSON, raw strings as they are; None:
    hang up). Every command received is kept in self.got."""

    def __init__(self, reply, listen=None, sock=None, delay=0.0, greeting=GREETING):
        self.reply, self.got, self.greeting = reply, [], greeting
        self.listen, self.sock, self.delay = listen, sock, delay
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn = self.sock
        if self.listen:
            time.sleep(self.delay)  # the socket appears late, as QEMU's does
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(self.listen)
            srv.listen(1)
            srv.settimeout(5)
            conn, _ = srv.accept()
            srv.close()
        f = conn.makefile("rw")
        try:
            f.write(json.dumps(self.greeting) + "\n")
            f.flush()
            for line in f:
                msg = json.loads(line)
                self.got.append(msg)
                out = self.reply(msg)
                if out is None:
                    break
                for o in out:
                    f.write((o if isinstance(o, str) else json.dumps(o)) + "\n")
                f.flush()
        except OSError:
            pass
        finally:
            f.close()
            conn.close()


def qemu_like(msg):
    """Replies as QEMU does: an event first for stop, a status, errors."""
    name = msg["execute"]
    if name == "stop":
        return [{"event": "STOP", "timestamp": {"seconds": 1, "microseconds": 2}}, {"return": {}}]
    if name == "query-status":
        return [{"return": {"status": "paused", "running": False}}]
    if name == "migrate":
        return [{"return": {}}] if msg.get("arguments", {}).get("uri") else \
            [{"error": {"class": "GenericError", "desc": "Parameter 'uri' is missing"}}]
    if name == "quit":
        return None
    return [{"return": {}}]


class QMPTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qmp-test-")
        self.path = os.path.join(self.tmp, "qmp.sock")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_handshake_then_commands_skip_events(self):
        fake = FakeQEMU(qemu_like, listen=self.path)
        q = QMP(self.path, time.time() + 5)
        self.assertEqual(q.cmd("stop"), {"return": {}})  # the STOP event before it is skipped
        self.assertEqual(q.status(), "paused")
        q.close()
        fake.thread.join(5)
        self.assertEqual([m["execute"] for m in fake.got], ["qmp_capabilities", "stop", "query-status"])
        self.assertNotIn("arguments", fake.got[1])

    def test_arguments_and_errors(self):
        fake = FakeQEMU(qemu_like, listen=self.path)
        q = QMP(self.path, time.time() + 5)
        self.assertEqual(q.cmd("migrate", uri="exec:cat > /tmp/x"), {"return": {}})
        r = q.cmd("migrate")
        self.assertEqual(r["error"]["desc"], "Parameter 'uri' is missing")  # an error is a reply, not a Fail
        q.close()
        fake.thread.join(5)
        self.assertEqual(fake.got[1]["arguments"], {"uri": "exec:cat > /tmp/x"})

    def test_waits_for_the_socket_to_appear(self):
        FakeQEMU(qemu_like, listen=self.path, delay=0.3)
        t = time.time()
        q = QMP(self.path, time.time() + 5)
        self.assertGreaterEqual(time.time() - t, 0.25)
        self.assertEqual(q.status(), "paused")
        q.close()

    def test_no_socket_by_the_deadline(self):
        with self.assertRaisesRegex(Fail, "did not come up"):
            QMP(self.path, time.time() + 0.2)

    def test_hang_up_during_a_command(self):
        FakeQEMU(qemu_like, listen=self.path)
        q = QMP(self.path, time.time() + 5)
        with self.assertRaisesRegex(Fail, "QMP quit: connection closed"):
            q.cmd("quit")
        q.close()

    def test_silence_is_a_fail_not_a_hang(self):
        FakeQEMU(lambda m: [] if m["execute"] == "query-status" else [{"return": {}}], listen=self.path)
        q = QMP(self.path, time.time() + 5, timeout=0.3)
        t = time.time()
        with self.assertRaisesRegex(Fail, "QMP query-status"):
            q.status()
        self.assertLess(time.time() - t, 5)
        q.close()

    def test_not_json_is_a_fail(self):
        FakeQEMU(lambda m: ["garbage"] if m["execute"] == "stop" else [{"return": {}}], listen=self.path)
        q = QMP(self.path, time.time() + 5)
        with self.assertRaisesRegex(Fail, "not JSON"):
            q.cmd("stop")
        q.close()

    def test_no_greeting(self):
        a, b = socket.socketpair()
        FakeQEMU(qemu_like, sock=b, greeting={"hello": 1})
        with self.assertRaisesRegex(Fail, "no greeting"):
            QMP.on_socket(a, timeout=5)
        a.close()

    def test_socketpair(self):
        a, b = socket.socketpair()
        fake = FakeQEMU(qemu_like, sock=b)
        q = QMP.on_socket(a, timeout=5)
        self.assertEqual(q.cmd("cont"), {"return": {}})
        q.close()
        fake.thread.join(5)
        self.assertEqual([m["execute"] for m in fake.got], ["qmp_capabilities", "cont"])


if __name__ == "__main__":
    unittest.main()
