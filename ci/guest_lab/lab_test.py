"""The guest lab's parts that need no QEMU: the console's markers, the
suites' lines in the initramfs, the selection, the verdicts, init.sh.

    cd ci && python3 -m unittest guest_lab.lab_test
"""

import subprocess
import unittest

from .build import suites_for
from .probe_checks import check_expect
from .console import json_in, qemu_argv, sections
from .events import verdict
from .guest_table import GUESTS
from .initramfs import INIT_SH, suites_list
from .items import items_all, select
from .suites import doctest_counts


class ConsoleTest(unittest.TestCase):
    def test_sections_and_json(self):
        lines = ["noise", "==TKC-BEGIN report==", "[ 1.2] kernel line", '{"source": "system"}',
                 "", "==TKC-END report rc=0==", "==TKC-BEGIN validate==", "x", "==TKC-END validate rc=1=="]
        sec = sections(lines)
        self.assertEqual(sec["report"][0], 0)
        self.assertEqual(json_in(sec["report"][1]), {"source": "system"})
        self.assertEqual(sec["validate"], (1, "x"))
        self.assertIsNone(json_in("no json here"))

    def test_qemu_argv(self):
        g = dict(GUESTS[0])
        argv = qemu_argv(g, "K", "I", "checks", qmp="/tmp/q.sock")
        self.assertEqual(argv[0], "qemu-system-x86_64")
        self.assertIn("tkc.run=checks", argv[argv.index("-append") + 1])
        self.assertEqual(argv[-2:], ["-qmp", "unix:/tmp/q.sock,server,nowait"])


class SuitesTest(unittest.TestCase):
    def test_doctest_counts(self):
        text = "[doctest] test cases:  12 |  11 passed | 0 failed | 1 skipped"
        self.assertEqual(doctest_counts(text), {"cases": 12, "passed": 11, "failed": 0, "filtered": 1})
        self.assertIsNone(doctest_counts("crashed"))

    def test_every_arch_list_names_its_binaries(self):
        for arch in ("x86_64", "aarch64", "ppc64le", "s390x"):
            lines = suites_list(arch).splitlines()
            self.assertEqual(len(lines), len(suites_for(arch)))
            for line in lines:
                name, binary = line.split()[:2]
                self.assertTrue(binary.startswith("tkc-"), line)
        # the TCG exclusions reach doctest, cut at the first comma
        self.assertIn("--test-case-exclude=", [l for l in suites_list("x86_64").splitlines()
                                               if l.startswith("transitions ")][0])


class ItemsTest(unittest.TestCase):
    def test_selection(self):
        self.assertEqual([i.name for i in select(False, "x86_64-max")], ["x86_64-max"])  # exact wins
        self.assertEqual(sorted(i.name for i in select(True, None)), ["aarch64-max", "x86_64-max"])
        self.assertTrue(all(":" in i.name for i in select(False, ":pause")))
        names = [i.name for i in items_all()]
        self.assertEqual(len(names), len(set(names)))


class VerdictTest(unittest.TestCase):
    def test_checks(self):
        g = GUESTS[0]
        self.assertEqual(check_expect(g, {"source": "system", "frequency": {"method": "identity"}}, 0), [])
        bad = check_expect(g, {"source": "tsc", "frequency": {"method": "cpuid_15h"}}, 1)
        self.assertEqual(len(bad), 3)

    def test_events(self):
        ok = {"backward_steps": 0, "event_ok": True, "detail": "", "rate_error_ppm": 1.0}
        self.assertEqual(verdict("pause", ok, 0, []), [])
        self.assertEqual(len(verdict("pause", dict(ok, backward_steps=2, rate_error_ppm=80.0), 2, [])), 3)
        self.assertEqual(verdict("s3", ok, 0, ["the VM never reached QMP status 'suspended'"]),
                         ["the VM never reached QMP status 'suspended'"])


class InitTest(unittest.TestCase):
    def test_init_is_valid_sh(self):
        self.assertEqual(subprocess.call(["sh", "-n", INIT_SH]), 0)
        with open(INIT_SH) as f:
            text = f.read()
        self.assertTrue(text.startswith("#!/bin/busybox sh\n"))
        for marker in ("==TKC-BOOTED==", "==TKC-DONE==", "@SECONDS@", "tkc.run="):
            self.assertIn(marker, text)


if __name__ == "__main__":
    unittest.main()
